"""The Process contract: SubprocessRunner running small Python programs, and FakeProcessRunner
scripted to the same behaviour, pass the same tests (so the fake cannot drift from reality).

A `Program` describes a behaviour once; the real world turns it into `python -c <script>`, the
fake world into a `FakeProcess`.
"""

from __future__ import annotations

import json
import random
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fakes.process import FakeProcess, FakeProcessRunner, FakeStart, split_stream
from timing import SLOW

from concorde_workers.adapters.processes.process import SubprocessRunner
from concorde_workers.adapters.processes.process_pipes import LineSplitter
from concorde_workers.domain.run.stdout import MAX_LINE_BYTES, Overlong
from concorde_workers.ports.processes.process import (
    EXIT_STATUS_FD,
    NAMESPACE_REPORT_FD,
    ProcessHandle,
    ProcessRunner,
    ProcessStartFailed,
)

# Python itself must not add to the environment it reports (PEP 538 locale coercion would add
# LC_CTYPE to an environment without a locale).
BASE_ENV = {"LC_ALL": "C.UTF-8", "PYTHONCOERCECLOCALE": "0"}
QUEUE_BYTES = 256 * 1024  # small, so that a flood fills it soon


@dataclass(frozen=True)
class Program:
    """What a program does, in order: write `stdout` (`repeat` times) and `stderr` (raw bytes);
    print its environment as one JSON line (`echo_env`); read stdin to its end and print it as a
    JSON string followed by the line "EOF" (`echo_stdin`); then block forever (`hang`) or exit
    with `exit_status` (negative: kill itself with that signal)."""

    stdout: bytes = b""
    repeat: int = 1
    stderr: bytes = b""
    echo_env: bool = False
    echo_stdin: bool = False
    echo_argv: bool = False
    hang: bool = False
    exit_status: int = 0

    def script(self) -> str:
        return "\n".join(
            [
                "import json, os, sys, time",
                "out = sys.stdout.buffer",
                f"for _ in range({self.repeat}):",
                f"    out.write({self.stdout!r})",
                "out.flush()",
                f"sys.stderr.buffer.write({self.stderr!r}); sys.stderr.buffer.flush()",
                f"if {self.echo_env}:",
                "    out.write(json.dumps(dict(os.environ)).encode() + b'\\n')",
                f"if {self.echo_argv}:",
                "    out.write(json.dumps(sys.argv[1:]).encode() + b'\\n')",
                f"if {self.echo_stdin}:",
                "    text = sys.stdin.buffer.read().decode()",
                "    out.write(json.dumps(text).encode() + b'\\nEOF\\n')",
                "out.flush()",
                f"while {self.hang}:",
                "    time.sleep(3600)",
                f"if {self.exit_status} < 0:",
                f"    os.kill(os.getpid(), {-self.exit_status})",
                f"sys.exit({self.exit_status})",
            ]
        )

    def fake(self) -> FakeProcess:
        def stdout(start: FakeStart) -> bytes:
            data = self.stdout * self.repeat
            if self.echo_env:
                data += json.dumps(start.env).encode() + b"\n"
            if self.echo_argv:
                data += json.dumps(list(start.argv[1:])).encode() + b"\n"
            if self.echo_stdin:
                data += json.dumps(start.stdin_text or "").encode() + b"\nEOF\n"
            return data

        return FakeProcess(
            stdout=stdout, stderr=self.stderr, exit_status=self.exit_status, hang=self.hang
        )


