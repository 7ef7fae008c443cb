"""RecordedEvents: an in-memory `RunEvents` that keeps every event it is told, in order (a
copy each); `gone()` makes it fail as a closed pipe does. Held to the CLI's JsonLinesEvents by
tests/contract/test_run_events_contract.py."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RecordedEvents"]


@dataclass
class RecordedEvents:
    events: list[dict[str, Any]] = field(default_factory=list)
    closed: bool = False

    def emit(self, event: Mapping[str, Any]) -> None:
        if self.closed:
            raise BrokenPipeError(32, "Broken pipe")
        self.events.append(dict(event))

    def gone(self) -> None:
        self.closed = True

    def kinds(self) -> list[str]:
        return [str(e["event"]) for e in self.events]
