"""The account of Git metadata in a worktree (seed 000 "Audit"; docs/decisions.md "The host's
Git"): the state of a `.git` entry (a file's digest; for a Git directory, a digest of what decides
what it runs and has checked out), every `.git` entry new or changed since the snapshot with what
its configuration would run and its hooks, and the Git metadata a worker could have planted
inside the grant's rw directories before the run. Read as text, never run, never followed where
the worker could not read."""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Callable, Mapping, Sequence

from concorde_workers.domain.gitview.git_config import program_settings
from concorde_workers.domain.gitview.git_metadata import GitMetadata
from concorde_workers.domain.gitview.git_status import (
    resolve_head,
)
from concorde_workers.domain.gitview.placement import host_may_read, parse_gitdir_file
from concorde_workers.domain.ground.paths import DirEntry, EntryKind, is_within
from concorde_workers.domain.run.audit import (
    FileState,
    Snapshot,
    is_git_metadata,
)
from concorde_workers.ports.machine.filesystem import FileSystemError, TreeReading

__all__ = ["GIT_DIR_FILES", "GitMetadataAccount"]

GIT_DIR_FILES = (
    "HEAD",
    "config",
    "config.worktree",
    "commondir",
    "gitdir",
    "info/attributes",
    "info/exclude",
    "packed-refs",
)
"""What decides what a Git directory runs and has checked out: its `.git` entry's state is a
digest of these (and of its hooks and resolved HEAD)."""
MAX_READ = 1 << 20


