"""Placement: the `.claude/worktrees/<name>` rule and the Git administrative paths.

Seed 000 "Placement": every worktree a worker runs in lies directly in `.claude/worktrees/` of its
repository's primary worktree (the first worktree `git worktree list` names); any other placement,
the primary worktree itself included, is refused with `worktree_misplaced` (reason environment).
Once the placement holds, the host collects the Git administrative paths as real paths; the
Harness hides them from every tool (notes/harness.md §3).

Everything here is pure: the Git port gives the facts (real paths, what Git said, the text of a
`.git` file), the walks go through a `ListDir` or `ListSubdirs` callable.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.ground.errors import Reason, Refusal
from concorde_workers.domain.ground.paths import (
    DirEntry,
    EntryKind,
    ListDir,
    ListSubdirs,
    is_within,
    relative_to,
)

WORKTREES_DIR = ".claude/worktrees"
GIT = ".git"


class Placement(BaseModel):
    """A placement that holds: the worktree lies directly in `<primary>/.claude/worktrees/`."""

    model_config = ConfigDict(frozen=True)

    worktree: str
    primary: str
    name: str


def worktrees_dir(primary: str) -> str:
    """`<primary>/.claude/worktrees/`, as the refusal names it (with its trailing slash)."""
    return posixpath.join(posixpath.normpath(primary), WORKTREES_DIR) + "/"


def _misplaced(message: str) -> Refusal:
    return Refusal(code=Code.WORKTREE_MISPLACED, reason=Reason.ENVIRONMENT, message=message)


def check_placement(worktree: str, primary: str | None, git_said: str = "") -> Placement | Refusal:
    """Judge the placement of `worktree` (its real path) against the primary worktree.

    `primary` is the primary worktree's real path, or None when Git found none (a bare repository,
    or not a repository); `git_said` is then what Git said, which the refusal quotes.
    """
    worktree = posixpath.normpath(worktree)
    if primary is None:
        said = git_said.strip() or "nothing"
        return _misplaced(
            f"Git found no primary worktree for the worktree {worktree} (Git said: {said}); a "
            "worker runs only in a worktree lying directly in .claude/worktrees/ of its "
            "repository's primary worktree, and a bare repository has none"
        )
    primary = posixpath.normpath(primary)
    where = worktrees_dir(primary)
    if not posixpath.isabs(worktree) or not posixpath.isabs(primary):
        return _misplaced(
            f"the worktree {worktree} or the primary worktree {primary} is not an "
            f"absolute path; the worktree must lie directly in {where}"
        )
    if posixpath.dirname(worktree) == where.rstrip("/"):
        return Placement(worktree=worktree, primary=primary, name=posixpath.basename(worktree))
    if worktree == primary:
        what = "is the primary worktree itself"
    elif worktree == where.rstrip("/"):
        what = "is the primary worktree's .claude/worktrees/ folder itself, not a worktree in it"
    elif worktree.startswith(where):
        what = "lies below, not directly in, the primary worktree's .claude/worktrees/"
    else:
        what = "does not lie in the primary worktree's .claude/worktrees/"
    return _misplaced(
        f"the worktree {worktree} {what}; a worker runs only in a worktree lying directly in "
        f"{where} (create one with git worktree add {where}<name>)"
    )


# --- Git administrative paths (seed 000 "Placement", notes/harness.md §3) -----------------------


class GitEntry(BaseModel):
    """A `.git` entry the walk found, by its lexical path and what it is (not following a link).
    `bare`: no `.git` but a directory Git takes for a Git directory (`looks_like_git_dir`)."""

    model_config = ConfigDict(frozen=True)

    path: str
    kind: EntryKind
    bare: bool = False


_GIT_DIR_LINKS = frozenset({EntryKind.DIRECTORY, EntryKind.SYMLINK})
_GIT_FILE_LINKS = frozenset({EntryKind.FILE, EntryKind.SYMLINK})


def looks_like_git_dir(entries: Iterable[DirEntry]) -> bool:
    """Whether a directory with these entries is one Git takes for a Git directory when it
    discovers a repository from inside it (setup.c `is_git_directory`: a HEAD, and objects/ and
    refs/, or a commondir naming them elsewhere), whatever its name: a "bare" repository, whose
    configuration can name a work tree and run its programs there. Over-inclusive: HEAD is not
    parsed, and a link counts as what it may point to."""
    kinds = {e.name: e.kind for e in entries}
    if kinds.get("HEAD") not in _GIT_FILE_LINKS:
        return False
    return (
        kinds.get("objects") in _GIT_DIR_LINKS and kinds.get("refs") in _GIT_DIR_LINKS
    ) or kinds.get("commondir") in _GIT_FILE_LINKS


class AdminPath(BaseModel):
    """One Git administrative path, real and absolute; `directory` selects the `/**` rule form."""

    model_config = ConfigDict(frozen=True)

    path: str
    directory: bool


class Walked(BaseModel):
    """What a walk found below its root: every entry that is no directory (files, symbolic
    links, anything else) and every `.git` entry, each by its lexical path, in path order."""

    model_config = ConfigDict(frozen=True)

    files: tuple[str, ...] = ()
    git_entries: tuple[GitEntry, ...] = ()


def walk_tree(
    root: str,
    list_dir: ListDir,
    runtime_paths: Iterable[str] = (),
    *,
    files: bool = True,
    git_dirs: bool = False,
) -> Walked:
    """Walk `root` as the placement walk does: it enters no `.git`, no symbolic link and no
    runtime path (seed 000 "Placement"); children are visited in name order, so the result is
    deterministic. `files=False` keeps only the `.git` entries. `git_dirs`: a directory Git
    takes for a Git directory whatever its name (`looks_like_git_dir`) is found too, as a
    `bare` entry, and not entered."""
    runtime = tuple(posixpath.normpath(p) for p in runtime_paths)
    below_runtime = tuple(r.rstrip("/") + "/" for r in runtime)
    found: list[GitEntry] = []
    others: list[str] = []
    stack = [posixpath.normpath(root)]
    while stack:
        directory = stack.pop()
        prefix = directory.rstrip("/") + "/"
        subdirs: list[str] = []
        listed = list_dir(directory)
        if git_dirs and looks_like_git_dir(listed):
            found.append(GitEntry(path=directory, kind=EntryKind.DIRECTORY, bare=True))
            continue
        for entry in sorted(listed, key=lambda e: e.name):
            is_dir = entry.kind is EntryKind.DIRECTORY
            if not (files or is_dir or entry.name == GIT):
                continue  # a file, and only `.git` entries are wanted
            # `directory` is normalised and a listed name has no slash, so this is the
            # normalised path without normpath's cost (one per entry of a large tree).
            path = prefix + entry.name
            if runtime and (path in runtime or path.startswith(below_runtime)):
                continue
            if entry.name == GIT:
                found.append(GitEntry(path=path, kind=entry.kind))
            elif is_dir:
                subdirs.append(path)
            else:
                others.append(path)
        stack.extend(reversed(subdirs))
    return Walked(
        files=tuple(sorted(others)), git_entries=tuple(sorted(found, key=lambda e: e.path))
    )


_GIT_ONLY = frozenset({GIT})


def find_git_entries(
    worktree: str, list_subdirs: ListSubdirs, runtime_paths: Iterable[str] = ()
) -> tuple[GitEntry, ...]:
    """Every `.git` entry of the worktree, file or directory, at any depth: exactly
    `walk_tree(worktree, list_dir, runtime_paths, files=False).git_entries` for the `list_dir`
    that `list_subdirs` stands for (a property test holds them equal), with one type check per
    entry instead of an entry object: it enters no `.git`, no symbolic link and no runtime path,
    and finds a `.git` of any kind (seed 000 "Placement")."""
    runtime = tuple(posixpath.normpath(p) for p in runtime_paths)
    below_runtime = tuple(r.rstrip("/") + "/" for r in runtime)

    def kept(path: str) -> bool:
        return not (runtime and (path in runtime or path.startswith(below_runtime)))

    found: list[GitEntry] = []

    def seen(prefix: str, kinds: Mapping[str, EntryKind]) -> None:
        kind = kinds.get(GIT)
        if kind is not None and kept(prefix + GIT):
            found.append(GitEntry(path=prefix + GIT, kind=kind))

    stack = [posixpath.normpath(worktree)]
    while stack:
        directory = stack.pop()
        # `directory` is normalised and a listed name has no slash: `prefix + name` is the
        # normalised path without normpath's cost.
        prefix = directory.rstrip("/") + "/"
        names, kinds, leaves = list_subdirs(directory, _GIT_ONLY)
        seen(prefix, kinds)
        stack += [prefix + name for name in names if name != GIT and kept(prefix + name)]
        # A leaf is walked as listing it would: its `.git`, and no subdirectory to enter.
        for name, inside in leaves.items():
            if name != GIT and kept(prefix + name):
                seen(prefix + name + "/", inside)
    return tuple(sorted(found, key=lambda e: e.path))


def _first_line_value(text: str, key: str) -> str | None:
    for line in text.splitlines():
        if line.startswith(key):
            value = line[len(key) :].strip()
            return value or None
    return None


def parse_gitdir_file(text: str, file_dir: str) -> str | None:
    """The Git directory a `.git` file's `gitdir:` line names, absolute and normalized.

    A relative target is relative to the directory holding the file. None when the file names
    no Git directory.
    """
    target = _first_line_value(text, "gitdir:")
    if target is None:
        return None
    return posixpath.normpath(posixpath.join(file_dir, target))


def parse_commondir_file(text: str, git_dir: str) -> str | None:
    """The common directory a Git directory's `commondir` file names (relative to `git_dir`)."""
    target = text.strip().splitlines()[0].strip() if text.strip() else ""
    if not target:
        return None
    return posixpath.normpath(posixpath.join(git_dir, target))


