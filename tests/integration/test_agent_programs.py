"""The test agent program agent.py, run for real: what it prints and what it does to a real Git
worktree, alone (subprocess) and under the real process runner; and ProgramBackend around it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from fakes.agent import make_context
from fakes.agent_stream import TestStreamReader
from fakes.program_backend import AGENT_PROGRAM, ProgramBackend, Step
from timing import SLOW, Deadline, Gate, Signal, wait_dead

from concorde_workers.adapters.processes.process import SubprocessRunner
from concorde_workers.domain.run.agent_report import RoundReport
from concorde_workers.domain.run.rounds import RoundEnding
from concorde_workers.ports.agents.agent import AgentBackend, RoundKind

pytestmark = pytest.mark.integration


def needs_runner(test: Any) -> Any:
    return test


RESULT = {"status": "ok", "summary": "done", "error": None}


def scenario_file(tmp_path: Path, scenario: Any, name: str = "scenario.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(scenario), encoding="utf-8")
    return path


def run_agent(
    tmp_path: Path,
    scenario: Any,
    *args: str,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    stdin: str = "",
    timeout: float = SLOW,
) -> subprocess.CompletedProcess[str]:
    path = scenario_file(tmp_path, scenario)
    return subprocess.run(
        [sys.executable, AGENT_PROGRAM, str(path), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **(env or {})},
        cwd=cwd or tmp_path,
        timeout=timeout,
        check=False,
    )


def report_of(
    lines: Sequence[str],
    exit_status: int | None,
    stderr: str = "",
    timed_out: bool = False,
    backend: str = "pi",
) -> RoundReport:
    reader = TestStreamReader(backend=backend)
    for line in lines:
        reader.feed(line)
    return reader.finish(exit_status, timed_out, stderr)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie counts as gone
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def wait_gone(pids: Sequence[int], seconds: float = SLOW) -> bool:
    return wait_dead(pids, seconds)


@pytest.fixture
def spawned() -> Iterator[list[int]]:
    """Pids of children a test let keep running; killed (each by its id) afterwards."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout


