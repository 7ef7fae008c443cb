"""The generated pi permission extension with the REAL sandbox-runtime and bubblewrap (seed 001
"pi commands run sandboxed without network", "pi file tools are checked before they act", "A
denied pi file tool call gives the table's reason"; notes/pi.md §7, §9).

tests/fakes/pi_extension_driver.mjs loads control/permission.ts as pi does (jiti, pi's aliases),
calls its handlers with a stand-in for pi's API and runs its own tools: bash, grep, find and ls
go through SandboxManager with the generated policy's lists. No model and no pi process are
involved; the limits are driven by the events pi would send (a real-pi proof of the limits is
the e2e suite's).
"""

from __future__ import annotations

import json
import os
import select
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.pi_extension_world import PiWorld, build_world, node_available, sandbox_available
from servers.listener import Listener
from timing import SLOW

from concorde_workers.domain.configuration.request import Limits

pytestmark = [pytest.mark.integration]
# Never skipped (CI installs everything): a missing tool fails the test and says how to get it.
SETUP = "run ./scripts/setup (it installs node_modules, bubblewrap, socat, ripgrep and fd-find)"


@pytest.fixture(autouse=True)
def _tools_present() -> None:
    if not node_available() or not sandbox_available():
        pytest.fail(f"node, jiti, pi, sandbox-runtime, bwrap, socat or rg is missing: {SETUP}")


def needs_sandbox(test: Any) -> Any:
    return test


needs_node = needs_sandbox

START = {"op": "event", "name": "session_start"}


@pytest.fixture
def world(tmp_path: Path) -> PiWorld:
    return build_world(tmp_path)


def bash(command: str, **extra: Any) -> dict[str, Any]:
    return {"op": "call", "tool": "bash", "input": {"command": command, **extra}}


def call(tool: str, **input: Any) -> dict[str, Any]:
    return {"op": "call", "tool": tool, "input": input}


def out(result: dict[str, Any]) -> str:
    return str(result.get("text") or result.get("error") or result.get("reason") or "")


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener(reads=False)
    yield server
    server.close()


# --- network -------------------------------------------------------------------------------------


@needs_sandbox
@pytest.mark.req("pi commands run sandboxed without network")
def test_a_command_cannot_reach_loopback(world: PiWorld, listener: Listener) -> None:
    port = listener.port
    # the listener is reachable from outside the sandbox
    with socket.create_connection(("127.0.0.1", port), timeout=SLOW):
        pass
    assert listener.first.wait(SLOW)
    before = listener.accepted
    assert before == 1
    py = shutil.which("python3") or "python3"
    probes = [
        bash(
            f"{py} -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3)"
            f"; print('CONNECTED')\" 2>&1; echo py_rc=$?"
        ),
        bash(f"(exec 3<>/dev/tcp/127.0.0.1/{port} && echo CONNECTED) 2>&1; echo tcp_rc=$?"),
    ]
    if shutil.which("curl"):
        probes.append(bash(f"curl -fsS -m 3 http://127.0.0.1:{port}/ 2>&1; echo curl_rc=$?"))
        probes.append(bash("curl -fsS -m 3 http://example.com/ 2>&1; echo ext_rc=$?"))
    result = world.run_extension([START, *probes])
    texts = [out(r) for r in result["results"][1:]]
    for text in texts:
        assert "CONNECTED" not in text, text
        assert "rc=0" not in text, text
    assert listener.accepted == before  # nothing from inside the sandbox arrived


# --- writes ----------------------------------------------------------------------------------------


def tree(root: Path) -> set[str]:
    found = set()
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            found.add(os.path.join(dirpath, name))
    return found


