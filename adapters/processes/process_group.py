"""The leader of a started program and its process group (adapters/processes/process.py, "Ending,
precisely", 1, 5 and the timeout): every signal to the group is ordered against the reaping of
the leader, so no signal ever reaches a group id that may by now be someone else's.

- `reap` (the watcher thread) blocks in `waitid` until the leader exits, SIGKILLs the rest of
  the group *before* reaping the leader (the unreaped leader keeps the group id from being
  reused), then reaps it and wakes the timer;
- `enforce_timeout` (the timer thread) waits out the timeout as the runner's `WaitTimeout` says,
  then sends SIGTERM to the group, waits the grace period for the leader, then SIGKILLs it;
- `kill` (SIGKILL to the group) may be called at any time, from any thread or a signal handler,
  any number of times; once the leader was reaped it does nothing.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable

__all__ = ["LeaderGroup", "WaitTimeout", "wait_real_time"]

WaitTimeout = Callable[[threading.Event, float], object]
"""How a timer waits out a timeout: given the timer's wake-up Event (the runner sets it once the
leader is gone) and the seconds, it returns once the seconds have passed or the Event is set —
or earlier, when it decides that the timeout has passed (a test's deadline; it may set the
Event itself to end its wait). The runner then looks for itself whether the leader is gone."""


def wait_real_time(wake: threading.Event, seconds: float) -> None:
    wake.wait(seconds)


class LeaderGroup:
    """The leader `proc` (the leader of a new session and process group whose id is its pid)
    and its group: each signal sent under one lock with the reaping."""

    def __init__(
        self,
        proc: subprocess.Popen[bytes],
        term_grace_seconds: float,
        wait_timeout: WaitTimeout,
    ) -> None:
        self._proc = proc
        self._pid = proc.pid
        self._grace = term_grace_seconds
        self._wait_timeout = wait_timeout
        # _lock orders every signal against the reaping of the leader. Re-entrant: kill may be
        # called from a signal handler (a cancellation) that interrupted kill.
        self._lock = threading.RLock()
        self._leader_exited = False
        self._reaped = False
        self._kill_requested = False
        self._timed_out = False
        self.gone = threading.Event()  # reaped
        self._timer_wake = threading.Event()  # set with `gone`; a test's deadline too

    @property
    def timed_out(self) -> bool:
        return self._timed_out

    def kill(self) -> None:
        """SIGKILL the whole group; idempotent; does nothing once the leader was reaped."""
        with self._lock:
            self._kill_requested = True
            self._signal_group(signal.SIGKILL)

    def reap(self) -> None:
        """Wait for the leader to exit; kill the rest of its group while the unreaped leader
        still holds the group id; reap it; then say it is gone (and end the timer's wait)."""
        try:
            if _CAN_WAIT_WITHOUT_REAPING:
                # Reaped by someone else (SIGCHLD ignored?): Popen copes below.
                with contextlib.suppress(ChildProcessError):
                    os.waitid(os.P_PID, self._pid, os.WEXITED | os.WNOWAIT)
                with self._lock:
                    self._leader_exited = True
                    try:
                        self._signal_group(signal.SIGKILL)
                    finally:
                        self._proc.wait()
                        self._reaped = True
            else:  # pragma: no cover - platforms without waitid (macOS before 3.13)
                self._proc.wait()
                with self._lock:
                    self._leader_exited = True
                    try:
                        # A small window in which the group id could have been reused.
                        self._signal_group(signal.SIGKILL)
                    finally:
                        self._reaped = True
        finally:
            self.gone.set()
            self._timer_wake.set()  # the timer ends its wait: no timeout thread outlives this

    def enforce_timeout(self, seconds: float) -> None:
        self._wait_timeout(self._timer_wake, seconds)
        if self.gone.is_set():
            return
        with self._lock:
            if self._kill_requested or self._leader_has_exited():
                return
            self._timed_out = True
            self._signal_group(signal.SIGTERM)
        if self.gone.wait(self._grace):
            return
        with self._lock:
            self._signal_group(signal.SIGKILL)

    # -- under self._lock -------------------------------------------------------------------

    def _signal_group(self, sig: signal.Signals) -> None:
        if self._reaped:
            return  # the group id is no longer ours to signal
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._pid, sig)

    def _leader_has_exited(self) -> bool:
        if self._leader_exited or self._reaped:
            return True
        if _CAN_WAIT_WITHOUT_REAPING:
            try:
                state = os.waitid(os.P_PID, self._pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return True
            return state is not None
        return False  # pragma: no cover


_CAN_WAIT_WITHOUT_REAPING = hasattr(os, "waitid") and hasattr(os, "WNOWAIT")
