"""The sweep of the checks' copies a dead host left (domain/isolation/check_copies.py): part of
every sweep
(`Sweeper.sweep`, so every `run` and `concorde-workers sweep`).

Each `concorde-check-<12 hex>` folder of the runtime parent is judged by its owner record
`owner.json` (a regular file of this user, writable by its owner only, never through a link):
its host dead, the folder is removed (unwritable folders opened up, links never followed); its
host alive, or its liveness unknowable here, it is left as it is. Every operation goes through
the ports.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from concorde_workers.domain.evidence.sweep import ProcessIdentity, Verdict
from concorde_workers.domain.ground.paths import DirEntry, EntryKind
from concorde_workers.domain.isolation.check_copies import (
    COPY_OWNER_FILE,
    CopyOwner,
    is_copy_name,
    judge_copy,
    parse_copy_owner,
)
from concorde_workers.ports.machine.filesystem import (
    BoundedReading,
    Clearing,
    FileReading,
    FileSystemError,
    PathFacts,
    Removing,
)
from concorde_workers.ports.processes.liveness import ProcessTable

__all__ = ["CopyFound", "sweep_copies"]


class CopyClearing(FileReading, PathFacts, Removing, Protocol):
    """Reads a stale copy's owner record, then removes the copy."""


@dataclass(frozen=True)
class CopyFound:
    """One check copy's folder a sweep judged: its verdict and why, its host's pid when its
    owner record named one, and for a stale one whether it is gone and what remains."""

    path: str
    verdict: Literal["stale", "live", "left"]
    reason: str
    host_pid: int | None
    removed: bool = False
    remains: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "verdict": self.verdict,
            "reason": self.reason,
            "host_pid": self.host_pid,
            "removed": self.removed,
            "remains": list(self.remains),
        }


def sweep_copies(
    fs: CopyClearing,
    table: ProcessTable,
    parent: str,
    entries: Sequence[DirEntry],
    *,
    own: ProcessIdentity,
    uid: int,
    now: float,
) -> tuple[CopyFound, ...]:
    """Judge every check copy's folder among `entries` of `parent`; remove the stale ones."""
    found: list[CopyFound] = []
    for entry in entries:
        if not is_copy_name(entry.name):
            continue
        path = posixpath.join(parent, entry.name)
        kind, owner_uid, mtime = entry.kind, None, None
        if kind is EntryKind.DIRECTORY:
            try:
                seen = fs.stat(path)
                kind, owner_uid, mtime = seen.kind, seen.uid, seen.mtime
            except FileSystemError:
                pass
        owner = _owner(fs, path, uid) if owner_uid == uid else "not read"
        observation = table.observe(owner.host.pid) if isinstance(owner, CopyOwner) else None
        judged = judge_copy(
            kind, owner_uid, mtime, owner, own_uid=uid, own=own, observation=observation, now=now
        )
        pid = owner.host.pid if isinstance(owner, CopyOwner) else None
        if judged.verdict is Verdict.STALE:
            found.append(_remove(fs, path, judged.reason, pid))
        else:
            found.append(
                CopyFound(
                    path=path,
                    host_pid=pid,
                    reason=judged.reason,
                    verdict="live" if judged.verdict is Verdict.LIVE else "left",
                )
            )
    return tuple(found)


def _owner(fs: BoundedReading, folder: str, uid: int) -> CopyOwner | str:
    path = posixpath.join(folder, COPY_OWNER_FILE)
    try:
        found = fs.stat(path)
        if found.kind is not EntryKind.FILE:
            return f"{path} is a {found.kind.value}, not a regular file"
        if found.uid != uid or found.mode & 0o022:
            return f"{path} is not the host's (owner {found.uid}, mode {oct(found.mode)})"
        return parse_copy_owner(fs.read_text(path))
    except FileSystemError as error:
        if error.not_found:
            return f"{error.path} is missing"
        return f"{error.path} cannot be read: {error.os_error_text}"


def _remove(fs: Clearing, path: str, reason: str, pid: int | None) -> CopyFound:
    remains = [f"{e.path}: {e.os_error_text}" for e in fs.open_up(path)]
    try:
        fs.rmtree(path)
    except FileSystemError as error:
        remains.append(f"{error.path}: {error.os_error_text}")
    gone = not fs.lexists(path)
    return CopyFound(
        path=path,
        verdict="stale",
        reason=reason,
        host_pid=pid,
        removed=gone,
        remains=() if gone else tuple(remains),
    )