@pytest.fixture
def worktree(tmp_path: Path) -> Iterator[Path]:
    """A primary worktree with one commit and a linked worktree in .claude/worktrees/t1."""
    primary = tmp_path / "proj"
    primary.mkdir()
    git(primary, "init", "-q", "-b", "main")
    (primary / "src").mkdir()
    (primary / "src" / "a.py").write_text("a = 1\n")
    (primary / "docs").mkdir()
    (primary / "docs" / "readme.md").write_text("read me\n")
    git(primary, "add", ".")
    git(primary, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init")
    wt = primary / ".claude" / "worktrees" / "t1"
    git(primary, "worktree", "add", "-q", str(wt))
    yield wt
    for root, dirs, _ in os.walk(tmp_path):  # open up what a scenario made unreadable
        for d in dirs:
            p = Path(root) / d
            if not p.is_symlink():
                p.chmod(0o755)


# --- the protocol on stdout -----------------------------------------------------------------------


def test_protocol_lines_read_as_an_ok_round(tmp_path: Path) -> None:
    done = run_agent(
        tmp_path,
        {
            "steps": [
                Step.session("s-1"),
                Step.line("tool", tool="Read", target="/w/a.py"),
                Step.usage(tokens_in=10, tokens_out=3, cost_usd=0.02, turns=1),
                Step.usage(turns=2),
                Step.line("text", text="done"),
                Step.result(RESULT),
            ]
        },
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [json.loads(line)["type"] for line in lines] == [
        "session",
        "tool",
        "usage",
        "usage",
        "text",
        "result",
    ]
    report = report_of(lines, done.returncode)
    assert report.ending is RoundEnding.OK and report.session == "s-1"
    assert report.worker_result == RESULT and report.usage.turns == 3


@pytest.mark.parametrize(
    ("steps", "exit_status", "ending"),
    [
        (
            [Step.session("s-1"), Step.error("API Error: 529 Overloaded")],
            1,
            RoundEnding.TRANSIENT_ERROR,
        ),
        (
            [Step.session("s-1"), Step.error("permission denied by the extension")],
            1,
            RoundEnding.PROCESS_FAILED,
        ),
        ([Step.session("s-1"), Step.limit("max_turns", 3, 3)], 1, RoundEnding.LIMIT_REACHED),
        ([Step.session("s-1"), Step.line("text", text="I give up")], 0, RoundEnding.OK),
    ],
)
def test_error_limit_and_no_result_rounds(
    tmp_path: Path, steps: list[dict[str, Any]], exit_status: int, ending: RoundEnding
) -> None:
    done = run_agent(tmp_path, {"steps": steps, "exit": exit_status})
    assert done.returncode == exit_status
    report = report_of(done.stdout.splitlines(), done.returncode)
    assert report.ending is ending and report.session == "s-1"


def test_invalid_json_lines_are_printed_verbatim_and_ignored_by_the_reader(tmp_path: Path) -> None:
    garbage = ["not json", '{"type": "tool"', "[1, 2]", "", '{"type": "nope"}']
    done = run_agent(tmp_path, [Step.session("s-1"), Step.print(*garbage), Step.result(RESULT)])
    lines = done.stdout.splitlines()
    assert lines[1:-1] == garbage
    reader = TestStreamReader()
    for line in lines:
        reader.feed(line)
    assert (reader.ignored.count, reader.ignored.last) == (len(garbage), garbage)
    assert reader.finish(0, False, "").worker_result == RESULT


def test_kind_session_argv_cwd_env_and_prompt_are_recorded(tmp_path: Path) -> None:
    record = tmp_path / "record.json"
    (tmp_path / "work").mkdir()
    done = run_agent(
        tmp_path,
        [Step.session(), Step.record(str(record))],
        "--kind",
        "retry",
        "--session",
        "s-9",
        env={"HOME": "/h", "ONLY": "this"},
        cwd=tmp_path / "work",
        stdin="the retry prompt",
    )
    assert done.returncode == 0
    assert json.loads(done.stdout) == {"type": "session", "id": "s-9"}  # continues --session
    seen = json.loads(record.read_text())
    assert seen["kind"] == "retry" and seen["session"] == "s-9"
    assert seen["stdin"] == "the retry prompt" and seen["cwd"] == str(tmp_path / "work")
    assert {k: v for k, v in seen["env"].items() if k not in ("PATH", "LC_CTYPE")} == {
        "HOME": "/h",
        "ONLY": "this",
    }


def test_the_scenario_may_come_from_the_environment(tmp_path: Path) -> None:
    path = scenario_file(tmp_path, [Step.session("from-env")])
    done = subprocess.run(
        [sys.executable, AGENT_PROGRAM],
        capture_output=True,
        text=True,
        env={"FAKE_AGENT_SCENARIO": str(path)},
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert json.loads(done.stdout) == {"type": "session", "id": "from-env"}
    none = subprocess.run(
        [sys.executable, AGENT_PROGRAM],
        capture_output=True,
        text=True,
        env={},
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert none.returncode == 2 and json.loads(none.stdout)["type"] == "error"


# --- what it does to a real worktree --------------------------------------------------------------


def test_writes_inside_outside_into_git_and_through_a_symlink(
    tmp_path: Path, worktree: Path
) -> None:
    git_dir = Path(git(worktree, "rev-parse", "--absolute-git-dir").strip())
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    done = run_agent(
        tmp_path,
        [
            Step.write(f"{worktree}/src/new.py", "x = 1\n"),
            Step.write(f"{worktree}/src/a.py", "a = 2\n"),
            Step.write(f"{worktree}/docs/readme.md", "changed outside rw\n"),
            Step.write(f"{git_dir}/hooks/post-checkout", "#!/bin/sh\n", mode="755"),
            Step.symlink(f"{worktree}/src/link", str(outside)),
            Step.write(f"{worktree}/src/link/escaped.txt", "through the link\n"),
            Step.delete(f"{worktree}/src/new.py"),
            Step.write(f"{worktree}/src/kept.py", "kept\n"),
        ],
    )
    assert done.returncode == 0, done.stderr
    assert (worktree / "src" / "a.py").read_text() == "a = 2\n"
    assert not (worktree / "src" / "new.py").exists()
    assert (outside / "escaped.txt").read_text() == "through the link\n"
    assert os.access(git_dir / "hooks" / "post-checkout", os.X_OK)
    status = git(worktree, "status", "--porcelain", "--untracked-files=all").splitlines()
    assert sorted(status) == sorted(
        [" M docs/readme.md", " M src/a.py", "?? src/kept.py", "?? src/link"]
    )
    tools = [json.loads(line) for line in done.stdout.splitlines()]
    assert tools[0] == {"type": "tool", "tool": "Write", "target": f"{worktree}/src/new.py"}
    assert {t["tool"] for t in tools} == {"Write", "Bash"}


def test_delete_a_tracked_file_and_chmod_a_directory_000(tmp_path: Path, worktree: Path) -> None:
    done = run_agent(
        tmp_path,
        [
            Step.delete(f"{worktree}/src/a.py"),
            Step.mkdir(f"{worktree}/locked/inner"),
            Step.write(f"{worktree}/locked/inner/f.txt", "hidden\n"),
            Step.chmod(f"{worktree}/locked", "000"),
        ],
    )
    assert done.returncode == 0, done.stderr
    assert not (worktree / "src" / "a.py").exists()
    assert (worktree / "locked").stat().st_mode & 0o777 == 0
    assert json.loads(done.stdout.splitlines()[-1]) == {
        "type": "tool",
        "tool": "Bash",
        "target": f"chmod 000 {worktree}/locked",
    }


def test_the_transcript_lands_in_the_config_sessions_directory(tmp_path: Path) -> None:
    config = tmp_path / "rt" / "config"
    done = run_agent(
        tmp_path, [Step.session("s-7"), Step.transcript()], env={"PI_CODING_AGENT_DIR": str(config)}
    )
    assert done.returncode == 0, done.stderr
    transcript = config / "sessions" / "s-7.jsonl"
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert records[0]["id"] == "s-7" and len(records) == 2


def test_without_a_config_variable_the_transcript_goes_beside_the_working_directory(
    tmp_path: Path,
) -> None:
    (tmp_path / "rt" / "work").mkdir(parents=True)
    run_agent(
        tmp_path, [Step.session("s-1"), Step.transcript(["{}"])], cwd=tmp_path / "rt" / "work"
    )
    assert (tmp_path / "rt" / "config" / "sessions" / "s-1.jsonl").read_text() == "{}\n"


# --- crashes, stderr, children ------------------------------------------------------------------


def test_crash_by_os_exit_after_partial_output(tmp_path: Path) -> None:
    done = run_agent(
        tmp_path,
        [
            Step.session("s-1"),
            Step.print('{"type": "tool", "tool": "Wri', newline=False),
            Step.crash("exit", 3),
        ],
    )
    assert done.returncode == 3
    assert done.stdout.endswith('"tool": "Wri')
    report = report_of(done.stdout.splitlines(), 3)
    assert report.ending is RoundEnding.PROCESS_FAILED and report.session == "s-1"


def test_crash_by_a_raised_exception(tmp_path: Path) -> None:
    done = run_agent(tmp_path, [Step.session("s-1"), Step.crash("raise", message="kaputt")])
    assert done.returncode == 1
    assert "RuntimeError: kaputt" in done.stderr
    report = report_of(done.stdout.splitlines(), 1, done.stderr[-4000:], backend="claude")
    assert report.ending is RoundEnding.PROCESS_FAILED
    assert report.process_link is not None and "kaputt" in report.process_link.detail


def test_megabytes_on_stderr(tmp_path: Path) -> None:
    done = run_agent(tmp_path, [Step.stderr(5_000_000, text="start\n"), Step.result(RESULT)])
    assert done.returncode == 0
    assert len(done.stderr) == 5_000_000 + len("start\n")
    assert json.loads(done.stdout)["type"] == "result"


def test_a_spawned_child_and_grandchild_keep_running(tmp_path: Path, spawned: list[int]) -> None:
    pidfile = tmp_path / "pids"
    done = run_agent(
        tmp_path, [Step.spawn(3600, grandchild=True, pidfile=str(pidfile)), Step.session("s-1")]
    )
    pids = [int(p) for p in pidfile.read_text().split()]
    spawned.extend(pids)
    assert done.returncode == 0 and len(pids) == 2
    assert all(alive(p) for p in pids)


# --- under the real process runner ----------------------------------------------------------------


def start(
    tmp_path: Path,
    scenario: Any,
    timeout: float | None = None,
    stdin: str | None = None,
    deadline: Deadline | None = None,
) -> Any:
    assert SubprocessRunner is not None
    path = scenario_file(tmp_path, scenario)
    return SubprocessRunner(term_grace_seconds=0.5, wait_timeout=deadline).start(
        [sys.executable, AGENT_PROGRAM, str(path)],
        {"PATH": os.environ.get("PATH", "")},
        str(tmp_path),
        stdin_text=stdin,
        timeout_seconds=timeout,
    )


@needs_runner
def test_lines_stream_as_they_are_printed(tmp_path: Path) -> None:
    gates = [Gate(tmp_path / "first.gate"), Gate(tmp_path / "second.gate")]
    handle = start(
        tmp_path,
        [
            Step.print('{"type": "session", "id": "s-1"}'),
            Step.gate(gates[0].path),
            Step.print('{"type": "tool", "tool": "Read", "target": "x"}'),
            Step.gate(gates[1].path),
            Step.print('{"type": "text", "text": "end"}'),
        ],
    )
    # Streamed, not buffered until exit: each of the first two lines arrives while the program
    # still runs, waiting at the gate after it until the line has been seen.
    running_at: list[bool] = []
    for _ in handle.lines():
        running_at.append(handle.wait(0) is None)
        if len(running_at) <= len(gates):
            gates[len(running_at) - 1].release()
    assert handle.wait(SLOW) == 0
    assert running_at[:2] == [True, True] and len(running_at) == 3


@needs_runner
def test_sleeping_past_the_timeout_is_killed(tmp_path: Path) -> None:
    deadline = Deadline()
    reached = Signal(tmp_path / "timeout.fifo", then=deadline.expire)
    handle = start(
        tmp_path,
        [Step.session("s-1"), Step.signal(reached.path), Step.sleep(3600), Step.result(RESULT)],
        timeout=SLOW,
        deadline=deadline,
    )
    lines = list(handle.lines())  # ends at the timeout, not after the hour
    status = handle.wait(SLOW)
    assert handle.timed_out and status is not None and status < 0
    report = report_of(lines, status, timed_out=handle.timed_out)
    assert report.ending is RoundEnding.TIMEOUT and report.session == "s-1"


@needs_runner
def test_children_holding_stdout_die_with_the_round(tmp_path: Path, spawned: list[int]) -> None:
    pidfile = tmp_path / "pids"
    handle = start(
        tmp_path,
        [
            Step.spawn(3600, grandchild=True, pidfile=str(pidfile), keep_stdout=True),
            Step.session("s-1"),
        ],
    )
    lines = list(handle.lines())  # ends although the children hold stdout open for an hour
    assert handle.wait(SLOW) == 0
    pids = [int(p) for p in pidfile.read_text().split()]
    spawned.extend(pids)
    assert lines == ['{"type": "session", "id": "s-1"}']
    assert len(pids) == 2 and wait_gone(pids)


@needs_runner
def test_stderr_megabytes_never_block_the_runner(tmp_path: Path) -> None:
    handle = start(tmp_path, [Step.stderr(3_000_000), Step.result(RESULT)], stdin="brief")
    lines = list(handle.lines())
    assert handle.wait(SLOW) == 0
    assert len(handle.stderr_tail(80_000)) == 80_000
    assert report_of(lines, 0).worker_result == RESULT


# --- ProgramBackend -------------------------------------------------------------------------------


def run_command(
    backend: ProgramBackend,
    context: Any,
    kind: RoundKind = RoundKind.INITIAL,
    session: str | None = None,
    stdin: str = "",
) -> subprocess.CompletedProcess[str]:
    command = backend.command(context, kind, session)
    return subprocess.run(
        list(command.argv),
        input=stdin,
        capture_output=True,
        text=True,
        env=backend.environment(context),
        cwd=command.cwd,
        check=False,
        timeout=60,
    )


def make_runtime(tmp_path: Path, backend: str = "pi") -> Any:
    runtime = tmp_path / "rt"
    for d in ("control", "config", "home", "tmp", "work"):
        (runtime / d).mkdir(parents=True)
    context = make_context(
        backend=backend,
        runtime_dir=str(runtime),
        worktree=str(tmp_path / "proj/.claude/worktrees/t1"),
        primary=str(tmp_path / "proj"),
        user_home=str(tmp_path / "home"),
        environ={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
    )
    return runtime, context


def test_program_backend_plays_its_rounds_in_order_from_a_scenario_dir(tmp_path: Path) -> None:
    runtime, context = make_runtime(tmp_path)
    scenarios = tmp_path / "scenarios"
    backend = ProgramBackend(
        "pi",
        scenarios=[
            [
                Step.session("s-1"),
                Step.write("{runtime}/tmp/touched", "{worktree}"),
                Step.error("API Error: 529 Overloaded"),
                Step.exit(1),
            ],
            {"steps": [Step.session(), Step.transcript(), Step.result(RESULT)]},
        ],
        scenario_dir=str(scenarios),
    )
    assert isinstance(backend, AgentBackend)
    generated = backend.generate(context)
    assert set(generated.files) == {
        f"{runtime}/control/permission.ts",
        f"{runtime}/control/result.schema.json",
    }
    backend.command(context, RoundKind.INITIAL, None)  # the preparation's call claims nothing

    first = run_command(backend, context)
    assert first.returncode == 1
    assert report_of(first.stdout.splitlines(), 1).ending is RoundEnding.TRANSIENT_ERROR
    assert (runtime / "tmp" / "touched").read_text() == context.policy.worktree

    second = run_command(backend, context, RoundKind.RETRY, "s-1", stdin="go on")
    report = report_of(second.stdout.splitlines(), second.returncode)
    assert report.ending is RoundEnding.OK and report.session == "s-1"
    assert backend.transcript(context, "s-1") == f"{runtime}/config/sessions/s-1.jsonl"

    third = run_command(backend, context)
    assert third.returncode == 2 and "no scenario left" in third.stdout
    assert backend.started_rounds(context) == [1, 2]

    backend.generate(context)  # a new run starts over
    assert backend.started_rounds(context) == []


def test_program_backend_puts_its_scenarios_among_the_control_files(tmp_path: Path) -> None:
    runtime, context = make_runtime(tmp_path, backend="claude")
    backend = ProgramBackend(
        "claude",
        scenarios=[
            [Step.record("{runtime}/tmp/record.json"), Step.session("s-1"), Step.result(RESULT)]
        ],
    )
    generated = backend.generate(context)
    round_file = f"{runtime}/control/round-1.json"
    assert set(generated.files) == {
        f"{runtime}/control/settings.json",
        f"{runtime}/control/result.schema.json",
        round_file,
    }
    for path, text in generated.files.items():  # as the host writes them
        Path(path).write_text(text)
    done = run_command(backend, context, stdin="the brief")
    assert done.returncode == 0, done.stderr
    assert report_of(done.stdout.splitlines(), 0, backend="claude").worker_result == RESULT
    seen = json.loads((runtime / "tmp" / "record.json").read_text())
    assert seen["stdin"] == "the brief" and seen["cwd"] == f"{runtime}/work"
    assert seen["env"]["CLAUDE_CONFIG_DIR"] == f"{runtime}/config"
    assert backend.started_rounds(context) == [1]
    assert (runtime / "tmp" / "fake-agent" / "round-1.started").exists()
