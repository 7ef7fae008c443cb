"""The local filesystem adapter: the `FileSystem` port over `os`.

Every `OSError` becomes `FileSystemError(path, op, text, errno)`. Operations that must not follow
a final symbolic link use `lstat`/`O_NOFOLLOW`, so a link a worker planted inside the worktree
never makes the host read, digest or delete what it points to.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import hashlib
import os
import posixpath
import shutil
import stat as stat_module
import tempfile
from collections.abc import Callable, Iterator
from typing import TypeVar

from concorde_workers.domain.ground.paths import DirEntry, EntryKind, Subdirs, leaf_devices
from concorde_workers.domain.isolation.control_groups import MAX_MOUNTINFO_BYTES
from concorde_workers.ports.machine.filesystem import (
    ARCHIVE_END_BYTES,
    NUL_IN_PATH,
    SHARED_HOLDERS,
    ArchiveOutcome,
    FileStat,
    FileSystemError,
    HeldLock,
    tar_member_cost,
)

T = TypeVar("T")

_CHUNK = 1 << 20


def _kind_of(mode: int) -> EntryKind:
    if stat_module.S_ISLNK(mode):
        return EntryKind.SYMLINK
    if stat_module.S_ISDIR(mode):
        return EntryKind.DIRECTORY
    if stat_module.S_ISREG(mode):
        return EntryKind.FILE
    return EntryKind.OTHER


@functools.cache
def _leaf_devices() -> frozenset[tuple[int, int]]:
    """The devices where a directory's link count of 2 says it holds no subdirectory
    (domain.ground.paths.leaf_devices), from this process's mount table, read once: a file
    system mounted later is not among them (its directories are listed); none where the table
    cannot be read."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as table:
            return leaf_devices(table.read(MAX_MOUNTINFO_BYTES))
    except OSError:
        return frozenset()


def _leaf(
    entry: os.DirEntry[str], wanted: frozenset[str], trusted: frozenset[tuple[int, int]]
) -> dict[str, EntryKind] | None:
    """For a subdirectory that holds no subdirectory (its link count 2 on a device in
    `trusted`), the kinds of the `wanted` entries in it, each by one lstat (listing it would
    have said the same: a walk that keeps no file then need not list it, issue 32 §2); None for
    any other, or where an lstat says less than a listing would (a directory that can be read
    but not searched), so that it is listed as before."""
    try:
        found = entry.stat(follow_symlinks=False)
    except OSError:
        return None
    device = (os.major(found.st_dev), os.minor(found.st_dev))
    if not stat_module.S_ISDIR(found.st_mode) or found.st_nlink != 2 or device not in trusted:
        return None
    inside: dict[str, EntryKind] = {}
    for name in wanted:
        try:
            inside[name] = _kind_of(os.lstat(posixpath.join(entry.path, name)).st_mode)
        except FileNotFoundError:
            continue
        except OSError:
            return None
    return inside


def _entry_kind(entry: os.DirEntry[str]) -> EntryKind:
    """The kind of a directory entry without following a link; the type the directory read
    already gave is used, so a walk of a large worktree makes no stat call per entry."""
    try:
        if entry.is_symlink():
            return EntryKind.SYMLINK
        if entry.is_dir(follow_symlinks=False):
            return EntryKind.DIRECTORY
        if entry.is_file(follow_symlinks=False):
            return EntryKind.FILE
    except OSError:
        pass
    return _kind_of(entry.stat(follow_symlinks=False).st_mode)


def _fsync_directory(path: str) -> None:
    dir_fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


@contextlib.contextmanager
def _os_errors(path: str, op: str) -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        raise FileSystemError(path, op, exc.strerror or str(exc), exc.errno) from exc
    except ValueError as exc:  # os refuses a path with a NUL byte before any system call
        if "\0" not in path:
            raise
        raise FileSystemError(path, op, NUL_IN_PATH, errno.EINVAL) from exc


# A directory's descriptor that needs no permission on the directory itself and never follows a
# final link (O_PATH with O_NOFOLLOW opens a link as itself; O_DIRECTORY then refuses it).
_DIR_PATH_FLAGS = os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC


