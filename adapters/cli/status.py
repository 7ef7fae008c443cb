"""The process exit statuses of every command, in one place.

A run exits 0 when it ended ok, 1 blocked or failed, 130 interrupted; every bad input ends in a
refusal with status 2; an unexpected fault prints one line naming it, with status 3. A run
record's status is display.status_of (this module imports nothing, for main's fast start).
"""

from __future__ import annotations

from enum import IntEnum


class ExitStatus(IntEnum):
    """The process exit statuses of every command."""

    OK = 0
    FAILED = 1
    REFUSED = 2
    INTERNAL = 3
    INTERRUPTED = 130
