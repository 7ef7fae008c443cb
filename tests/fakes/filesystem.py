"""FakeFileSystem: an in-memory POSIX tree with files, directories, symbolic links and modes."""

from __future__ import annotations

import errno
import hashlib
import io
import posixpath
import tarfile
from dataclasses import dataclass, field

from concorde_workers.domain.ground.paths import DirEntry, EntryKind, Subdirs, subdirs_of
from concorde_workers.ports.machine.filesystem import (
    ARCHIVE_END_BYTES,
    NUL_IN_PATH,
    SHARED_HOLDERS,
    ArchiveOutcome,
    FileStat,
    FileSystemError,
    tar_member_cost,
)

_MAX_LINKS = 40  # as Linux's MAXSYMLINKS: more hops is ELOOP


def _child(directory: str, name: str) -> str:
    """posixpath.join for a name without a slash, at a fraction of its cost (path resolution
    does this once per component of every path the tests touch)."""
    return directory + name if directory.endswith("/") else f"{directory}/{name}"


_PREDICATES = frozenset({"exists", "lexists", "is_dir", "is_file", "is_symlink"})


FAKE_UID = 1000
"""The fake's user: every entry it makes is owned by it unless a test says otherwise."""

FAKE_NOW = 1_767_225_600.0
"""2026-01-01T00:00:00Z, FakeClock's start: the modification time of entries made."""


@dataclass
class Node:
    kind: EntryKind
    mode: int
    data: bytes = b""
    target: str = ""  # a symbolic link's target, as given
    uid: int = FAKE_UID
    mtime: float = FAKE_NOW


@dataclass
class Failure:
    op: str
    path: str
    text: str
    errno: int | None
    times: int | None  # None: every time


