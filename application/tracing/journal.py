"""The journal of the host's deletions on disk: `deletions.jsonl` in the run directory (the format
and its reading are domain/run/deletion_journal.py; docs/decisions.md "The journal of deletions").

`DeletionJournal` is written by the host as it deletes: the plan made durable before the first
unlink, one line appended after each planned path, the file synced once at the end (its digest
is then in the durable final record). A refused write never stops the deletions: tracing is
best-effort for the work (seed 000); it is kept in the trace writer's `artifact_failures`, and
once the journal could not be written nothing more is added to it (a later line would say what an
earlier missing one did not). `read_deletions` reads it back for the sweep, bounded.
"""

from __future__ import annotations

from concorde_workers.application.tracing.writer import TraceWriter
from concorde_workers.domain.ground.layout import RunLayout
from concorde_workers.domain.run.deletion_journal import (
    JOURNAL_READ_LIMIT,
    Journal,
    deleted_text,
    failed_text,
    plan_text,
    read_journal,
)
from concorde_workers.domain.run.deletions import DeletionPlan
from concorde_workers.ports.machine.filesystem import (
    BoundedReading,
    FileSystemError,
    FileWriting,
    read_regular_text,
)

__all__ = ["JOURNAL_MODE", "DeletionJournal", "read_deletions"]

JOURNAL_MODE = 0o600
"""The journal names what the worker proposed: its owner's only, as the transcript is."""


class DeletionJournal:
    """One run's journal of deletions, written as the host deletes."""

    def __init__(self, fs: FileWriting, tracer: TraceWriter, layout: RunLayout) -> None:
        self._fs, self._tracer, self._path = fs, tracer, layout.deletions
        self._broken = False

    def begin(self, plan: DeletionPlan, worktree: str) -> None:
        """The plan, durable before the first unlink (`worktree`: the real path the plan's
        relative paths are relative to)."""
        try:
            self._fs.write_atomic(self._path, plan_text(plan, worktree), JOURNAL_MODE, durable=True)
        except FileSystemError as error:
            self._fail(error)

    def settled(self, path: str, error: str | None) -> None:
        """What became of the planned `path`: deleted (`error` None) or failed with `error`."""
        self._append(deleted_text(path) if error is None else failed_text(path, error))

    def end(self) -> None:
        """Sync what was appended (the final record names the journal's digest durably)."""
        self._append("", durable=True)

    def _append(self, text: str, durable: bool = False) -> None:
        if self._broken:
            return
        try:
            self._fs.append(self._path, text, JOURNAL_MODE, durable=durable)
        except FileSystemError as error:
            self._fail(error)

    def _fail(self, error: FileSystemError) -> None:
        self._broken = True
        self._tracer.artifact_failed(self._path, error)


def read_deletions(fs: BoundedReading, layout: RunLayout) -> Journal | str | None:
    """The run's journal of deletions, None when there is none (the host never began its
    deletions), or why it cannot be read: only a regular file of at most `JOURNAL_READ_LIMIT`
    bytes, a link never followed."""
    try:
        text = read_regular_text(fs, layout.deletions, JOURNAL_READ_LIMIT)
    except FileSystemError as error:
        if error.not_found:
            return None
        return f"{layout.deletions}: {error.os_error_text}"
    read = read_journal(text)
    return read if isinstance(read, Journal) else f"{layout.deletions}: {read}"
