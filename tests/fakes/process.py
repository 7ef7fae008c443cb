"""FakeProcessRunner: a `ProcessRunner` that runs nothing and answers from scripts.

Each `start` takes the next `FakeProcess` from the runner's queue. A fake process has already
run to its end when `start` returns (its stdout is all "in the pipe"), unless it `hang`s: then it
ends only by `kill_group` (status -SIGKILL) or by its timeout (at once, no real waiting:
`timed_out` True, status -SIGTERM), which is decided when the host reaches the end of `lines()`
or calls `wait`. A hanging fake with neither is a test bug: `wait(None)` and the end of `lines()`
raise AssertionError instead of blocking forever; `wait(t)` returns None (not ended in time).

Like the real runner, a line longer than `max_line_bytes` (its UTF-8 bytes before "\n") is not
yielded but counted in the handle's `overlong`, whether the script gives lines or a raw stream.

Records: `starts` (every start asked for, a failed one included, as `FakeStart`), `kills` (the
pid of every `kill_group` call), `handles` (every handle returned). tests/contract/
test_process_contract.py runs the same tests on this fake and on SubprocessRunner.
"""

from __future__ import annotations

import signal
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from concorde_workers.domain.run.stdout import MAX_LINE_BYTES, Overlong
from concorde_workers.ports.processes.process import (
    EXIT_STATUS_FD,
    NAMESPACE_REPORT_FD,
    ProcessStartFailed,
)

DEFAULT_STDERR_KEEP_BYTES = 80_000  # as SubprocessRunner's
FAKE_REPORT_FD = "3"  # the report pipe's number a fake program sees for NAMESPACE_REPORT_FD
FAKE_STATUS_FD = "4"  # and for EXIT_STATUS_FD (a fake's status is exact: it is scripted)

# What a fake program writes on stdout: a list of lines (yielded as given), or a raw stream
# (bytes, or str taken as UTF-8) split and decoded exactly as the real runner does, or a function
# of the start (a program whose output depends on its argv, env, cwd or stdin).
StdoutScript = Sequence[str] | bytes | str
StdoutSource = StdoutScript | Callable[["FakeStart"], StdoutScript]


@dataclass(frozen=True)
class FakeStart:
    """One call of `start`, as asked (env is a copy), but for `NAMESPACE_REPORT_FD` and
    `EXIT_STATUS_FD` in argv, which are the numbers the program sees (`FAKE_REPORT_FD`,
    `FAKE_STATUS_FD`)."""

    argv: tuple[str, ...]
    env: dict[str, str]
    cwd: str
    stdin_text: str | None
    timeout_seconds: float | None


@dataclass
class FakeProcess:
    """The script of one fake program.

    `stdout`: see `StdoutSource`. `stderr`: everything it writes on stderr. `exit_status`:
    negative for death by that signal. `hang`: it never ends by itself. `fail_to_start`: the
    operating system's error text; `start` raises ProcessStartFailed with it. `on_start`: called
    with the `FakeStart` when the program starts (before any of its output is read), e.g. to
    change an in-memory worktree as a worker would.
    """

    stdout: StdoutSource = ()
    stderr: bytes = b""
    exit_status: int = 0
    hang: bool = False
    fail_to_start: str | None = None
    on_start: Callable[[FakeStart], None] | None = None


def split_stream(data: bytes, max_line_bytes: int = MAX_LINE_BYTES) -> tuple[list[str], Overlong]:
    """The real runner's rule: lines end at "\\n" (a "\\r" just before it belongs to the line
    end), a last line without "\\n" counts, UTF-8 with invalid bytes replaced; a line of more
    than `max_line_bytes` bytes before its "\\n" is dropped and counted."""
    parts = data.split(b"\n")
    if parts[-1] == b"":
        parts.pop()
    kept: list[str] = []
    overlong = Overlong(limit=max_line_bytes)
    for part in parts:
        if len(part) > max_line_bytes:
            overlong = overlong.adding(len(part))
        else:
            kept.append(part.removesuffix(b"\r").decode("utf-8", "replace"))
    return kept, overlong


