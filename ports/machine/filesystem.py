"""The FileSystem port: the host's own reads and writes of local files.

Paths are absolute `str` (non-UTF-8 names as surrogateescape text, like Python's `os`). Every
operating-system failure surfaces as one exception, `FileSystemError`, so callers report it
without knowing the adapter. Where a symbolic link could lead the host astray, the operation
says whether it follows it: listing, `stat`, `remove` and `file_digest` never follow a final link.
"""

from __future__ import annotations

import errno as errno_codes
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.ground.paths import DirEntry, EntryKind, Subdirs

__all__ = [
    "ARCHIVE_END_BYTES",
    "NUL_IN_PATH",
    "SHARED_HOLDERS",
    "ArchiveOutcome",
    "BoundedReading",
    "Clearing",
    "DirEntry",
    "DirectoryListing",
    "EntryKind",
    "FileKeeping",
    "FileReading",
    "FileStat",
    "FileSystem",
    "FileSystemError",
    "FileWriting",
    "HeldLock",
    "Locking",
    "PathFacts",
    "PlacedWriting",
    "Rearranging",
    "Removing",
    "RunFiles",
    "TreeReading",
    "Walking",
    "read_regular_text",
    "tar_member_cost",
]

NUL_IN_PATH = "the path holds a NUL byte, which no file name can"
"""The error text of any operation on a path with a NUL byte (errno EINVAL): such a path names no
file, and a predicate (exists, is_dir, ...) answers False for it."""


class FileSystemError(Exception):
    """An operation on `path` failed: `op` names the port method, `os_error_text` what the
    system said, `errno` its error number when there is one."""

    def __init__(self, path: str, op: str, os_error_text: str, errno: int | None = None) -> None:
        self.path = path
        self.op = op
        self.os_error_text = os_error_text
        self.errno = errno
        super().__init__(f"{op} {path!r}: {os_error_text}")

    @property
    def not_found(self) -> bool:
        return self.errno == errno_codes.ENOENT


_TAR_BLOCK = 512
ARCHIVE_END_BYTES = 20 * _TAR_BLOCK
"""What a tar archive takes besides its members, at most: the end-of-archive blocks, padded to a
record (tarfile's RECORDSIZE)."""