class GitMetadataAccount:
    """What the host reads of one worktree's Git metadata, as a worker may have left it."""

    def __init__(
        self,
        fs: TreeReading,
        worktree: str,
        writable: Sequence[str],
        measure: Callable[[str], FileState | None],
    ) -> None:
        """`writable`: the grant's rw directories without their slash (where a worker's bash
        can create Git metadata); `measure`: a file's state where it lies (the observer's)."""
        self._fs = fs
        self._worktree = worktree
        self._writable = tuple(writable)
        self._measure = measure

    def entry_state(self, rel: str) -> FileState | None:
        """A `.git` entry's state: a file's or link's digest; for a directory, a digest of what
        decides what it runs and has checked out (`GIT_DIR_FILES`, its hooks, its HEAD)."""
        path = posixpath.join(self._worktree, rel)
        try:
            if not self._fs.lexists(path):
                return None
            if self._fs.stat(path).kind is not EntryKind.DIRECTORY:
                return self._measure(rel)
        except FileSystemError as error:
            return FileState(digest=f"unreadable: {error.os_error_text}", executable=False)
        digest = hashlib.sha256()
        names = [*GIT_DIR_FILES, *(f"hooks/{e.name}" for e in self.list_dir(f"{path}/hooks"))]
        for name in names:
            digest.update(
                f"{name}\0{self._digest_or_state(f'{path}/{name}')}\0".encode(
                    "utf-8", "surrogateescape"
                )
            )
        digest.update(self.resolve_head(path).encode("utf-8", "surrogateescape"))
        return FileState(digest=f"git directory sha256:{digest.hexdigest()}", executable=False)

    def _digest_or_state(self, path: str) -> str:
        try:
            return self._fs.file_digest(path) if self._fs.lexists(path) else "absent"
        except FileSystemError as error:
            return f"unreadable: {error.os_error_text}"

    def resolve_head(self, git_dir: str) -> str:
        return resolve_head(lambda rel: self.read(posixpath.join(git_dir, rel)))

    def read(self, path: str) -> bytes | None:
        """A regular file's bytes (never a FIFO or device, never through a final link), None
        otherwise."""
        try:
            if self._fs.stat(path).kind is not EntryKind.FILE:
                return None
            return self._fs.read_bytes(path)[:MAX_READ]
        except FileSystemError:
            return None

    def _may_read(self, target: str) -> bool:
        """A worker-named path the host may open: resolved, inside the grant's rw directories."""
        try:
            real = self._fs.realpath(target)
        except FileSystemError:
            return False
        return host_may_read(real, self._fs.realpath(self._worktree), self._writable)

    def list_dir(self, path: str) -> list[DirEntry]:
        try:
            return self._fs.listdir(path)
        except FileSystemError:
            return []

    def changed(
        self,
        snapshot: Snapshot,
        files: Mapping[str, FileState | None],
        gitlinks: Sequence[str],
    ) -> tuple[GitMetadata, ...]:
        """Every `.git` entry of the observed `files` that is new or changed since the snapshot,
        with what its configuration would run, read as text."""
        found: list[GitMetadata] = []
        for rel in sorted(files):
            after = files[rel]
            if not _git_entry(rel, after):
                continue
            if after is None or snapshot.files.get(rel) == after:
                continue
            found.append(
                self._inspect(
                    rel,
                    created=rel not in snapshot.files or snapshot.files[rel] is None,
                    gitlinks=gitlinks,
                )
            )
        return tuple(found)

    def found_before(self, snapshot: Snapshot, gitlinks: Sequence[str]) -> tuple[GitMetadata, ...]:
        """The Git metadata inside the grant's rw directories at the snapshot (not the
        worktree's own) whose configuration or hooks would run a program: an interrupted run
        leaves what its worker planted there, and nothing tells it from the user's own."""
        found: list[GitMetadata] = []
        for rel in sorted(snapshot.files):
            if (
                rel == ".git"
                or snapshot.files[rel] is None
                or not _git_entry(rel, snapshot.files[rel])
            ):
                continue
            if not any(w in ("", ".") or is_within(rel, w) for w in self._writable):
                continue
            item = self._inspect(rel, created=False, gitlinks=gitlinks)
            if item.runs or item.hooks:
                found.append(item)
        return tuple(found)

    def _inspect(self, rel: str, created: bool, gitlinks: Sequence[str]) -> GitMetadata:
        path = posixpath.join(self._worktree, rel)
        try:
            kind = self._fs.stat(path).kind
        except FileSystemError:
            kind = EntryKind.OTHER
        names = {
            EntryKind.DIRECTORY: "directory",
            EntryKind.FILE: "file",
            EntryKind.SYMLINK: "symbolic link",
        }
        git_dir: str | None = path if kind is EntryKind.DIRECTORY else None
        points_to = None
        if kind is EntryKind.FILE:
            text = self.read(path)
            points_to = (
                parse_gitdir_file(text.decode("utf-8", "surrogateescape"), posixpath.dirname(path))
                if text
                else None
            )
            git_dir = points_to
        elif kind is EntryKind.SYMLINK:
            points_to = git_dir = self._fs.realpath(path)
        if git_dir is not None and git_dir != path and not self._may_read(git_dir):
            # The pointer's text is evidence; where it leads is not the worker's to show.
            points_to = f"{points_to}; not read: outside what the worker could read"
            git_dir = None
        runs: tuple[str, ...] = ()
        hooks: tuple[str, ...] = ()
        if git_dir is not None:
            config = b"".join(
                self.read(f"{git_dir}/{name}") or b"" for name in ("config", "config.worktree")
            )
            runs = tuple(f"{e.name} = {e.value}" for e in program_settings(config))
            hooks_dir = f"{git_dir}/hooks"  # a planted link here would list a folder elsewhere
            listed = self.list_dir(hooks_dir) if self._may_read(hooks_dir) else []
            hooks = tuple(
                e.name
                for e in listed
                if not e.name.endswith(".sample") and e.kind is not EntryKind.DIRECTORY
            )
        submodule = next(
            (
                g
                for g in gitlinks
                if is_within(posixpath.join(self._worktree, rel), posixpath.join(self._worktree, g))
            ),
            None,
        )
        return GitMetadata(
            path=rel,
            created=created,
            kind=names.get(kind, "other"),
            points_to=points_to,
            submodule=submodule,
            runs=runs,
            hooks=hooks,
        )


def _git_entry(rel: str, state: FileState | None) -> bool:
    """A `.git` entry, or a directory Git takes for a Git directory whatever its name."""
    if state is not None and state.git_dir:
        return True
    return posixpath.basename(rel) == ".git" and is_git_metadata(rel)
