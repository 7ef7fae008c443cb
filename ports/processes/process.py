"""The Process port: start an agent program and follow it.

A process starts in a new session and process group so that ending it ends everything it
spawned. The runner enforces the round's timeout itself: when it passes, it kills the group, so
the stdout stream ends and the host never polls.

How a round ends (seed 000: "No worker process outlives its round"):

- The group lives as long as its leader: when the leader exits, for any reason, the runner kills
  every other member of the group at once. A child left running cannot keep the round alive.
- `lines()` ends at end of stdout, or once the leader has exited and the group was killed, even
  when a process outside the group still holds stdout open; every line the leader wrote is
  yielded first.
- `wait()` returns only when the leader was reaped and stdout and stderr were read to their end:
  after it, `lines()` yields what is left and ends, and `stderr_tail()` is final.
- A program that runs its tree in a PID namespace of its own (the confinement's bubblewrap)
  names that namespace's init: an argument equal to `NAMESPACE_REPORT_FD` is replaced by the
  number of a pipe on which the program reports it (bwrap's `--info-fd`). Then `wait()` returns
  only once that init has exited too, which the kernel allows only after every other process of
  the namespace is gone (when a namespace's init exits, the kernel kills the rest and waits for
  them to be reaped before the init's own exit completes). Killing the group reaches the launcher
  and the init at once, but the namespace's processes die asynchronously after that; without
  this wait the round could end while they are still exiting.
- Such a program may also report the exact wait status of the process it runs for the caller
  (the confinement's waiter, for the agent): an argument equal to `EXIT_STATUS_FD` is replaced by
  the number of a pipe it writes that status on (one decimal line, as waitpid(2) gives it), and
  `wait()` returns that status, decoded (negative: killed by that signal), rather than the
  program's own, which bwrap collapses (a death by signal n is the exit status 128 + n). Without
  a well-formed report (the waiter was killed first) `wait()` returns the program's own.
- The host still calls `kill_group()` when the round ends, whatever the reason (it is what ends
  a running program early, e.g. on cancellation); it is idempotent and harmless after the end.

What the host holds of stdout is bounded whatever the program prints (issue 9 §2): a line longer
than the runner's line limit is dropped and counted (`overlong`), and the lines not yet read are
bounded too: a program whose stdout is not read blocks on its pipe (back-pressure) until the
consumer reads on, its timeout passes or `kill_group()` is called; none of those ever waits for
the consumer.

Typical use: `for line in handle.lines(): ...`, then `handle.wait(grace)`, then
`handle.kill_group()` in a `finally`, then `handle.stderr_tail(80_000)`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Protocol, runtime_checkable

from concorde_workers.domain.isolation.launch import EXIT_STATUS_FD, NAMESPACE_REPORT_FD
from concorde_workers.domain.run.stdout import Overlong

__all__ = [
    "EXIT_STATUS_FD",
    "NAMESPACE_REPORT_FD",
    "ProcessHandle",
    "ProcessRunner",
    "ProcessStartFailed",
]


class ProcessStartFailed(Exception):
    """The program could not be started (not found, not executable, bad cwd)."""

    def __init__(self, argv: Sequence[str], os_error_text: str) -> None:
        self.argv = tuple(argv)
        self.os_error_text = os_error_text
        super().__init__(f"cannot start {self.argv[0] if self.argv else '?'}: {os_error_text}")


@runtime_checkable
class ProcessHandle(Protocol):
    """A started process group."""

    @property
    def pid(self) -> int:
        """The leader's process id (also the group id)."""
        ...

    def lines(self) -> Iterator[str]:
        """Stdout lines as they arrive, without their line end ("\\n", or "\\r\\n"), decoded
        as UTF-8 (invalid bytes replaced); a last line without a newline is yielded too. Ends at
        end of stdout, or once the leader has exited and the group was killed (by its exit, the
        timeout or `kill_group`). A stream for one consumer: a later call yields only what no
        earlier call took, and nothing once it has ended. A line longer than the runner's line
        limit is not yielded; it is counted in `overlong`."""
        ...

    @property
    def overlong(self) -> Overlong:
        """The stdout lines dropped for being longer than the runner's line limit (how many,
        their bytes, the limit); final once `wait` has returned a status."""
        ...

    def stderr_tail(self, max_bytes: int) -> bytes:
        """The last `max_bytes` of stderr so far, as bytes (stderr is drained as it arrives, so a
        program writing megabytes never blocks). The runner keeps a bounded tail (at least the
        80,000 bytes the spec keeps): never more than that is returned. Final once `wait` has
        returned a status."""
        ...

    @property
    def timed_out(self) -> bool:
        """True when the runner killed the group because its timeout passed (SIGTERM to the
        group, a grace period, then SIGKILL). Not set by `kill_group`."""
        ...

    def wait(self, timeout: float | None) -> int | None:
        """The exit status (negative: killed by that signal), or None when it has not ended
        within `timeout` seconds (None: wait as long as it takes). "Ended": the leader was
        reaped, stdout and stderr were read to their end, and the namespace init the program
        reported (if any) has exited."""
        ...

    def kill_group(self) -> None:
        """Kill the whole process group (SIGKILL) and return without waiting; `lines()` then
        ends and `wait` returns. Idempotent, callable from any thread, harmless when it has
        already ended (the rest of the group was killed when the leader exited)."""
        ...


@runtime_checkable
class ProcessRunner(Protocol):
    """Starts programs; raises `ProcessStartFailed` when it cannot."""

    def start(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: str,
        stdin_text: str | None = None,
        timeout_seconds: float | None = None,
        prefix: Sequence[str] = (),
    ) -> ProcessHandle:
        """Start `argv` (no shell; a name without a slash is looked up on `env`'s PATH) in a
        new session and process group with exactly `env` (nothing inherited), in `cwd`, given
        `stdin_text` as UTF-8 on stdin then end of file (None: an empty stdin); kill the group
        when `timeout_seconds` pass (None: no limit). An argument equal to
        `NAMESPACE_REPORT_FD` becomes the number of the pipe the program reports its PID
        namespace's init on, one equal to `EXIT_STATUS_FD` that of the pipe it reports the exact
        exit status on (module docstring). Raises `ProcessStartFailed` with the
        operating system's error text when the program or `cwd` is missing or not usable.

        `prefix` (a control group's join, `ResourceGroup.prefix`) runs in front of `argv` and
        execs it; `argv`'s program is still one whose absence raises `ProcessStartFailed`, as
        when it is started bare."""
        ...