def tar_member_cost(name: str, size: int = 0, linkname: str = "") -> int:
    """The bytes one member takes in a tar archive, at most: an extended (pax) header with its
    records (a long or non-ASCII name or link target, a fractional time), the member's header,
    and its content padded to whole blocks. `archive` counts members by it."""

    def blocks(n: int) -> int:
        return -(-n // _TAR_BLOCK) * _TAR_BLOCK

    texts = len(name.encode("utf-8", "surrogateescape")) + len(
        linkname.encode("utf-8", "surrogateescape")
    )
    return 2 * _TAR_BLOCK + blocks(texts + 3 * _TAR_BLOCK) + blocks(size)


class ArchiveOutcome(BaseModel):
    """What `archive` left out to stay within its size: how many members (a directory counts
    once, with everything below it) and the bytes of the files among them."""

    model_config = ConfigDict(frozen=True)

    entries_left_out: int = 0
    bytes_left_out: int = 0


class FileStat(BaseModel):
    """What `stat` tells of an entry, its final link not followed. `mode` holds the permission
    bits (0o7777); `executable` is the owner's execute bit, the bit Git records. `uid` is the
    owning user's id, `mtime` the time of the last change of its content (for a directory: of
    its entries), in seconds since the epoch: the sweep of stale runtime directories acts only
    on directories of its own user and judges the age of one without an owner record by it."""

    model_config = ConfigDict(frozen=True)

    kind: EntryKind
    mode: int
    size: int
    uid: int
    mtime: float

    @property
    def executable(self) -> bool:
        return self.kind is EntryKind.FILE and bool(self.mode & 0o100)


SHARED_HOLDERS = "runs that only read it (they hold its lock shared and wrote nothing)"
"""What an exclusive taker of a lock is told when shared holders have it."""


class HeldLock(Protocol):
    """A lock `FileSystem.hold_lock` took: held until released, or until the process ends."""

    def release(self) -> None: ...


@runtime_checkable
class FileReading(Protocol):
    """Reads a file: its bytes, its text, its digest."""

    def read_bytes(self, path: str) -> bytes:
        """The file's bytes (a final link is followed, as `open` does)."""
        ...

    def read_text(self, path: str) -> str:
        """The file's text, UTF-8; invalid UTF-8 raises `FileSystemError`."""
        ...

    def read_regular(self, path: str, max_bytes: int) -> bytes:
        """The bytes of the regular file at `path` itself, for a file the agent's process could
        replace between a look and the read (its transcript): a link is never followed, a FIFO
        or device never waited on, and a file past `max_bytes` is refused (`FileSystemError`),
        all judged on what was opened."""
        ...

    def file_digest(self, path: str) -> str:
        """ "sha256:<hex>" of what Git would store for `path`: a regular file's bytes, or a
        symbolic link's target text (the link is never followed, so a worker's link to a host
        file never makes the host read that file). Anything else raises `FileSystemError`."""
        ...


@runtime_checkable
class PathFacts(Protocol):
    """Says what a path is: its kind and metadata, whether it exists, where its links lead,
    where a program lies."""

    def stat(self, path: str) -> FileStat:
        """Kind, permission bits, size, owner and modification time of `path`, a final link
        not followed (`FileStat`)."""
        ...

    def exists(self, path: str) -> bool:
        """True when `path` names something, links followed (a dangling link: False)."""
        ...

    def lexists(self, path: str) -> bool:
        """True when `path` names something, a final link not followed."""
        ...

    def is_dir(self, path: str) -> bool:
        """A directory, links followed."""
        ...

    def is_file(self, path: str) -> bool:
        """A regular file, links followed."""
        ...

    def is_symlink(self, path: str) -> bool:
        """A symbolic link itself, whatever it points to."""
        ...

    def realpath(self, path: str) -> str:
        """`path` with every symbolic link resolved, normalized, absolute; parts that do not
        exist are kept as given (as `os.path.realpath`, not strict)."""
        ...

    def which(self, program: str, search_path: str) -> str | None:
        """The executable `program` would run as, searched in the `os.pathsep`-separated
        `search_path`; a `program` with a slash is checked as given. None when not found."""
        ...


@runtime_checkable
class DirectoryListing(Protocol):
    """Lists a directory."""

    def listdir(self, path: str) -> list[DirEntry]:
        """The entries of directory `path`, sorted by name, each with its kind as it is, a
        link reported as a link and never followed."""
        ...

    def subdirectories(self, path: str, wanted: frozenset[str]) -> Subdirs:
        """What `listdir` tells a walk that keeps no file: the names of the real
        subdirectories of directory `path` (no link), in no particular order, and the kinds of
        the entries named in `wanted` that are present; and, taken out of the first, the
        subdirectories known to hold no subdirectory, each with the kinds of the `wanted`
        entries in it, exactly what listing it would say (an adapter may know none: the local
        disk knows them by the link count where the file system keeps it, `Subdirs`). Fails
        as `listdir` does."""
        ...


@runtime_checkable
class FileWriting(Protocol):
    """Writes: a file atomically or at its end, directories, modes, an archive of a tree."""

    def write_atomic(
        self, path: str, data: bytes | str, mode: int = 0o644, *, durable: bool = False
    ) -> None:
        """Replace `path` with `data` (str as UTF-8) and permission bits `mode` so that a reader
        sees the old or the new content, never a part; a final link at `path` is replaced, not
        followed. The parent directory must exist. `durable`: the new content also survives a
        power loss once this returns (the file and its directory synced) — only for what must
        (docs/decisions.md "What is durable"); other writes are atomic for readers alone."""
        ...

    def append(
        self, path: str, data: bytes | str, mode: int = 0o600, *, durable: bool = False
    ) -> None:
        """Add `data` (str as UTF-8) at the end of the regular file `path`, made with permission
        bits `mode` when missing, in one write(2) of a file opened for appending: a process killed
        meanwhile leaves the file with the whole of `data` or a part of it at the end, never
        anything in its middle. A final link at `path` is refused, never followed. The parent
        directory must exist. `durable`: what the file holds also survives a power loss once
        this returns (the file synced, and its directory when the file was made)."""
        ...

    def sync_directory(self, path: str) -> None:
        """Make what was done to directory `path`'s names so far (entries made, renamed,
        removed) survive a power loss: fsync(2) of the directory."""
        ...

    def makedirs(self, path: str, mode: int = 0o755) -> None:
        """Create `path` and missing parents; an existing directory is fine."""
        ...

    def chmod(self, path: str, mode: int) -> None:
        """Set the permission bits of `path` (links followed, as chmod(2) does: the host only
        changes modes of entries it created)."""
        ...

    def archive(self, source: str, archive: str, max_bytes: int) -> ArchiveOutcome:
        """Write a new tar archive at `archive` holding the entry `source` (named by its base
        name) and, for a directory, everything below it (depth first, each directory's entries
        in name order): symbolic links are stored as links, never followed, and anything that is
        no file, directory or link (a FIFO, a device) as what it is, never opened. The archive
        never grows past `max_bytes`: a member that would take it there (`tar_member_cost`,
        besides `ARCHIVE_END_BYTES`) is left out — a directory with everything below it — and
        counted in the outcome. An existing `archive` raises `FileSystemError`."""
        ...


@runtime_checkable
class Removing(Protocol):
    """Removes a file or a tree, opening up what a worker closed first."""

    def remove(self, path: str) -> None:
        """Unlink the file or symbolic link `path`; a link is removed itself, never its target.
        A directory raises `FileSystemError`."""
        ...

    def rmtree(self, path: str) -> None:
        """Remove the directory tree `path` without following any link in it; a link at
        `path` itself is removed as a link."""
        ...

    def open_up(self, root: str) -> list[FileSystemError]:
        """Give the directory `root` and every directory below it the owner's read, write and
        search bits (u+rwx), so that a worker's chmod 000 cannot stop their removal. Each
        directory is opened relative to its parent's descriptor without following a link and
        changed through that descriptor: no link is ever followed, and a directory swapped for a
        link between a look and the change is met as the link it is (and left alone). What
        fails is returned, not raised; the rest goes on."""
        ...


@runtime_checkable
class Locking(Protocol):
    """Holds an exclusive lock on a file."""

    def hold_lock(self, path: str, holder: str, shared: bool = False) -> HeldLock | str:
        """A lock on the file `path` (made 0600 when missing, never through a link): exclusive,
        with `holder` written in it; or `shared` with other shared holders, writing nothing.
        When it cannot be taken, the text the exclusive holder wrote (or a sentence saying that
        shared holders have it). The kernel keeps the lock only while the holding process
        lives: a holder killed by SIGKILL frees it at once."""
        ...


@runtime_checkable
class FileSystem(
    FileReading, PathFacts, DirectoryListing, FileWriting, Removing, Locking, Protocol
):
    """Local files, every capability: read, inspect, list, write atomically, archive, change
    modes, open up, remove, lock, and find programs. The composition root holds one; a consumer
    names the capabilities it uses (one of the above, or one of the intersections below named
    for a need), and `mypy --strict` proves it uses no other (issue 34 §6)."""


# The intersections several consumers share, each named for the need (a consumer with a need
# of its own declares its intersection beside itself).


@runtime_checkable
class BoundedReading(FileReading, PathFacts, Protocol):
    """Reads a file after looking at what its path is (`read_regular_text`, the trace's and the
    machine's files)."""


@runtime_checkable
class Walking(PathFacts, DirectoryListing, Protocol):
    """Looks at paths and lists folders, reading no file (the grant's and the placement's
    walks, the confinement's facts, a backend finding its program)."""


@runtime_checkable
class TreeReading(FileReading, PathFacts, DirectoryListing, Protocol):
    """Reads a tree: files, what paths are, folders' entries (verification, the observer of a
    worktree, the placement's reader)."""


@runtime_checkable
class Clearing(PathFacts, Removing, Protocol):
    """Removes what it looked at first (a check's copy, a stale copy)."""


@runtime_checkable
class PlacedWriting(PathFacts, FileWriting, Protocol):
    """Writes where it looked first (the runtime directory's making, a report's target)."""


@runtime_checkable
class FileKeeping(FileReading, PathFacts, FileWriting, Protocol):
    """Reads and writes files it keeps (the trace, the attestation, the installed programs)."""


@runtime_checkable
class Rearranging(PathFacts, FileWriting, Removing, Protocol):
    """Writes and removes where it looked (the deletions, the planted Git metadata moved out,
    a runtime directory made or given back)."""


@runtime_checkable
class RunFiles(FileReading, PathFacts, DirectoryListing, FileWriting, Removing, Protocol):
    """Everything a run does to its files (the host, a round, the run's end, the sweep): all
    but the worktree's lock, which the caller takes (`Locking`)."""


def read_regular_text(fs: BoundedReading, path: str, limit: int) -> str:
    """The text of `path` when it is a regular file of at most `limit` bytes, a final link not
    followed: the one bounded read of a file the host reads for itself (issue 19 §4). A FIFO, a
    device, a link, a directory or a larger file raises `FileSystemError` naming why, and is
    never opened; so does a missing file (`not_found`)."""
    found = fs.stat(path)
    if found.kind is not EntryKind.FILE:
        raise FileSystemError(path, "stat", "it is not a regular file")
    if found.size > limit:
        raise FileSystemError(
            path,
            "stat",
            f"it is {found.size} bytes, past the limit of {limit} bytes this reader reads",
        )
    return fs.read_text(path)
