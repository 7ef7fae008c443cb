"""Path facts the domain reasons over without touching a disk.

The walks the spec asks for (the deny-rule cover, the Git administrative paths) are pure functions
over a `ListDir` callable that the application backs with the filesystem port.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum


class EntryKind(StrEnum):
    FILE = "file"
    DIRECTORY = "directory"
    SYMLINK = "symlink"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class DirEntry:
    """One entry of a directory listing: its name and what it is, without following a link.
    A slotted dataclass, not a model: walks of large worktrees make one per entry."""

    name: str
    kind: EntryKind


ListDir = Callable[[str], Sequence[DirEntry]]
"""Lists the entries of an absolute directory path (empty when it cannot be read)."""

Subdirs = tuple[Sequence[str], Mapping[str, EntryKind], Mapping[str, Mapping[str, EntryKind]]]
"""One directory as a walk that keeps no file sees it: the names of its real subdirectories (a
link to a directory is none), in no particular order; the kinds of the entries it asked for by
name, those present; and apart from the first, the subdirectories known to hold no
subdirectory ("leaves"), each with the kinds of the asked-for entries in it — what listing it
would have said, so that a walk need not list it (`leaf_devices`)."""

LINK_COUNTED = frozenset({"ext2", "ext3", "ext4", "xfs"})
"""The file systems whose directory link count is 2 plus the number of subdirectories, kept by
the kernel: a directory there with a link count of 2 holds no subdirectory (find(1)'s "leaf
optimization"). Not btrfs (it counts 1), not tmpfs or any other on an anonymous device (a
device number that a FUSE, CIFS or NFS mount may take next), not overlay, FUSE, CIFS, NFS or AFS
(whose counts are what their server or daemon says)."""

ListSubdirs = Callable[[str, frozenset[str]], Subdirs]
"""`Subdirs` of an absolute directory path, the entries named in the set asked for (empty when
it cannot be read). The placement walk's listing: per entry a name and a type check, no object,
as a walk of a 100,000-file worktree needs (docs/benchmarks.md)."""


def subdirs_of(list_dir: ListDir) -> ListSubdirs:
    """The `ListSubdirs` a `ListDir` implies: the same facts, from the full listing (no leaf is
    known: every subdirectory is listed in its turn)."""

    def list_subdirs(path: str, wanted: frozenset[str]) -> Subdirs:
        listed = list_dir(path)
        return (
            [e.name for e in listed if e.kind is EntryKind.DIRECTORY],
            {e.name: e.kind for e in listed if e.name in wanted},
            {},
        )

    return list_subdirs


def leaf_devices(mountinfo: str) -> frozenset[tuple[int, int]]:
    """The devices (major, minor) of the mount table (/proc/self/mountinfo's text) whose file
    system is one of `LINK_COUNTED` on a real device (major not 0): where a directory's link
    count of 2 says that it holds no subdirectory. A line that does not parse names none."""
    found: set[tuple[int, int]] = set()
    for line in mountinfo.splitlines():
        fields = line.split(" ")
        if "-" not in fields[6:]:
            continue
        kind = fields[fields.index("-", 6) + 1 :][:1]
        major, _, minor = fields[2].partition(":")
        real = major.isdigit() and minor.isdigit() and int(major) != 0
        if kind and kind[0] in LINK_COUNTED and real:
            found.add((int(major), int(minor)))
    return frozenset(found)


def is_within(path: str, root: str) -> bool:
    """True when the normalized absolute `path` is `root` or lies below it."""
    path = posixpath.normpath(path)
    root = posixpath.normpath(root)
    return path == root or path.startswith(root.rstrip("/") + "/")


def within_any(roots: Iterable[str]) -> Callable[[str], bool]:
    """The test `is_within(path, r) for some r of roots`, with the roots normalized once and
    matched in one call: a mount plan asks it of every deny rule's path (issue 32 §2)."""
    normal = [posixpath.normpath(r) for r in roots]
    exact = frozenset(normal)
    below = tuple(r.rstrip("/") + "/" for r in normal)

    def test(path: str) -> bool:
        path = posixpath.normpath(path)
        return path in exact or path.startswith(below)

    return test


def relative_to(path: str, root: str) -> str:
    """`path` relative to `root`; both absolute and normalized, `path` within `root`. A path
    within the root is cut off it (what relpath answers, without its walk over both paths'
    segments: a mount plan asks it thousands of times); any other is relpath's answer."""
    path, root = posixpath.normpath(path), posixpath.normpath(root)
    if path == root:
        return ""
    below = root.rstrip("/") + "/"
    # Only an absolute path is cut as text: a relative one's ".." segments are relpath's to
    # resolve against the working directory. "//" is a root of its own.
    if root.startswith("/") and path.startswith(below) and not path.startswith("//"):
        return path[len(below) :]
    rel = posixpath.relpath(path, root)
    return "" if rel == "." else rel


def dedupe(items: Iterable[str]) -> tuple[str, ...]:
    """`items` without repeats, the first occurrence kept in place."""
    return tuple(dict.fromkeys(items))


def outermost(paths: Iterable[str], done: Sequence[str] = ()) -> list[str]:
    """`paths` but those at or below another of them or of `done` (already hidden whole, or
    walked the same way), first occurrence kept."""
    out: list[str] = []
    for path in paths:
        if any(is_within(path, o) for o in (*done, *out)):
            continue
        out = [o for o in out if not is_within(o, path)] + [path]
    return out