class RealProcessWorld:
    kind = "real"

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp.resolve()

    def runner(
        self,
        stderr_keep_bytes: int = 80_000,
        max_line_bytes: int = MAX_LINE_BYTES,
        queue_bytes: int = QUEUE_BYTES,
    ) -> Any:
        return SubprocessRunner(
            stderr_keep_bytes=stderr_keep_bytes,
            term_grace_seconds=1.0,
            max_line_bytes=max_line_bytes,
            queue_bytes=queue_bytes,
        )

    def start(
        self,
        program: Program,
        *,
        env: dict[str, str] | None = None,
        stdin_text: str | None = None,
        timeout: float | None = None,
        stderr_keep_bytes: int = 80_000,
        max_line_bytes: int = MAX_LINE_BYTES,
        queue_bytes: int = QUEUE_BYTES,
        args: tuple[str, ...] = (),
    ) -> Any:
        return self.runner(stderr_keep_bytes, max_line_bytes, queue_bytes).start(
            [sys.executable, "-c", program.script(), *args],
            BASE_ENV if env is None else env,
            str(self.tmp),
            stdin_text=stdin_text,
            timeout_seconds=timeout,
        )

    @staticmethod
    def held_back(handle: Any) -> None:
        """Wait until the program is held back: its stdout thread waits for room in the
        queue (an event of the runner, not a guess at how long writing takes)."""
        assert handle.stalled.wait(SLOW), "the stdout queue never filled up"

    def failing_start(self, kind: str) -> tuple[list[str], str]:
        """The argv and cwd of a start that fails for the reason `kind`."""
        if kind == "missing program":
            return ["cw-no-such-program"], str(self.tmp)
        if kind == "not executable":
            path = self.tmp / "not-executable"
            path.write_text("#!/bin/sh\n")
            path.chmod(0o644)
            return [str(path)], str(self.tmp)
        return [sys.executable, "-c", "pass"], str(self.tmp / "missing-dir")

    def start_failing(self, kind: str) -> tuple[list[str], str]:
        argv, cwd = self.failing_start(kind)
        self.runner().start(argv, {"PATH": str(self.tmp)}, cwd)
        return argv, cwd


# What the real runner reports for each failure (`str(OSError)`), scripted into the fake.
OS_ERRORS = {
    "missing program": "[Errno 2] No such file or directory: '{argv0}'",
    "not executable": "[Errno 13] Permission denied: '{argv0}'",
    "missing cwd": "[Errno 2] No such file or directory: '{cwd}'",
}


class FakeProcessWorld:
    kind = "fake"

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp.resolve()
        self.last_runner: FakeProcessRunner | None = None

    def start(
        self,
        program: Program,
        *,
        env: dict[str, str] | None = None,
        stdin_text: str | None = None,
        timeout: float | None = None,
        stderr_keep_bytes: int = 80_000,
        max_line_bytes: int = MAX_LINE_BYTES,
        queue_bytes: int = QUEUE_BYTES,
        args: tuple[str, ...] = (),
    ) -> Any:
        runner = FakeProcessRunner.scripted(
            program.fake(), stderr_keep_bytes=stderr_keep_bytes, max_line_bytes=max_line_bytes
        )
        self.last_runner = runner
        return runner.start(
            ["fake-program", *args],
            BASE_ENV if env is None else env,
            str(self.tmp),
            stdin_text=stdin_text,
            timeout_seconds=timeout,
        )

    def runner(self, stderr_keep_bytes: int = 80_000) -> Any:
        return FakeProcessRunner(stderr_keep_bytes=stderr_keep_bytes)

    @staticmethod
    def held_back(handle: Any) -> None:
        """A fake program has written everything when it starts: nothing to wait for."""

    def start_failing(self, kind: str) -> tuple[list[str], str]:
        argv, cwd = RealProcessWorld(self.tmp).failing_start(kind)
        text = OS_ERRORS[kind].format(argv0=argv[0], cwd=cwd)
        runner = FakeProcessRunner.scripted(FakeProcess(fail_to_start=text))
        runner.start(argv, {"PATH": str(self.tmp)}, cwd)
        return argv, cwd


@pytest.fixture(params=["real", "fake"])
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "real":
        return RealProcessWorld(tmp_path)
    return FakeProcessWorld(tmp_path)


def finish(handle: Any) -> tuple[list[str], int]:
    lines = list(handle.lines())
    status = handle.wait(SLOW)
    assert status is not None, "the process did not end"
    return lines, status


# -- the contract ---------------------------------------------------------------------------


def test_runner_and_handle_implement_the_port(world: Any) -> None:
    assert isinstance(world.runner(), ProcessRunner)
    handle = world.start(Program())
    assert isinstance(handle, ProcessHandle)
    assert isinstance(handle.pid, int) and handle.pid > 0
    finish(handle)


