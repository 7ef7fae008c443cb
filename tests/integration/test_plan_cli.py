"""`concorde-workers plan` end to end: real Git, the real adapters, `cli.main` in process.

Every test runs in the `project` fixture (tests/integration/conftest.py): a real repository with a
`git worktree add .claude/worktrees/task` worktree, a committed `.concorde/workers.json`, a model
map at the default XDG location and an isolated environment. The CLI must answer 0 (a run would
launch) or 2 (refused, naming the file or entry and the repair), never a traceback or status 3.
"""

from __future__ import annotations

import copy
import hashlib
import io
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from profiles import examples

from concorde_workers.adapters.cli.main import main
from concorde_workers.domain.boundary.grant import parse_grant
from concorde_workers.domain.boundary.task_types import TASK_TYPES

pytestmark = pytest.mark.integration

SECRET_ANTHROPIC = "sk-ant-do-not-print-0123"
SECRET_OPENAI = "sk-openai-do-not-print-4567"
PROXY_PASSWORD = "proxy-pass-89"

CLAUDE_ENV_KEYS = {
    "PATH",
    "LANG",
    "HOME",
    "TMPDIR",
    "CLAUDE_CONFIG_DIR",
    "CLAUDE_CODE_DISABLE_CLAUDE_MDS",
    "CLAUDE_CODE_DISABLE_AUTO_MEMORY",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
}
PI_ENV_KEYS = {
    "PATH",
    "LANG",
    "HOME",
    "TMPDIR",
    "CLAUDE_CODE_TMPDIR",
    "PI_CODING_AGENT_DIR",
    "PI_OFFLINE",
    "PI_SKIP_VERSION_CHECK",
    "PI_TELEMETRY",
}
TEXT_SECTIONS = (
    "Resolution",
    "Placement",
    "Git administrative paths (hidden from every tool)",
    "Grant",
    "Deny rules",
    "Sandbox denyRead",
    "Sandbox allowRead",
    "Sandbox allowWrite",
    "Tool set",
    "Round 1 command",
    "Round 1 environment (cleared, then exactly)",
    "Digests the run record would carry",
    "Brief",
)


@dataclass
class Result:
    status: int
    out: str
    err: str

    @property
    def both(self) -> str:
        return self.out + self.err

    def json(self) -> dict[str, Any]:
        data = json.loads(self.out)
        assert isinstance(data, dict)
        return data


def plan(*argv: str) -> Result:
    out, err = io.StringIO(), io.StringIO()
    status = main(["plan", *argv], out, err)
    result = Result(status, out.getvalue(), err.getvalue())
    assert "Traceback" not in result.both
    assert "internal error" not in result.err, result.err
    assert status in (0, 2), (status, result.both)
    return result


def sections(text: str) -> dict[str, list[str]]:
    """The rendered plan's sections: an unindented title line, then its two-space items."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines()[2:]:
        if not line:
            current = None
        elif line.startswith("  ") and current is not None:
            current.append(line[2:])
        elif not line.startswith(" "):
            current = found.setdefault(line, [])
    return found


def section(found: dict[str, list[str]], prefix: str) -> list[str]:
    titles = [t for t in found if t.startswith(prefix)]
    assert len(titles) == 1, (prefix, list(found))
    return found[titles[0]]


def header(text: str) -> tuple[str, str]:
    """(run id, runtime directory) from the plan's second line."""
    match = re.search(r"run id (\S+), runtime directory (\S+) \(not created\)", text)
    assert match, text[:300]
    return match.group(1), match.group(2)


