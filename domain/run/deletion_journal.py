"""The journal of the host's deletions, `deletions.jsonl` in the run directory (issue 30 §3;
docs/decisions.md "The journal of deletions").

Seed 000 "Proposed deletions": the record names what the host deleted, and an interruption leaves
the worktree as it found it. A host killed among its deletions cannot write its record, so it
writes, as it goes, what a sweep needs to write it instead: first the plan — the worktree, the
paths it will delete in order, those it refused and those already absent — made durable before
the first unlink; then, after each planned path, one line saying what became of it (deleted, or
failed with the operating system's error). Read back, every planned path before the first one
without its line is settled; that first one was in flight at the kill (its unlink done or not:
whether the path still exists says which); the rest were never attempted.

Pure: the lines' text, and the journal read back (`read_journal`) and settled (`Journal.settle`).
The texts are ASCII JSON (`ensure_ascii`), one object a line; a last line without its newline is a
write the kill cut short, and is no line.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, StrictInt, StrictStr, ValidationError

from concorde_workers.domain.ground import json_limits
from concorde_workers.domain.run.deletions import DeletionOutcome, DeletionPlan

__all__ = [
    "JOURNAL_KIND",
    "JOURNAL_READ_LIMIT",
    "JOURNAL_VERSION",
    "Journal",
    "deleted_text",
    "failed_text",
    "plan_text",
    "read_journal",
]

JOURNAL_KIND = "concorde-workers.deletions"
JOURNAL_VERSION = 1
JOURNAL_READ_LIMIT = 128 * 1024 * 1024
"""The most a sweep reads of a journal: the proposed deletions come from one line of the agent's
output (at most 2 MiB, domain/run/stdout.py), each path in the plan once and in one outcome line
again, escaped to ASCII (at most 6 bytes a byte), with at most one short error text a path: far
below this bound however the worker wrote its paths."""


class _Plan(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: StrictStr
    version: StrictInt
    worktree: StrictStr
    delete: tuple[StrictStr, ...]
    refused: tuple[StrictStr, ...]
    absent: tuple[StrictStr, ...]


class _Outcome(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    path: StrictStr
    error: StrictStr | None = None


def _line(value: Mapping[str, object]) -> str:
    return json.dumps(value, ensure_ascii=True, separators=(",", ":")) + "\n"


def plan_text(plan: DeletionPlan, worktree: str) -> str:
    """The journal's first line: the plan, for the worktree's real path `worktree`."""
    return _line(
        {
            "kind": JOURNAL_KIND,
            "version": JOURNAL_VERSION,
            "worktree": worktree,
            "delete": [d.path for d in plan.to_delete],
            "refused": list(plan.refused),
            "absent": list(plan.absent),
        }
    )


def deleted_text(path: str) -> str:
    """The line of a planned path the host deleted."""
    return _line({"path": path})


def failed_text(path: str, error: str) -> str:
    """The line of a planned path whose deletion failed, with the operating system's error."""
    return _line({"path": path, "error": error})


class Journal(BaseModel):
    """A journal read back: the plan, and what became of each planned path so far, in order."""

    model_config = ConfigDict(frozen=True)

    worktree: str
    to_delete: tuple[str, ...]
    refused: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()
    settled: tuple[tuple[str, str | None], ...] = ()
    """(path, None when deleted, else the error of its failed deletion), in the plan's order."""

    @property
    def in_flight(self) -> str | None:
        """The first planned path without its line: the one the host was deleting at the kill
        (None when every planned path is settled)."""
        done = len(self.settled)
        return self.to_delete[done] if done < len(self.to_delete) else None

    def settle(self, in_flight_gone: bool) -> DeletionOutcome:
        """What the host did: the settled paths as they say, the one in flight deleted when
        `in_flight_gone` (it no longer exists: its unlink was done), and the rest not performed."""
        deleted = [p for p, error in self.settled if error is None]
        failed = [p for p, error in self.settled if error is not None]
        rest = list(self.to_delete[len(self.settled) :])
        if rest and in_flight_gone:
            deleted.append(rest.pop(0))
        return DeletionOutcome(
            deleted=tuple(deleted),
            refused=self.refused,
            absent=self.absent,
            failed=tuple(failed),
            errors={p: e for p, e in self.settled if e is not None},
            not_performed=tuple(rest),
        )


def read_journal(text: str) -> Journal | str:
    """The journal `text` holds, or what is wrong with it (not the host's journal: a line that is
    no JSON object of its form, an outcome that is not of the next planned path)."""
    lines = text.split("\n")[:-1]  # the part after the last newline is a write cut short
    if not lines:
        return "it holds no plan"
    try:
        plan = _Plan.model_validate(json_limits.loads(lines[0]))
    except (ValueError, ValidationError) as error:
        return f"line 1 is not the plan of the host's deletions: {_first(error)}"
    if (plan.kind, plan.version) != (JOURNAL_KIND, JOURNAL_VERSION):
        return f"line 1 is not a plan of {JOURNAL_KIND} version {JOURNAL_VERSION}"
    if not posixpath.isabs(plan.worktree) or posixpath.normpath(plan.worktree) != plan.worktree:
        return f"line 1 names the worktree {plan.worktree!r}, not an absolute normalized path"
    outside = next((p for p in plan.delete if not _inside(p)), None)
    if outside is not None:
        return f"line 1 plans the deletion of {outside!r}, not a path inside the worktree"
    settled: list[tuple[str, str | None]] = []
    for number, line in enumerate(lines[1:], start=2):
        try:
            said = _Outcome.model_validate(json_limits.loads(line))
        except (ValueError, ValidationError) as error:
            return f"line {number} is not the outcome of a deletion: {_first(error)}"
        expected = plan.delete[len(settled)] if len(settled) < len(plan.delete) else None
        if said.path != expected:
            return f"line {number} names {said.path!r}, not the next planned deletion"
        settled.append((said.path, said.error))
    return Journal(
        worktree=plan.worktree,
        to_delete=plan.delete,
        refused=plan.refused,
        absent=plan.absent,
        settled=tuple(settled),
    )


def _inside(path: str) -> bool:
    """A normalized relative path that stays inside the folder it is relative to."""
    return (
        bool(path)
        and not posixpath.isabs(path)
        and posixpath.normpath(path) == path
        and path != "."
        and not path.startswith("../")
        and path != ".."
    )


def _first(error: ValueError | ValidationError) -> str:
    if isinstance(error, ValidationError):
        first = error.errors(include_url=False)[0]
        return f"{'.'.join(str(p) for p in first['loc']) or 'the line'}: {first['msg']}"
    return str(error)
