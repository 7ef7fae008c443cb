"""End-to-end: the boundary of a Claude Code worker, proved by what the model receives.

Each test is one whole `WorkerHost.run` with the real Claude Code 2.1.197 in a real repository
and its real `.claude/worktrees/task` worktree (tests/e2e/conftest.py), against the scripted
Messages API on 127.0.0.1. The script makes one tool call per step and ends with a
StructuredOutput result; every tool result the model gets back is read from the request that
follows the call (the server's request log), so what is asserted is exactly what the worker saw.

Markers: every file the worker may not read holds a unique text, and every file the worker may
not even know about has a unique name; neither may ever reach the model.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from e2e.conftest import DUMMY_CREDENTIALS, ClaudeRun, ClaudeWorld, ok_result
from servers.anthropic_server import Reply, last_tool_result

from concorde_workers.domain.request import Limits

pytestmark = pytest.mark.e2e

Call = tuple[str, dict[str, Any]]
CallStep = Call | Callable[[], Call]

HIDDEN_TEXT = "HIDDEN-CONTENT-q8z1"        # secrets/hidden-name-q8z1.txt: not in the grant
HIDDEN_NAME = "hidden-name-q8z1"
NAMES_TEXT = "NAMES-LEVEL-CONTENT-r2d7"    # README.md: level names
PRIMARY_TEXT = "PRIMARY-CONTENT-k3v9"      # a file of the primary worktree only
PRIMARY_NAME = "primary-only-k3v9"
VISIBLE_TEXT = "VISIBLE-CONTENT-m5w2"      # src/app/visible.py: rw, the positive control
CREDENTIAL_TOKEN = json.loads(DUMMY_CREDENTIALS)["claudeAiOauth"]["accessToken"]


@pytest.fixture
def world(claude_world: ClaudeWorld) -> ClaudeWorld:
    """The e2e world with the markers planted before the run (so the deny rules see them)."""
    wt, primary = claude_world.worktree, claude_world.primary
    (wt / "secrets" / f"{HIDDEN_NAME}.txt").write_text(f"{HIDDEN_TEXT}\n")
    (wt / "README.md").write_text(f"# {NAMES_TEXT}\n")
    (wt / "src" / "app" / "visible.py").write_text(f"V = '{VISIBLE_TEXT}'\n")
    (primary / "src" / "app" / f"{PRIMARY_NAME}.txt").write_text(f"{PRIMARY_TEXT}\n")
    return claude_world


def runtime_dir(world: ClaudeWorld) -> Path:
    """The run's runtime directory (it exists while claude runs)."""
    (found,) = world.temp_root.glob("concorde-*")
    return found


def probe(world: ClaudeWorld, calls: Sequence[CallStep],
          summary: str = "probed") -> tuple[ClaudeRun, list[tuple[str, bool]]]:
    """Run a script of one tool call per step, then a StructuredOutput result; return the run
    and the (text, is_error) tool result of every call, in order. A call may be a function,
    evaluated when its step is answered (when the runtime directory exists)."""
    results: list[tuple[str, bool]] = []

    def step(index: int) -> Callable[[dict[str, Any]], Reply]:
        def reply(body: dict[str, Any]) -> Reply:
            if index:
                found = last_tool_result(body)
                assert found is not None, f"no tool_result after call {index}"
                results.append(found)
            if index == len(calls):
                return Reply.structured(ok_result(summary=summary))
            call = calls[index]
            name, tool_input = call() if callable(call) else call
            return Reply.tool(name, tool_input)
        return reply

    limits = Limits(timeout_seconds=60, max_turns=len(calls) + 2, rounds=0, retries=0,
                    retry_delay_seconds=0)
    run = world.run(*(step(i) for i in range(len(calls) + 1)), limits=limits)
    assert run.server.failures == []
    assert run.record.status == "ok", run.record.error
    assert len(results) == len(calls)
    return run, results


def every_body(run: ClaudeRun) -> str:
    """Everything the server received, as one text."""
    return json.dumps(run.server.log)


def denials(run: ClaudeRun) -> list[tuple[str, dict[str, Any]]]:
    return [(d["tool_name"], d["tool_input"]) for d in run.round(1)["claude"]
            ["permission_denials"]]


# --- (c) Read of what the grant withheld -----------------------------------------------------


