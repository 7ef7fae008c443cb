"""Each round's change kept as evidence (issue 21 §1): `rounds/<n>/changes.patch`.

`ChangeKeeper.start` hashes the worktree's `rw` state at the snapshot into the run's change
store (the runtime directory's `control/changes`); `keep` after each round's audit hashes the
changed `rw` paths again, writes the patch between the two trees (domain/run/changes.py decides
what goes in) and moves on. The Git calls are the host's own table (`changes_*`), in its
sandbox, writing only into the store. A failure of Git is said in the round's file, never
raised: the round's own ending stands.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping

from concorde_workers.application.preparation.prepared import Prepared
from concorde_workers.application.runtime.run_state import RunState
from concorde_workers.application.tracing.writer import TraceWriter
from concorde_workers.domain.boundary.grant import Grant
from concorde_workers.domain.gitview.committed_rules import EvidenceRules
from concorde_workers.domain.gitview.git_status import GitRepository
from concorde_workers.domain.ground.layout import RunLayout, RuntimeLayout
from concorde_workers.domain.ground.paths import EntryKind
from concorde_workers.domain.run.audit import Audit, FileState, Observation, Snapshot
from concorde_workers.domain.run.changes import (
    CHANGES_FILE,
    content_choice,
    named_lines,
    no_patch_file,
    patch_file,
    round_changed,
)
from concorde_workers.ports.machine.filesystem import FileSystemError, PathFacts
from concorde_workers.ports.repository.changes import ChangeTrees
from concorde_workers.ports.repository.git import GitCommandFailed

__all__ = ["CHANGE_STORE", "ChangeKeeper", "keeper_for", "open_change_store"]

CHANGE_STORE = "changes"
"""The change store's folder in the runtime directory's control/ (read-only to the worker)."""


class ChangeKeeper:
    """The change store of one run and the tree of the worktree's `rw` state so far."""

    def __init__(
        self,
        trees: ChangeTrees,
        fs: PathFacts,
        repo: GitRepository,
        grant: Grant,
        store: str,
        tracer: TraceWriter,
        layout: RunLayout,
    ) -> None:
        self._trees, self._fs, self._repo, self._grant = trees, fs, repo, grant
        self._store, self._tracer, self._layout = store, tracer, layout
        self._tree: str | GitCommandFailed | None = None
        self._start: str | GitCommandFailed | None = None
        self._snapshot: Snapshot | None = None
        self._before: Mapping[str, FileState | None] | None = None
        self._touched: set[str] = set()
        self._real_root: str | None = None
        self._rules: EvidenceRules | None = None

    def _linked(self, rel: str) -> bool:
        """Whether a folder above `rel` is (or lies behind) a symbolic link: Git would refuse
        the path, and the host never hashes content it would read from elsewhere."""
        parent = posixpath.dirname(rel)
        if not parent:
            return False
        if self._real_root is None:
            self._real_root = self._fs.realpath(self._repo.worktree)
        try:
            real = self._fs.realpath(posixpath.join(self._repo.worktree, parent))
        except FileSystemError:
            return True
        return real != posixpath.join(self._real_root, parent)

    def _size(self, rel: str) -> int | None:
        try:
            found = self._fs.stat(posixpath.join(self._repo.worktree, rel))
        except FileSystemError:
            return None
        return found.size if found.kind in (EntryKind.FILE, EntryKind.SYMLINK) else None

    @property
    def start_tree(self) -> str | None:
        """The tree of the `rw` state at the snapshot (None when the store could not make it):
        recorded in the run node, the base of the first round's patch (issue 30 §4)."""
        return self._start if isinstance(self._start, str) else None

    @property
    def tree(self) -> str | None:
        """The tree of the `rw` state so far: after the latest round's `keep` (None when Git
        could not make it), recorded in that round's node."""
        return self._tree if isinstance(self._tree, str) else None

    def start(self, snapshot: Snapshot, rules: EvidenceRules | None = None) -> None:
        """The tree of the worktree's `rw` state before the first round; `rules`: the
        committed rules the snapshot took (content is converted by them alone)."""
        self._snapshot, self._rules = snapshot, rules
        paths, _ = content_choice(
            self._grant, snapshot.files, snapshot.files, self._size, self._linked
        )
        self._touched.update(paths)
        try:
            # HEAD's commit as the snapshot read it: the store's base is that commit's tree,
            # not asked of Git again (issue 32 §3).
            self._tree = self._trees.change_tree(
                self._repo, self._store, paths, base=True, rules=rules, head=snapshot.head_commit
            )
        except GitCommandFailed as failed:
            self._tree = failed
        self._start = self._tree

    def keep(self, number: int, result: Audit, observation: Observation) -> None:
        """Write round `number`'s patch, from the tree at its start to the tree now."""
        if self._snapshot is None:
            return
        before = self._before if self._before is not None else self._snapshot.files
        changed = round_changed(result.changed, before, observation.files)
        # A path kept before is hashed again: one a later round set back as HEAD has it is
        # listed by no audit, and its patch shows the way back.
        listed = set(result.changed)
        candidates = [*result.changed, *sorted(p for p in self._touched if p not in listed)]
        kept, why = content_choice(
            self._grant, candidates, observation.files, self._size, self._linked
        )
        self._touched.update(kept)
        text = self._patch(
            number, kept, named_lines(self._grant, changed, observation.files, kept, why)
        )
        self._before = observation.files
        self._tracer.write_round_file(self._layout, number, CHANGES_FILE, text)

    def _patch(self, number: int, kept: tuple[str, ...], named: tuple[str, ...]) -> bytes:
        start = self._tree
        if not isinstance(start, str):
            why = start.output if start is not None else "the store was not started"
            return no_patch_file(number, f"the tree at the round's start could not be made: {why}")
        if not kept:  # nothing of rw changed, ever: the tree is the start's, the patch empty
            return patch_file(number, b"", named)
        try:
            end = self._trees.change_tree(self._repo, self._store, kept, rules=self._rules)
            diff = self._trees.change_patch(self._repo, self._store, start, end)
        except GitCommandFailed as failed:
            self._tree = failed
            return no_patch_file(number, f"Git could not make the patch: {failed.output}")
        self._tree = end
        return patch_file(number, diff, named)


def store_path(state: RunState) -> str:
    """The run's change store: the runtime directory's `control/changes`."""
    return posixpath.join(RuntimeLayout(root=state.runtime_dir).control, CHANGE_STORE)


def open_change_store(git: object, prepared: Prepared, state: RunState) -> str | None:
    """Make the run's change store before the snapshot and give its path, when the host's Git
    keeps one (the real one does; a fake world's Git keeps none): the audit compares content
    there by the committed rules alone (issue 30 §1), the rounds' trees are kept there. Raises
    `GitCommandFailed`."""
    if not isinstance(git, ChangeTrees):
        return None
    store = store_path(state)
    git.open_store(prepared.repository, store)
    return store


def keeper_for(
    git: object, fs: PathFacts, prepared: Prepared, tracer: TraceWriter, state: RunState
) -> ChangeKeeper | None:
    """The run's keeper when the host's Git keeps trees (the real one does; a fake world's
    Git keeps none, and its rounds no patch), over the store `open_change_store` made."""
    if not isinstance(git, ChangeTrees):
        return None
    return ChangeKeeper(
        git, fs, prepared.repository, prepared.grant, store_path(state), tracer, state.layout
    )