def _open_one(path: str, fd: int, failed: Callable[[str, OSError], None]) -> list[str]:
    """Give the directory of `fd` u+rwx and list its subdirectories (by name, not following
    links). An O_PATH descriptor cannot be fchmod-ed: /proc/self/fd/<fd> names that very
    directory (a magic link, never resolved by path again)."""
    try:
        found = os.fstat(fd)
        if not stat_module.S_ISDIR(found.st_mode):
            return []
        mode = stat_module.S_IMODE(found.st_mode)
        if mode & 0o700 != 0o700:
            os.chmod(f"/proc/self/fd/{fd}", mode | 0o700)
        listing = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=fd)
    except OSError as exc:
        failed(path, exc)
        return []
    try:
        with os.scandir(listing) as entries:
            return sorted(e.name for e in entries if e.is_dir(follow_symlinks=False))
    except OSError as exc:
        failed(path, exc)
        return []
    finally:
        os.close(listing)


class _Reading:
    """Reads a file (ports.machine.filesystem.FileReading)."""

    def read_bytes(self, path: str) -> bytes:
        with _os_errors(path, "read_bytes"), open(path, "rb") as f:
            return f.read()

    def read_regular(self, path: str, max_bytes: int) -> bytes:
        with _os_errors(path, "read_regular"):
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
            fd = os.open(path, flags)
            try:
                if not stat_module.S_ISREG(os.fstat(fd).st_mode):
                    raise OSError(errno.EINVAL, "not a regular file", path)
                with os.fdopen(os.dup(fd), "rb") as f:
                    data = f.read(max_bytes + 1)
            finally:
                os.close(fd)
        if len(data) > max_bytes:
            raise FileSystemError(path, "read_regular", f"more than {max_bytes} bytes")
        return data

    def read_text(self, path: str) -> str:
        data = self.read_bytes(path)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FileSystemError(path, "read_text", f"not UTF-8: {exc}") from exc

    def file_digest(self, path: str) -> str:
        def digest() -> str:
            st = os.lstat(path)
            if stat_module.S_ISLNK(st.st_mode):
                # Git stores a link as its target's text; readlink on bytes keeps its bytes.
                target = os.readlink(os.fsencode(path))
                return "sha256:" + hashlib.sha256(target).hexdigest()
            if not stat_module.S_ISREG(st.st_mode):
                raise IsADirectoryError(21, "not a regular file or symbolic link", path)
            h = hashlib.sha256()
            # O_NOFOLLOW: had the file been swapped for a link since lstat, open fails instead
            # of reading the link's target.
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            with os.fdopen(fd, "rb") as f:
                for chunk in iter(lambda: f.read(_CHUNK), b""):
                    h.update(chunk)
            return "sha256:" + h.hexdigest()

        return _call(path, "file_digest", digest)


_LOCK_TEXT_BYTES = 4096


_LOCK_ATTEMPTS = 8


class _Facts:
    """Says what a path is (ports.machine.filesystem.PathFacts)."""

    def stat(self, path: str) -> FileStat:
        with _os_errors(path, "stat"):
            st = os.lstat(path)
        return FileStat(
            kind=_kind_of(st.st_mode),
            mode=stat_module.S_IMODE(st.st_mode),
            size=st.st_size,
            uid=st.st_uid,
            mtime=st.st_mtime,
        )

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def lexists(self, path: str) -> bool:
        return os.path.lexists(path)

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def is_file(self, path: str) -> bool:
        return os.path.isfile(path)

    def is_symlink(self, path: str) -> bool:
        return os.path.islink(path)

    def realpath(self, path: str) -> str:
        with _os_errors(path, "realpath"):
            return os.path.realpath(path)

    def which(self, program: str, search_path: str) -> str | None:
        return shutil.which(program, path=search_path)


