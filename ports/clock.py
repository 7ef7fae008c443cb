"""The Clock port: the only way the host learns the time or waits."""

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

    def sleep(self, seconds: float) -> None:
        """Wait `seconds` (retry delays); a fake returns at once."""
        ...
