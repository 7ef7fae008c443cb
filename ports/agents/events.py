"""The capability of telling a watcher what a run does as it goes (issue 21 §5): each event
(domain/evidence/events.py) handed over once, in order. The CLI's `--events` writes them to stdout
as
JSON Lines (adapters/cli/views/events.py); the fake records them (tests/fakes/events.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

__all__ = ["RunEvents"]


@runtime_checkable
class RunEvents(Protocol):
    def emit(self, event: Mapping[str, Any]) -> None:
        """Hand one event over; an `OSError` (a closed pipe) ends the stream, not the run."""
        ...
