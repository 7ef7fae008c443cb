"""The snapshot before round 1 and the observation after every round (seed 000 "Audit").

Read-only Git through the Git port (porcelain v2 -z, untracked all, no optional locks) and the
digests of only the listed files through the filesystem port; the host creates nothing in the
worktree. A file Git no longer lists is measured where it lies.
"""

from __future__ import annotations

import posixpath

from concorde_workers.domain.audit import FileState, Observation, Snapshot, WorktreeState, observe
from concorde_workers.domain.paths import EntryKind
from concorde_workers.ports.filesystem import FileSystem, FileSystemError
from concorde_workers.ports.git import GitReader


class WorktreeObserver:
    """Snapshots and observations of one worktree."""

    def __init__(self, git: GitReader, fs: FileSystem, worktree: str) -> None:
        self._git = git
        self._fs = fs
        self._worktree = worktree

    def snapshot(self) -> Snapshot:
        """HEAD, the index digest and the state of every tracked change and untracked file.
        Raises GitCommandFailed."""
        head = self._git.head(self._worktree)
        return WorktreeState(head_branch=head.branch, head_commit=head.commit,
                             index_digest=self._git.index_digest(self._worktree),
                             files=self._listed())

    def observe(self, snapshot: Snapshot) -> Observation:
        """The worktree after a round, in the snapshot's shape. Raises GitCommandFailed."""
        head = self._git.head(self._worktree)
        return observe(snapshot, head.branch, head.commit, self._git.index_digest(self._worktree),
                       self._listed(), self.measure)

    def _listed(self) -> dict[str, FileState | None]:
        return {entry.path: self.measure(entry.path) for entry in self._git.status(self._worktree)}

    def measure(self, rel: str) -> FileState | None:
        """The file where it lies: its digest and executable bit, None when it is gone. A file
        the host cannot read is a state of its own, never equal to a readable one."""
        path = posixpath.join(self._worktree, rel)
        try:
            if not self._fs.lexists(path):
                return None
            stat = self._fs.stat(path)
            if stat.kind is EntryKind.DIRECTORY:
                return FileState(digest="directory", executable=False)
            return FileState(digest=self._fs.file_digest(path), executable=stat.executable)
        except FileSystemError as error:
            return FileState(digest=f"unreadable: {error.os_error_text}", executable=False)