def sha256(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def grant_digest(grant: dict[str, Any]) -> str:
    canonical = json.dumps(grant, sort_keys=True, separators=(",", ":"))
    return sha256(canonical)


def flags(project: Any, *extra: str) -> list[str]:
    return [
        "--worktree",
        str(project.worktree),
        "--grant",
        str(project.grant_file),
        "--task-type",
        "implement",
        "--instructions",
        project.instructions,
        *extra,
    ]


# --- a run that would launch ---------------------------------------------------------------------


@pytest.mark.req("A worker runs only inside .claude/worktrees/")
@pytest.mark.req("Every Git administrative path is hidden")
def test_claude_plan_without_an_operation_prints_every_section(project: Any) -> None:
    result = plan(*flags(project, "--backend", "claude"))
    assert result.status == 0
    assert result.err == ""
    lines = result.out.splitlines()
    assert lines[0] == "concorde-workers plan — a run would launch"
    rid, rt = header(result.out)
    assert re.fullmatch(r"w-\d{8}T\d{6}-[0-9a-f]{6}", rid)
    assert re.fullmatch(rf"/tmp/concorde-{rid[-6:]}-[0-9a-f]+", rt)
    found = sections(result.out)
    for title in TEXT_SECTIONS:
        section(found, title)
    wt, primary = str(project.worktree), str(project.primary)
    resolution = section(found, "Resolution")
    assert "backend: claude  ← the request" in resolution
    assert section(found, "Placement") == [
        f"holds: {wt} lies directly in {primary}/.claude/worktrees/"
    ]
    assert section(found, "Git administrative paths") == [f"{primary}/.git", f"{wt}/.git"]
    assert section(found, "Grant") == [
        "rw    src/app/",
        "ro    src/app/util.py",
        "ro    docs/notes.md",
        "names README.md",
    ]
    deny = section(found, "Deny rules")
    assert f"Deny rules ({len(deny)})" in found
    for hidden in (
        f"Read(/{wt}/secrets/**)",
        f"Read(/{wt}/src/other/**)",
        f"Read(/{wt}/.git)",
        f"Read(/{primary}/.git/**)",
        f"Edit(/{wt}/src/app/util.py)",
        f"Read(/{wt}/README.md)",
    ):
        assert hidden in deny
    assert not any(rule.startswith("Read(") and "/src/app/main.py" in rule for rule in deny)
    assert section(found, "Sandbox allowWrite") == [
        f"{rt}/home",
        f"{rt}/tmp",
        f"{rt}/work",
        f"{wt}/src/app",
    ]
    assert section(found, "Tool set") == ["Read,Glob,Grep,Edit,Write,Bash"]
    command = section(found, "Round 1 command (cwd " + rt + "/work, the brief on stdin)")
    # The whole agent runs confined: bwrap first, the helper, then the agent's own command.
    assert command[0].startswith(
        "/usr/bin/env --ignore-signal=TERM -- "
        f"{project.bin}/bwrap --unshare-user --uid 0 --gid 0 "
        "--unshare-pid --unshare-ipc --unshare-cgroup --die-with-parent "
        "--info-fd '{namespace-report-fd}' --ro-bind / / "
    )
    # The host's interpreter runs the waiter that reports the agent's exact exit status.
    assert re.search(
        re.escape("concorde-confine ")
        + r"/\S+python\S* -I -S "
        + re.escape(
            f"{rt}/control/wait.py '{{exit-status-fd}}' /usr/bin/env -u PWD --default-signal=TERM -- "
            f"{project.bin}/claude -p --settings {rt}/control/settings.json "
            "--tools Read,Glob,Grep,Edit,Write,Bash --json-schema '<"
        ),
        command[0],
    ), command[0]
    confinement = section(found, next(t for t in found if t.startswith("Confinement: ")))
    assert f"empty file      {wt}/README.md  (names only)" in confinement
    assert f"writable        {wt}/src/app  (rw in the grant (src/app/))" in confinement
    assert command[0].endswith(
        " characters of JSON>' --output-format stream-json --verbose --permission-mode "
        "bypassPermissions --allow-dangerously-skip-permissions --strict-mcp-config "
        "--max-turns 200"
    )
    env = dict(line.split("=", 1) for line in section(found, "Round 1 environment"))
    assert set(env) == CLAUDE_ENV_KEYS
    assert env["HOME"] == f"{rt}/home"
    assert env["TMPDIR"] == f"{rt}/tmp"
    assert env["CLAUDE_CONFIG_DIR"] == f"{rt}/config"
    assert env["PATH"] == os.environ["PATH"]
    digests = dict(line.split(": ", 1) for line in section(found, "Digests"))
    assert digests["grant_digest"] == grant_digest(project.grant)
    assert digests["grant_digest"] == parse_grant(project.grant).digest()
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", digests["settings_digest"])
    brief = section(found, "Brief")
    assert brief[0] == "# Concorde worker task (implement)"
    assert project.instructions in brief
    assert f"- {wt}/src/app/" in brief


def mine(items: list[str]) -> list[str]:
    """`items` without those naming another run's runtime directory (`concorde-*` in the temp
    root; this run's own is written `<rt>` by then)."""
    return [item for item in items if not re.search(r"/concorde-[^/<]", item)]


def test_the_json_document_holds_what_the_text_shows(project: Any) -> None:
    text = plan(*flags(project, "--backend", "claude"))
    doc = plan(*flags(project, "--backend", "claude", "--json"))
    assert text.status == doc.status == 0
    data = doc.json()
    found = sections(text.out)
    t_rid, t_rt = header(text.out)
    rid, rt = data["run_id"], data["runtime_directory"]

    def same(value: str) -> str:
        return value.replace(rt, "<rt>").replace(rid, "<rid>")

    def same_text(value: str) -> str:
        return value.replace(t_rt, "<rt>").replace(t_rid, "<rid>")

    assert data["verdict"] == "launch"
    assert data["refusal"] is None
    assert data["worktree"] == str(project.worktree)
    assert data["task_type"] == "implement"
    assert data["placement"] == {
        "verdict": "holds",
        "worktree": str(project.worktree),
        "primary": str(project.primary),
        "name": "task",
    }
    assert data["git_admin_paths"] == section(found, "Git administrative paths")
    assert data["grant"] == project.grant["entries"]
    assert data["deny_rules"]["count"] == len(data["deny_rules"]["rules"])
    # Other runs' runtime directories come and go between the two plans on a shared machine
    # (each plan hides those it finds): only what this test's own plans made is compared.
    assert mine([same(r) for r in data["deny_rules"]["rules"]]) == mine(
        [same_text(r) for r in section(found, "Deny rules")]
    )
    for key in ("denyRead", "allowRead", "allowWrite", "denyWrite"):
        shown = found.get(f"Sandbox {key}", [])
        assert mine([same(p) for p in data["sandbox"][key]]) == mine([same_text(p) for p in shown])
    assert data["tools"] == section(found, "Tool set")[0]
    round1 = data["round1"]
    assert round1["cwd"] == f"{rt}/work"
    assert round1["stdin"] == "the brief"
    agent = round1["argv"][round1["argv"].index("--default-signal=TERM") + 2 :]
    assert round1["argv"][3] == f"{project.bin}/bwrap" and agent[0] == f"{project.bin}/claude"
    assert data["confinement"]["mounts"][0]["kind"] in ("empty directory", "read-only")
    schema = json.loads(round1["argv"][round1["argv"].index("--json-schema") + 1])
    assert schema["type"] == "object"
    assert {same(f"{k}={v}") for k, v in round1["environment"].items()} == {
        same_text(line) for line in section(found, "Round 1 environment")
    }
    assert data["control_files"] == [
        f"{rt}/control/empty",
        f"{rt}/control/read_hook.py",
        f"{rt}/control/read_hook_source.py",
        f"{rt}/control/result.schema.json",
        f"{rt}/control/search_hook.py",
        f"{rt}/control/search_hook_source.py",
        f"{rt}/control/settings.json",
        f"{rt}/control/wait.py",
        f"{rt}/control/write_hook.py",
        f"{rt}/control/write_hook_source.py",
    ]
    assert data["brief"].rstrip("\n").splitlines() == [
        same_text(line) for line in section(found, "Brief")
    ]
    assert data["digests"]["brief_digest"] == sha256(data["brief"])
    text_digests = dict(line.split(": ", 1) for line in section(found, "Digests"))
    assert text_digests["grant_digest"] == data["digests"]["grant_digest"]
    assert text_digests["brief_digest"] == data["digests"]["brief_digest"]
    assert {k: v["value"] for k, v in data["resolution"].items()}["backend"] == "claude"


def test_the_plan_says_where_the_program_came_from(
    project: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    def program_line() -> str:
        result = plan(
            str(project.request_file),
            "--operation",
            "implement",
            "--worker",
            "worker",
            "--declare",
            "implement:reviewer",
        )
        assert result.status == 0, result.both
        return section(sections(result.out), "Resolution")[-1]

    assert program_line() == (f"program: {project.bin}/pi  ← the pi program $CONCORDE_PI names")
    monkeypatch.delenv("CONCORDE_PI")
    assert program_line() == f"program: {project.bin}/pi  ← the pi program on PATH"


@pytest.mark.req("A worker's model comes from its worker configuration alone")
@pytest.mark.req("A worker's local model id comes from the model map alone")
def test_an_operation_worker_on_pi_resolves_from_workers_json_and_the_map(
    project: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET_ANTHROPIC)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET_OPENAI)
    result = plan(
        str(project.request_file),
        "--operation",
        "implement",
        "--worker",
        "worker",
        "--declare",
        "implement:reviewer",
    )
    assert result.status == 0, result.both
    _, rt = header(result.out)
    rid = header(result.out)[0]
    found = sections(result.out)
    config, models = str(project.config_file), str(project.model_map)
    resolution = section(found, "Resolution")
    assert resolution[:4] == [
        f"backend: pi  ← {config}: Concorde's default worker backend",
        f"model: m-local  ← {config}: operations.implement.default",
        f"local_model: local/m-local  ← {models}",
        f"reasoning: medium  ← {config}: operations.implement.default",
    ]
    # values as a person reads them, not Python's reprs (issue 19 §2)
    assert resolution[4].startswith("limits: timeout_seconds 600, max_turns 25, ")
    # the project's environment names pi by CONCORDE_PI (tests/integration/conftest.py)
    assert resolution[-1] == f"program: {project.bin}/pi  ← the pi program $CONCORDE_PI names"
    assert section(found, "Tool set") == ["read,grep,find,ls,edit,write,bash,concorde_result"]
    command = section(found, "Round 1 command (cwd " + rt + "/work, the brief on stdin)")
    (line,) = command
    assert line.startswith(f"/usr/bin/env --ignore-signal=TERM -- {project.bin}/bwrap ")
    agent = " --default-signal=TERM -- "
    assert [line[line.index(agent) + len(agent) :]] == [
        f"{project.bin}/pi -p --mode json --no-extensions -e {rt}/control/permission.ts "
        "--no-context-files --no-skills --no-prompt-templates "
        "--tools read,grep,find,ls,edit,write,bash,concorde_result "
        f"--session-dir {rt}/config/sessions --session {rt}/config/sessions/{rid}.jsonl "
        "--model local/m-local --thinking medium"
    ]
    assert len(section(found, "Adapted to the installed program")) == 2
    env = dict(line.split("=", 1) for line in section(found, "Round 1 environment"))
    assert set(env) == PI_ENV_KEYS | {"ANTHROPIC_API_KEY", "OPENAI_API_KEY"}
    assert env["ANTHROPIC_API_KEY"] == env["OPENAI_API_KEY"] == "<redacted>"
    assert env["PI_CODING_AGENT_DIR"] == f"{rt}/config"
    assert env["CLAUDE_CODE_TMPDIR"] == env["TMPDIR"] == f"{rt}/tmp"
    digests = dict(line.split(": ", 1) for line in section(found, "Digests"))
    assert digests["settings_digest"].startswith("sha256:")  # of control/permission.ts
    assert digests["grant_digest"] == grant_digest(project.grant)
    assert SECRET_ANTHROPIC not in result.both and SECRET_OPENAI not in result.both


def test_an_operation_worker_on_claude_takes_the_configured_backend_model_and_level(
    project: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET_ANTHROPIC)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET_OPENAI)
    monkeypatch.setenv("HTTPS_PROXY", f"http://user:{PROXY_PASSWORD}@proxy.invalid:3128")
    argv = [
        str(project.request_file),
        "--operation",
        "implement",
        "--worker",
        "reviewer",
        "--declare",
        "implement:worker",
    ]
    result = plan(*argv)
    assert result.status == 0, result.both
    found = sections(result.out)
    config = str(project.config_file)
    resolution = section(found, "Resolution")
    assert resolution[:4] == [
        f"backend: claude  ← {config}: operations.implement.workers.reviewer",
        f"model: m-claude  ← {config}: operations.implement.workers.reviewer",
        f"local_model: claude-x-1  ← {project.model_map}",
        f"reasoning: high  ← {config}: enabled_models.m-claude",
    ]
    command = section(found, "Round 1 command")[0]
    assert command.endswith("--max-turns 25 --model claude-x-1 --effort high")
    env = dict(line.split("=", 1) for line in section(found, "Round 1 environment"))
    assert set(env) == CLAUDE_ENV_KEYS | {"ANTHROPIC_API_KEY", "HTTPS_PROXY"}
    assert env["ANTHROPIC_API_KEY"] == "<redacted>"
    assert env["HTTPS_PROXY"] == "http://user:<redacted>@proxy.invalid:3128"
    data = plan(*argv, "--json").json()
    assert data["round1"]["environment"]["ANTHROPIC_API_KEY"] == "<redacted>"
    assert data["resolution"]["backend"] == {
        "value": "claude",
        "source": f"{config}: operations.implement.workers.reviewer",
    }
    assert data["resolution"]["local_model"]["value"] == "claude-x-1"
    for text in (result.both, json.dumps(data)):
        assert SECRET_ANTHROPIC not in text
        assert SECRET_OPENAI not in text
        assert PROXY_PASSWORD not in text