@pytest.mark.req("File tools cannot read what the grant withheld when the rules were generated")
@pytest.mark.req("Workers never see Git")
@pytest.mark.req("Every Git administrative path is hidden")
def test_read_of_withheld_files_is_denied(world: ClaudeWorld) -> None:
    wt, primary = world.worktree, world.primary
    targets = {
        "hidden": (wt / "secrets" / f"{HIDDEN_NAME}.txt", HIDDEN_TEXT),
        "names": (wt / "README.md", NAMES_TEXT),
        "primary": (primary / "src" / "app" / f"{PRIMARY_NAME}.txt", PRIMARY_TEXT),
        "git file": (wt / ".git", "gitdir:"),
        "git config": (primary / ".git" / "config", "repositoryformatversion"),
    }
    for path, text in targets.values():
        assert text in path.read_text()

    def credentials() -> Call:
        return ("Read", {"file_path": str(runtime_dir(world) / "config" / ".credentials.json")})

    calls: list[CallStep] = [("Read", {"file_path": str(p)}) for p, _ in targets.values()]
    calls.append(credentials)
    # The positive control: a ro file is read.
    calls.append(("Read", {"file_path": str(wt / "src" / "app" / "util.py")}))
    run, results = probe(world, calls)

    *denied, control = results
    for (label, _), (text, is_error) in zip([*targets.items(), ("credentials", None)],
                                            denied, strict=True):
        assert is_error, (label, text)
        assert "denied by your permission settings" in text, (label, text)
    assert not control[1] and "def util()" in control[0], control
    sent = every_body(run)
    for _, text in targets.values():
        assert text not in sent
    assert CREDENTIAL_TOKEN not in sent
    assert run.round(1)["audit"]["verdict"] == "clean"
    world.assert_cleaned(run)


# --- (d) Grep and Glob from an ancestor ------------------------------------------------------


@pytest.mark.req("File tools cannot read what the grant withheld when the rules were generated")
@pytest.mark.req("Workers never see Git")
@pytest.mark.req("Every Git administrative path is hidden")
def test_search_from_an_ancestor_reveals_nothing_hidden(world: ClaudeWorld) -> None:
    wt, primary = world.worktree, world.primary
    roots = [str(wt), str(primary), "/"]
    pattern = "CONTENT-|gitdir|repositoryformatversion"
    calls: list[CallStep] = []
    for root in roots:
        calls.append(("Grep", {"pattern": pattern, "path": root, "output_mode": "content"}))
        calls.append(("Glob", {"pattern": "**/*", "path": root}))
    # The positive control: a Grep from a granted directory finds the readable file.
    calls.append(("Grep", {"pattern": pattern, "path": str(wt / "src" / "app"),
                           "output_mode": "content"}))
    run, results = probe(world, calls)

    *searches, control = results
    for call, (text, is_error) in zip(calls, searches, strict=False):
        assert is_error and text.startswith("Concorde grant: "), (call, text)
    assert not control[1] and VISIBLE_TEXT in control[0], control
    shown = json.dumps(results)
    for secret in (HIDDEN_TEXT, HIDDEN_NAME, NAMES_TEXT, PRIMARY_TEXT, PRIMARY_NAME, "gitdir",
                   "repositoryformatversion", "secrets/"):
        assert secret not in shown, secret
    assert [(n, i.get("path")) for n, i in denials(run)] == [
        (n, i["path"]) for n, i in calls[:-1]]  # type: ignore[index]
    world.assert_cleaned(run)


# --- (e) Bash: the sandbox, its network, its environment --------------------------------------


def bash(command: str, **extra: Any) -> Call:
    return ("Bash", {"command": command, "description": "probe", **extra})