class _Listing:
    """Lists a directory (ports.machine.filesystem.DirectoryListing)."""

    def listdir(self, path: str) -> list[DirEntry]:
        with _os_errors(path, "listdir"), os.scandir(path) as it:
            entries = [DirEntry(name=e.name, kind=_entry_kind(e)) for e in it]
        return sorted(entries, key=lambda e: e.name)

    def subdirectories(self, path: str, wanted: frozenset[str]) -> Subdirs:
        # One type check per entry and no entry object: the directory read's d_type answers
        # is_dir without a stat call (a file system without d_type makes os.scandir lstat).
        with _os_errors(path, "listdir"), os.scandir(path) as it:
            entries = list(it)
            subdirs = [e for e in entries if e.is_dir(follow_symlinks=False)]
            kinds = {e.name: _entry_kind(e) for e in entries if e.name in wanted}
        trusted = _leaf_devices()
        names: list[str] = []
        leaves: dict[str, dict[str, EntryKind]] = {}
        for entry in subdirs:
            inside = _leaf(entry, wanted, trusted) if trusted else None
            if inside is None:
                names.append(entry.name)
            else:
                leaves[entry.name] = inside
        return names, kinds, leaves


class _Writing:
    """Writes (ports.machine.filesystem.FileWriting)."""

    def write_atomic(
        self, path: str, data: bytes | str, mode: int = 0o644, *, durable: bool = False
    ) -> None:
        payload = data.encode("utf-8") if isinstance(data, str) else data
        directory = os.path.dirname(path) or "."
        with _os_errors(path, "write_atomic"):
            # The temporary file lies in the target's directory so os.replace is a rename on
            # one filesystem, atomic for readers. Durable: fsync before the rename so a crash
            # cannot leave the new name pointing at empty data, and fsync the directory after it
            # so the rename itself survives; the other writes skip both (docs/decisions.md).
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".part", dir=directory)
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(payload)
                    f.flush()
                    os.fchmod(f.fileno(), mode)
                    if durable:
                        os.fsync(f.fileno())
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
            if durable:
                _fsync_directory(directory)

    def append(
        self, path: str, data: bytes | str, mode: int = 0o600, *, durable: bool = False
    ) -> None:
        payload = data.encode("utf-8") if isinstance(data, str) else data
        with _os_errors(path, "append"):
            made = not os.path.lexists(path)
            # O_NOFOLLOW: a link at `path` is refused (ELOOP), never written through;
            # O_NONBLOCK: a FIFO there is refused below, never waited on.
            flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
            fd = os.open(path, flags | os.O_CLOEXEC, mode)
            try:
                if not stat_module.S_ISREG(os.fstat(fd).st_mode):
                    raise OSError(errno.EINVAL, "not a regular file", path)
                written = 0
                while written < len(payload):  # one write(2) but for a signal's short write
                    written += os.write(fd, payload[written:])
                if durable:
                    os.fsync(fd)
            finally:
                os.close(fd)
            if durable and made:
                _fsync_directory(os.path.dirname(path) or ".")

    def sync_directory(self, path: str) -> None:
        with _os_errors(path, "sync_directory"):
            _fsync_directory(path)

    def makedirs(self, path: str, mode: int = 0o755) -> None:
        with _os_errors(path, "makedirs"):
            os.makedirs(path, mode=mode, exist_ok=True)

    def chmod(self, path: str, mode: int) -> None:
        with _os_errors(path, "chmod"):
            os.chmod(path, mode)

    def archive(self, source: str, archive: str, max_bytes: int) -> ArchiveOutcome:
        import tarfile  # only an archive needs it (with lzma and bz2): no run's start pays

        used, left_out, left_bytes = ARCHIVE_END_BYTES, 0, 0

        def within_bounds(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
            nonlocal used, left_out, left_bytes
            size = info.size if info.isreg() else 0
            cost = tar_member_cost(info.name, size, info.linkname)
            if used + cost > max_bytes:
                left_out, left_bytes = left_out + 1, left_bytes + size
                return None  # a directory: tarfile then leaves out what lies below it too
            used += cost
            return info

        with _os_errors(archive, "archive"):
            fd = os.open(archive, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            with os.fdopen(fd, "wb") as out, tarfile.open(fileobj=out, mode="w") as tar:
                # lstat-based: links stored as links; FIFOs and devices stored, not opened;
                # a directory's entries in sorted order.
                tar.add(
                    source,
                    arcname=os.path.basename(source.rstrip("/")),
                    recursive=True,
                    filter=within_bounds,
                )
                out.flush()
                os.fsync(out.fileno())
        return ArchiveOutcome(entries_left_out=left_out, bytes_left_out=left_bytes)


class _Removing:
    """Removes (ports.machine.filesystem.Removing)."""

    def remove(self, path: str) -> None:
        with _os_errors(path, "remove"):
            # unlink(2) removes a link itself, never its target, and refuses a directory.
            if stat_module.S_ISDIR(os.lstat(path).st_mode):
                raise IsADirectoryError(21, "Is a directory", path)
            os.unlink(path)

    def rmtree(self, path: str) -> None:
        with _os_errors(path, "rmtree"):
            if os.path.islink(path):
                os.unlink(path)
                return
            # shutil.rmtree never follows links below the top (it unlinks them).
            shutil.rmtree(path)

    def open_up(self, root: str) -> list[FileSystemError]:
        errors: list[FileSystemError] = []

        def failed(path: str, exc: OSError) -> None:
            errors.append(FileSystemError(path, "open_up", exc.strerror or str(exc), exc.errno))

        try:
            top = os.open(root, _DIR_PATH_FLAGS)
        except OSError as exc:
            failed(root, exc)
            return errors
        # Depth first, one descriptor per level open: each directory's children are opened
        # relative to it, so nothing on the way is looked up by path again.
        stack: list[tuple[str, int, Iterator[str]]] = [
            (root, top, iter(_open_one(root, top, failed)))
        ]
        while stack:
            path, fd, names = stack[-1]
            name = next(names, None)
            if name is None:
                os.close(fd)
                stack.pop()
                continue
            child = posixpath.join(path, name)
            try:
                child_fd = os.open(name, _DIR_PATH_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
                    failed(child, exc)
                continue  # swapped for a link (or gone) since the listing: never followed
            stack.append((child, child_fd, iter(_open_one(child, child_fd, failed))))
        return errors


class _Locking:
    """Locks (ports.machine.filesystem.Locking)."""

    def hold_lock(self, path: str, holder: str, shared: bool = False) -> HeldLock | str:
        def take() -> HeldLock | str | None:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
            except BlockingIOError:
                said = os.pread(fd, _LOCK_TEXT_BYTES, 0).decode("utf-8", "replace")
                os.close(fd)
                return said.strip() or SHARED_HOLDERS
            except BaseException:
                os.close(fd)
                raise
            # The holder before removes the file as it releases: a lock taken on the file it
            # removed is no lock, and the file is made anew (None: try again).
            try:
                same = os.path.samestat(os.fstat(fd), os.lstat(path))
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                return None
            # A shared holder writes nothing (an exclusive taker then says "runs that only
            # read"), and clears what a killed exclusive holder left.
            os.ftruncate(fd, 0)
            if not shared:
                os.pwrite(fd, holder.encode(), 0)
            return _FlockHeld(fd, path, remove=not shared)

        for _ in range(_LOCK_ATTEMPTS):
            taken = _call(path, "hold_lock", take)
            if taken is not None:
                return taken
        raise FileSystemError(
            path,
            "hold_lock",
            f"the lock file was replaced while it was taken, {_LOCK_ATTEMPTS} times",
        )


class LocalFileSystem(_Reading, _Facts, _Listing, _Writing, _Removing, _Locking):
    """`FileSystem` on the host's own disks."""


class _FlockHeld:
    """A flock(2) held on an open descriptor. Released, an exclusive holder's file is removed
    while the lock is still held (so nothing of the lock stays behind), then the descriptor
    closed; a taker that locked the removed file sees it is no longer at the path and makes a
    new one. A shared holder leaves the file: other readers may hold it still."""

    def __init__(self, fd: int, path: str, remove: bool = True) -> None:
        self._fd: int | None = fd
        self._path = path
        self._remove = remove

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            if self._remove:
                with contextlib.suppress(OSError):  # left behind, it is only an unlocked file
                    os.unlink(self._path)
        finally:
            os.close(fd)


def _call(path: str, op: str, fn: Callable[[], T]) -> T:
    with _os_errors(path, op):
        return fn()
