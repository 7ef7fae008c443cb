"""What a command writes: one JSON document, a refusal, a run record.

A refusal goes to stderr as text (its message indented under a headline naming its code), or to
stdout as one JSON document under --json; a run record is its account, or its JSON, and its
exit status.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from concorde_workers.adapters.cli.display import INTERRUPTED, account, outcome_of
from concorde_workers.adapters.cli.status import ExitStatus
from concorde_workers.domain.configuration.program_versions import ProgramVersion
from concorde_workers.domain.evidence.records import RunRecord
from concorde_workers.domain.ground.errors import Refusal
from concorde_workers.domain.ground.text import json_document, terminal_lines


def print_json(data: object, out: TextIO) -> None:
    """One JSON document: every value exactly as it is, control characters as JSON escapes."""
    out.write(json_document(data) + "\n")


def print_refusal(refusal: Refusal, as_json: bool, out: TextIO, err: TextIO) -> None:
    if as_json:
        print_json(
            {
                "verdict": "refused",
                "refusal": {
                    "code": refusal.code,
                    "reason": refusal.reason.value,
                    "message": refusal.message,
                    "file": refusal.file,
                },
            },
            out,
        )
    else:
        err.write(
            terminal_lines(
                [
                    f"concorde-workers: refused: {refusal.code} ({refusal.reason.value})",
                    *(f"  {line}" for line in refusal.message.splitlines()),
                ]
            )
        )


def print_record(
    record: RunRecord,
    as_json: bool,
    out: TextIO,
    programs: Sequence[ProgramVersion] = (),
    resources: Mapping[int, Mapping[str, Any]] | None = None,
    notes: Sequence[str] = (),
) -> None:
    """The record as JSON (exactly the contract's record), or its account with the agent
    programs the run was prepared with (its programs.json), each round's resource use and the
    grant's notes."""
    if as_json:
        print_json(record.to_json(), out)
    else:
        out.write(account(record, programs, resources, notes))


def status_of(record: RunRecord) -> ExitStatus:
    """0 ok, 130 interrupted, 1 blocked or failed."""
    outcome = outcome_of(record)
    if outcome == "ok":
        return ExitStatus.OK
    if outcome == INTERRUPTED:
        return ExitStatus.INTERRUPTED
    return ExitStatus.FAILED
