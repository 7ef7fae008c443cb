"""The process exit statuses of every command, in one place.

A run exits 0 when it ended ok, 1 blocked or failed, 130 interrupted; every bad input ends in a
refusal with status 2; an unexpected fault prints one line naming it, with status 3.
"""

from __future__ import annotations

from enum import IntEnum

from concorde_workers.adapters.cli.display import INTERRUPTED, outcome_of
from concorde_workers.domain.records import RunRecord


class ExitStatus(IntEnum):
    """The process exit statuses of every command."""

    OK = 0
    FAILED = 1
    REFUSED = 2
    INTERNAL = 3
    INTERRUPTED = 130


def status_of(record: RunRecord) -> ExitStatus:
    """0 ok, 130 interrupted, 1 blocked or failed."""
    outcome = outcome_of(record)
    if outcome == "ok":
        return ExitStatus.OK
    if outcome == INTERRUPTED:
        return ExitStatus.INTERRUPTED
    return ExitStatus.FAILED
