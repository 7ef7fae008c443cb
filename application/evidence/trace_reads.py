"""What `verify` reads of a copied trace beyond its nodes, each read bounded: a file's digest (or
why it cannot be taken) and a regular file's bytes within a size. Shared by the trace's check
(verify.py) and the attestation's (attestation_check.py)."""

from __future__ import annotations

from concorde_workers.domain.ground.paths import EntryKind
from concorde_workers.ports.machine.filesystem import BoundedReading, FileSystemError

MAX_PATCH_BYTES = 2 * 1024 * 1024
"""The most of a changes.patch verify reads (the host's bound is 1 MiB and its header)."""
MAX_ENVELOPE_BYTES = 16 * 1024 * 1024
"""The most of attestation.json verify reads (the host's is kilobytes)."""


def digest_of(fs: BoundedReading, path: str) -> str | None:
    """The file's digest; None when nothing is there; `unreadable: …` when it is no regular file
    or cannot be read."""
    if not fs.lexists(path):
        return None
    try:
        if fs.stat(path).kind is not EntryKind.FILE:
            return "unreadable: not a regular file"
        return fs.file_digest(path)
    except FileSystemError as error:
        return f"unreadable: {error.os_error_text}"


def read_bounded(fs: BoundedReading, path: str, limit: int) -> bytes | None:
    """The bytes of a regular file of at most `limit` bytes; None for anything else."""
    try:
        found = fs.stat(path)
        if found.kind is not EntryKind.FILE or found.size > limit:
            return None
        return fs.read_bytes(path)
    except FileSystemError:
        return None
