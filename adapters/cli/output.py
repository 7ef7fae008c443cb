"""What a command writes: one JSON document, a refusal.

A refusal goes to stderr as text (its message indented under a headline naming its code), or to
stdout as one JSON document under --json. A run record's account, its JSON and its exit status
are display.py's (`print_record`, `status_of`): `plan` loads no record and no display (issue 32
§2).
"""

from __future__ import annotations

from typing import TextIO

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