@dataclass
class FakeFileSystem:
    """`FileSystem` in memory. Paths are absolute POSIX strings; "/" always exists.

    Setup helpers (`write`, `mkdir`, `symlink`, `own`, `touch`) are not part of the port and are
    not recorded. `ops` records every port call as (op, path); `fail(op, path, ...)` makes an
    operation raise. Every entry made gets the owner `uid` and the modification time `now`
    (both settable; a directory's time does not follow its entries).
    """

    nodes: dict[str, Node] = field(default_factory=dict)
    ops: list[tuple[str, str]] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    durable: list[str] = field(default_factory=list)
    """Every file written with durable=True, in order (physical paths)."""
    synced: list[str] = field(default_factory=list)
    locks: dict[str, str] = field(default_factory=dict)
    shared_locks: dict[str, int] = field(default_factory=dict)
    """The locks held now, by path, with their holder's text (`hold_lock`)."""
    """Every directory `sync_directory` made durable, in order (physical paths)."""
    uid: int = FAKE_UID
    now: float = FAKE_NOW

    def __post_init__(self) -> None:
        self.nodes.setdefault("/", Node(EntryKind.DIRECTORY, 0o755, uid=0))

    def _new(self, kind: EntryKind, mode: int, data: bytes = b"", target: str = "") -> Node:
        return Node(kind, mode, data, target, uid=self.uid, mtime=self.now)

    # -- setup helpers (not recorded) ------------------------------------------------------

    def write(self, path: str, data: bytes | str, mode: int = 0o644) -> None:
        """Create or replace a regular file, creating missing parent directories."""
        parent = self._mkdirs(posixpath.dirname(self._abs(path)))
        payload = data.encode("utf-8") if isinstance(data, str) else data
        self.nodes[posixpath.join(parent, posixpath.basename(path))] = self._new(
            EntryKind.FILE, mode & 0o7777, payload
        )

    def mkdir(self, path: str, mode: int = 0o755) -> None:
        """Create a directory and its parents (existing ones are kept)."""
        self._mkdirs(path, mode)

    def _mkdirs(self, path: str, mode: int = 0o755) -> str:
        """`mkdir`, returning the directory's physical path. Each step starts from the physical
        path of the one before, so only a link met on the way is resolved again (setting up a
        large tree stays linear in its depth)."""
        current = "/"
        for part in self._abs(path).strip("/").split("/"):
            if not part:
                continue
            current = _child(current, part)
            node = self.nodes.get(current)
            if node is not None and node.kind is EntryKind.SYMLINK:
                current = self._resolve(current, follow=True)
                node = self.nodes.get(current)
            if node is None:
                self.nodes[current] = self._new(EntryKind.DIRECTORY, mode)
            elif node.kind is not EntryKind.DIRECTORY:
                raise self._error(current, "mkdir", errno.ENOTDIR)
        return current

    def symlink(self, target: str, link: str) -> None:
        """Create symbolic link `link` pointing at `target` (kept as given, may dangle)."""
        parent = self._mkdirs(posixpath.dirname(self._abs(link)))
        self.nodes[posixpath.join(parent, posixpath.basename(link))] = self._new(
            EntryKind.SYMLINK, 0o777, target=target
        )

    def own(self, path: str, uid: int) -> None:
        """Make `path` (its final link not followed) belong to user `uid`."""
        node = self._lookup(self._abs(path), follow=False)
        assert node is not None, path
        node.uid = uid

    def touch(self, path: str, mtime: float) -> None:
        """Set the modification time of `path` (its final link not followed)."""
        node = self._lookup(self._abs(path), follow=False)
        assert node is not None, path
        node.mtime = mtime

    def fail(
        self,
        op: str,
        path: str,
        text: str = "Permission denied",
        errno_: int | None = 13,
        times: int | None = None,
    ) -> None:
        """Make port operation `op` on `path` raise FileSystemError (`times` times, or always)."""
        self.failures.append(Failure(op, self._abs(path), text, errno_, times))

    # -- path resolution -------------------------------------------------------------------

    @staticmethod
    def _abs(path: str) -> str:
        if not path.startswith("/"):
            raise ValueError(f"FakeFileSystem wants absolute paths, got {path!r}")
        return posixpath.normpath(path) if path != "/" else "/"

    def _error(self, path: str, op: str, code: int) -> FileSystemError:
        import os  # only for the message text, to match the real adapter's wording

        return FileSystemError(path, op, os.strerror(code), code)

    def _resolve(self, path: str, follow: bool, op: str = "resolve", strict: bool = True) -> str:
        """The physical path of `path`: links in its directories resolved, and the final
        component's too when `follow`. Strict: a missing directory component raises ENOENT
        (the final component may be missing). Not strict: missing parts are kept, as
        os.path.realpath does."""
        hops = 0
        pending = [p for p in path.split("/") if p]
        resolved = "/"
        while pending:
            part = pending.pop(0)
            if part == ".":
                continue
            if part == "..":
                resolved = posixpath.dirname(resolved)
                continue
            candidate = _child(resolved, part)
            node = self.nodes.get(candidate)
            is_last = not pending
            if node is None:
                if strict and not is_last:
                    raise self._error(path, op, errno.ENOENT)
                resolved = candidate
                continue
            if node.kind is EntryKind.SYMLINK and (follow or not is_last):
                hops += 1
                if hops > _MAX_LINKS:
                    if strict:
                        raise self._error(path, op, errno.ELOOP)
                    # os.path.realpath gives up on a loop and keeps the rest as it is.
                    return posixpath.join(candidate, *pending)
                target = node.target
                pending = [p for p in target.split("/") if p] + pending
                if target.startswith("/"):
                    resolved = "/"
                continue
            if node.kind is not EntryKind.DIRECTORY and not is_last:
                if strict:
                    raise self._error(path, op, errno.ENOTDIR)
                resolved = candidate
                continue
            resolved = candidate
        return resolved

    def _record(self, op: str, path: str) -> str:
        """Record the call, apply an injected failure, and return the absolute path. A path
        with a NUL byte is refused as the real adapter refuses it (predicates answer False)."""
        apath = self._abs(path)
        self.ops.append((op, apath))
        if "\0" in apath and op not in _PREDICATES:
            raise FileSystemError(apath, op, NUL_IN_PATH, errno.EINVAL)
        for failure in self.failures:
            if failure.op == op and failure.path == apath and failure.times != 0:
                if failure.times is not None:
                    failure.times -= 1
                raise FileSystemError(apath, op, failure.text, failure.errno)
        return apath

    def _node(self, path: str, op: str, follow: bool) -> tuple[str, Node]:
        physical = self._resolve(path, follow=follow, op=op)
        node = self.nodes.get(physical)
        if node is None:
            raise self._error(path, op, errno.ENOENT)
        return physical, node

    def _lookup(self, path: str, follow: bool) -> Node | None:
        if "\0" in path:
            return None
        try:
            return self.nodes.get(self._resolve(path, follow=follow))
        except FileSystemError:
            return None

    # -- FileSystem ------------------------------------------------------------------------

    def hold_lock(self, path: str, holder: str, shared: bool = False) -> FakeHeldLock | str:
        """As the real one: the file is made (never through a link) and holds the exclusive
        holder's text; a second taker gets that text until the first releases. Shared holders
        write nothing and keep out only an exclusive taker."""
        apath = self._record("hold_lock", path)
        if apath in self.locks:
            return self.locks[apath]
        readers = self.shared_locks.get(apath, 0)
        if readers and not shared:
            return SHARED_HOLDERS
        found = self.nodes.get(apath)
        if found is not None and found.kind is not EntryKind.FILE:
            raise self._error(
                apath, "hold_lock", errno.ELOOP if found.kind is EntryKind.SYMLINK else errno.EISDIR
            )
        if apath not in self.nodes and posixpath.dirname(apath) not in self.nodes:
            raise self._error(apath, "hold_lock", errno.ENOENT)
        if shared:
            self.write(apath, "", 0o600)
            self.shared_locks[apath] = readers + 1
            return FakeHeldLock(self, apath, shared=True)
        self.write(apath, holder, 0o600)
        self.locks[apath] = holder
        return FakeHeldLock(self, apath)

    def read_bytes(self, path: str) -> bytes:
        apath = self._record("read_bytes", path)
        _, node = self._node(apath, "read_bytes", follow=True)
        if node.kind is EntryKind.DIRECTORY:
            raise self._error(apath, "read_bytes", errno.EISDIR)
        return node.data

    def read_regular(self, path: str, max_bytes: int) -> bytes:
        apath = self._record("read_regular", path)
        _, node = self._node(apath, "read_regular", follow=False)
        if node.kind is not EntryKind.FILE:
            raise self._error(
                apath,
                "read_regular",
                errno.ELOOP if node.kind is EntryKind.SYMLINK else errno.EINVAL,
            )
        if len(node.data) > max_bytes:
            raise FileSystemError(apath, "read_regular", f"more than {max_bytes} bytes")
        return node.data

    def read_text(self, path: str) -> str:
        data = self.read_bytes(path)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FileSystemError(path, "read_text", f"not UTF-8: {exc}") from exc

    def write_atomic(
        self, path: str, data: bytes | str, mode: int = 0o644, *, durable: bool = False
    ) -> None:
        apath = self._record("write_atomic", path)
        parent = self._resolve(posixpath.dirname(apath), follow=True, op="write_atomic")
        parent_node = self.nodes.get(parent)
        if parent_node is None:
            raise self._error(apath, "write_atomic", errno.ENOENT)
        if parent_node.kind is not EntryKind.DIRECTORY:
            raise self._error(apath, "write_atomic", errno.ENOTDIR)
        final = posixpath.join(parent, posixpath.basename(apath))
        existing = self.nodes.get(final)
        if existing is not None and existing.kind is EntryKind.DIRECTORY:
            raise self._error(apath, "write_atomic", errno.EISDIR)
        payload = data.encode("utf-8") if isinstance(data, str) else data
        # Replacing the name, as rename(2) does: a link at `path` is replaced, not followed.
        self.nodes[final] = self._new(EntryKind.FILE, mode & 0o7777, payload)
        if durable:
            self.durable.append(final)

    def append(
        self, path: str, data: bytes | str, mode: int = 0o600, *, durable: bool = False
    ) -> None:
        apath = self._record("append", path)
        parent = self._resolve(posixpath.dirname(apath), follow=True, op="append")
        parent_node = self.nodes.get(parent)
        if parent_node is None:
            raise self._error(apath, "append", errno.ENOENT)
        if parent_node.kind is not EntryKind.DIRECTORY:
            raise self._error(apath, "append", errno.ENOTDIR)
        final = posixpath.join(parent, posixpath.basename(apath))
        existing = self.nodes.get(final)
        payload = data.encode("utf-8") if isinstance(data, str) else data
        if existing is None:
            self.nodes[final] = self._new(EntryKind.FILE, mode & 0o7777, payload)
        elif existing.kind is EntryKind.SYMLINK:
            raise self._error(apath, "append", errno.ELOOP)
        elif existing.kind is not EntryKind.FILE:
            raise self._error(apath, "append", errno.EINVAL)
        else:
            existing.data += payload
        if durable:
            self.durable.append(final)

    def sync_directory(self, path: str) -> None:
        apath = self._record("sync_directory", path)
        physical, node = self._node(apath, "sync_directory", follow=True)
        if node.kind is not EntryKind.DIRECTORY:
            raise self._error(apath, "sync_directory", errno.ENOTDIR)
        self.synced.append(physical)

    def exists(self, path: str) -> bool:
        self._record("exists", path)
        return self._lookup(path, follow=True) is not None

    def lexists(self, path: str) -> bool:
        self._record("lexists", path)
        return self._lookup(path, follow=False) is not None

    def is_dir(self, path: str) -> bool:
        self._record("is_dir", path)
        node = self._lookup(path, follow=True)
        return node is not None and node.kind is EntryKind.DIRECTORY

    def is_file(self, path: str) -> bool:
        self._record("is_file", path)
        node = self._lookup(path, follow=True)
        return node is not None and node.kind is EntryKind.FILE

    def is_symlink(self, path: str) -> bool:
        self._record("is_symlink", path)
        node = self._lookup(path, follow=False)
        return node is not None and node.kind is EntryKind.SYMLINK

    def realpath(self, path: str) -> str:
        apath = self._record("realpath", path)
        return self._resolve(apath, follow=True, strict=False)

    def listdir(self, path: str) -> list[DirEntry]:
        apath = self._record("listdir", path)
        physical, node = self._node(apath, "listdir", follow=True)
        if node.kind is not EntryKind.DIRECTORY:
            raise self._error(apath, "listdir", errno.ENOTDIR)
        prefix = physical.rstrip("/") + "/"
        entries = [
            DirEntry(name=p[len(prefix) :], kind=n.kind)
            for p, n in self.nodes.items()
            if p.startswith(prefix) and "/" not in p[len(prefix) :] and p != physical
        ]
        return sorted(entries, key=lambda e: e.name)

    def subdirectories(self, path: str, wanted: frozenset[str]) -> Subdirs:
        return subdirs_of(self.listdir)(path, wanted)

    def makedirs(self, path: str, mode: int = 0o755) -> None:
        apath = self._record("makedirs", path)
        try:
            self.mkdir(apath, mode)
        except FileSystemError as exc:
            raise FileSystemError(apath, "makedirs", exc.os_error_text, exc.errno) from None

    def remove(self, path: str) -> None:
        apath = self._record("remove", path)
        physical, node = self._node(apath, "remove", follow=False)
        if node.kind is EntryKind.DIRECTORY:
            raise self._error(apath, "remove", errno.EISDIR)
        del self.nodes[physical]

    def rmtree(self, path: str) -> None:
        apath = self._record("rmtree", path)
        physical, node = self._node(apath, "rmtree", follow=False)
        if node.kind is EntryKind.SYMLINK:
            del self.nodes[physical]
            return
        if node.kind is not EntryKind.DIRECTORY:
            raise self._error(apath, "rmtree", errno.ENOTDIR)
        prefix = physical.rstrip("/") + "/"
        for p in [p for p in self.nodes if p == physical or p.startswith(prefix)]:
            del self.nodes[p]

    def open_up(self, root: str) -> list[FileSystemError]:
        try:
            apath = self._record("open_up", root)
            physical, node = self._node(apath, "open_up", follow=False)
        except FileSystemError as error:
            return [error]
        if node.kind is not EntryKind.DIRECTORY:
            return [self._error(apath, "open_up", errno.ENOTDIR)]
        prefix = physical.rstrip("/") + "/"
        for path in [physical, *(p for p in self.nodes if p.startswith(prefix))]:
            entry = self.nodes[path]
            if entry.kind is EntryKind.DIRECTORY:  # a link is never followed, nor changed
                entry.mode |= 0o700
        return []

    def archive(self, source: str, archive: str, max_bytes: int) -> ArchiveOutcome:
        apath = self._record("archive", source)
        physical, node = self._node(apath, "archive", follow=False)
        target = self._abs(archive)
        if self._lookup(target, follow=False) is not None:
            raise self._error(target, "archive", errno.EEXIST)
        self._node(posixpath.dirname(target), "archive", follow=True)
        name = posixpath.basename(physical.rstrip("/"))
        buffer = io.BytesIO()
        used, left_out, left_bytes = ARCHIVE_END_BYTES, 0, 0
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            # Depth first, each directory's entries in name order, as tarfile's own add walks.
            stack = [(physical, node)]
            while stack:
                path, entry = stack.pop()
                info = tarfile.TarInfo(name + path[len(physical) :])
                info.mode = entry.mode
                size = len(entry.data) if entry.kind is EntryKind.FILE else 0
                link = entry.target if entry.kind is EntryKind.SYMLINK else ""
                cost = tar_member_cost(info.name, size, link)
                if used + cost > max_bytes:
                    left_out, left_bytes = left_out + 1, left_bytes + size
                    continue  # a directory with everything below it
                used += cost
                if entry.kind is EntryKind.DIRECTORY:
                    info.type = tarfile.DIRTYPE
                    tar.addfile(info)
                    prefix = path.rstrip("/") + "/"
                    children = sorted(
                        p
                        for p in self.nodes
                        if p.startswith(prefix) and "/" not in p[len(prefix) :]
                    )
                    stack.extend((p, self.nodes[p]) for p in reversed(children))
                elif entry.kind is EntryKind.SYMLINK:
                    info.type, info.linkname = tarfile.SYMTYPE, link
                    tar.addfile(info)
                elif entry.kind is EntryKind.FILE:
                    info.size = size
                    tar.addfile(info, io.BytesIO(entry.data))
                else:
                    info.type = tarfile.FIFOTYPE
                    tar.addfile(info)
        self.write(target, buffer.getvalue(), 0o600)
        return ArchiveOutcome(entries_left_out=left_out, bytes_left_out=left_bytes)

    def chmod(self, path: str, mode: int) -> None:
        apath = self._record("chmod", path)
        _, node = self._node(apath, "chmod", follow=True)
        node.mode = mode & 0o7777

    def stat(self, path: str) -> FileStat:
        apath = self._record("stat", path)
        _, node = self._node(apath, "stat", follow=False)
        size = (
            len(node.target.encode("utf-8", "surrogateescape"))
            if (node.kind is EntryKind.SYMLINK)
            else len(node.data)
        )
        if node.kind is EntryKind.DIRECTORY:
            size = 0
        return FileStat(kind=node.kind, mode=node.mode, size=size, uid=node.uid, mtime=node.mtime)

    def which(self, program: str, search_path: str) -> str | None:
        self.ops.append(("which", program))
        candidates = (
            [program]
            if "/" in program
            else [posixpath.join(d, program) for d in search_path.split(":") if d]
        )
        for candidate in candidates:
            node = self._lookup(candidate, follow=True) if candidate.startswith("/") else None
            if node is not None and node.kind is EntryKind.FILE and node.mode & 0o111:
                return candidate
        return None

    def file_digest(self, path: str) -> str:
        apath = self._record("file_digest", path)
        _, node = self._node(apath, "file_digest", follow=False)
        if node.kind is EntryKind.SYMLINK:
            content = node.target.encode("utf-8", "surrogateescape")
        elif node.kind is EntryKind.FILE:
            content = node.data
        else:
            raise FileSystemError(
                apath, "file_digest", "not a regular file or symbolic link", errno.EISDIR
            )
        return "sha256:" + hashlib.sha256(content).hexdigest()

    # -- inspection helpers for tests and other fakes (not recorded) -----------------------

    def resolved(self, path: str) -> str:
        """`realpath` without recording it (for other fakes that model a program reading the
        tree)."""
        return self._resolve(self._abs(path), follow=True, strict=False)

    def node_at(self, path: str, follow: bool = False) -> Node | None:
        """The node at `path` (final link followed only when `follow`), unrecorded."""
        return self._lookup(self._abs(path), follow=follow)

    def children(self, path: str) -> dict[str, Node]:
        """The entries of the physical directory `path` by name, unrecorded."""
        physical = self.resolved(path)
        prefix = physical.rstrip("/") + "/"
        return {
            p[len(prefix) :]: n
            for p, n in self.nodes.items()
            if p.startswith(prefix) and "/" not in p[len(prefix) :] and p != physical
        }

    def files_under(self, root: str) -> dict[str, Node]:
        """Every non-directory node below `root` (physical paths), for assertions."""
        prefix = self._abs(root).rstrip("/") + "/"
        return {
            p: n
            for p, n in self.nodes.items()
            if p.startswith(prefix) and n.kind is not EntryKind.DIRECTORY
        }


@dataclass
class FakeHeldLock:
    """A lock the fake holds until `release`."""

    fs: FakeFileSystem
    path: str
    shared: bool = False

    def release(self) -> None:
        if self.shared:
            left = self.fs.shared_locks.get(self.path, 0) - 1
            if left >= 0:
                self.fs.shared_locks[self.path] = left
            self.shared = False  # released twice: nothing more happens
            self.path = ""
            return
        if self.fs.locks.pop(self.path, None) is not None:
            self.fs.nodes.pop(self.path, None)  # as the real one: nothing stays behind