def test_lines_arrive_in_order_without_line_ends_and_a_last_line_without_newline(
    world: Any,
) -> None:
    handle = world.start(Program(stdout=b"one\ntwo\r\n\nthree"))
    assert finish(handle) == (["one", "two", "", "three"], 0)


def test_no_output_gives_no_lines_and_a_final_newline_no_empty_line(world: Any) -> None:
    assert finish(world.start(Program())) == ([], 0)
    assert finish(world.start(Program(stdout=b"only\n"))) == (["only"], 0)


def test_lines_are_utf8_with_invalid_bytes_replaced(world: Any) -> None:
    handle = world.start(Program(stdout="héllo ✓\n".encode() + b"bad \xff\xfe end\n\xe2\x9c"))
    lines, _ = finish(handle)
    assert lines == ["héllo ✓", "bad \ufffd\ufffd end", "\ufffd"]


def test_stderr_tail_keeps_only_the_last_n_bytes(world: Any) -> None:
    data = bytes(i % 251 for i in range(1000))
    handle = world.start(Program(stderr=data), stderr_keep_bytes=100)
    finish(handle)
    assert handle.stderr_tail(10**6) == data[-100:]
    assert handle.stderr_tail(7) == data[-7:]
    assert handle.stderr_tail(0) == b""


def test_small_stderr_is_kept_whole(world: Any) -> None:
    handle = world.start(Program(stderr=b"warning: x\n\xff"))
    finish(handle)
    assert handle.stderr_tail(80_000) == b"warning: x\n\xff"


@pytest.mark.parametrize("status", [0, 3, 255, -signal.SIGTERM, -signal.SIGKILL])
def test_exit_status_and_death_by_signal(world: Any, status: int) -> None:
    handle = world.start(Program(stdout=b"x\n", exit_status=status))
    assert finish(handle) == (["x"], status)
    assert handle.timed_out is False