@needs_sandbox
@pytest.mark.req("pi commands run sandboxed without network")
def test_commands_write_only_rw_paths_and_tmp(world: PiWorld) -> None:
    wt, rt, root = world.worktree, world.rt, world.root
    targets = {
        "rw": wt / "src/app/made_by_bash.txt",
        "rw_file_entry": wt / "notes.md",
        "tmp": rt / "tmp/made_by_bash.txt",
        "ro": wt / "docs/spec.md",
        "ro_file_in_rw": wt / "src/app/frozen.py",
        "ungranted": wt / "README.md",
        "outside": root / "outside/made_by_bash.txt",
        "jiti": rt / "tmp/jiti/control-permission.0.mjs",
        "jiti_new": rt / "tmp/jiti/evil.mjs",
        "pi_settings": rt / "work/.pi/settings.json",
        "control": rt / "control/permission.ts",
        "primary": world.primary / "secret.txt",
        "runtime_path": wt / ".venv/lib/site.py",
    }
    before = {k: (p.read_text() if p.exists() else None) for k, p in targets.items()}
    tree_before = tree(wt) | tree(rt / "work")
    steps = [START]
    for key, path in targets.items():
        steps.append(
            bash(
                f"mkdir -p '{path.parent}' 2>/dev/null; echo pwned >> '{path}' 2>&1; "
                f"echo {key}_rc=$?"
            )
        )
    result = world.run_extension(steps)
    texts = {k: out(r) for k, r in zip(targets, result["results"][1:], strict=True)}
    assert "rw_rc=0" in texts["rw"]
    assert "rw_file_entry_rc=0" in texts["rw_file_entry"]
    assert "tmp_rc=0" in texts["tmp"]
    assert targets["rw"].read_text() == "pwned\n"
    assert targets["tmp"].read_text() == "pwned\n"
    for key in (
        "ro",
        "ro_file_in_rw",
        "ungranted",
        "outside",
        "jiti",
        "jiti_new",
        "pi_settings",
        "control",
        "primary",
        "runtime_path",
    ):
        path = targets[key]
        now = path.read_text() if path.exists() else None
        assert now == before[key], f"{key}: the sandbox let a command change {path}"
    # where no read-deny turns a directory into an empty scratch tmpfs, the write itself fails
    for key in ("ro", "ro_file_in_rw", "outside", "pi_settings", "runtime_path"):
        assert f"{key}_rc=0" not in texts[key], texts[key]
    # sandbox-runtime's mount points (.bashrc, .gitconfig, .pi, ...) are gone after each command
    assert tree(wt) | tree(rt / "work") == tree_before | {str(targets["rw"])}
    # nothing the command wrote inside a denied area survives on the host
    assert not (rt / "tmp/jiti/evil.mjs").exists()
    assert not (rt / "work/.pi/settings.json").exists()


@needs_sandbox
def test_the_jiti_cache_cannot_be_replaced_or_removed(world: PiWorld) -> None:
    """notes/pi.md §9.1: the escape through pi's compile cache is closed in the sandbox."""
    jiti = world.rt / "tmp/jiti"
    steps = [
        START,
        bash(f"rm -rf '{jiti}' 2>&1; echo rm_rc=$?"),
        bash(f"mv '{jiti}' '{world.rt}/tmp/moved' 2>&1; echo mv_rc=$?"),
        bash(f"cat '{jiti}/control-permission.0.mjs' 2>&1; echo cat_rc=$?"),
        bash(f"ln -s /tmp '{jiti}/x' 2>&1; echo ln_rc=$?"),
    ]
    result = world.run_extension(steps)
    texts = [out(r) for r in result["results"][1:]]
    assert (jiti / "control-permission.0.mjs").read_text() == "// cache\n"
    assert "// cache" not in texts[2]
    assert not (world.rt / "tmp/moved").exists()
    assert not (jiti / "x").exists()


# --- reads -------------------------------------------------------------------------------------------


@needs_sandbox
@pytest.mark.req("pi commands run sandboxed without network")
def test_commands_cannot_read_the_hosts_or_hidden_files(world: PiWorld) -> None:
    wt, rt, primary = world.worktree, world.rt, world.primary
    secrets = {
        "auth": (rt / "config/auth.json", "sk-secret"),
        "control": (rt / "control/permission.ts", "Concorde pi permission extension"),
        "primary": (primary / "secret.txt", "primary secret"),
        "primary_git": (primary / ".git/config", "[core]"),
        "wt_git": (wt / ".git", "gitdir:"),
        "names": (wt / "src/app/secret.py", "SECRET"),
        "ungranted": (wt / "README.md", "# readme"),
        "names_dir": (wt / "docs/private/plan.md", "private plan"),
        "home": (world.home / "dotfile", "user home file"),
        "nested_git": (wt / "src/app/sub/.git/config", "[core]"),
    }
    steps = [START] + [bash(f"cat '{p}' 2>&1; echo {k}_rc=$?") for k, (p, _) in secrets.items()]
    steps.append(bash(f"cat '{wt}/docs/spec.md' '{wt}/src/app/main.py' '{wt}/.venv/lib/site.py'"))
    steps.append(bash(f"cd '{wt}' && git status 2>&1; echo git_rc=$?"))
    result = world.run_extension(steps)
    texts = [out(r) for r in result["results"][1:]]
    for (key, (_, marker)), text in zip(secrets.items(), texts, strict=False):
        assert marker not in text, f"{key}: {text}"
        assert f"{key}_rc=0" not in text, text
    readable = texts[len(secrets)]
    assert "needle in spec" in readable and "print('main')" in readable and "SITE = 1" in readable
    assert "git_rc=0" not in texts[len(secrets) + 1]


