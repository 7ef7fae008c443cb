"""Cancellation of a run: the caller's `cancel`, SIGINT and SIGTERM end the run `interrupted`.

A `Cancellation` is an event with callbacks: the host registers "kill the worker's process
group" for the length of a round, and waits on it during a retry delay, so a cancellation acts
at once and nothing polls.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class Cancellation:
    """Set once, from any thread or a signal handler; `reason` says what ended the run."""

    def __init__(self) -> None:
        self._event = threading.Event()
        # Re-entrant: a signal handler runs `cancel` in the main thread, which may be inside
        # `on_cancel` or `unregister` holding the lock at that moment; a plain lock would
        # deadlock there and the run would never end or clean up.
        self._lock = threading.RLock()
        self._callbacks: list[Callable[[], None]] = []
        self.reason: str | None = None

    def cancel(self, reason: str = "the run was cancelled by its caller") -> None:
        with self._lock:
            if self._event.is_set():
                return
            self.reason = reason
            self._event.set()
            callbacks = list(self._callbacks)
        for callback in callbacks:
            callback()

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._event.wait(timeout)

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` on cancellation (at once when already cancelled); returns the
        function that unregisters it."""
        with self._lock:
            already = self._event.is_set()
            if not already:
                self._callbacks.append(callback)
        if already:
            callback()

        def unregister() -> None:
            with self._lock:
                if callback in self._callbacks:
                    self._callbacks.remove(callback)

        return unregister
