"""The proposed deletions performed (seed 000 "Proposed deletions"): after a clean last round
with a valid result, in a phase of their own, each planned by the domain
(domain/run/deletions.py), journaled as it is done (application/tracing/journal.py) and unlinked
without following a directory swapped for a link since it was judged; an interruption stops them
at once."""

from __future__ import annotations

import posixpath

from concorde_workers.application.preparation.prepared import Prepared
from concorde_workers.application.run.host_run import HostRun
from concorde_workers.application.runtime.outcomes import deletion_link, interrupted_link
from concorde_workers.application.tracing.journal import DeletionJournal
from concorde_workers.domain.ground.errors import ErrorLink
from concorde_workers.domain.ground.paths import EntryKind
from concorde_workers.domain.run.deletions import Kind, PlannedDeletion, outcome, plan_deletions
from concorde_workers.ports.machine.filesystem import FileSystemError, Rearranging

__all__ = ["Deletions"]


class Deletions:
    """Performs a run's proposed deletions through the filesystem port."""

    def __init__(self, fs: Rearranging) -> None:
        self._fs = fs

    def perform(self, run: HostRun, prepared: Prepared, link: ErrorLink | None) -> ErrorLink | None:
        """Perform the proposed deletions (seed 000 "Proposed deletions") in a phase of their own,
        each journaled as it is done (docs/decisions.md "The journal of deletions"), so that the
        record says what was deleted however the run ends; an interruption stops them at once,
        leaving the rest as it found them."""
        state = run.state
        assert state.worker_result is not None
        if not state.worker_result.proposed_deletions:
            return link
        worktree = prepared.placement.worktree
        plan = plan_deletions(
            list(state.worker_result.proposed_deletions),
            worktree,
            prepared.grant,
            self._resolve_parent,
            self._kind,
        )
        run.progress.phase("deletions", max(1, len(state.rounds)))
        journal = DeletionJournal(self._fs, run.tracer, state.layout)
        journal.begin(plan, posixpath.normpath(worktree))
        failures: dict[str, str] = {}
        attempted: list[str] = []
        current: PlannedDeletion | None = None
        try:
            for planned in plan.to_delete:
                if run.cancel.is_set():
                    break
                current = planned
                error = self._delete_one(planned)
                if error is not None:
                    failures[planned.path] = error
                attempted.append(planned.path)
                current = None
                journal.settled(planned.path, error)
        finally:
            # An exception raised into the loop: the deletion it met is done when the file is gone.
            if current is not None and (
                current.path in failures or not self._fs.lexists(current.target)
            ):
                attempted.append(current.path)
            state.deletions = outcome(plan, failures, attempted)
            journal.end()
        if state.deletions.not_performed:
            return interrupted_link(run.links, run.cancel.reason, state)
        if state.deletions.any_failed:
            return deletion_link(run.links, state.deletions, link, state)
        return link

    def _delete_one(self, planned: PlannedDeletion) -> str | None:
        """Unlink one planned path; the operating system's error when that failed."""
        # The worker's processes are gone and the caller keeps other writers away (seed 000
        # "Audit"); still, a directory swapped for a link since the plan is never followed.
        if self._resolve_parent(planned.target) != planned.target:
            return "a directory above it changed since it was judged"
        try:
            self._fs.remove(planned.target)
        except FileSystemError as error:
            return error.os_error_text
        return None

    def _resolve_parent(self, path: str) -> str:
        parent, name = posixpath.split(path)
        return posixpath.join(self._fs.realpath(parent), name)

    def _kind(self, path: str) -> Kind:
        if not self._fs.lexists(path):
            return "absent"
        kinds: dict[EntryKind, Kind] = {
            EntryKind.FILE: "file",
            EntryKind.SYMLINK: "symlink",
            EntryKind.DIRECTORY: "directory",
        }
        return kinds.get(self._fs.stat(path).kind, "other")