@needs_sandbox
def test_commands_get_no_model_service_key(world: PiWorld) -> None:
    """pi needs `*_API_KEY` to reach its provider; the worker's commands never see them (as
    Claude Code's sandbox.credentials keeps ANTHROPIC_API_KEY from Bash)."""
    env = world.env(OPENAI_API_KEY="sk-openai-secret", SCRIPTED_API_KEY="sk-scripted-secret")
    result = world.run_extension([START, bash('env; echo "LANG=$LANG"')], env=env)
    text = out(result["results"][1])
    assert "sk-openai-secret" not in text and "sk-scripted-secret" not in text, text
    assert "_API_KEY" not in text, text
    assert f"LANG={env['LANG']}" in text, text


# --- grep, find, ls ----------------------------------------------------------------------------------


@needs_sandbox
@pytest.mark.req("pi commands run sandboxed without network")
def test_grep_find_ls_run_in_the_sandbox_after_the_root_check(world: PiWorld) -> None:
    wt, rt = world.wt, world.rt
    steps = [
        START,
        call("grep", pattern="needle|SECRET|private plan|readme|print", path=wt("")),
        call("grep", pattern="sk-secret", path=str(rt / "config")),
        call("grep", pattern="sk-secret", path=str(rt / "config/auth.json")),
        call("grep", pattern="gitdir", path=wt(".git")),
        call("grep", pattern="x", path=wt("src/lib")),
        call("find", pattern="*", path=wt("")),
        call("find", pattern="*", path=str(world.primary)),
        call("ls", path=wt("docs")),
        call("ls", path=str(rt / "tmp/jiti")),
        call("ls", path=str(world.home)),
        call("grep", pattern="cache", path=str(rt / "tmp")),
    ]
    result = world.run_extension(steps)
    r = result["results"][1:]
    grep_all = out(r[0])
    assert "docs/spec.md:2: needle in spec" in grep_all
    assert "src/app/main.py:1: print('main')" in grep_all
    for hidden in ("SECRET", "private plan", "# readme"):
        assert hidden not in grep_all
    assert r[1]["blocked"] and r[1]["reason"] == f"Concorde grant: {rt}/config belongs to the host"
    assert r[2]["blocked"] and r[2]["reason"] == (
        f"Concorde grant: {rt}/config/auth.json belongs to the host"
    )
    assert (
        r[3]["blocked"]
        and r[3]["reason"] == "Concorde grant: Git metadata is not available to workers"
    )
    assert r[4]["blocked"] and r[4]["reason"] == (
        "Concorde grant: src/lib holds nothing this task may read"
    )
    found = out(r[5]).splitlines()
    assert "docs/spec.md" in found and "src/app/main.py" in found
    for hidden in ("README.md", "docs/private/plan.md", "src/lib/other.py", "empty/hidden.txt"):
        assert hidden not in found
    assert r[6]["blocked"] and "is outside this task's boundary" in r[6]["reason"]
    assert "spec.md" in out(r[7])
    assert r[8]["blocked"] and "belongs to the host" in r[8]["reason"]
    assert r[9]["blocked"] and "is outside this task's boundary" in r[9]["reason"]
    assert "// cache" not in out(r[10])  # tmp/ is searchable, its jiti/ is not