@pytest.mark.req("A worker of every Protocol task type launches")
@pytest.mark.parametrize("task_type", TASK_TYPES)
def test_every_protocol_task_type_plans_a_launch(project: Any, task_type: str) -> None:
    grant = dict(copy.deepcopy(project.grant), task_type=task_type)
    path = project.write_json(project.root / f"grant-{task_type}.json", grant)
    result = plan(
        *("--worktree", str(project.worktree), "--grant", str(path), "--backend", "claude"),
        *("--instructions", project.instructions, "--json"),
    )
    assert result.status == 0, result.out
    data = result.json()
    assert data["task_type"] == task_type
    expected = {
        "implement": "Read,Glob,Grep,Edit,Write,Bash",
        "specify": "Read,Glob,Grep,Edit,Write",
        "code-to-spec": "Read,Glob,Grep,Edit,Write",
    }.get(task_type, "Read,Glob,Grep")
    assert data["tools"] == expected


def test_plan_example_builds_its_repository_in_the_temporary_folder(project: Any) -> None:
    result = plan("--example", "--keep")
    assert result.status == 0, result.both
    first = result.out.splitlines()[0]
    assert first.startswith("example repository: ")
    example = Path(first.split(": ", 1)[1].strip())
    assert example.is_relative_to(project.tmp)
    assert (example / ".claude" / "worktrees" / "example" / ".git").is_file()
    assert f"kept (--keep): {example}" in result.err
    assert "concorde-workers plan — a run would launch" in result.out
    data = plan("--example", "--json").json()
    assert data["verdict"] == "launch"
    assert Path(data["worktree"]).is_relative_to(project.tmp)


