"""`concorde-workers doctor` (issue 12 §1): the verdict decided from probed facts (domain/setup/doctor.py)
and the facts gathered through the ports (application/setup/doctor.py) with fakes: programs where a run
finds them with their versions, the tools, the sandbox, the model map, the credentials (never a
value), the worktree's workers.json."""

from __future__ import annotations

import json

import pytest
from fakes.filesystem import FakeFileSystem
from fakes.program_versions import FakeProgramVersions
from fakes.sandbox_probe import FakeSandboxProbe

from concorde_workers.adapters.codex.profile import native_relative
from concorde_workers.application.setup.config import ConfigurationReader
from concorde_workers.application.setup.doctor import Doctor, worktree_of
from concorde_workers.container import PROFILES
from concorde_workers.domain.configuration.credentials import copied_files
from concorde_workers.domain.configuration.discovery import CHECKOUT, USER_DATA, Installation
from concorde_workers.domain.setup.doctor import SandboxFact, diagnose

HOME = "/home/dev"
MODULES = f"{HOME}/.local/share/concorde-workers/node_modules"
SRT = f"{MODULES}/@anthropic-ai/sandbox-runtime"
SECRET = "sk-do-not-print-0123456789"
CLAUDE_SECRET = '{"claudeAiOauth": {"accessToken": "oauth-do-not-print-42"}}'
PI_SECRET = '{"local": {"type": "api_key", "key": "pi-key-do-not-print-77"}}'
PI_MODELS = {
    "providers": {
        "local": {
            "baseUrl": "http://127.0.0.1:8000/v1",
            "api": "openai-completions",
            "apiKey": "none",
            "models": [{"id": "m"}],
        }
    }
}
"""The provider the model map's pi id `local/m` names, as pi's models.json defines it."""
WORKTREE = "/work/repo/.claude/worktrees/task"
CODEX_KEY = "codex-gateway-do-not-print-33"
CODEX_JSON = f"{HOME}/.config/concorde/codex.json"
ENV = {
    "HOME": HOME,
    "PATH": "/usr/bin:/bin",
    "ANTHROPIC_API_KEY": SECRET,
    "CODEX_GATEWAY_TOKEN": CODEX_KEY,
}
"""The Codex CLI's key comes by the variable the machine's codex.json names (never a file: the
user's ~/.codex/auth.json is no credential of a run, issue 33)."""
MODEL_MAP = {"schema_version": 1, "models": {"m-local": {"pi": "local/m"}}}
WORKERS = {
    "schema_version": 2,
    "enabled_models": {"m-local": {}},
    "default": {"model": "m-local"},
    "operations": {
        "implement": {"workers": {"reviewer": {"model": "m-local", "backend": "claude"}}}
    },
}
"""A worker on each backend: every line is judged."""
PI_ONLY = {"schema_version": 2, "enabled_models": {"m-local": {}}, "default": {"model": "m-local"}}


def machine() -> FakeFileSystem:
    """Everything a run needs, as install-agents and a user leave it."""
    fs = FakeFileSystem()
    for name in ("claude", "pi"):
        fs.write(f"{MODULES}/.bin/{name}", "#!/bin/sh\n", 0o755)
    fs.write(f"{MODULES}/{native_relative()}", "ELF", 0o755)  # the Codex CLI (issue 33)
    fs.write(f"{HOME}/.codex/auth.json", '{"OPENAI_API_KEY": "codex-do-not-print"}', 0o600)
    fs.write(
        CODEX_JSON,
        json.dumps(
            {
                "schema_version": 1,
                "base_url": "http://127.0.0.1:4000/v1",
                "key_env": "CODEX_GATEWAY_TOKEN",
            }
        ),
    )
    fs.write(f"{SRT}/dist/index.js", "// srt\n")
    for tool in ("bwrap", "socat", "unshare", "nsenter", "setpriv", "mount", "rg", "fdfind"):
        fs.write(f"/usr/bin/{tool}", "", 0o755)
    for tool in ("node", "git"):
        fs.write(f"/usr/bin/{tool}", "", 0o755)
    fs.write(f"{HOME}/.config/concorde/models.json", json.dumps(MODEL_MAP))
    fs.write(f"{HOME}/.claude/.credentials.json", CLAUDE_SECRET, 0o600)
    fs.write(f"{HOME}/.pi/agent/auth.json", PI_SECRET, 0o600)
    fs.write(f"{HOME}/.pi/agent/models.json", json.dumps(PI_MODELS), 0o600)
    fs.write(f"{WORKTREE}/.concorde/workers.json", json.dumps(WORKERS))
    return fs