@needs_sandbox
def test_a_timed_out_command_is_killed_with_its_process_group(world: PiWorld) -> None:
    # Each command starts a background process that holds a named pipe open for writing, says
    # "up" on it and sleeps for an hour; the command's foreground goes on only once that process
    # is up (it waits on a second pipe). The test holds the read ends: end of file on one means
    # every process holding it is dead — an event, not a pause long enough to see a late write.
    # The first command's timeout passes once it is provably running (its background process
    # up, its foreground about to sleep: it opens and closes the named pipe `ready`), an event,
    # not a number of seconds the sandbox's start-up may or may not fit in on a busy machine.
    held, up = [], []
    for n in (1, 2):
        held.append(world.rt / f"tmp/held-{n}")
        up.append(world.rt / f"tmp/up-{n}")
        os.mkfifo(held[-1])
        os.mkfifo(up[-1])
    ready = world.rt / "tmp/ready"
    os.mkfifo(ready)
    readers = [os.open(path, os.O_RDONLY | os.O_NONBLOCK) for path in held]
    try:
        background = "(exec 3>'{held}'; echo up >&3; : >'{up}'; sleep 3600) & cat '{up}'"
        result = world.run_extension(
            [
                START,
                {
                    **bash(
                        background.format(held=held[0], up=up[0]) + f"; : >'{ready}'; sleep 3600",
                        timeout=SLOW,
                    ),
                    "expireTimeoutWhen": str(ready),
                },
                bash(background.format(held=held[1], up=up[1]) + "; echo started"),
            ]
        )
        first = result["results"][1]
        assert first["ok"] is False and "timed out" in first["error"].lower()
        assert "started" in out(result["results"][2])
        for reader in readers:  # nothing a command started outlives it
            assert read_until_every_writer_is_gone(reader) == b"up\n"
    finally:
        for reader in readers:
            os.close(reader)


