"""The snapshot before round 1 and the observation after every round (seed 000 "Audit").

Read-only Git through the Git port (the audit's listing: every tracked path not as the index
records it and every untracked file, no optional locks) on the repository placement found, and
the digests of only the listed files through the filesystem port; the host creates nothing in
the worktree. A file Git no longer lists is measured where it lies. The listing's rules (which
files are ignored, how content is converted) are the committed ones, asked once before the
snapshot and kept for the run: no rule file a worker writes decides what the audit sees (issue
30 §1; docs/decisions.md "The audit's listing").

What Git does not show, the host walks itself, without Git and before any Git command runs over
the tree (issue 8 §1; docs/decisions.md "The host's Git"):
- every `.git` entry below the grant's rw directories (where a worker's bash can create one),
  below every submodule path and every nested repository, and each `.git` entry placement found:
  Git never lists them, and a repository there carries configuration that runs for whoever
  next uses Git in it;
- the content of every submodule path (gitlink) and nested repository, file by file: the host's
  listing ignores submodules, so that it never starts a Git in a worktree a worker can
  configure; a change there is judged like any other path;
- the commit each submodule path has checked out, read from the Git directory its `.git` named
  at the snapshot (a moved gitlink is Git metadata, a violation whatever the level).

HEAD and the listing come from Git's side-by-side calls (docs/decisions.md "The audit's
listing"); the index digest (and its gitlinks) and the Git configuration digest are read in one
helper thread while the listing runs and its files are measured in the calling thread, which
keeps the whole audit step close to one bare `git status` (docs/benchmarks.md). Every command
is read-only and takes no lock, so running them side by side
changes nothing they see; the worker's processes are dead by the time the host observes, and the
caller keeps every other writer away (seed 000 "Audit"). `parallel=False` runs them one after
another.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from concorde_workers.application.rounds.git_metadata_account import GitMetadataAccount
from concorde_workers.domain.gitview.committed_rules import EvidenceRules
from concorde_workers.domain.gitview.git_metadata import GitMetadata
from concorde_workers.domain.gitview.git_status import (
    GitRepository,
    IndexState,
    WorktreeStatus,
)
from concorde_workers.domain.gitview.placement import parse_gitdir_file, walk_tree
from concorde_workers.domain.ground.paths import EntryKind, relative_to
from concorde_workers.domain.run.audit import (
    FileState,
    Observation,
    Snapshot,
    WorktreeState,
    observe,
)
from concorde_workers.ports.machine.filesystem import FileSystemError, TreeReading
from concorde_workers.ports.repository.git import GitReader

_T = TypeVar("_T")
_U = TypeVar("_U")


class WorktreeObserver:
    """Snapshots and observations of one worktree."""

    def __init__(
        self,
        git: GitReader,
        fs: TreeReading,
        repository: GitRepository,
        *,
        parallel: bool = True,
        writable: Sequence[str] = (),
        runtime_paths: Sequence[str] = (),
        git_entries: Sequence[str] = (),
        store: str | None = None,
    ) -> None:
        """`writable` are the grant's rw directories (worktree-relative, such as `src/app/`):
        the only places where a worker's bash can create Git metadata. `git_entries` are the
        `.git` entries placement found (worktree-relative; `.git` is the worktree's own):
        each is measured, and each below the top level opens a nested repository whose content
        Git does not list, which is walked as a submodule path is. `store`: the run's store
        (`ChangeTrees.open_store`), where Git compares content by the committed rules."""
        self._git = git
        self._fs = fs
        self._repo = repository
        self._worktree = repository.worktree
        self._parallel = parallel
        self._writable = tuple(d.rstrip("/") for d in writable)
        self._runtime_paths = tuple(runtime_paths)
        self._known_git = tuple(git_entries)
        self._nested = tuple(posixpath.dirname(e) for e in git_entries if posixpath.dirname(e))
        self._gitlinks: tuple[str, ...] = ()
        self._modules: dict[str, str | None] = {}
        self._walked: dict[str, FileState | None] = {}
        self._rules: EvidenceRules | None = None
        self._store = store
        self._account = GitMetadataAccount(fs, self._worktree, self._writable, self.measure)

    @property
    def rules(self) -> EvidenceRules | None:
        """The rules the snapshot took (committed at its moment), None before it."""
        return self._rules

    # --- the two moments ---------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        """HEAD, the index digest and the state of every tracked change and untracked file,
        every `.git` entry, submodule path and nested repository. Raises GitCommandFailed."""
        self._rules = self._git.evidence_rules(self._repo)
        index = self._git.index(self._repo)  # the index file only, not the tree
        self._gitlinks = tuple(g.path for g in index.gitlinks)
        # Before any round: which Git directory each submodule path has checked out, as the
        # user left it; a `.git` file a worker writes later decides nothing.
        self._modules = {rel: self._module_dir(rel) for rel in self._gitlinks}
        walked = self._walk(self._gitlinks)
        config = self._git.config_digest(self._repo)
        status = self._git.status(self._repo, self._gitlinks, self._rules, self._store)
        files = self._listed(status)
        files.update(walked)
        return WorktreeState(
            head_branch=status.head.branch,
            head_commit=status.head.commit,
            index_digest=index.digest,
            files=files,
            config_digest=config,
        )

    def observe(self, snapshot: Snapshot) -> Observation:
        """The worktree after a round, in the snapshot's shape. Raises GitCommandFailed."""

        def walk_then_status() -> tuple[WorktreeStatus, dict[str, FileState | None]]:
            # The walk comes before any Git command runs over the tree (`ls-files` beside it
            # reads the index file only).
            self._walked = self._walk(self._gitlinks)
            return self._status()

        (index, config), (status, files) = self._beside(self._git_state, walk_then_status)
        walked = dict(self._walked)
        new_links = tuple(g.path for g in index.gitlinks if g.path not in self._gitlinks)
        if new_links:  # the index changed (a violation already): walk what it names too
            walked.update(self._walk(new_links, only_links=True))
        files.update(walked)
        return observe(
            snapshot,
            status.head.branch,
            status.head.commit,
            index.digest,
            files,
            self.measure,
            config,
        )

    def _git_state(self) -> tuple[IndexState, str]:
        return self._git.index(self._repo), self._git.config_digest(self._repo)

    def _status(self) -> tuple[WorktreeStatus, dict[str, FileState | None]]:
        if self._rules is None:  # observed without a snapshot of this observer's (tests)
            self._rules = self._git.evidence_rules(self._repo)
        status = self._git.status(self._repo, self._gitlinks, self._rules, self._store)
        return status, self._listed(status)

    def _listed(self, status: WorktreeStatus) -> dict[str, FileState | None]:
        return {entry.path: self.measure(entry.path) for entry in status.entries}

    def _beside(self, background: Callable[[], _T], here: Callable[[], _U]) -> tuple[_T, _U]:
        """`background()` in a helper thread while `here()` runs here; both always finish
        before this returns. A failure of `here()` is raised first, then one of
        `background()`."""
        if not self._parallel:
            first = background()
            return first, here()
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="audit-git") as pool:
            future = pool.submit(background)
            try:
                result = here()
            finally:
                pool.shutdown(wait=True)
            return future.result(), result

    # --- what Git does not show ----------------------------------------------------------------

    def _walk(
        self, gitlinks: Sequence[str], only_links: bool = False
    ) -> dict[str, FileState | None]:
        """Every `.git` entry below the rw directories, the submodule paths and the nested
        repositories (and each one placement found); every file below a submodule path or
        nested repository; each submodule path's checked-out commit."""
        states: dict[str, FileState | None] = {}
        if not only_links:
            for rel in self._known_git:
                states[rel] = self._account.entry_state(rel)
            for rel in self._writable:
                self._walk_below(rel, states, files=False)
            for rel in self._nested:
                self._walk_below(rel, states, files=True)
        for rel in gitlinks:
            states[rel] = self._gitlink_state(rel)
            self._walk_below(rel, states, files=True)
        return states

    def _walk_below(self, rel: str, states: dict[str, FileState | None], files: bool) -> None:
        root = posixpath.join(self._worktree, rel)
        if not self._fs.is_dir(root) or self._fs.is_symlink(root):
            return
        walked = walk_tree(
            root, self._account.list_dir, self._runtime_paths, files=files, git_dirs=True
        )
        for path in walked.files:
            found = relative_to(path, self._worktree)
            states[found] = self.measure(found)
        for entry in walked.git_entries:
            found = relative_to(entry.path, self._worktree)
            state = self._account.entry_state(found)
            if entry.bare and state is not None:
                # Not named .git, and Git would still use it from inside: Git metadata.
                state = state.model_copy(update={"git_dir": True})
            states[found] = state

    def _module_dir(self, rel: str) -> str | None:
        """The Git directory a submodule path's `.git` names (or is), None when none."""
        dot_git = posixpath.join(self._worktree, rel, ".git")
        try:
            kind = self._fs.stat(dot_git).kind
            if kind is EntryKind.DIRECTORY:
                return dot_git
            if kind is EntryKind.FILE:
                text = self._account.read(dot_git)
                target = (
                    parse_gitdir_file(
                        text.decode("utf-8", "surrogateescape"), posixpath.dirname(dot_git)
                    )
                    if text
                    else None
                )
                return self._fs.realpath(target) if target else None
        except FileSystemError:
            pass
        return None

    def _gitlink_state(self, rel: str) -> FileState | None:
        path = posixpath.join(self._worktree, rel)
        if not self._fs.is_dir(path) or self._fs.is_symlink(path):
            return self.measure(rel)  # no directory there any more: what is, is measured
        module = self._modules.get(rel)
        head = "not checked out" if module is None else self._account.resolve_head(module)
        return FileState(digest=f"gitlink {head}", executable=False, gitlink=True)

    # --- the account of Git metadata (application/rounds/git_metadata_account.py) -------------

    def git_metadata(
        self, snapshot: Snapshot, observed: Mapping[str, FileState | None] | None = None
    ) -> tuple[GitMetadata, ...]:
        """Every `.git` entry of the observed files (by default, what the latest observation's
        walk found, even when Git failed after it) that is new or changed since the snapshot,
        with what its configuration would run, read as text."""
        files = self._walked if observed is None else observed
        return self._account.changed(snapshot, files, self._gitlinks)

    def found_before(self, snapshot: Snapshot) -> tuple[GitMetadata, ...]:
        """The Git metadata inside the grant's rw directories at the snapshot (not the
        worktree's own) whose configuration or hooks would run a program: an interrupted run
        leaves what its worker planted there, and nothing tells it from the user's own."""
        return self._account.found_before(snapshot, self._gitlinks)

    # --- measuring one path -------------------------------------------------------------------

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
