"""The pipes of a program the process runner started: the threads' reading and writing, and what
they hand over.

- `pump` reads a pipe into a sink until end of file, or until the runner's stop pipe says the
  process group is gone; then `drain` reads what the pipe still holds, at most `DRAIN_BUDGET`
  more (so a writer outside the group cannot keep a stream going forever), and stops;
- `feed` writes the brief to the program's stdin from its own thread and closes it (a brief
  larger than the pipe cannot deadlock against a program that answers while it reads);
- `LineSplitter` splits stdout into lines and drops (counting) the overlong ones as they arrive;
- `LineQueue` hands the lines to the one consumer, bounded (back-pressure: the stdout thread
  waits while it is full, so the program blocks on its pipe instead of the host growing);
- `Tail` keeps the last bytes of stderr;
- `spawn` starts the program as a session's leader with the ends of its report and lifeline
  pipes it is given.

Nothing here polls: reads and writes block in `poll(2)` on the pipe and on the stop pipe, a
stdout thread facing a full queue and a consumer facing an empty one block on its condition.
How and when the pipe threads are stopped is adapters/processes/process.py's (its module docstring).
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from concorde_workers.domain.run.stdout import Overlong
from concorde_workers.ports.processes.process import ProcessStartFailed

__all__ = [
    "CHUNK",
    "DRAIN_BUDGET",
    "Backlog",
    "LineQueue",
    "LineSplitter",
    "Tail",
    "close_all",
    "decode_line",
    "drain",
    "feed",
    "pump",
    "spawn",
]

CHUNK = 64 * 1024
# After the stop, read at most this much more from a pipe (a Linux pipe holds at most 1 MiB
# unless raised by root), so a writer outside the group cannot keep a stream going forever.
DRAIN_BUDGET = 1 << 20


def pump(
    fd: int,
    stop_r: int,
    sink: Callable[[bytes], None],
    on_end: Callable[[], None] | None,
    close: Callable[[], None],
) -> None:
    """Read `fd` into `sink` until end of file, or until the stop pipe `stop_r` says the group
    is gone; then read what the pipe still holds (bounded) and stop. `on_end`, then `close`,
    run however it stops."""
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        poller.register(stop_r, select.POLLIN)
        while True:
            ready = {ready_fd for ready_fd, _ in poller.poll()}
            if stop_r in ready:
                drain(fd, sink)
                return
            data = os.read(fd, CHUNK)
            if not data:
                return
            sink(data)
    finally:
        try:
            if on_end is not None:
                on_end()
        finally:
            close()


def drain(fd: int, sink: Callable[[bytes], None]) -> None:
    """Read what `fd` holds now, at most `DRAIN_BUDGET` bytes, without waiting for more."""
    os.set_blocking(fd, False)
    budget = DRAIN_BUDGET
    while budget > 0:
        try:
            data = os.read(fd, min(CHUNK, budget))
        except BlockingIOError:
            return
        if not data:
            return
        sink(data)
        budget -= len(data)


def feed(fd: int, stop_r: int, data: bytes, close: Callable[[], None]) -> None:
    """Write `data` to the program's stdin, then close it (end of file). Stops early when
    the program closed its end or the stop pipe `stop_r` says the group is gone."""
    try:
        os.set_blocking(fd, False)
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        poller.register(stop_r, select.POLLIN)
        view = memoryview(data)
        offset = 0
        while offset < len(view):
            ready = {ready_fd for ready_fd, _ in poller.poll()}
            if stop_r in ready:
                return
            try:
                offset += os.write(fd, view[offset : offset + CHUNK])
            except BlockingIOError:
                continue
            except BrokenPipeError:
                return  # the program closed its stdin: it chose not to read the rest
    finally:
        close()


class Tail:
    """The last `keep` bytes written to it."""

    def __init__(self, keep: int) -> None:
        self._keep = keep
        self._buf = bytearray()
        self._lock = threading.Lock()

    def add(self, data: bytes) -> None:
        with self._lock:
            if len(data) >= self._keep:
                self._buf = bytearray(data[-self._keep :])
                return
            self._buf += data
            excess = len(self._buf) - self._keep
            if excess > 0:
                del self._buf[:excess]

    def last(self, max_bytes: int) -> bytes:
        if max_bytes < 0:
            raise ValueError("max_bytes must not be negative")
        if max_bytes == 0:
            return b""
        with self._lock:
            return bytes(self._buf[-max_bytes:])


class LineSplitter:
    """Bytes in, decoded lines out. A line ends at "\\n" (a "\\r" just before it belongs to the
    line end); the rest after the last "\\n" is a last line of its own at the end. A line of more
    than `max_bytes` bytes before its "\\n" is dropped as it arrives and counted in `overlong`:
    the splitter never holds more than `max_bytes` of a line."""

    def __init__(self, emit: Callable[[str], None], max_bytes: int) -> None:
        self._emit = emit
        self._max = max_bytes
        self._partial = bytearray()
        self._dropping = 0  # the bytes so far of an overlong line being dropped; 0: none
        self.overlong = Overlong(limit=max_bytes)

    def feed(self, data: bytes) -> None:
        start = 0
        if self._dropping:
            nl = data.find(b"\n")
            if nl < 0:
                self._dropping += len(data)
                return
            self._drop(self._dropping + nl)
            self._dropping = 0
            start = nl + 1
        last_nl = data.rfind(b"\n", start)  # only the new bytes are searched: linear
        if last_nl < 0:
            self._hold(data, start)
            return
        head = data[start:last_nl]
        if self._partial:
            self._partial += head
            head, self._partial = bytes(self._partial), bytearray()
        for raw in head.split(b"\n"):
            if len(raw) > self._max:
                self._drop(len(raw))
            else:
                self._emit(decode_line(raw))
        self._hold(data, last_nl + 1)

    def end(self) -> None:
        if self._dropping:
            self._drop(self._dropping)
            self._dropping = 0
        elif self._partial:
            self._emit(decode_line(bytes(self._partial)))
            self._partial = bytearray()

    def _hold(self, data: bytes, start: int) -> None:
        """Keep `data[start:]`, the beginning of a line, unless the line is now overlong."""
        size = len(self._partial) + len(data) - start
        if size > self._max:
            self._dropping, self._partial = size, bytearray()
        else:
            self._partial += memoryview(data)[start:]

    def _drop(self, size: int) -> None:
        self.overlong = self.overlong.adding(size)


@dataclass(frozen=True)
class Backlog:
    """The stdout queue's account: the line bytes it holds now, the most it ever held, and how
    often the stdout thread waited for room (each wait held the program back on its pipe)."""

    held_bytes: int
    peak_bytes: int
    stalls: int


class LineQueue:
    """Lines from the stdout thread to the one consumer, bounded: once the lines held reach
    `bound` bytes (by `sys.getsizeof`), `put` waits until the consumer has taken them down to
    half the bound (so the two threads do not wake each other for every line), or until
    `unbound` lifts the bound for good. The end (`None`) stays in the queue once reached."""

    def __init__(self, bound: int) -> None:
        self._bound = bound
        self._low = bound // 2
        self._items: deque[tuple[str | None, int]] = deque()
        self._held = 0
        self._peak = 0
        self._stalls = 0
        self._bounded = True
        self._cond = threading.Condition(threading.Lock())
        self.stalled = threading.Event()  # set at the first wait for room

    def put(self, line: str | None) -> None:
        """Add a line (None: the end, which never waits); waits while the queue is full."""
        size = 0 if line is None else sys.getsizeof(line)
        with self._cond:
            if line is not None and self._bounded and self._held >= self._bound:
                self._stalls += 1
                self.stalled.set()
                while self._bounded and self._held > self._low:
                    self._cond.wait()
            if not self._items:
                self._cond.notify_all()  # only an empty queue has a consumer waiting
            self._items.append((line, size))
            self._held += size
            self._peak = max(self._peak, self._held)

    def get(self) -> str | None:
        """The next line, waiting for one; None at the end (and at every later call)."""
        with self._cond:
            while not self._items:
                self._cond.wait()
            line, size = self._items[0]
            if line is None:
                return None
            self._items.popleft()
            before = self._held
            self._held -= size
            if before > self._low >= self._held:
                self._cond.notify_all()  # a waiting put may go on
            return line

    def unbound(self) -> None:
        """Lift the bound for good: no put waits any more."""
        with self._cond:
            self._bounded = False
            self._cond.notify_all()

    def backlog(self) -> Backlog:
        with self._cond:
            return Backlog(held_bytes=self._held, peak_bytes=self._peak, stalls=self._stalls)


def decode_line(raw: bytes) -> str:
    """A stdout line's bytes without its "\\r\\n" or "\\n" end, as text (invalid UTF-8 replaced)."""
    return raw.removesuffix(b"\r").decode("utf-8", "replace")


def spawn(
    args: tuple[str, ...],
    env: Mapping[str, str],
    cwd: str,
    piped_stdin: bool,
    reports: Sequence[tuple[int, int]],
    stop_pipe: tuple[int, int],
) -> subprocess.Popen[bytes]:
    """Start `args` as the leader of a new session and process group (its id is the leader's
    pid), handing it the second end of each of the `reports` pipes, which the host then closes
    (a report's write end, the lifeline's passed end). When it
    cannot be started, every descriptor made for it is closed."""
    try:
        proc = subprocess.Popen(
            list(args),
            pass_fds=tuple(passed for _, passed in reports),
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.PIPE if piped_stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
            close_fds=True,
            start_new_session=True,
        )
    except OSError as exc:
        close_all(*stop_pipe, *(fd for pipe in reports for fd in pipe))
        raise ProcessStartFailed(args, str(exc)) from exc
    except BaseException:
        close_all(*stop_pipe, *(fd for pipe in reports for fd in pipe))
        raise
    for _, passed in reports:
        os.close(passed)  # the program holds it now
    return proc


def close_all(*fds: int) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