def doctor(
    fs: FakeFileSystem,
    env: dict[str, str] = ENV,
    cwd: str = WORKTREE,
    versions: FakeProgramVersions | None = None,
    probe: FakeSandboxProbe | None = None,
) -> Doctor:
    found_in = (Installation(CHECKOUT, "/src/cw/node_modules"), Installation(USER_DATA, MODULES))
    return Doctor(
        fs,
        versions or FakeProgramVersions(),
        probe or FakeSandboxProbe(),
        ConfigurationReader(fs, env, profiles=PROFILES),
        env,
        found_in,
        cwd,
        PROFILES,
    )


def states(text_lines: list[str]) -> dict[str, bool]:
    return {
        line.split("] ", 1)[1].split(":", 1)[0]: line.startswith("[ok]")
        for line in text_lines
        if line.startswith("[")
    }


def test_a_machine_with_everything_passes_every_check_and_exits_0() -> None:
    probe = FakeSandboxProbe()
    diagnosis = doctor(machine(), probe=probe).diagnose()
    lines = diagnosis.lines()
    assert diagnosis.status == 0, lines
    # 4: the space's tools; 3: Claude Code's endpoints.json, each backend's files as a run
    # copies them
    assert all(states(lines).values()) and len(states(lines)) == 26
    assert probe.asked == [("/usr/bin/node", SRT)]
    assert any(
        "pi (@mariozechner/pi-coding-agent): 0.73.1 (at least 0.73.1) at "
        f"{MODULES}/.bin/pi (found by the user data folder" in line
        for line in lines
    )
    assert any(
        line.startswith(f"[ok] workers.json of this worktree: {WORKTREE}/.concorde/workers.json")
        for line in lines
    )


def test_no_credential_value_is_ever_part_of_what_doctor_says() -> None:
    diagnosis = doctor(machine()).diagnose()
    said = "\n".join(diagnosis.lines()) + json.dumps(diagnosis.to_json())
    for secret in (SECRET, "oauth-do-not-print-42", "pi-key-do-not-print-77", CODEX_KEY):
        assert secret not in said
    assert "ANTHROPIC_API_KEY" in said and f"{HOME}/.pi/agent/auth.json" in said


@pytest.mark.parametrize(
    ("breaks", "failed", "repair"),
    [
        (
            lambda fs, env: fs.remove(f"{MODULES}/.bin/pi"),
            "pi (@mariozechner/pi-coding-agent)",
            "concorde-workers install-agents (the pinned @mariozechner/pi-coding-agent@0.73.1",
        ),
        (
            lambda fs, env: fs.remove(f"{SRT}/dist/index.js"),
            "sandbox-runtime",
            "@anthropic-ai/sandbox-runtime@0.0.83",
        ),
        (lambda fs, env: fs.remove("/usr/bin/socat"), "socat", "apt-get install socat"),
        (lambda fs, env: fs.remove("/usr/bin/nsenter"), "nsenter", "install util-linux"),
        (lambda fs, env: fs.remove("/usr/bin/fdfind"), "fd", "fd-find"),
        (
            lambda fs, env: fs.write(f"{HOME}/.config/concorde/models.json", "{"),
            "model map",
            "contract.workers.model-map",
        ),
        (
            lambda fs, env: fs.remove(f"{HOME}/.config/concorde/models.json"),
            "model map",
            "contract.workers.model-map",
        ),
        (
            lambda fs, env: (
                fs.remove(f"{HOME}/.claude/.credentials.json"),
                env.pop("ANTHROPIC_API_KEY"),
            ),
            "credentials of the claude backend",
            "set ANTHROPIC_API_KEY",
        ),
        (
            lambda fs, env: (
                fs.remove(f"{HOME}/.pi/agent/auth.json"),
                env.pop("ANTHROPIC_API_KEY"),
            ),
            "credentials of the pi backend",
            "auth.json",
        ),
        (
            lambda fs, env: fs.write(f"{WORKTREE}/.concorde/workers.json", '{"schema_version": 2}'),
            "workers.json of this worktree",
            "contract.workers.worker-configuration",
        ),
    ],
)
def test_each_missing_prerequisite_fails_its_own_line_with_its_repair_and_exits_2(
    breaks: object, failed: str, repair: str
) -> None:
    fs, env = machine(), dict(ENV)
    breaks(fs, env)  # type: ignore[operator]
    diagnosis = doctor(fs, env).diagnose()
    assert diagnosis.status == 2
    bad = [c for c in diagnosis.checks if not c.ok]
    # The one it broke fails; a missing sandbox program also leaves the sandbox untried.
    assert bad[0].name.startswith(failed), [c.name for c in bad]
    assert all(c.name.startswith("a command in the worker's Bash sandbox") for c in bad[1:])
    assert repair in bad[0].repair, bad[0].repair
    line = next(x for x in diagnosis.lines() if x.startswith("[FAILED]"))
    assert repair in line


