"""Tests wait on events, never on races with wall-clock time (issue 9 §4): the suite must pass on
a busy 2-core machine, where a program may take seconds to start.

- `SLOW`: the bound of a wait that only a failure reaches (the test then fails instead of
  hanging); never a claim that something happens within it.
- `Deadline`: a SubprocessRunner's `wait_timeout` whose timeout passes when the test says so —
  once the model server has seen the agent's request, once the agent has reached a step —
  instead of after a number of seconds that start-up may or may not fit in. The runner's own
  timeout path (SIGTERM, grace, SIGKILL, `timed_out`) then runs as it would after the seconds,
  which stay the bound: a test that never expires its deadline ends at the real timeout.
- `Signal`: a named pipe a program writes to (the test agent's `Step.signal`): an event of the
  program's own that the test waits on or acts upon (expire a deadline, cancel a run).
- `Gate`: a named pipe a program waits on (the test agent's `Step.gate`) until the test releases
  it: the program is provably still at that step while the test looks.
- `wait_dead`: waits for processes to end on their pidfds (a zombie has ended too).
- `eventually`: for the few conditions no event announces (a file another process rewrites, a
  line another thread prints), checks every 20 ms until it holds; the bound only ends a failure.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

__all__ = ["SLOW", "Deadline", "Gate", "Signal", "eventually", "wait_dead"]

SLOW = 120.0
"""An upper bound that is never reached when things work, even on a loaded machine."""


class Deadline:
    """The moment a round's timeout passes, chosen by the test. Pass it as
    `SubprocessRunner(wait_timeout=deadline)`; `expire()` makes every timeout waiting on it (and
    every later one) pass at once."""

    def __init__(self) -> None:
        self._expired = threading.Event()
        self._lock = threading.Lock()
        self._waiting: list[threading.Event] = []

    def __call__(self, wake: threading.Event, seconds: float) -> None:
        """Wait until the deadline expires, the runner wakes the timer (the leader is gone: the
        timer thread ends with the round, not 120 s later) or, at the latest, the real
        timeout."""
        with self._lock:
            if self._expired.is_set():
                return
            self._waiting.append(wake)
        try:
            wake.wait(seconds)
        finally:
            with self._lock:
                self._waiting.remove(wake)

    def expire(self) -> None:
        with self._lock:
            self._expired.set()
            for wake in self._waiting:
                wake.set()

    @property
    def expired(self) -> bool:
        return self._expired.is_set()


class Signal:
    """A named pipe at `path` that a program opens, writes to and closes (`Step.signal(path)`);
    `seen` is set then, after `then` (if given) has run."""

    def __init__(self, path: Path, then: Callable[[], Any] | None = None) -> None:
        self.path = path
        self.seen = threading.Event()
        os.mkfifo(path)

        def wait_for_writer() -> None:
            with open(path, "rb") as reader:  # blocks until a writer opens it
                reader.read()  # until the writer closes it
            if then is not None:
                then()
            self.seen.set()

        threading.Thread(target=wait_for_writer, name=f"signal-{path.name}", daemon=True).start()

    def wait(self, within: float = SLOW) -> None:
        assert self.seen.wait(within), f"the program never signalled at {self.path}"


class Gate:
    """A named pipe at `path` that a program waits on (`Step.gate(path)`: it opens it and reads
    to its end) until `release()`; releasing twice, or before the program arrives, is fine."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._released = False
        os.mkfifo(path)

    def release(self) -> None:
        if self._released:
            return
        self._released = True

        def open_and_close() -> None:
            with open(self.path, "wb"):  # blocks until the program opens its end
                pass

        threading.Thread(target=open_and_close, name=f"gate-{self.path.name}", daemon=True).start()


def wait_dead(pids: Iterable[int], within: float = SLOW) -> bool:
    """True once every process of `pids` has ended (waited on a pidfd each, no polling; a
    zombie has ended; a pid that no longer exists has too); False if one still runs after
    `within` seconds."""
    end = time.monotonic() + within
    for pid in pids:
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
        try:
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            if not poller.poll(max(0.0, end - time.monotonic()) * 1000):
                return False
        finally:
            with contextlib.suppress(OSError):
                os.close(fd)
    return True


def eventually(holds: Callable[[], Any], what: str, within: float = SLOW) -> Any:
    """The first true value of `holds()`; fails naming `what` if none comes within `within`
    seconds."""
    end = time.monotonic() + within
    while True:
        value = holds()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"{what}: not within {within:g} s")
        time.sleep(0.02)