def prune_admin_paths(paths: Iterable[AdminPath]) -> tuple[AdminPath, ...]:
    """The paths with none below another listed one, in first-appearance order.

    A path below a listed directory is hidden with it (the common directory covers its
    `worktrees/` and `modules/`); a duplicate keeps its first occurrence.
    """
    given = [AdminPath(path=posixpath.normpath(p.path), directory=p.directory) for p in paths]
    kept: list[AdminPath] = []
    for index, candidate in enumerate(given):
        if any(k.path == candidate.path for k in kept):
            continue
        covered = any(
            other.directory
            and other.path != candidate.path
            and is_within(candidate.path, other.path)
            for other in given[:index] + given[index + 1 :]
        )
        if not covered:
            kept.append(candidate)
    return tuple(kept)


def collect_admin_paths(
    git_dir: str,
    common_dir: str,
    git_entries: Sequence[AdminPath] = (),
    gitdir_targets: Sequence[str] = (),
) -> tuple[AdminPath, ...]:
    """The pruned Git administrative paths the Harness hides (seed 000 "Placement").

    `git_dir` and `common_dir` are `git rev-parse --path-format=absolute --git-dir
    --git-common-dir`; `git_entries` the `.git` entries the walk found, each by its lexical and
    its real path (the caller resolves them); `gitdir_targets` the Git directories the `.git`
    files name and those directories' `commondir` targets. All real and absolute.
    """
    listed = [AdminPath(path=common_dir, directory=True), AdminPath(path=git_dir, directory=True)]
    listed.extend(git_entries)
    listed.extend(AdminPath(path=t, directory=True) for t in gitdir_targets)
    return prune_admin_paths(listed)


def host_may_read(target: str, worktree: str, readable: Iterable[str]) -> bool:
    """May the host read `target` (already resolved: no link left in it) on the worker's behalf.

    Only inside the worktree, below one of `readable` (worktree-relative directories the worker
    could read; "" or "." is the whole worktree). A worker-written pointer naming anything else
    is evidence by its text only: reading its target would disclose what the worker could not
    see (issue 18 §2)."""
    if not is_within(target, worktree):
        return False
    rel = relative_to(target, worktree)
    if is_within(rel, ".git"):
        return False  # the worktree's own Git metadata: hidden from every worker tool
    return any(entry in ("", ".") or is_within(rel, entry) for entry in readable)
