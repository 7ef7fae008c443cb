"""The init of a program's PID namespace, followed by a pidfd (ports/processes/process.py "How a
round ends"; docs/decisions.md "The agent process tree in its own namespaces").

The confined agent runs under bubblewrap: the launcher (the process the runner started, the
group leader) forks the namespace's init, which runs the agent. Killing the group kills the
launcher and the init at once, and the runner reaps the launcher; but the init is not the host's
child, and the kernel ends the namespace's other processes asynchronously, during the init's
exit: an init whose exit has completed is one whose namespace is empty (the kernel kills every
other process of the namespace and waits until each was reaped before the init's own exit
completes: `zap_pid_ns_processes`). So the runner opens a pidfd for the init as soon as bwrap
reports it (`--info-fd`, which bwrap writes before the namespace runs anything) and, when the
round ends, waits on it: `poll(2)` on a pidfd returns once the process has exited.

A pidfd names one process for good, so a pid the kernel reuses later cannot be mistaken for the
init once the pidfd is open; the pid-namespace inode bwrap reports is checked after opening, so
a pid reused between bwrap's report and the opening is not taken for the init either (the init
it named is then gone, which is what the wait is for).
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import threading
from collections.abc import Callable

from concorde_workers.domain.ground import json_limits
from concorde_workers.domain.isolation.launch import LIFELINE_FD, NAMESPACE_REPORT_FD, guarded

__all__ = [
    "INIT_EXIT_BOUND_SECONDS",
    "NamespaceReports",
    "await_exit",
    "exit_status",
    "lifeline_ends",
    "open_init",
    "read_report",
    "report_pipe",
]

INIT_EXIT_BOUND_SECONDS = 60.0
"""How long the end of a round waits for the namespace's init after the group was killed. Every
process there has been sent SIGKILL; only one in an uninterruptible sleep (a hung network
filesystem) takes longer, and then the round ends without it rather than never."""

_REPORT_LIMIT = 64 * 1024  # bwrap's report is a few hundred bytes


def report_pipe(
    argv: tuple[str, ...], placeholder: str = NAMESPACE_REPORT_FD
) -> tuple[tuple[str, ...], tuple[int, int] | None]:
    """`argv` with `placeholder` (`NAMESPACE_REPORT_FD`, `EXIT_STATUS_FD`) replaced by the write
    end of a new pipe, and the pipe (read end, write end); `argv` unchanged and None when it
    asks for no such report."""
    if placeholder not in argv:
        return argv, None
    read_end, write_end = os.pipe()  # both close-on-exec; the runner passes the write end
    return tuple(str(write_end) if a == placeholder else a for a in argv), (read_end, write_end)


def lifeline_ends(argv: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[int, int] | None]:
    """`argv` behind the guard (domain/isolation/launch.py `guarded`) with `LIFELINE_FD` replaced
    by one end of a new socket pair, and the pair as (the end the host keeps, the end it passes):
    the host holds its end, close-on-exec, until the program's namespace is gone, so the passed
    end's end of file comes with the host's death (or once the program was waited for); `argv`
    unchanged and None when it asks for none."""
    if LIFELINE_FD not in argv:
        return argv, None
    kept, passed = (end.detach() for end in socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM))
    return tuple(str(passed) if a == LIFELINE_FD else a for a in guarded(argv)), (kept, passed)


def exit_status(report: bytes) -> int | None:
    """The exit status the waiter reported (domain/isolation/confinement.py WAITER), as the port
    gives one
    (negative: killed by that signal); None when the report is not exactly one wait status (the
    waiter was killed before it could write, or something else wrote there too)."""
    text = report.decode("ascii", "replace")
    if not text.endswith("\n") or text.count("\n") != 1 or not text[:-1].isdigit():
        return None
    status = int(text[:-1])
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    return None


def read_report(fd: int, stop_fd: int) -> bytes:
    """What the program wrote on the report pipe: until end of file (bwrap closes it right after
    writing), or, once `stop_fd` is readable (the launcher is gone), what the pipe holds then."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    poller.register(stop_fd, select.POLLIN)
    data = bytearray()
    while len(data) < _REPORT_LIMIT:
        ready = {ready_fd for ready_fd, _ in poller.poll()}
        if fd not in ready:  # stopped, and nothing (more) in the pipe
            break
        chunk = os.read(fd, _REPORT_LIMIT - len(data))
        if not chunk:
            break
        data += chunk
    return bytes(data)


def open_init(report: bytes) -> int | None:
    """A pidfd of the init the report names, or None when it names none or that init is gone
    already (its pid no longer in that namespace: exited and reaped, perhaps reused)."""
    try:
        info = json_limits.loads(report)
    except ValueError:
        return None
    if not isinstance(info, dict):
        return None
    pid, namespace = info.get("child-pid"), info.get("pid-namespace")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid < 2:
        return None
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:  # ESRCH: exited and reaped
        return None
    try:
        if isinstance(namespace, int) and os.stat(f"/proc/{pid}/ns/pid").st_ino != namespace:
            raise ProcessLookupError(pid)  # the pid was reused: the init it named is gone
    except OSError:  # a zombie has no namespace left to read: exited
        os.close(pidfd)
        return None
    return pidfd


def await_exit(pidfd: int, seconds: float = INIT_EXIT_BOUND_SECONDS) -> bool:
    """Wait (no polling loop: one `poll(2)`) until the process of `pidfd` has exited, at most
    `seconds`; True when it has. Closes the pidfd."""
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        return bool(poller.poll(max(0, int(seconds * 1000))))
    finally:
        with contextlib.suppress(OSError):
            os.close(pidfd)


class NamespaceReports:
    """What a started program reports beside its output (adapters/processes/process.py, "Ending,
    precisely", 3-4): the init of its PID namespace, a pidfd opened as soon as the report comes
    (on a thread of its own, `start`), waited for once the pipe threads stopped; and the exact
    wait status of what it ran, read once everything is over. Both reads end when `stop_fd` is
    readable (the launcher is gone)."""

    def __init__(
        self,
        report_fd: int | None,
        status_fd: int | None,
        stop_fd: int,
        thread: Callable[..., threading.Thread],
    ) -> None:
        self._stop = stop_fd
        self._init: int | None = None  # the init's pidfd, once reported (None: none)
        self._status_fd = status_fd
        self.exact: int | None = None
        self._follower = None if report_fd is None else thread("namespace", self._follow, report_fd)

    def start(self) -> None:
        if self._follower is not None:
            self._follower.start()

    def _follow(self, fd: int) -> None:
        """Open a pidfd of the namespace's init as soon as the program reports it (bwrap writes
        the report before the namespace runs anything, so the init is alive then)."""
        try:
            self._init = open_init(read_report(fd, self._stop))
        finally:
            os.close(fd)

    def await_namespace(self) -> None:
        """No process of the program's PID namespace outlives the end: wait until its init has
        exited, which the kernel completes only once every other process there is gone."""
        if self._follower is None:
            return
        self._follower.join()
        init, self._init = self._init, None
        if init is not None:
            await_exit(init)

    def read_exact_status(self) -> None:
        """The exact status the program reported for what it ran (`EXIT_STATUS_FD`), read once
        everything is over: its writer has exited (or was killed before it could write)."""
        fd, self._status_fd = self._status_fd, None
        if fd is None:
            return
        try:
            self.exact = exit_status(read_report(fd, self._stop))
        finally:
            os.close(fd)