def test_plan_example_removes_its_throwaway_repository_unless_kept(project: Any) -> None:
    """Issue 12 §5: nothing of `plan --example` is left in the temporary folder."""
    before = set(project.tmp.iterdir())
    result = plan("--example")
    assert result.status == 0, result.both
    example = Path(result.out.splitlines()[0].split(": ", 1)[1].strip())
    assert not example.exists() and set(project.tmp.iterdir()) == before
    as_json = plan("--example", "--json")
    assert as_json.json()["verdict"] == "launch"
    assert set(project.tmp.iterdir()) == before


# --- plan writes nothing --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ("--backend", "claude"),
        ("--backend", "pi"),
        ("--backend", "claude", "--json"),
        ("--operation", "implement", "--worker", "reviewer", "--declare", "implement:worker"),
        ("--task-type", "deploy"),
    ],
)
def test_plan_writes_nothing_and_creates_no_runtime_directory(
    project: Any, take_snapshot: Any, argv: tuple[str, ...]
) -> None:
    roots = [project.root]
    before = take_snapshot(roots)
    result = plan(str(project.request_file), *argv, "--json")
    after = take_snapshot(roots)
    assert after == before
    data = result.json()
    assert not os.path.lexists(data["runtime_directory"])
    assert not any(Path("/tmp").glob(f"concorde-{data['run_id'][-6:]}-*"))


# --- every bad input is a refusal that names the file or entry and the repair --------------------


@dataclass(frozen=True)
class Bad:
    """A bad input: how to make it, the argv, and what the refusal must say."""

    name: str
    make: Callable[[Any], list[str]]
    code: str
    reason: str
    says: Callable[[Any], list[str]]


def _told(argv: list[str]) -> list[str]:
    """A request of flags with its instructions (a request without them is refused, issue 31
    §3): the bad input stays the only one."""
    return [*argv, "--instructions", "x"] if argv[0] == "--worktree" else argv


def _request_text(text: str) -> Callable[[Any], list[str]]:
    def make(p: Any) -> list[str]:
        (p.root / "bad.json").write_text(text)
        return [str(p.root / "bad.json")]

    return make


def _op(worker: str = "worker", *extra: str) -> list[str]:
    return ["--operation", "implement", "--worker", worker, *extra]


def _with_config(data: Any) -> Callable[[Any], list[str]]:
    def make(p: Any) -> list[str]:
        text = data if isinstance(data, str) else json.dumps(data)
        p.config_file.write_text(text)
        p.commit_configuration()
        return [str(p.request_file), *_op("worker", "--declare", "implement:reviewer")]

    return make


def _with_map(data: Any) -> Callable[[Any], list[str]]:
    def make(p: Any) -> list[str]:
        if data is None:
            p.model_map.unlink()
        else:
            p.model_map.write_text(data if isinstance(data, str) else json.dumps(data))
        return [str(p.request_file), *_op("worker", "--declare", "implement:reviewer")]

    return make


def _bad_grant(p: Any) -> list[str]:
    grant = copy.deepcopy(p.grant)
    grant["entries"].insert(1, {"path": "/etc/passwd", "level": "ro"})
    return ["--worktree", str(p.worktree), "--grant", str(p.write_json(p.root / "g.json", grant))]


