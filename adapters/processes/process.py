"""The Process port over `subprocess`: one agent program per round, in its own session.

Shape (after pre-commit's util.py, pip's utils/subprocess.py and tox's staged interrupt):

- an argument list, never a shell; exactly the given environment; `start_new_session=True`, so the
  program leads a new session and a new process group whose id is its pid;
- one thread per pipe: stdin is written by a thread and then closed (a brief larger than the pipe
  cannot deadlock against a program that answers while it reads), stdout is split into lines and
  handed over through a bounded queue, stderr is drained into a bounded tail (a program writing
  megabytes of stderr never blocks, and the host never holds more than the last
  `stderr_keep_bytes`);
- memory follows what the consumer takes, not what the program prints (issue 9 §2): a line
  longer than `max_line_bytes` is dropped as it arrives and only counted (`overlong`); the queue
  holds at most `queue_bytes` of lines (Python's own size of each) not yet taken by `lines()`,
  and while it is full the stdout thread stops reading, so the program blocks on its stdout pipe
  (back-pressure) instead of the host growing;
- a watcher thread blocks in `waitid` until the leader exits, then SIGKILLs the rest of the group
  *before* reaping the leader (the unreaped leader keeps the group id from being reused, so no
  unrelated process can be signalled), reaps it, and tells the pipe threads to stop;
- a timer thread waits on an Event (not a poll loop) for the timeout; when it passes it sends
  SIGTERM to the group, waits a grace period for the leader, then SIGKILLs the group. How it
  waits out the timeout is the runner's `wait_timeout` (real time by default; a test gives one
  that returns at a moment it chooses, e.g. once its model server has seen the agent's request,
  so a timeout never races the program's start-up);

The pipe threads' reading and writing, the line splitter, the bounded queue and the stderr tail
are adapters/processes/process_pipes.py; the leader's reaping, every signal to its group and the
timeout are adapters/processes/process_group.py (`LeaderGroup`); the namespace's init and the exact
status the program reports are adapters/processes/namespace_init.py (`NamespaceReports`); this
module starts the program and ends it.

Nothing here polls: reads and writes block in `poll(2)` on the pipe and on a private stop pipe,
the timer and `wait` block on Events, `lines()` and a stdout thread facing a full queue block on
the queue's condition.

Ending, precisely (what the host relies on):

1. When the leader exits, for any reason, every other member of its process group is killed
   (SIGKILL) at once. A child or grandchild the program left running cannot outlive the round.
2. Then the queue's bound is lifted (a stdout thread waiting for room goes on at once, so
   nothing waits for a consumer that may no longer read), and the stdout and stderr threads read
   what is still in the pipes and stop: at end of file, or, when some process outside the group
   (one that moved itself to another session or group, which no process-group kill can reach)
   still holds a pipe open, after reading what the pipe holds at that moment (at most 1 MiB
   more). So `lines()` ends once the leader has exited and the group was killed, even when such
   a process keeps the pipe open; every line the leader wrote is yielded but the overlong ones,
   which are counted. (It ends earlier when stdout reaches end of file while the leader still
   runs: every holder closed it. `wait` then still waits for the leader.)
3. When the program reported the init of its PID namespace (an argument `NAMESPACE_REPORT_FD`,
   adapters/processes/namespace_init.py), a pidfd of that init was opened as soon as the report
   came, and after the pipe threads stopped the watcher waits on it (`poll(2)`, bounded) until the
   init has exited: the kernel completes an init's exit only after every other process of its
   namespace is gone, so none of them outlives the end. A program that asks for a lifeline (an
   argument `LIFELINE_FD`) runs behind the guard and gets one end of a socket pair whose other
   end the host holds until then: its end of file tells the guard (which kills the program's
   process group, the namespace's init in it) and the namespace that the host is gone, at
   whatever moment it died (domain/isolation/launch.py `GUARD_SCRIPT`).
4. `wait()` returns the status only after all of that: once it has returned, `lines()` yields
   what is left in its queue and ends, and `stderr_tail()` is final.
5. `kill_group()` (SIGKILL to the group) may be called at any time, any number of times. Before
   the leader has exited it kills the group, and 1–4 follow. After the leader was reaped it does
   nothing: the rest of the group was already killed in step 1, and signalling a group id that
   may by now belong to someone else would be unsafe.
6. Back-pressure never holds up an ending: the timer, the watcher and `kill_group` never wait for
   the queue, and the bound is lifted before the watcher waits for the pipe threads (2). A
   program that fills the queue while nobody reads `lines()` blocks on its stdout until the
   consumer reads on, its timeout passes or `kill_group` is called; `wait(None)` without reading
   `lines()` therefore returns only after one of those.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence

from concorde_workers.adapters.processes.namespace_init import (
    NamespaceReports,
    lifeline_ends,
    report_pipe,
)
from concorde_workers.adapters.processes.process_group import (
    LeaderGroup,
    WaitTimeout,
    wait_real_time,
)
from concorde_workers.adapters.processes.process_pipes import (
    Backlog,
    LineQueue,
    LineSplitter,
    Tail,
    close_all,
    feed,
    pump,
    spawn,
)
from concorde_workers.adapters.processes.programs import start_problem
from concorde_workers.domain.isolation.launch import EXIT_STATUS_FD
from concorde_workers.domain.run.stdout import MAX_LINE_BYTES, Overlong
from concorde_workers.ports.processes.process import ProcessStartFailed

__all__ = [
    "DEFAULT_QUEUE_BYTES",
    "DEFAULT_STDERR_KEEP_BYTES",
    "DEFAULT_TERM_GRACE_SECONDS",
    "SubprocessHandle",
    "SubprocessRunner",
    "WaitTimeout",
]

#: The spec keeps "up to its last 80,000 bytes" of a round's standard error.
DEFAULT_STDERR_KEEP_BYTES = 80_000
#: How long a timed-out leader gets between SIGTERM and SIGKILL.
DEFAULT_TERM_GRACE_SECONDS = 2.0
#: How much of the lines not yet taken by `lines()` the queue holds before the stdout thread
#: waits (Python's own size of each line, so a flood of empty lines is bounded too).
DEFAULT_QUEUE_BYTES = 4 * 1024 * 1024


class SubprocessRunner:
    """`ProcessRunner` over `subprocess.Popen`.

    `stderr_keep_bytes`: how much of the end of stderr each handle keeps (default 80,000).
    `term_grace_seconds`: after a timeout, how long the leader gets between SIGTERM and SIGKILL.
    `max_line_bytes`: a longer stdout line is dropped and counted (default
    domain.run.stdout.MAX_LINE_BYTES). `queue_bytes`: how much of the lines not yet read the queue
    holds before the program is held back (default 4 MiB). `wait_timeout(wake, seconds)`:
    how the timer waits out a timeout (`WaitTimeout`; the default waits `seconds` of real time
    on the Event, which the runner sets once the leader is gone); tests pass one that returns
    when their event happens instead, and the runner's own timeout path (SIGTERM, grace,
    SIGKILL, `timed_out`) follows as it would after the seconds, unless the leader is gone.
    """

    def __init__(
        self,
        *,
        stderr_keep_bytes: int = DEFAULT_STDERR_KEEP_BYTES,
        term_grace_seconds: float = DEFAULT_TERM_GRACE_SECONDS,
        max_line_bytes: int = MAX_LINE_BYTES,
        queue_bytes: int = DEFAULT_QUEUE_BYTES,
        wait_timeout: WaitTimeout | None = None,
    ) -> None:
        if stderr_keep_bytes < 1:
            raise ValueError("stderr_keep_bytes must be at least 1")
        if term_grace_seconds < 0:
            raise ValueError("term_grace_seconds must not be negative")
        if max_line_bytes < 1 or queue_bytes < 1:
            raise ValueError("max_line_bytes and queue_bytes must be at least 1")
        self.stderr_keep_bytes = stderr_keep_bytes
        self.term_grace_seconds = term_grace_seconds
        self.max_line_bytes = max_line_bytes
        self.queue_bytes = queue_bytes
        self.wait_timeout: WaitTimeout = wait_timeout or wait_real_time

    def start(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: str,
        stdin_text: str | None = None,
        timeout_seconds: float | None = None,
        prefix: Sequence[str] = (),
    ) -> SubprocessHandle:
        """Start `argv` (looked up on `env`'s PATH when it has no slash) in a new session with
        exactly `env`, in `cwd`. `stdin_text` is written as UTF-8 and then stdin is closed; None
        gives an empty stdin (/dev/null). `timeout_seconds` (None: no limit) counts from now;
        `prefix` runs in front of argv (the port's docstring). Raises `ProcessStartFailed` with
        the operating system's error text (which names the program or the working directory)
        when the program cannot be started."""
        args = tuple(argv)
        if not args:
            raise ProcessStartFailed(args, "empty argument list")
        if timeout_seconds is not None and timeout_seconds < 0:
            raise ValueError("timeout_seconds must not be negative")
        # Encode before starting: a string that is not valid Unicode fails here, not in a thread.
        stdin_bytes = None if stdin_text is None else stdin_text.encode("utf-8")
        if prefix:  # it execs argv: a missing program is a start failure, not its exit status
            if (missing := start_problem(args[0], env, cwd)) is not None:
                raise ProcessStartFailed(args, missing)
            args = (*prefix, *args)
        args, report = report_pipe(args)
        args, status = report_pipe(args, EXIT_STATUS_FD)
        args, lifeline = lifeline_ends(args)
        stop_pipe = os.pipe()  # close-on-exec: the program never sees it
        reports = [pipe for pipe in (report, status, lifeline) if pipe is not None]
        proc = spawn(args, env, cwd, stdin_bytes is not None, reports, stop_pipe)
        try:
            return SubprocessHandle(
                proc,
                stop_pipe=stop_pipe,
                report_fd=None if report is None else report[0],
                status_fd=None if status is None else status[0],
                lifeline_fd=None if lifeline is None else lifeline[0],
                stdin_bytes=stdin_bytes,
                timeout_seconds=timeout_seconds,
                stderr_keep_bytes=self.stderr_keep_bytes,
                term_grace_seconds=self.term_grace_seconds,
                max_line_bytes=self.max_line_bytes,
                queue_bytes=self.queue_bytes,
                wait_timeout=self.wait_timeout,
            )
        except BaseException:
            # No handle means nobody would ever end it: end it now.
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise


class SubprocessHandle:
    """`ProcessHandle` of a program started by `SubprocessRunner`; see the module docstring for
    how and when it ends. `lines()` is for one consumer at a time; every other method may be
    called from any thread."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        *,
        stop_pipe: tuple[int, int],
        stdin_bytes: bytes | None,
        timeout_seconds: float | None,
        stderr_keep_bytes: int,
        term_grace_seconds: float,
        max_line_bytes: int = MAX_LINE_BYTES,
        queue_bytes: int = DEFAULT_QUEUE_BYTES,
        wait_timeout: WaitTimeout | None = None,
        report_fd: int | None = None,
        status_fd: int | None = None,
        lifeline_fd: int | None = None,
    ) -> None:
        self._proc = proc
        self._pid = proc.pid
        self._stop_r, self._stop_w = stop_pipe
        self._lifeline = lifeline_fd  # closed once the namespace is gone (domain LIFELINE_FD)
        self._group = LeaderGroup(proc, term_grace_seconds, wait_timeout or wait_real_time)
        self._lines = LineQueue(queue_bytes)  # None: the end
        self._stderr = Tail(stderr_keep_bytes)
        self._done = threading.Event()  # reaped and every pipe thread finished

        self._splitter = LineSplitter(self._lines.put, max_line_bytes)
        self._pipe_threads = self._pipe_threads_of(proc, stdin_bytes)
        # The init of the program's PID namespace and the exact status of what it ran.
        self._reports = NamespaceReports(report_fd, status_fd, self._stop_r, self._thread)
        for t in self._pipe_threads:
            t.start()
        self._reports.start()
        self._thread("watch", self._watch).start()
        if timeout_seconds is not None:
            self._thread("timeout", self._group.enforce_timeout, timeout_seconds).start()

    # -- the port ---------------------------------------------------------------------------

    @property
    def pid(self) -> int:
        return self._pid

    def lines(self) -> Iterator[str]:
        """Stdout lines as they arrive (UTF-8, invalid bytes replaced, without "\\n" or
        "\\r\\n"; a last line without a newline too). Ends at end of stdout, or once the
        leader has exited and the group was killed (module docstring, 1–2). A line longer than
        the runner's `max_line_bytes` is not yielded but counted in `overlong`."""
        while True:
            item = self._lines.get()
            if item is None:
                return  # the end stays in the queue: a later call ends at once too
            yield item

    @property
    def overlong(self) -> Overlong:
        """The stdout lines dropped for being longer than `max_line_bytes`; final once `wait`
        has returned a status."""
        return self._splitter.overlong

    def backlog(self) -> Backlog:
        """The stdout queue's account now (for measurements and tests)."""
        return self._lines.backlog()

    @property
    def stalled(self) -> threading.Event:
        """Set when the stdout thread first waited for room in the queue (back-pressure)."""
        return self._lines.stalled

    def stderr_tail(self, max_bytes: int) -> bytes:
        return self._stderr.last(max_bytes)

    @property
    def timed_out(self) -> bool:
        return self._group.timed_out

    def wait(self, timeout: float | None) -> int | None:
        """The exit status (negative: the signal that killed it), once the leader was reaped and
        stdout and stderr were read to their end; None when that did not happen in `timeout`
        seconds (None: wait as long as it takes)."""
        if not self._done.wait(timeout):
            return None
        if self._reports.exact is not None:
            return self._reports.exact
        status = self._proc.returncode
        assert status is not None
        return status

    def kill_group(self) -> None:
        """SIGKILL the whole group; idempotent; does nothing once the leader was reaped."""
        self._group.kill()

    # -- threads ----------------------------------------------------------------------------

    def _thread(self, name: str, target: Callable[..., None], *args: object) -> threading.Thread:
        return threading.Thread(
            target=target, args=args, name=f"process-{self._pid}-{name}", daemon=True
        )

    def _pipe_threads_of(
        self, proc: subprocess.Popen[bytes], stdin_bytes: bytes | None
    ) -> list[threading.Thread]:
        """The threads (not yet started) that read stdout into the line queue and stderr into
        its tail, and write `stdin_bytes` (None: stdin is /dev/null, no thread)."""
        assert proc.stdout is not None and proc.stderr is not None
        out, err, splitter = proc.stdout, proc.stderr, self._splitter

        def stdout_done() -> None:
            try:
                splitter.end()
            finally:
                self._lines.put(None)

        stop = self._stop_r
        threads = [
            self._thread("stdout", pump, out.fileno(), stop, splitter.feed, stdout_done, out.close),
            self._thread("stderr", pump, err.fileno(), stop, self._stderr.add, None, err.close),
        ]
        if stdin_bytes is not None:
            stdin = proc.stdin
            assert stdin is not None
            threads.append(
                self._thread("stdin", feed, stdin.fileno(), stop, stdin_bytes, stdin.close)
            )
        return threads

    def _watch(self) -> None:
        """Wait for the leader to exit and the rest of its group to be killed (`LeaderGroup.reap`);
        stop the pipe threads; wait for the namespace; then report done."""
        try:
            self._group.reap()
        finally:
            try:
                # Lift the queue's bound before waiting for the pipe threads: a stdout thread
                # waiting for room must not wait for a consumer that may never read again.
                self._lines.unbound()
                os.write(self._stop_w, b"x")
                for t in self._pipe_threads:
                    t.join()
                self._reports.await_namespace()
                self._reports.read_exact_status()
            finally:
                close_all(
                    self._stop_w,
                    self._stop_r,
                    *(() if self._lifeline is None else (self._lifeline,)),
                )
                self._done.set()