def read_until_every_writer_is_gone(fd: int) -> bytes:
    """What the writers of a pipe wrote, once the last of them has closed it (by exiting)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    data = b""
    while True:
        assert poller.poll(SLOW * 1000), "a process still holds the pipe open"
        chunk = os.read(fd, 4096)
        if not chunk:
            return data
        data += chunk


# --- no sandbox, no command ------------------------------------------------------------------------


@needs_node
@pytest.mark.req("pi commands run sandboxed without network")
def test_without_a_sandbox_no_command_runs(world: PiWorld, tmp_path: Path) -> None:
    marker = world.rt / "tmp/ran.txt"
    # a PATH without bwrap and socat: SandboxManager.initialize fails
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    env = world.env(PATH=str(empty))
    result = world.run_extension(
        [
            START,
            bash(f"echo ran > '{marker}'"),
            call("grep", pattern="x", path=world.wt("docs")),
            call("find", pattern="*", path=world.wt("docs")),
            call("ls", path=world.wt("docs")),
            call("read", path=world.wt("docs/spec.md")),
            {**bash(f"echo ran > '{marker}'"), "skipCheck": True},
        ],
        env=env,
    )
    r = result["results"][1:]
    for blocked in r[:4]:
        assert blocked["blocked"] is True
        assert blocked["reason"].startswith(
            "Concorde grant: commands cannot run: the sandbox is unavailable ("
        )
    assert r[4]["ok"] is True and "needle in spec" in r[4]["text"]
    assert r[5]["ok"] is False and "sandbox is unavailable" in r[5]["error"]
    assert not marker.exists()
    assert "[concorde-sandbox] unavailable" in result["stderr"]


# --- file tools ----------------------------------------------------------------------------------------


@needs_node
@pytest.mark.req("pi file tools are checked before they act")
@pytest.mark.req("A denied pi file tool call gives the table's reason")
def test_file_tools_are_checked_before_they_act(world: PiWorld) -> None:
    wt, rt = world.worktree, world.rt
    steps = [
        call("write", path=f"{wt}/docs/spec.md", content="x"),
        call("edit", path=f"{wt}/src/app/frozen.py", edits=[{"oldText": "FROZEN", "newText": "X"}]),
        call("write", path=f"{wt}/src/app/to_ro", content="x"),
        call("write", path=f"{rt}/tmp/jiti/control-permission.0.mjs", content="evil"),
        call("write", path=f"{rt}/work/.pi/settings.json", content="{}"),
        call("read", path=f"{rt}/config/auth.json"),
        call("read", path=f"{rt}/tmp/jiti_alias/control-permission.0.mjs"),
        call("read", path=f"{rt}/work/ctl/permission.ts"),
        call("read", path=f"{wt}/src/app/secret.py"),
        call("read", path=f"{world.primary}/secret.txt"),
        call("write", path="/etc/concorde-test", content="x"),
        # the same calls with the tool_call handler skipped: the tools check by themselves
        {**call("write", path=f"{wt}/docs/spec.md", content="x"), "skipCheck": True},
        {**call("read", path=f"{rt}/config/auth.json"), "skipCheck": True},
        {
            **call("write", path=f"{rt}/tmp/jiti/control-permission.0.mjs", content="evil"),
            "skipCheck": True,
        },
        # allowed ones act
        call(
            "write",
            path="src/../../../../../../../../" + str(wt)[1:] + "/src/app/new.py",
            content="NEW\n",
        ),
        call("edit", path=f"{wt}/src/app/main.py", edits=[{"oldText": "main", "newText": "MAIN"}]),
        call("write", path=f"{rt}/work/to_rw", content="via link\n"),
        call("read", path=f"@{wt}/docs/spec.md"),
        call("read", path="~/../work/scratch.txt"),
        call("write", path=f"{wt}/src/app/deep/er/file.py", content="DEEP\n"),
    ]
    result = world.run_extension(steps)
    r = result["results"]
    assert r[0]["reason"] == "Concorde grant: docs/spec.md is read-only for this task"
    assert r[1]["reason"] == "Concorde grant: src/app/frozen.py is read-only for this task"
    assert r[2]["reason"] == (
        "Concorde grant: docs/spec.md (the target of the symbolic link "
        f"{wt}/src/app/to_ro) is read-only for this task"
    )
    assert r[3]["reason"] == (
        f"Concorde grant: {rt}/tmp/jiti/control-permission.0.mjs is outside the task worktree"
    )
    assert (
        r[4]["reason"]
        == f"Concorde grant: {rt}/work/.pi/settings.json is outside the task worktree"
    )
    assert r[5]["reason"] == f"Concorde grant: {rt}/config/auth.json belongs to the host"
    assert (
        r[6]["reason"]
        == f"Concorde grant: {rt}/tmp/jiti/control-permission.0.mjs belongs to the host"
    )
    assert r[7]["reason"] == f"Concorde grant: {rt}/control/permission.ts belongs to the host"
    assert (
        r[8]["reason"]
        == "Concorde grant: only the name of src/app/secret.py is visible to this task"
    )
    assert (
        r[9]["reason"]
        == f"Concorde grant: {world.primary}/secret.txt is outside this task's boundary"
    )
    assert r[10]["reason"] == "Concorde grant: /etc/concorde-test is outside the task worktree"
    assert all(x["blocked"] for x in r[:11])
    assert (
        r[11]["ok"] is False
        and r[11]["error"] == "Concorde grant: docs/spec.md is read-only for this task"
    )
    assert r[12]["ok"] is False and "belongs to the host" in r[12]["error"]
    assert r[13]["ok"] is False and "outside the task worktree" in r[13]["error"]
    assert (wt / "docs/spec.md").read_text() == "# spec\nneedle in spec\n"
    assert (wt / "src/app/frozen.py").read_text() == "FROZEN = 1\n"
    assert (rt / "tmp/jiti/control-permission.0.mjs").read_text() == "// cache\n"
    assert not (rt / "work/.pi/settings.json").exists()
    for ok in r[14:]:
        assert ok.get("ok") is True, ok
    assert (wt / "src/app/new.py").read_text() == "NEW\n"
    assert "MAIN" in r[15]["text"] or r[15]["ok"]
    assert (wt / "src/app/main.py").read_text() == "via link\n"  # written through rt/work/to_rw
    assert "needle in spec" in r[17]["text"]
    assert "scratch" in r[18]["text"]
    assert (wt / "src/app/deep/er/file.py").read_text() == "DEEP\n"
    # the check rewrote the argument to the absolute path it judged
    assert r[17]["input"]["path"] == f"{wt}/docs/spec.md"


# --- limits and the result -----------------------------------------------------------------------------


def _assistant(cost: float) -> dict[str, Any]:
    return {"role": "assistant", "content": [], "usage": {"cost": {"total": cost}}}


@needs_node
@pytest.mark.req("pi runs stop at their limits")
@pytest.mark.req("A pi run records the limit it reached")
def test_the_turn_limit_stops_the_run_once(world: PiWorld) -> None:
    turn = {"op": "event", "name": "turn_end", "event": {"type": "turn_end"}}
    result = world.run_extension(
        [
            START,
            turn,
            turn,
            call("read", path=world.wt("docs/spec.md")),
            turn,
            turn,
            call("read", path=world.wt("docs/spec.md")),
            call("concorde_result", status="ok"),
        ]
    )
    assert result["entries"] == [
        {
            "type": "custom",
            "customType": "concorde-limit",
            "data": {"limit": "turns", "value": 3, "maximum": 2},
        }
    ]
    assert result["aborts"] >= 1
    assert '[concorde-limit] {"limit":"turns","value":3,"maximum":2}' in result["stderr"]
    r = result["results"]
    assert r[3]["ok"] is True
    assert r[6]["blocked"] and r[6]["reason"] == "Concorde grant: the run reached its turns limit"
    assert r[7]["blocked"] and r[7]["reason"] == "Concorde grant: the run reached its turns limit"


@needs_node
@pytest.mark.req("pi runs stop at their limits")
@pytest.mark.req("A pi run records the limit it reached")
def test_the_budget_limit_counts_assistant_costs(world: PiWorld) -> None:
    steps = [START]
    for message in (
        _assistant(0.3),
        {"role": "user", "content": "x", "usage": {"cost": {"total": 5}}},
        _assistant(0.3),
    ):
        steps.append(
            {
                "op": "event",
                "name": "message_end",
                "event": {"type": "message_end", "message": message},
            }
        )
    steps.append(bash("echo never"))
    result = world.run_extension(steps)
    assert result["entries"] == [
        {
            "type": "custom",
            "customType": "concorde-limit",
            "data": {"limit": "budget", "value": 0.6, "maximum": 0.5},
        }
    ]
    assert result["aborts"] == 1
    assert result["results"][-1]["reason"] == "Concorde grant: the run reached its budget limit"


@needs_node
@pytest.mark.req("pi runs stop at their limits")
def test_limits_count_the_earlier_rounds_of_the_run(world: PiWorld) -> None:
    prior = [{"type": "message", "message": _assistant(0.1)} for _ in range(2)]
    prior.insert(1, {"type": "message", "message": {"role": "user", "content": "brief"}})
    turn = {"op": "event", "name": "turn_end", "event": {"type": "turn_end"}}
    result = world.run_extension(
        [START, turn, call("read", path=world.wt("docs/spec.md"))], prior=prior
    )
    assert result["entries"][0]["data"] == {"limit": "turns", "value": 3, "maximum": 2}
    assert result["results"][2]["blocked"]


@needs_node
def test_a_run_stopped_in_an_earlier_round_stays_stopped(world: PiWorld) -> None:
    prior = [
        {
            "type": "custom",
            "customType": "concorde-limit",
            "data": {"limit": "budget", "value": 0.6, "maximum": 0.5},
        }
    ]
    result = world.run_extension(
        [
            START,
            {"op": "event", "name": "turn_start", "event": {}},
            call("read", path=world.wt("docs/spec.md")),
        ],
        prior=prior,
    )
    assert result["entries"] == []  # recorded once per run
    assert result["aborts"] == 1
    assert result["results"][2]["reason"] == "Concorde grant: the run reached its budget limit"


@needs_node
def test_concorde_result_records_and_terminates(world: PiWorld) -> None:
    value = {
        "status": "ok",
        "summary": "done",
        "error": None,
        "proposed_deletions": [],
        "output": {"note": "n"},
    }
    result = world.run_extension([call("concorde_result", **value)])
    r = result["results"][0]
    assert r["text"] == "Result recorded; the session ends now."
    assert r["details"] == value
    assert r["terminate"] is True
    assert result["tools"] == [
        "bash",
        "concorde_result",
        "edit",
        "find",
        "grep",
        "ls",
        "read",
        "write",
    ]
    assert "session_shutdown" in result["handlers"]


def test_limits_default_from_the_request(tmp_path: Path) -> None:
    world = build_world(tmp_path, Limits(max_turns=7))
    assert world.embedded["limits"] == {"maxTurns": 7, "maxBudgetUsd": None}
    assert os.path.isfile(world.control / "pi_policy.ts")


# --- the real pi -----------------------------------------------------------------------------------

PI = Path(__file__).resolve().parents[2] / "node_modules" / ".bin" / "pi"


@needs_sandbox
@pytest.mark.req("pi runs stop at their limits")
@pytest.mark.req("A pi run records the limit it reached")
@pytest.mark.req("A denied pi file tool call gives the table's reason")
def test_real_pi_loads_the_extension_blocks_and_stops_at_the_turn_limit(world: PiWorld) -> None:
    """The generated extension in the installed pi 0.73.1 against the scripted model server:
    a denied read gets the table's reason, a command runs sandboxed, and the third turn (with
    max_turns 2) aborts the run: the session records `concorde-limit`, stderr names it, and no
    fourth model call is made."""
    import subprocess

    from servers.openai_server import (
        DEFAULT_MODEL,
        DEFAULT_PROVIDER,
        Reply,
        ScriptedModelServer,
        ToolCall,
        write_pi_config,
    )

    rt = world.rt
    auth = rt / "config/auth.json"
    script = [
        Reply(tool_calls=[ToolCall("read", {"path": str(auth)}, id="call_r1")]),
        Reply(
            tool_calls=[ToolCall("bash", {"command": f"cat '{auth}'; echo rc=$?"}, id="call_b1")]
        ),
        Reply(tool_calls=[ToolCall("bash", {"command": "echo third"}, id="call_b2")]),
        Reply(tool_calls=[ToolCall("bash", {"command": "echo fourth"}, id="call_b3")]),
    ]
    with ScriptedModelServer(script) as server:
        write_pi_config(rt / "config", server.base_url)
        session = rt / "config/sessions/w-test.jsonl"
        command = [
            str(PI),
            "-p",
            "--mode",
            "json",
            "--no-extensions",
            "-e",
            str(rt / "control/permission.ts"),
            "--no-context-files",
            "--no-skills",
            "--no-prompt-templates",
            "--tools",
            "read,write,edit,bash,grep,find,ls,concorde_result",
            "--session-dir",
            str(rt / "config/sessions"),
            "--session",
            str(session),
            "--model",
            f"{DEFAULT_PROVIDER}/{DEFAULT_MODEL}",
            "--thinking",
            "off",
        ]
        env = world.env(
            PI_CODING_AGENT_DIR=str(rt / "config"),
            PI_OFFLINE="1",
            PI_SKIP_VERSION_CHECK="1",
            PI_TELEMETRY="0",
        )
        proc = subprocess.run(
            command,
            input="Do the task.",
            capture_output=True,
            text=True,
            cwd=str(rt / "work"),
            env=env,
            timeout=180,
        )
        results = server.tool_results()
        requests = len(server.requests)
    assert proc.returncode == 0, proc.stderr
    assert results["call_r1"] == f"Concorde grant: {auth} belongs to the host"
    assert "sk-secret" not in results["call_b1"] and "rc=1" in results["call_b1"]
    assert requests == 3  # the abort sends no fourth call
    entries = [json.loads(line) for line in session.read_text().splitlines()]
    limits = [
        e for e in entries if e.get("type") == "custom" and e.get("customType") == "concorde-limit"
    ]
    assert [e["data"] for e in limits] == [{"limit": "turns", "value": 3, "maximum": 2}]
    assert '[concorde-limit] {"limit":"turns","value":3,"maximum":2}' in proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    last = [
        e["message"]
        for e in events
        if e.get("type") == "message_end" and e["message"].get("role") == "assistant"
    ][-1]
    assert last["stopReason"] == "aborted"


@needs_sandbox
def test_programs_planted_in_a_worker_writable_path_never_run_on_the_host(world: PiWorld) -> None:
    """The project interpreter's directory comes first on PATH; were it writable, sandbox-runtime's
    host-side lookups (which, bwrap, socat, rg) and the extension's bash must not pick a
    planted program: the pi process's own PATH drops every worker-writable directory."""
    planted = world.rt / "work/bin"
    planted.mkdir()
    marker = world.root / "planted-ran"
    for name in ("which", "bwrap", "socat", "rg", "bash", "sh", "fdfind", "fd", "find"):
        program = planted / name
        program.write_text(f"#!/bin/sh\necho {name} >> '{marker}'\nexit 1\n")
        program.chmod(0o755)
    env = world.env(PATH=f"{planted}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    result = world.run_extension(
        [
            START,
            bash("echo inside-ok"),
            call("ls", path=world.wt("docs")),
            bash('echo "PATH=$PATH"'),
        ],
        env=env,
    )
    assert "inside-ok" in out(result["results"][1])
    assert "spec.md" in out(result["results"][2])
    # the worker's own commands keep the PATH the host gave (the interpreter's directory first)
    assert f"PATH={planted}:" in out(result["results"][3])
    assert not marker.exists(), marker.read_text()