def _other_worktree(p: Any) -> list[str]:
    return [
        "--worktree",
        str(p.add_worktree(p.root / "elsewhere", "elsewhere")),
        "--grant",
        str(p.grant_file),
    ]


def _nested_worktree(p: Any) -> list[str]:
    nested = p.worktree.parent / "a" / "b"
    return ["--worktree", str(p.add_worktree(nested, "nested")), "--grant", str(p.grant_file)]


def _plain_directory(p: Any) -> list[str]:
    (p.root / "plain").mkdir()
    return ["--worktree", str(p.root / "plain"), "--grant", str(p.grant_file)]


def _retired(p: Any) -> list[str]:
    p.config_file.unlink()
    (p.config_file.parent / "worker-models.json").write_text("{}")
    p.commit_configuration()
    return [str(p.request_file), *_op()]


def _config_gone(p: Any) -> list[str]:
    p.config_file.unlink()
    p.commit_configuration()
    return [str(p.request_file), *_op()]


def _unmapped(p: Any) -> list[str]:
    models = copy.deepcopy(p.models)
    del models["models"]["m-local"]
    p.write_json(p.model_map, models)
    return [str(p.request_file), *_op("worker", "--declare", "implement:reviewer")]


def _no_sandbox_runtime(p: Any) -> list[str]:
    os.environ["CONCORDE_SANDBOX_RUNTIME"] = str(p.root / "no-srt")
    return [str(p.request_file), "--backend", "pi"]


def _no_pi(p: Any) -> list[str]:
    os.environ["CONCORDE_PI"] = str(p.root / "no-pi")
    return [str(p.request_file), *_op("worker", "--declare", "implement:reviewer")]


