"""The Clock port: the only way the host learns the time, and its one sleep (the retry delay).

Every other wait of the host is for an event - a pipe, a process, a run's cancellation, the
progress flusher's next action (for at most as long as the clock's time says) - never a sleep.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """Wall time for records, monotonic time for timeouts and durations, and waiting."""

    def now_utc(self) -> datetime:
        """The current time, timezone-aware, in UTC."""
        ...

    def monotonic(self) -> float:
        """Seconds from an arbitrary origin that never goes backwards (for durations)."""
        ...

    def sleep(self, seconds: float, interrupt: Interrupt | None = None) -> bool:
        """Wait `seconds` (retry delays), or less when `interrupt` is set meanwhile; True when
        the whole time passed. A fake advances its time and returns at once."""
        ...


@runtime_checkable
class Interrupt(Protocol):
    """Something that can end a wait early, such as a run's cancellation (a threading.Event
    fits)."""

    def is_set(self) -> bool: ...

    def wait(self, timeout: float | None = None) -> bool: ...
