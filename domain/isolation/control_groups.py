"""What a confined round and a check see of the machine's control groups (issue 30 §2;
docs/decisions.md "No other run named").

A control group filesystem lists every group of its hierarchy, and the host names a round's
groups after its runtime directory (`concorde-<hex>-<hex>-r<n>`) and a check's
`concorde-check-<hex>`: bound in whole, as `--ro-bind / /` would, it names every run on the
machine. So every cgroup filesystem the host has mounted (`cgroup_mounts`, from its
/proc/self/mountinfo) is replaced inside the namespace:

- in a round, by the round's own group of that hierarchy, read-only, at the mount point itself
  (`views`), and the round gets a control group namespace of its own whose root is that group
  (bwrap `--unshare-cgroup`, after the round's process joined it): /proc/self/cgroup then says
  `/`, and a program that reads its own limits there (node sizes its heap from
  `memory.limit_in_bytes`) finds them where it looks; a hierarchy the round has no group in is
  an empty read-only folder;
- in a check, by an empty read-only folder (its namespaces are unshared whole already).

Pure: the mountinfo text comes in; the command line's parts go out.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

from concorde_workers.domain.ground.paths import is_within

__all__ = [
    "CGROUP_ROOT",
    "CGROUP_TYPES",
    "MAX_MOUNTINFO_BYTES",
    "cgroup_mounts",
    "mask_args",
    "views",
]

CGROUP_ROOT = "/sys/fs/cgroup"
"""Where the control group filesystems are mounted on a usual Linux machine."""

CGROUP_TYPES = frozenset({"cgroup", "cgroup2"})
"""The filesystem types that list control groups."""

MAX_MOUNTINFO_BYTES = 4 * 1024 * 1024
"""What the host reads of its /proc/self/mountinfo (a machine's mount table is far smaller)."""

_ESCAPE = re.compile(r"\\([0-7]{3})")


def _unescape(field: str) -> str:
    """A mountinfo path field: the kernel writes space, tab, newline and backslash as octal."""
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), field)


def cgroup_mounts(mountinfo: str) -> tuple[str, ...]:
    """The mount points of every control group filesystem in /proc/self/mountinfo text, the
    outermost only (a mount below another is hidden with it), in the order they are listed. A
    line that does not parse is skipped."""
    found: list[str] = []
    for line in mountinfo.splitlines():
        fields, sep, rest = line.partition(" - ")
        parts = fields.split(" ")
        if not sep or len(parts) < 5 or not rest:
            continue
        point = posixpath.normpath(_unescape(parts[4]))
        if rest.split(" ", 1)[0] in CGROUP_TYPES and posixpath.isabs(point):
            found.append(point)
    unique = list(dict.fromkeys(found))
    return tuple(p for p in unique if not any(o != p and is_within(p, o) for o in unique))


def views(mounts: Sequence[str], folders: Sequence[str]) -> tuple[tuple[str, str | None], ...]:
    """For each control group mount point, what the namespace shows there: the round's own
    group folder that lies in that hierarchy (the deepest mount point holding it), or None
    (an empty folder)."""
    shown: list[tuple[str, str | None]] = []
    for point in mounts:
        mine = [
            f
            for f in folders
            if is_within(f, point)
            and max((m for m in mounts if is_within(f, m)), key=len, default=None) == point
        ]
        shown.append((point, mine[0] if mine else None))
    return tuple(shown)


def mask_args(mounts: Sequence[str], folders: Sequence[str] = ()) -> tuple[list[str], list[str]]:
    """bwrap's arguments that replace each control group mount (`views`), and the mount
    points to remount read-only once every other mount is made (the empty ones)."""
    args: list[str] = []
    empty: list[str] = []
    for point, folder in views(mounts, folders):
        if folder is None:
            args += ["--tmpfs", point]
            empty.append(point)
        else:
            args += ["--ro-bind", folder, point]
    return args, empty