def test_a_program_older_than_its_floor_is_named_with_its_floor() -> None:
    versions = FakeProgramVersions(versions={"claude": "2.1.197"})
    diagnosis = doctor(machine(), versions=versions).diagnose()
    bad = [c for c in diagnosis.checks if not c.ok]
    assert len(bad) == 1 and "2.1.197" in bad[0].state and "at least 2.1.332" in bad[0].state
    assert "@anthropic-ai/claude-code@2.1.332" in bad[0].repair


@pytest.mark.parametrize(
    ("fact", "ok", "says"),
    [
        (SandboxFact(ran=True, reached=False, detail="refused"), True, "could not reach"),
        (SandboxFact(ran=True, reached=True, detail="connected"), False, "reached 127.0.0.1"),
        (
            SandboxFact(ran=False, reached=False, detail="bwrap: no permission"),
            False,
            "did not run",
        ),
    ],
)
def test_the_sandbox_holds_only_when_its_command_ran_and_reached_nothing(
    fact: SandboxFact, ok: bool, says: str
) -> None:
    check = next(
        c
        for c in doctor(machine(), probe=FakeSandboxProbe(fact)).diagnose().checks
        if c.name.startswith("a command")
    )
    assert check.ok is ok and says in check.state


def test_the_sandbox_is_not_tried_without_its_programs() -> None:
    fs = machine()
    fs.remove("/usr/bin/bwrap")
    probe = FakeSandboxProbe()
    facts = doctor(fs, probe=probe).facts()
    assert facts.sandbox is None and probe.asked == []
    assert not diagnose(facts).ok


def test_an_unreadable_workers_json_is_a_failed_line_never_a_fault() -> None:
    fs = machine()
    fs.fail("read_bytes", f"{WORKTREE}/.concorde/workers.json")
    check = next(c for c in doctor(fs).diagnose().checks if c.name.startswith("workers.json"))
    assert not check.ok and "unreadable" in check.state


def test_workers_json_is_checked_only_inside_a_worktree() -> None:
    assert doctor(machine(), cwd="/tmp").facts().workers_json is None
    assert worktree_of(f"{WORKTREE}/src/app") == WORKTREE
    assert worktree_of("/work/repo/.claude") is None
    assert worktree_of("/work/repo") is None


def pi_only_machine() -> FakeFileSystem:
    """A pi-only setup: workers.json names no backend (pi, the default), no claude at all and
    no claude credentials."""
    fs = machine()
    fs.write(f"{WORKTREE}/.concorde/workers.json", json.dumps(PI_ONLY))
    fs.remove(f"{MODULES}/.bin/claude")
    fs.remove(f"{HOME}/.claude/.credentials.json")
    return fs


def test_doctor_judges_the_backends_the_worktree_uses_and_exits_0_for_a_pi_only_setup() -> None:
    env = {k: v for k, v in ENV.items() if k != "ANTHROPIC_API_KEY"}
    diagnosis = doctor(pi_only_machine(), env).diagnose()
    lines = diagnosis.lines()
    assert diagnosis.status == 0, lines
    assert lines[0] == (
        f"backends judged: pi (those {WORKTREE}/.concorde/workers.json can run a worker on)"
    )
    unused = [c.name for c in diagnosis.checks if not c.needed]
    assert unused == [
        "Claude Code (@anthropic-ai/claude-code)",
        "the Codex CLI (@openai/codex)",
        "credentials of the claude backend",
        "credentials of the codex backend",
        "Claude Code's endpoints.json",
        "Claude Code's .credentials.json as a run copies them",
        "the Codex CLI's codex.json",
        "the Codex CLI's configuration as a run makes it",
        "nested user namespaces (the Codex CLI's own sandbox)",
    ], unused
    assert any(
        line.startswith("[not used] Claude Code (@anthropic-ai/claude-code): not found")
        for line in lines
    )
    assert diagnosis.to_json()["backends"] == ["pi"]
    # what pi needs still fails the verdict
    fs = pi_only_machine()
    fs.remove(f"{HOME}/.pi/agent/auth.json")
    assert doctor(fs, env).diagnose().status == 2