BAD_INPUTS = [
    Bad(
        "request file missing",
        lambda p: [str(p.root / "nope.json")],
        "request_invalid",
        "input",
        lambda p: [
            f"the request file {p.root}/nope.json cannot be read: No such file or directory"
        ],
    ),
    Bad(
        "request file not JSON",
        _request_text('{"worktree": \n  ,}'),
        "request_invalid",
        "input",
        lambda p: [
            f"the request file {p.root}/bad.json is not valid JSON: it is not JSON: "
            "Expecting value at line 2, column 3; repair the file"
        ],
    ),
    Bad(
        "request file duplicate key",
        _request_text('{"worktree": "/a", "worktree": "/b"}'),
        "request_invalid",
        "input",
        lambda p: [
            f"the request file {p.root}/bad.json is not valid JSON: it has the duplicate "
            'key "worktree"; repair the file'
        ],
    ),
    Bad(
        "request file not an object",
        _request_text("[1, 2]"),
        "request_invalid",
        "input",
        lambda p: [f"the request file {p.root}/bad.json must hold one JSON object"],
    ),
    Bad(
        "request file unknown field",
        lambda p: [str(p.request(name="unknown.json", colour="blue"))],
        "request_invalid",
        "input",
        lambda p: [
            f"the request file {p.root}/unknown.json is invalid at colour: Extra inputs "
            "are not permitted; the fields are those of the Inputs table: backend,"
        ],
    ),
    Bad(
        "request names no worktree",
        lambda p: [str(p.request(name="nowt.json", worktree=None))],
        "request_invalid",
        "input",
        lambda p: [f"the request file {p.root}/nowt.json names no worktree: give --worktree"],
    ),
    Bad(
        "bad backend value",
        lambda p: [str(p.request_file), "--backend", "emacs"],
        "request_invalid",
        "input",
        lambda p: [
            f"the request file {p.request_file} is invalid at backend: Input should be "
            "'claude', 'pi' or 'codex'"
        ],
    ),
    Bad(
        "grant file malformed",
        _bad_grant,
        "grant_malformed",
        "input",
        lambda p: [
            'grant entry 2 ({"path": "/etc/passwd", "level": "ro"}) is malformed: its '
            "path '/etc/passwd' is absolute; a grant path is relative to the worktree"
        ],
    ),
    Bad(
        "grant file not JSON",
        lambda p: (
            p.grant_file.write_text("{"),
            ["--worktree", str(p.worktree), "--grant", str(p.grant_file)],
        )[1],
        "request_invalid",
        "input",
        lambda p: [f"the grant file {p.grant_file} is not valid JSON: it is not JSON:"],
    ),
    Bad(
        "unknown task type",
        lambda p: [str(p.request_file), "--task-type", "deploy"],
        "grant_unavailable",
        "input",
        lambda p: [
            "the request's task type 'deploy' is not a known task type; a known task type "
            "is one of " + ", ".join(TASK_TYPES)
        ],
    ),
    Bad(
        "worktree missing",
        lambda p: ["--worktree", str(p.worktree.parent / "gone"), "--grant", str(p.grant_file)],
        "worktree_misplaced",
        "environment",
        lambda p: [
            f"the worktree {p.worktree.parent}/gone does not exist or is no directory; "
            "create it with git worktree add under .claude/worktrees/"
        ],
    ),
    Bad(
        "not a Git worktree",
        _plain_directory,
        "worktree_misplaced",
        "environment",
        lambda p: [
            f"Git found no primary worktree for the worktree {p.root}/plain (Git said: "
            "fatal: not a git repository",
            ".claude/worktrees/",
        ],
    ),
    Bad(
        "the primary worktree itself",
        lambda p: ["--worktree", str(p.primary), "--grant", str(p.grant_file)],
        "worktree_misplaced",
        "environment",
        lambda p: [
            f"the worktree {p.primary} is the primary worktree itself; a worker runs only "
            f"in a worktree lying directly in {p.primary}/.claude/worktrees/ (create one "
            f"with git worktree add {p.primary}/.claude/worktrees/<name>)"
        ],
    ),
    Bad(
        "a worktree elsewhere",
        _other_worktree,
        "worktree_misplaced",
        "environment",
        lambda p: [
            f"the worktree {p.root}/elsewhere does not lie in the primary worktree's "
            f".claude/worktrees/; a worker runs only in a worktree lying directly in "
            f"{p.primary}/.claude/worktrees/"
        ],
    ),
    Bad(
        "a nested worktree",
        _nested_worktree,
        "worktree_misplaced",
        "environment",
        lambda p: [
            f"the worktree {p.worktree.parent}/a/b lies below, not directly in, the "
            f"primary worktree's .claude/worktrees/; a worker runs only in a worktree "
            f"lying directly in {p.primary}/.claude/worktrees/"
        ],
    ),
    Bad(
        "a directory inside the worktree",
        lambda p: ["--worktree", str(p.worktree / "src"), "--grant", str(p.grant_file)],
        "worktree_misplaced",
        "environment",
        lambda p: [
            f"the worktree {p.worktree}/src is not the top level of a Git worktree (Git's "
            f"top level is {p.worktree})"
        ],
    ),
    Bad(
        "workers.json missing",
        _config_gone,
        "config_missing",
        "input",
        lambda p: [f"The worker configuration {p.config_file} is missing", "and commit it"],
    ),
    Bad(
        "workers.json invalid",
        _with_config({"schema_version": 2}),
        "config_invalid",
        "input",
        lambda p: [
            f"The worker configuration {p.config_file} is invalid: it lacks the required "
            f"field enabled_models. Edit {p.config_file} so it follows "
            "contract.workers.worker-configuration (schema_version 2), then commit it."
        ],
    ),
    Bad(
        "workers.json not JSON",
        _with_config('{"schema_version": 2,'),
        "config_invalid",
        "input",
        lambda p: [
            f"The worker configuration {p.config_file} is invalid: it is not JSON: "
            "Expecting property name enclosed in double quotes at line 1, column 22"
        ],
    ),
    Bad(
        "workers.json schema_version 1",
        _with_config({"schema_version": 1, "models": {}}),
        "config_invalid",
        "input",
        lambda p: [
            f"The worker configuration {p.config_file} is invalid: it has schema_version 1",
            str(p.model_map),
        ],
    ),
    Bad(
        "retired worker-models.json",
        _retired,
        "config_invalid",
        "input",
        lambda p: [
            f"still has the retired file {p.config_file.parent}/worker-models.json",
            f"delete {p.config_file.parent}/worker-models.json",
            str(p.model_map),
        ],
    ),
    Bad(
        "an undeclared worker in workers.json",
        lambda p: [str(p.request_file), *_op()],
        "config_invalid",
        "input",
        lambda p: [
            "operations.implement.workers.reviewer names a worker id Operation implement "
            "does not declare (declared: worker)",
            "Remove or rename operations.implement.workers.reviewer",
        ],
    ),
    Bad(
        "model map missing",
        _with_map(None),
        "model_map_missing",
        "environment",
        lambda p: [f"The model map {p.model_map} is missing", '"m-local": {"pi": "<provider/id>"}'],
    ),
    Bad(
        "model map invalid",
        _with_map("{\n"),
        "model_map_invalid",
        "environment",
        lambda p: [
            f"The model map {p.model_map} is invalid: it is not JSON: "
            "Expecting property name enclosed in double quotes at line 2, column 1"
        ],
    ),
    Bad(
        "model map wrong schema",
        _with_map({"schema_version": 2, "models": {}}),
        "model_map_invalid",
        "environment",
        lambda p: [
            f"The model map {p.model_map} is invalid: schema_version is 2; this reader reads 1"
        ],
    ),
    Bad(
        "model unmapped",
        _unmapped,
        "model_unmapped",
        "environment",
        lambda p: [
            f"The model map {p.model_map} gives no local id for these workers:",
            "- worker worker of Operation implement: model m-local (from "
            "operations.implement.default) on backend pi (from Concorde's default worker "
            "backend)",
            '  "m-local": {"pi": "<provider/id>"}',
        ],
    ),
    Bad(
        "--declare malformed",
        lambda p: [str(p.request_file), *_op("worker", "--declare", "implement")],
        "request_invalid",
        "input",
        lambda p: [
            "--declare 'implement' is not OPERATION:WORKER, such as --declare implement:worker"
        ],
    ),
    Bad(
        "--backend conflicting with workers.json",
        lambda p: [
            str(p.request_file),
            *_op("worker", "--declare", "implement:reviewer", "--backend", "claude"),
        ],
        "request_invalid",
        "input",
        lambda p: [
            f"the request asks for the claude backend, but the worker configuration "
            f"{p.config_file} chooses pi for worker worker of Operation implement "
            "(Concorde's default worker backend)",
            "drop --backend",
        ],
    ),
    Bad(
        "the pi program missing",
        _no_pi,
        "backend_missing",
        "environment",
        lambda p: [f"its program {p.root}/no-pi is not found", "set CONCORDE_PI"],
    ),
    Bad(
        "the sandbox runtime missing",
        _no_sandbox_runtime,
        "pi_runtime_missing",
        "environment",
        lambda p: [
            f"sandbox-runtime (no dist/index.js in {p.root}/no-srt)",
            "set CONCORDE_SANDBOX_RUNTIME to the package directory",
        ],
    ),
]


