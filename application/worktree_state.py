"""The snapshot before round 1 and the observation after every round (seed 000 "Audit").

Read-only Git through the Git port (porcelain v2 -z, untracked all, no optional locks) and the
digests of only the listed files through the filesystem port; the host creates nothing in the
worktree. A file Git no longer lists is measured where it lies.

HEAD and the index digest are read in one helper thread while `git status` runs and its files are
measured in the calling thread: on a large worktree the index digest (`ls-files --stage` over every
entry) costs a fifth of `status`, and overlapping the two keeps the whole audit step close to one
bare `git status` (docs/benchmarks.md). Every command is read-only and takes no lock, so running
them side by side changes nothing they see; the worker's processes are dead by the time the host
observes, and the caller keeps every other writer away (seed 000 "Audit"). `parallel=False` runs
them one after another.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from concorde_workers.domain.audit import FileState, Observation, Snapshot, WorktreeState, observe
from concorde_workers.domain.git_status import HeadState
from concorde_workers.domain.paths import DirEntry, EntryKind, relative_to
from concorde_workers.domain.placement import find_git_entries
from concorde_workers.ports.filesystem import FileSystem, FileSystemError
from concorde_workers.ports.git import GitReader

_T = TypeVar("_T")


class WorktreeObserver:
    """Snapshots and observations of one worktree."""

    def __init__(self, git: GitReader, fs: FileSystem, worktree: str, *,
                 parallel: bool = True, writable: Sequence[str] = (),
                 runtime_paths: Sequence[str] = ()) -> None:
        """`writable` are the grant's rw directories (worktree-relative, such as `src/app/`):
        the only places where a worker's bash can create Git metadata, which Git never lists
        (a `.git` there would hide a repository of the worker's own, and its config could run
        code for whoever later runs Git in it). They are walked for `.git` entries."""
        self._git = git
        self._fs = fs
        self._worktree = worktree
        self._parallel = parallel
        self._writable = tuple(posixpath.join(worktree, d.rstrip("/")) for d in writable)
        self._runtime_paths = tuple(runtime_paths)

    def snapshot(self) -> Snapshot:
        """HEAD, the index digest and the state of every tracked change and untracked file.
        Raises GitCommandFailed."""
        (head, index, config), files = self._beside(self._git_state, self._listed)
        return WorktreeState(head_branch=head.branch, head_commit=head.commit,
                             index_digest=index, files=files, config_digest=config)

    def observe(self, snapshot: Snapshot) -> Observation:
        """The worktree after a round, in the snapshot's shape. Raises GitCommandFailed."""
        (head, index, config), files = self._beside(self._git_state, self._listed)
        return observe(snapshot, head.branch, head.commit, index, files, self.measure, config)

    def _git_state(self) -> tuple[HeadState, str, str]:
        """HEAD, the index digest and the Git configuration digest."""
        return (self._git.head(self._worktree), self._git.index_digest(self._worktree),
                self._git.config_digest(self._worktree))

    def _beside(self, background: Callable[[], _T],
                listed: Callable[[], dict[str, FileState | None]]
                ) -> tuple[_T, dict[str, FileState | None]]:
        """`background()` in a helper thread while `listed()` runs here; both always finish
        before this returns. A failure of `listed()` is raised first, then one of
        `background()`."""
        if not self._parallel:
            first = background()
            return first, listed()
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="audit-git") as pool:
            future = pool.submit(background)
            try:
                files = listed()
            finally:
                pool.shutdown(wait=True)
            return future.result(), files

    def _listed(self) -> dict[str, FileState | None]:
        listed = {entry.path: self.measure(entry.path)
                  for entry in self._git.status(self._worktree)}
        for rel in self._git_metadata():
            listed.setdefault(rel, self.measure(rel))
        return listed

    def _git_metadata(self) -> list[str]:
        """Every `.git` entry below the writable directories, worktree-relative."""
        found: list[str] = []
        for root in self._writable:
            if not self._fs.is_dir(root) or self._fs.is_symlink(root):
                continue
            for entry in find_git_entries(root, self._list_dir, self._runtime_paths):
                found.append(relative_to(entry.path, self._worktree))
        return found

    def _list_dir(self, path: str) -> list[DirEntry]:
        try:
            return self._fs.listdir(path)
        except FileSystemError:
            return []

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