@pytest.mark.parametrize(
    ("backend", "cwd", "status", "judged"),
    [
        ("claude", WORKTREE, 2, ("claude",)),  # --backend claude: claude is missing here
        ("pi", WORKTREE, 0, ("pi",)),
        (None, "/work/elsewhere", 2, ("claude", "pi", "codex")),  # no workers.json: every one
    ],
)
def test_backend_flag_and_no_worktree_choose_what_is_judged(
    backend: str | None, cwd: str, status: int, judged: tuple[str, ...]
) -> None:
    env = {k: v for k, v in ENV.items() if k != "ANTHROPIC_API_KEY"}
    diagnosis = doctor(pi_only_machine(), env, cwd=cwd).diagnose(backend)
    assert (diagnosis.status, diagnosis.backends) == (status, judged), diagnosis.lines()


def test_a_pi_worker_of_a_claude_default_keeps_pi_judged() -> None:
    from concorde_workers.domain.setup.doctor import backends_in_use

    assert backends_in_use(["claude"], default_set=True) == ("claude",)
    assert backends_in_use(["claude", None, "pi"], default_set=True) == ("claude", "pi")
    assert backends_in_use([None], default_set=False) == ("pi",)
    assert backends_in_use(["claude"], default_set=False) == ("claude", "pi")


# --- the Codex CLI's lines say what a codex run takes (issue 33 "Done means") -------------------


def codex_checks(fs: FakeFileSystem, env: dict[str, str]) -> dict[str, tuple[bool, str]]:
    checks = doctor(fs, env).diagnose("codex").checks
    return {c.name: (c.ok, c.state) for c in checks}


def test_doctor_says_what_a_codex_run_uses_and_no_copy_it_does_not_make() -> None:
    """The run copies no file (its CODEX_HOME is its own, with only the generated config.toml),
    takes its key by the one variable codex.json names, and hides the user's auth.json: the
    line said "auth.json as a run copies them", a copy no codex run makes."""
    said = codex_checks(machine(), dict(ENV))
    named = f"the key variable {CODEX_JSON} names"
    assert said["credentials of the codex backend"] == (
        True,
        f"present: $CODEX_GATEWAY_TOKEN ({named}) (never printed)",
    )
    assert said["the Codex CLI's configuration as a run makes it"] == (
        True,
        "copies no file; CODEX_HOME is the run's own config/codex/ holding only the generated "
        f"config.toml; the key reaches each round as $CODEX_GATEWAY_TOKEN ({named}); "
        f"{HOME}/.codex/auth.json hidden from every run, never read",
    )
    assert not [name for name in said if "as a run copies them" in name and "Codex" in name]


def test_a_codex_login_file_alone_is_no_credential_of_a_codex_run() -> None:
    """Without codex.json a run takes OPENAI_API_KEY and nothing else: a ChatGPT login in
    ~/.codex/auth.json reaches no run, so it is never counted as present."""
    fs = machine()
    fs.remove(CODEX_JSON)
    env = {k: v for k, v in ENV.items() if k != "CODEX_GATEWAY_TOKEN"}
    ok, state = codex_checks(fs, env)["credentials of the codex backend"]
    assert not ok
    assert state == "none found (looked at $OPENAI_API_KEY (the key variable without a codex.json))"
    ok, state = codex_checks(fs, {**env, "OPENAI_API_KEY": SECRET})[
        "credentials of the codex backend"
    ]
    assert ok and state == (
        "present: $OPENAI_API_KEY (the key variable without a codex.json) (never printed)"
    )
    made = codex_checks(fs, env)["the Codex CLI's configuration as a run makes it"][1]
    assert "the key reaches each round as $OPENAI_API_KEY" in made


def test_openai_api_key_is_no_codex_credential_when_codex_json_names_another() -> None:
    """A run with codex.json's key_env gets that variable alone (the round's environment, the
    config.toml's env_key): OPENAI_API_KEY set beside it reaches no codex round."""
    said = codex_checks(machine(), {**ENV, "OPENAI_API_KEY": SECRET})
    ok, state = said["credentials of the codex backend"]
    assert ok and "$CODEX_GATEWAY_TOKEN" in state and "OPENAI_API_KEY" not in state
    assert "OPENAI_API_KEY" not in said["the Codex CLI's configuration as a run makes it"][1]


def test_what_doctor_says_a_run_copies_is_what_each_backend_copies() -> None:
    """One truth (issue 31 §1, issue 33): the copies doctor names are `copied_files`, the
    answer each backend's `credential_copies` takes; the Codex CLI's are none."""
    facts = doctor(machine(), dict(ENV)).facts()
    for name, profile in PROFILES.items():
        expected = tuple(o for o, _ in copied_files(profile.credentials, ENV))
        assert facts.copies[name].sources == expected, name
    assert facts.copies["codex"].sources == ()
    uses = facts.copies["codex"].uses
    assert uses is not None and uses.run_directory == "config/codex"
    assert uses.settings == "config/codex/config.toml"