@pytest.mark.req("Every refusal before a run has its fixed reason")
@pytest.mark.req("A refusal of the model map names the map")
@pytest.mark.req("A worker without a settled model is refused")
@pytest.mark.req("A worker the model map cannot place is refused")
@pytest.mark.req("An unmapped model's refusal names the entry to add")
@pytest.mark.req("A malformed grant's refusal names the entry")
@pytest.mark.req("A task type the Protocol does not define is refused")
@pytest.mark.parametrize("bad", BAD_INPUTS, ids=[b.name for b in BAD_INPUTS])
def test_every_bad_input_is_a_refusal_naming_the_file_and_repair(
    project: Any, monkeypatch: pytest.MonkeyPatch, bad: Bad
) -> None:
    monkeypatch.setenv("CONCORDE_PI", os.environ["CONCORDE_PI"])  # restored after _no_pi
    monkeypatch.setenv("CONCORDE_SANDBOX_RUNTIME", os.environ["CONCORDE_SANDBOX_RUNTIME"])
    argv = _told(bad.make(project))
    text = plan(*argv)
    assert text.status == 2
    assert (
        f"concorde-workers: refused: {bad.code} ({bad.reason})\n" in text.err
        or f"\nREFUSED {bad.code} (reason {bad.reason})\n" in text.out
    ), text.both
    flat = " ".join(text.both.split())
    for phrase in bad.says(project):
        assert " ".join(phrase.split()) in flat, (phrase, text.both)
    doc = plan(*argv, "--json")
    assert doc.status == 2
    refusal = doc.json()["refusal"]
    assert (refusal["code"], refusal["reason"]) == (bad.code, bad.reason)
    assert doc.json().get("verdict") == "refused"
    assert "round1" not in doc.json()
    for phrase in bad.says(project):
        assert " ".join(phrase.split()) in " ".join(refusal["message"].split())


MISPLACED = [b for b in BAD_INPUTS if b.code == "worktree_misplaced"]


@pytest.mark.parametrize("bad", MISPLACED, ids=[b.name for b in MISPLACED])
def test_with_an_operation_and_a_worker_a_worktree_problem_is_said_as_itself(
    project: Any, bad: Bad
) -> None:
    """Issue 19 §2: with --operation/--worker a misplaced worktree was refused config_missing
    (it cannot hold the configuration), hiding the placement's own refusal and its repair; plan
    and run now say the same worktree_misplaced as without them."""
    argv = _told([*bad.make(project), *_op()])
    doc = plan(*argv, "--json")
    refusal = doc.json()["refusal"]
    assert (refusal["code"], refusal["reason"]) == (bad.code, bad.reason), refusal
    for phrase in bad.says(project):
        assert " ".join(phrase.split()) in " ".join(refusal["message"].split())
    out, err = io.StringIO(), io.StringIO()
    parent = project.root / "trace"
    parent.mkdir(exist_ok=True)
    status = main(["run", *argv, "--parent", str(parent), "--json"], out, err)
    said = json.loads(out.getvalue())
    assert status in (1, 2) and err.getvalue() == "", err.getvalue()
    code = said["error"]["code"] if status == 1 else said["refusal"]["code"]
    assert code == "worktree_misplaced", said


def test_a_worker_the_configuration_has_no_entry_for_is_said_not_passed_in_silence(
    project: Any,
) -> None:
    """Issue 19 §2: a mistyped worker id is declared by the caller and so takes the Operation's
    default entry, as the reader's rules say; plan says, in its notes, that the file has no
    entry for it, and run says it on stderr."""
    typo = plan(
        str(project.request_file), *_op("reveiwer", "--declare", "implement:reviewer"), "--json"
    )
    assert typo.status == 0, typo.both
    said = (
        f"{project.config_file} has no entry for worker reveiwer of Operation implement "
        "(its workers: reviewer): it takes operations.implement.default"
    )
    assert said in typo.json()["notes"]
    assert said in " ".join(
        plan(
            str(project.request_file), *_op("reveiwer", "--declare", "implement:reviewer")
        ).out.split()
    )
    known = plan(str(project.request_file), *_op("reviewer"), "--json")
    assert not [n for n in known.json()["notes"] if "has no entry" in n], known.json()["notes"]
    other = plan(
        str(project.request_file),
        "--operation",
        "review",
        "--worker",
        "x",
        "--declare",
        "implement:reviewer",
        "--declare",
        "implement:worker",
        "--json",
    )
    assert other.status == 0, other.both
    assert (
        f"{project.config_file} has no entry for Operation review (its Operations: "
        "implement): worker x takes the file's default entry"
    ) in other.json()["notes"]


def test_a_request_refusal_goes_to_stderr_and_a_plan_refusal_shows_what_was_settled(
    project: Any,
) -> None:
    bad = plan(str(project.root / "nope.json"))
    assert bad.out == ""
    assert bad.err.startswith("concorde-workers: refused: request_invalid (input)\n  the request")
    misplaced = plan(
        *("--worktree", str(project.primary), "--grant", str(project.grant_file)),
        *("--instructions", project.instructions),
    )
    assert misplaced.out.startswith(
        "concorde-workers plan — a run would be refused: worktree_misplaced: the worktree "
        f"{project.primary} "
    )
    found = sections(misplaced.out)
    assert "Placement" not in found
    assert "Round 1 command" not in " ".join(found)
    assert section(found, "Grant")[0] == "rw    src/app/"


# --- defects: bad input that ends in an internal error (status 3) ---------------------------------


def test_a_relative_worktree_in_a_request_file_is_refused(project: Any) -> None:
    """With an Operation, the configuration reader raised ValueError for a relative worktree
    (application/setup/config.py `_absolute`), uncaught by the planner: status 3."""
    path = project.request(name="relative.json", worktree=".claude/worktrees/task")
    for argv in ([str(path), *_op("worker", "--declare", "implement:reviewer")], [str(path)]):
        result = plan(*argv)
        assert result.status == 2
        assert "'.claude/worktrees/task'" in result.both
        assert "not an absolute path" in result.both