def test_the_environment_is_exactly_the_one_given(
    world: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CW_HOST_ONLY", "must not be inherited")
    env = {**BASE_ENV, "CW_A": "1", "CW_SPACES": "two words = three", "CW_EMPTY": ""}
    handle = world.start(Program(echo_env=True), env=dict(env))
    lines, _ = finish(handle)
    assert json.loads(lines[0]) == env


@pytest.mark.parametrize("text", ["brief ✓\nsecond line\n", "", "no newline at the end"])
def test_stdin_text_is_delivered_then_end_of_file(world: Any, text: str) -> None:
    handle = world.start(Program(echo_stdin=True), stdin_text=text, timeout=SLOW)
    lines, status = finish(handle)
    assert (lines, status, handle.timed_out) == ([json.dumps(text), "EOF"], 0, False)


def test_no_stdin_text_is_an_empty_stdin(world: Any) -> None:
    handle = world.start(Program(echo_stdin=True), timeout=SLOW)
    assert finish(handle) == ([json.dumps(""), "EOF"], 0)


@pytest.mark.parametrize("kind", ["missing program", "not executable", "missing cwd"])
def test_a_start_failure_raises_process_start_failed_with_the_os_error(
    world: Any, kind: str
) -> None:
    with pytest.raises(ProcessStartFailed) as info:
        world.start_failing(kind)
    argv, cwd = RealProcessWorld(world.tmp).failing_start(kind)
    exc = info.value
    assert exc.argv == tuple(argv)
    assert argv[0] in str(exc)  # the message names the program
    expected = {
        "missing program": ("No such file or directory", argv[0]),
        "not executable": ("Permission denied", argv[0]),
        "missing cwd": ("No such file or directory", cwd),
    }[kind]
    for part in expected:
        assert part in exc.os_error_text


@pytest.mark.parametrize("kind", ["missing program", "not executable", "missing cwd"])
def test_a_start_behind_a_prefix_fails_as_the_bare_start_does(tmp_path: Path, kind: str) -> None:
    """A control group's join prefix execs the program: its absence is still the start
    failure, with the text of the bare start, never the prefix's exit status."""
    world = RealProcessWorld(tmp_path)
    argv, cwd = world.failing_start(kind)
    env = {"PATH": str(world.tmp)}
    with pytest.raises(ProcessStartFailed) as bare:
        world.runner().start(argv, env, cwd)
    with pytest.raises(ProcessStartFailed) as prefixed:
        world.runner().start(argv, env, cwd, prefix=["/bin/sh", "-c", 'exec "$@"', "join"])
    assert prefixed.value.os_error_text == bare.value.os_error_text


def test_a_prefix_runs_in_front_of_the_program(tmp_path: Path) -> None:
    handle = (
        RealProcessWorld(tmp_path)
        .runner()
        .start(
            [sys.executable, "-c", "import os; print(os.environ['JOINED'])"],
            BASE_ENV,
            str(tmp_path),
            prefix=["/usr/bin/env", "JOINED=yes"],
        )
    )
    assert list(handle.lines()) == ["yes"]
    assert handle.wait(SLOW) == 0


def test_timeout_kills_the_group_ends_the_stream_and_wait_returns(world: Any) -> None:
    handle = world.start(Program(stdout=b"ready\n", hang=True), timeout=0.5)
    # wait first: a timeout that never fired fails here within SLOW instead of hanging lines().
    assert (handle.wait(SLOW), handle.timed_out) == (-signal.SIGTERM, True)
    lines = list(handle.lines())
    # On a busy machine the program may not have started writing within half a second; what it
    # wrote is read (kill_group's test proves that on an event, not a race with the timeout).
    assert lines == ["ready"][: len(lines)]


def test_wait_with_a_timeout_returns_none_while_it_runs(world: Any) -> None:
    handle = world.start(Program(hang=True))
    assert handle.wait(0.2) is None
    handle.kill_group()
    assert handle.wait(SLOW) == -signal.SIGKILL


def test_kill_group_ends_it_and_is_idempotent(world: Any) -> None:
    handle = world.start(Program(stdout=b"ready\nsteady\n", hang=True))
    seen = []
    for line in handle.lines():
        seen.append(line)
        if line == "ready":
            handle.kill_group()
            handle.kill_group()
    assert seen == ["ready", "steady"]  # what was written before the kill is still read
    assert handle.wait(SLOW) == -signal.SIGKILL
    assert handle.timed_out is False
    handle.kill_group()  # after the end: harmless
    assert handle.wait(0) == -signal.SIGKILL
    assert list(handle.lines()) == []  # the stream stays ended


def test_kill_group_after_a_normal_exit_is_harmless(world: Any) -> None:
    handle = world.start(Program(stdout=b"done\n", exit_status=0))
    assert finish(handle) == (["done"], 0)
    handle.kill_group()
    handle.kill_group()
    assert handle.wait(None) == 0
    assert handle.timed_out is False


def test_the_report_placeholders_become_descriptor_numbers(world: Any) -> None:
    """A program asked to report its PID namespace's init, or the exact status of what it runs,
    sees the numbers of the pipes it writes them on; one that writes none ends as any other,
    with its own status."""
    handle = world.start(
        Program(echo_argv=True, exit_status=3),
        args=("--info-fd", NAMESPACE_REPORT_FD, EXIT_STATUS_FD, "x"),
    )
    lines, status = finish(handle)
    flag, report, exact, rest = json.loads(lines[0])
    assert (flag, rest, status) == ("--info-fd", "x", 3)
    for number in (report, exact):
        assert number.isdigit() and int(number) > 2  # never stdin, stdout or stderr
    assert report != exact


# -- bounded memory whatever the program prints (issue 9 §2) ---------------------------------

FLOOD_LINE = b"0123456789" * 99 + b"\n"  # 1,000 bytes
FLOOD_REPEAT = 20_000  # 20 MB: far more than the queue, the pipe and the drain hold together


def test_a_line_longer_than_the_limit_is_dropped_and_counted(world: Any) -> None:
    stdout = b"a\n" + b"x" * 101 + b"\n" + b"y" * 100 + b"\nb\r\n" + b"z" * 150
    handle = world.start(Program(stdout=stdout), max_line_bytes=100)
    assert finish(handle) == (["a", "y" * 100, "b"], 0)
    assert handle.overlong == Overlong(lines=2, bytes=251, limit=100)


def test_without_an_overlong_line_nothing_is_counted(world: Any) -> None:
    handle = world.start(Program(stdout=b"one\ntwo\n"))
    finish(handle)
    assert handle.overlong == Overlong(lines=0, bytes=0, limit=MAX_LINE_BYTES)


def test_kill_group_ends_a_program_held_back_by_a_flood_nobody_reads(world: Any) -> None:
    handle = world.start(Program(stdout=FLOOD_LINE, repeat=FLOOD_REPEAT, hang=True))
    world.held_back(handle)  # the real program now blocks on its full stdout pipe
    handle.kill_group()
    assert handle.wait(SLOW) == -signal.SIGKILL  # no deadlock with the waiting stdout thread
    lines = list(handle.lines())
    assert lines and lines == [FLOOD_LINE[:-1].decode()] * len(lines)


def test_a_timeout_ends_a_program_held_back_by_a_flood_nobody_reads(world: Any) -> None:
    handle = world.start(Program(stdout=FLOOD_LINE, repeat=FLOOD_REPEAT, hang=True), timeout=1.0)
    assert (handle.wait(SLOW), handle.timed_out) == (-signal.SIGTERM, True)
    lines = list(handle.lines())
    assert lines == [FLOOD_LINE[:-1].decode()] * len(lines)


@pytest.mark.parametrize("seed", range(25))
def test_the_real_line_splitter_keeps_the_fakes_rule_on_any_chunking(seed: int) -> None:
    """The fake splits a whole stream at once (fakes.process.split_stream); the real runner gets
    it in reads of any size. Both must keep and drop the same lines."""
    rng = random.Random(seed)
    limit = rng.choice([1, 5, 16, 64])
    parts = [b"", b"\r", b"ab", b"\xff\xfe", "é✓".encode(), b"x" * rng.randint(0, 3 * limit)]
    data = b"".join(
        rng.choice(parts) + (b"\n" if rng.random() < 0.3 else b"")
        for _ in range(rng.randint(0, 200))
    )
    emitted: list[str] = []
    splitter = LineSplitter(emitted.append, limit)
    at = 0
    while at < len(data):
        size = rng.choice([1, 2, 3, 7, limit, limit + 1, 2 * limit, 1000])
        splitter.feed(data[at : at + size])
        at += size
    splitter.end()
    assert (emitted, splitter.overlong) == split_stream(data, limit)


# -- what only the fake offers --------------------------------------------------------------


def test_fake_records_starts_kills_and_calls_on_start() -> None:
    seen: list[FakeStart] = []
    runner = FakeProcessRunner.scripted(
        FakeProcess(stdout=["a", "b"], on_start=seen.append),
        FakeProcess(fail_to_start="[Errno 2] No such file or directory: 'x'"),
        FakeProcess(hang=True),
    )
    env = {"A": "1"}
    first = runner.start(["claude", "-p"], env, "/w", stdin_text="brief", timeout_seconds=30)
    env["A"] = "changed"  # the record is a copy
    assert seen == [FakeStart(("claude", "-p"), {"A": "1"}, "/w", "brief", 30)]
    assert list(first.lines()) == ["a", "b"]
    with pytest.raises(ProcessStartFailed):
        runner.start(["x"], {}, "/w")
    third = runner.start(["pi"], {}, "/w")
    third.kill_group()
    third.kill_group()
    assert [s.argv for s in runner.starts] == [("claude", "-p"), ("x",), ("pi",)]
    assert runner.kills == [third.pid, third.pid]
    assert third.kill_calls == 2 and first.pid != third.pid
    assert runner.handles == [first, third]


def test_fake_hanging_without_timeout_or_kill_is_a_test_bug_not_a_hang() -> None:
    runner = FakeProcessRunner.scripted(FakeProcess(stdout=["x"], hang=True))
    handle = runner.start(["p"], {}, "/")
    assert handle.wait(5) is None
    with pytest.raises(AssertionError):
        handle.wait(None)
    with pytest.raises(AssertionError):
        list(handle.lines())


def test_fake_without_a_script_left_says_so() -> None:
    with pytest.raises(AssertionError, match="no scripted process"):
        FakeProcessRunner().start(["p"], {}, "/")
