"""The rw entries of a grant as mounts of the confinement's plan (domain/isolation/mount_plan.py),
and the filesystem facts the plan sees (`PathFacts`).

A rw directory that exists is bound itself, writable. A rw file, or a rw entry that does not
exist yet, needs its folder writable (the host creates no file for the worker, and tools write
a file by a new one renamed over it): the nearest existing folder above it is bound writable and
every other entry there bound back read-only or masked (`_beside`). A program with no per-path
layer of its own (`files_alone`: Codex, whose commands write whatever the namespace leaves
writable) gets a rw file bound itself and no folder beside it; a rw entry that only a writable
folder could serve is refused before launch (`unbound_rw_entry`; docs/decisions.md 73).
Pure: the facts come in as callables.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from concorde_workers.domain.boundary.grant import READABLE, Level, directory_level, entries_below
from concorde_workers.domain.boundary.policy import Policy
from concorde_workers.domain.ground.paths import EntryKind, ListDir, relative_to
from concorde_workers.domain.isolation.confinement import Mount, MountKind

__all__ = ["FILE_WHY", "PathFacts", "unbound_rw_entry", "writable_mounts"]


@dataclass(frozen=True)
class PathFacts:
    """The filesystem as the plan sees it: `kind` does not follow the last link (None: missing),
    `realpath` resolves every link, `list_dir` lists a directory (empty when unreadable)."""

    kind: Callable[[str], EntryKind | None]
    realpath: Callable[[str], str]
    list_dir: ListDir

    def is_real(self, path: str, kind: EntryKind | None = None) -> bool:
        """`path` exists, has no link on the way (the final component included) and, when
        given, is of `kind`."""
        found = self.kind(path)
        if found is None or found is EntryKind.SYMLINK or self.realpath(path) != path:
            return False
        return kind is None or found is kind


def writable_mounts(policy: Policy, facts: PathFacts, files_alone: bool) -> Iterable[Mount]:
    """The rw entries, writable. A rw directory that exists is bound itself. A rw file, or a rw
    entry that does not exist yet, needs its directory writable (the host creates no file for
    the worker, and tools write a file by a new one renamed over it): the nearest existing
    directory above it is bound writable, and every other entry there is bound back read-only
    or masked, so only the rw entries and new names become writable. With `files_alone` (a
    program with no per-path layer of its own, whose commands write whatever the namespace
    leaves writable) a rw file is bound itself and nothing else is: no folder beside it."""
    wt, grant = policy.worktree, policy.grant
    scopes: set[str] = set()
    for entry in grant.entries:
        if entry.level is not Level.RW:
            continue
        path = posixpath.join(wt, entry.bare)
        if entry.is_directory and facts.is_real(path, EntryKind.DIRECTORY):
            yield Mount(kind=MountKind.WRITABLE, path=path, why=f"rw in the grant ({entry.path})")
            continue
        scope = _scope(policy, facts, path)
        if scope is None:
            continue
        if not files_alone:
            scopes.add(scope)
        elif facts.is_real(path, EntryKind.FILE):
            why = f"rw in the grant ({entry.path}), {FILE_WHY}"
            yield Mount(kind=MountKind.WRITABLE, path=path, why=why, file=True)
    for scope in sorted(scopes):
        yield Mount(
            kind=MountKind.WRITABLE,
            path=scope,
            why="holds a rw file or a rw entry still to be created",
        )
        yield from _beside(policy, facts, scope)


FILE_WHY = "the file itself: its folder stays as the grant shows it"
_BESIDE = "beside a writable entry"


def _scope(policy: Policy, facts: PathFacts, path: str) -> str | None:
    """The nearest existing directory above `path` when it is not writable in the grant anyway
    (a rw directory bound itself, or below one): the folder a rw file or a rw entry still to
    be created needs writable; None when none is needed."""
    wt = policy.worktree
    scope = posixpath.dirname(path)
    while scope != wt and not facts.is_real(scope, EntryKind.DIRECTORY):
        scope = posixpath.dirname(scope)
    if directory_level(policy.grant, relative_to(scope, wt)) is Level.RW:
        return None
    return scope


def unbound_rw_entry(policy: Policy, facts: PathFacts) -> str | None:
    """With `PlanInputs.files_alone`: the first rw entry that no bind of its own can make
    writable (one not there yet, a link, a special file, a folder entry on a file) and that
    lies in no folder the grant makes rw, said with the repair; None when there is none. Such
    an entry would need its folder writable, where a program without a per-path layer writes
    any other name as well. A rw entry naming an existing folder without its slash is none of
    them: it is the entry itself, which nothing writes (the worker finds it empty)."""
    wt = policy.worktree
    for number, entry in enumerate(policy.grant.entries, start=1):
        path = posixpath.join(wt, entry.bare)
        if entry.level is not Level.RW or _scope(policy, facts, path) is None:
            continue
        if facts.is_real(path, EntryKind.FILE) or facts.is_real(path, EntryKind.DIRECTORY):
            continue
        said = f"grant entry {number} ({entry.path!r}, rw)"
        found = facts.kind(path)
        if found is None:
            what = "names nothing in the worktree yet"
            repair = "create it first, empty if need be (the host creates nothing for the worker)"
        elif found is EntryKind.SYMLINK or facts.realpath(path) != path:
            what = "is a symbolic link or has one on its way"
            repair = "grant the path it leads to instead"
        else:
            what = "is a special file (a FIFO, a socket or a device)"
            repair = "grant a regular file instead"
        folder = posixpath.dirname(entry.bare)
        beside = f", or grant its folder `{folder}/` rw" if folder else ""
        return f"{said} {what}: {repair}{beside}"
    return None


def _beside(policy: Policy, facts: PathFacts, scope: str) -> Iterable[Mount]:
    """The entries of a writable scope that are not rw: bound back read-only (a mask from the
    deny rules replaces it where the entry is hidden). The scope is the real directory, so each
    entry's name shows; a directory not readable as a whole is built like the worktree, from
    what is visible in it, so that no name below it shows that the grant hides."""
    grant = policy.grant
    for child in facts.list_dir(scope):
        path = posixpath.join(scope, child.name)
        rel = policy.rel(path)
        if child.kind is EntryKind.DIRECTORY:
            level = directory_level(grant, rel)
            if level is Level.RW:
                continue
            if level in READABLE and all(e.level in READABLE for e in entries_below(grant, rel)):
                yield Mount(kind=MountKind.READ_ONLY, path=path, why=_BESIDE)
            else:
                yield Mount(
                    kind=MountKind.EMPTY_DIR,
                    path=path,
                    named=True,
                    why=f"{_BESIDE}, built from the grant",
                )
        elif child.kind is EntryKind.FILE and grant.level_of(rel) is not Level.RW:
            yield Mount(kind=MountKind.READ_ONLY, path=path, why=_BESIDE)
        # a link or a special file: no mount can stand on it