@pytest.mark.parametrize("interpreter", ["python", "/usr/bin/", "/"])
def test_a_project_interpreter_that_is_no_absolute_file_path_is_refused(
    project: Any, interpreter: str
) -> None:
    """The environment builder raises ValueError for a project interpreter that is not an
    absolute file path (domain/isolation/environment.py `worker_path`), outside the preparation's try:
    unless the request is refused first, status 3 instead of request_invalid."""
    path = project.request(name="interp.json", project_interpreter=interpreter)
    result = plan(str(path), "--backend", "claude")
    assert result.status == 2
    assert "request_invalid" in result.both
    assert "project interpreter" in result.both or "project_interpreter" in result.both


# --- fuzz: whatever the request file holds, 0 or 2 ------------------------------------------------

_json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
_json = st.recursive(
    _json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


def _mostly(*values: Any) -> st.SearchStrategy[Any]:
    """One of `values` about four times in five, else any JSON value."""
    likely = st.sampled_from(values)
    return st.one_of(likely, likely, likely, likely, _json)


def _field_values(p: Any) -> dict[str, st.SearchStrategy[Any]]:
    wt = str(p.worktree)
    return {
        "backend": _mostly("claude", "pi", "emacs", ""),
        "worktree": _mostly(
            wt, wt + "/", wt + "/src", str(p.primary), "/nope", "", ".claude/worktrees/task"
        ),
        "task_type": _mostly(*TASK_TYPES, "deploy"),
        "instructions": st.text(max_size=40) | _json,
        "runtime_paths": _mostly([], ["/usr"], ["/nope"], [wt + "/secrets"], ["rel"]),
        "project_interpreter": _mostly("/usr/bin/python3", "python", "/usr/bin/"),
        "limits": _mostly(
            {},
            {"max_turns": 3},
            {"max_turns": 0},
            {"max_budget_usd": 0.5},
            {"max_budget_usd": 1e300},
            {"rounds": -1},
        ),
        "reasoning": _mostly("high", "medium", "-x", ""),
        "local_model": _mostly("some/model", "-m", " m", "\x00"),
        "operation": _mostly("implement", "other"),
        "worker": _mostly("worker", "reviewer"),
        "grant": _mostly(
            dict(p.grant, task_type="review-code"),
            {"task_type": "implement"},
            dict(p.grant, entries=[{"path": "../x", "level": "rw"}]),
        ),
        "model": _json,
        "modules": _json,
        "output_schema": _json,
        "parent": _json,
    }


@settings(
    max_examples=examples(0.15),
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_any_request_file_content_gives_0_or_2(project: Any, data: st.DataObject) -> None:
    values = _field_values(project)
    request: dict[str, Any] = {
        "worktree": str(project.worktree),
        "task_type": "implement",
        "grant": copy.deepcopy(project.grant),
    }
    changed = data.draw(
        st.lists(st.sampled_from(sorted(values)), max_size=4, unique=True), label="fields"
    )
    for key in changed:
        request[key] = data.draw(values[key], label=key)
    shape = data.draw(st.sampled_from(["request", "request", "request", "any json"]), label="shape")
    content = json.dumps(request if shape == "request" else data.draw(_json, label="json"))
    (project.root / "fuzz.json").write_text(content)
    result = plan(str(project.root / "fuzz.json"), "--json")
    assert result.json()["verdict"] == ("launch" if result.status == 0 else "refused")


@settings(
    max_examples=examples(0.06),
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(content=st.binary(max_size=200))
def test_any_request_file_bytes_give_0_or_2(project: Any, content: bytes) -> None:
    (project.root / "bytes.json").write_bytes(content)
    result = plan(str(project.root / "bytes.json"))
    assert result.status == 2
    assert "request_invalid (input)" in result.err


# --- a home of / (docs/decisions.md "A home of /") ---------------------------------------------


@pytest.mark.parametrize("backend", ["claude", "pi"])
def test_a_home_of_root_is_refused_with_its_repair_not_hidden_silently(
    project: Any, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HOME=/ (a service account's, a container's): hiding it would hide every program, leaving
    it every credential; the plan says so, names HOME and how to repair it, and plans nothing."""
    monkeypatch.setenv("HOME", "/")
    result = plan(*flags(project, "--backend", backend))
    assert result.status == 2, result.both
    assert "launch_failed" in result.both and "HOME is /: a home of / cannot be hidden" in (
        result.both
    ), result.both
    assert "set HOME to the user's own home directory" in result.both
    assert "Traceback" not in result.both


def test_plan_shows_the_machine_s_claude_endpoint_with_its_token_redacted(
    project: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 19 §2: endpoints.json beside the model map; plan shows where requests go."""
    folder = project.home / ".config" / "concorde"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "endpoints.json").write_text(
        json.dumps(
            {
                "schema_version": 1,
                "claude": {"base_url": "http://127.0.0.1:4000", "token_env": "GATEWAY_TOKEN"},
            }
        )
    )
    monkeypatch.setenv("GATEWAY_TOKEN", "never-shown-7d2")
    doc = plan(str(project.request_file), "--backend", "claude", "--json")
    assert doc.status == 0, doc.both
    env = doc.json()["round1"]["environment"]
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:4000"
    assert env["ANTHROPIC_AUTH_TOKEN"] == "<redacted>" and "never-shown-7d2" not in doc.both
    monkeypatch.delenv("GATEWAY_TOKEN")
    refused = plan(str(project.request_file), "--backend", "claude", "--json")
    assert refused.status == 2 and refused.json()["refusal"]["code"] == "launch_failed"
    assert "export GATEWAY_TOKEN" in refused.json()["refusal"]["message"]