@pytest.mark.req("Bash runs sandboxed without network")
@pytest.mark.req("An unlisted host is denied, never approved")
@pytest.mark.req("No Bash command runs outside the sandbox")
def test_bash_runs_sandboxed_without_network_or_credentials(world: ClaudeWorld,
                                                             tmp_path: Path) -> None:
    port = world.server.port
    outside = tmp_path / "escaped.txt"
    direct = (f"curl -sS -m 5 -o /dev/null -w 'code=%{{http_code}}' "
              f"http://127.0.0.1:{port}/from-sandbox-curl; echo \" rc=$?\"")
    sock = ("python3 -c 'import socket,sys\n"
            f"s=socket.create_connection((\"127.0.0.1\",{port}),timeout=5)\n"
            "s.sendall(b\"GET /from-sandbox-socket HTTP/1.0\\r\\n\\r\\n\")\n"
            "print(\"CONNECTED\", s.recv(100))'; echo \" rc=$?\"")
    named = "curl -sS -m 10 -D - -o /dev/null http://example.com/; echo \" rc=$?\""

    def config_dir() -> Call:
        config = runtime_dir(world) / "config"
        return bash(f"ls -A {config}; echo \" rc=$?\"; cat {config}/.credentials.json; "
                    "echo \" rc=$?\"")

    # The same, with a path Claude Code's own command check cannot see: the sandbox decides.
    hidden_config = bash("c=con; ls -A \"$PWD/../${c}fig\"; echo \" rc=$?\"; "
                         "cat \"$PWD/../${c}fig/.credentials.json\"; echo \" rc=$?\"")

    calls: list[CallStep] = [
        bash(direct),
        bash(sock),
        bash(named),
        bash(f"echo escaped > {outside}; echo \" rc=$?\"; echo SR=$SANDBOX_RUNTIME",
             dangerouslyDisableSandbox=True),
        bash("env; echo ENV-END"),
        config_dir,
        hidden_config,
    ]
    run, results = probe(world, calls)
    (curl_out, _), (sock_out, _), (named_out, _), (unsb_out, _), (env_out, _), (cfg_out, _), \
        (sandboxed_cfg_out, _) = results
    import sys
    for r in results:
        print("----", r, file=sys.stderr)

    # No direct connection to the host's loopback: the sandbox has its own network namespace.
    assert "rc=0" not in curl_out and "code=200" not in curl_out, curl_out
    assert "CONNECTED" not in sock_out and "rc=0" not in sock_out, sock_out
    paths = [e["path"] for e in run.server.log]
    assert not [p for p in paths if "from-sandbox" in p], paths
    # A named host is refused by the proxy's denied "*", never approved by the permission mode.
    assert "403" in named_out and "blocked-by-allowlist" in named_out, named_out
    # dangerouslyDisableSandbox does not leave the sandbox.
    assert "Read-only file system" in unsb_out and "SR=1" in unsb_out, unsb_out
    assert not outside.exists()
    # No API key in Bash's environment; config/ is hidden.
    assert "ENV-END" in env_out and "SANDBOX_RUNTIME=1" in env_out, env_out
    assert "ANTHROPIC_API_KEY" not in env_out and "sk-ant-test" not in env_out, env_out
    assert cfg_out.startswith("Permission to use Bash with command ls -A "), cfg_out
    assert "has been denied" in cfg_out, cfg_out
    listing, _, rest = sandboxed_cfg_out.partition("rc=")
    assert "credentials" not in listing, sandboxed_cfg_out
    assert "No such file or directory" in rest, sandboxed_cfg_out
    assert CREDENTIAL_TOKEN not in every_body(run)
    assert run.round(1)["audit"]["verdict"] == "clean"
    world.assert_cleaned(run)


# --- (f) Bash writes outside rw ---------------------------------------------------------------


@pytest.mark.req("Bash runs sandboxed without network")
@pytest.mark.req("No Bash command runs outside the sandbox")
@pytest.mark.req("Workers never see Git")
@pytest.mark.req("Every Git administrative path is hidden")
def test_bash_writes_outside_rw_are_refused(world: ClaudeWorld, tmp_path: Path) -> None:
    wt, primary = world.worktree, world.primary
    util, notes = wt / "src" / "app" / "util.py", wt / "docs" / "notes.md"
    other, outside = wt / "src" / "other" / "lib.py", tmp_path / "outside.txt"
    git_file, git_config = wt / ".git", primary / ".git" / "config"
    watched = [util, notes, other, git_file, git_config]
    before = {p: p.read_text() for p in watched}
    calls: list[CallStep] = [
        bash(f"echo hacked > {util}; echo \" rc=$?\""),
        bash(f"echo hacked > {notes}; echo \" rc=$?\""),
        bash(f"echo hacked > {other}; echo \" rc=$?\""),
        bash(f"echo hacked > {outside}; echo \" rc=$?\""),
        bash(f"echo hacked >> {git_config}; echo \" rc=$?\"; cat {git_file}; echo \" rc=$?\""),
        # Through a link in the rw directory to a file outside it.
        bash(f"ln -s ../other/lib.py {wt}/src/app/link.py && echo hacked > {wt}/src/app/link.py;"
             " echo \" rc=$?\""),
        # The positive control: a write in rw lands.
        bash(f"echo 'X = 2' > {wt}/src/app/main.py; echo \" rc=$?\""),
    ]
    run, results = probe(world, calls)

    *refused, control = results
    for call, (text, _) in zip(calls, refused, strict=False):
        assert "rc=0" not in text, (call, text)
    assert "gitdir" not in json.dumps(results)
    assert control[0].strip().endswith("rc=0"), control
    assert {p: p.read_text() for p in watched} == before
    assert not outside.exists()
    assert (wt / "src" / "app" / "main.py").read_text() == "X = 2\n"
    audit = run.round(1)["audit"]
    assert audit["verdict"] == "clean", audit
    world.assert_cleaned(run)