@dataclass
class FakeProcessRunner:
    """`ProcessRunner` answering from `scripts`, in order; see the module docstring."""

    scripts: deque[FakeProcess] = field(default_factory=deque)
    stderr_keep_bytes: int = DEFAULT_STDERR_KEEP_BYTES
    max_line_bytes: int = MAX_LINE_BYTES
    starts: list[FakeStart] = field(default_factory=list)
    kills: list[int] = field(default_factory=list)
    handles: list[FakeProcessHandle] = field(default_factory=list)
    next_pid: int = 4242

    @classmethod
    def scripted(
        cls,
        *processes: FakeProcess,
        stderr_keep_bytes: int = DEFAULT_STDERR_KEEP_BYTES,
        max_line_bytes: int = MAX_LINE_BYTES,
    ) -> FakeProcessRunner:
        return cls(
            scripts=deque(processes),
            stderr_keep_bytes=stderr_keep_bytes,
            max_line_bytes=max_line_bytes,
        )

    def add(self, *processes: FakeProcess) -> None:
        self.scripts.extend(processes)

    def start(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: str,
        stdin_text: str | None = None,
        timeout_seconds: float | None = None,
        prefix: Sequence[str] = (),
    ) -> FakeProcessHandle:
        # The program sees the report pipe's number where the placeholder was, as with the real
        # runner; a fake program reports no namespace init (it has no processes to wait for).
        numbers = {NAMESPACE_REPORT_FD: FAKE_REPORT_FD, EXIT_STATUS_FD: FAKE_STATUS_FD}
        asked = tuple(numbers.get(a, a) for a in (*prefix, *argv))  # as the real one spawns
        record = FakeStart(asked, dict(env), cwd, stdin_text, timeout_seconds)
        self.starts.append(record)
        if not record.argv:
            raise ProcessStartFailed(record.argv, "empty argument list")
        if not self.scripts:
            raise AssertionError(f"FakeProcessRunner: no scripted process left for {record.argv}")
        script = self.scripts.popleft()
        if script.fail_to_start is not None:
            raise ProcessStartFailed(record.argv, script.fail_to_start)
        if script.on_start is not None:
            script.on_start(record)
        stdout = script.stdout(record) if callable(script.stdout) else script.stdout
        if isinstance(stdout, str):
            stdout = stdout.encode("utf-8")
        if isinstance(stdout, bytes):
            lines, overlong = split_stream(stdout, self.max_line_bytes)
        else:
            for line in stdout:
                assert "\n" not in line, f"a scripted line holds a newline: {line!r}"
            # Scripted lines are yielded as given (a test may script text no UTF-8 encodes);
            # only their length is measured as the real runner would.
            kept = [line for line in stdout if _size(line) <= self.max_line_bytes]
            overlong = Overlong(limit=self.max_line_bytes)
            for line in stdout:
                if _size(line) > self.max_line_bytes:
                    overlong = overlong.adding(_size(line))
            lines = kept
        handle = FakeProcessHandle(
            runner=self,
            pid=self.next_pid,
            start=record,
            script=script,
            stdout_lines=deque(lines),
            stderr=script.stderr[-self.stderr_keep_bytes :],
            overlong=overlong,
        )
        self.next_pid += 1
        self.handles.append(handle)
        return handle


@dataclass
class FakeProcessHandle:
    """`ProcessHandle` of a fake program. `kill_calls` counts this handle's `kill_group` calls."""

    runner: FakeProcessRunner
    pid: int
    start: FakeStart
    script: FakeProcess
    stdout_lines: deque[str]
    stderr: bytes
    overlong: Overlong = field(default_factory=Overlong)
    kill_calls: int = 0
    timed_out: bool = False
    status: int | None = None

    def __post_init__(self) -> None:
        if not self.script.hang:
            self.status = self.script.exit_status

    def lines(self) -> Iterator[str]:
        # A stream: what one call has read, a later call does not see again.
        while self.stdout_lines:
            yield self.stdout_lines.popleft()
        if self.status is None and not self._end_by_timeout():
            raise AssertionError(
                f"fake process {self.start.argv} hangs with no timeout and was not killed: "
                "its stdout would never end"
            )

    def stderr_tail(self, max_bytes: int) -> bytes:
        if max_bytes < 0:
            raise ValueError("max_bytes must not be negative")
        return self.stderr[-max_bytes:] if max_bytes else b""

    def wait(self, timeout: float | None) -> int | None:
        if self.status is not None or self._end_by_timeout():
            return self.status
        if timeout is not None:
            return None  # it would not have ended in `timeout` seconds
        raise AssertionError(
            f"fake process {self.start.argv} hangs with no timeout and was not killed: "
            "wait(None) would block forever"
        )

    def kill_group(self) -> None:
        self.runner.kills.append(self.pid)
        self.kill_calls += 1
        if self.status is None:
            self.status = -signal.SIGKILL

    def _end_by_timeout(self) -> bool:
        if self.start.timeout_seconds is None:
            return False
        self.timed_out = True
        self.status = -signal.SIGTERM
        return True


def _size(line: str) -> int:
    return len(line.encode("utf-8", "surrogatepass"))
