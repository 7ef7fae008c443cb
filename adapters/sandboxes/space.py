"""A run's writable space for real (issue 30 §2; domain/isolation/runtime_space.py): the real
`RuntimeSpaces`, and the filesystem that reaches the spaces the host holds.

`KeeperSpaces.open` starts the keeper through the one process runner (behind the lifeline's
guard), reads its ready line, opens its user and mount namespaces and its root
(`/proc/<pid>/ns/user`, `/proc/<pid>/ns/mnt`, `/proc/<pid>/root`, close-on-exec) while it waits,
then ends it: from then on those descriptors alone hold the space. It checks that the space is
there (the runtime directory's work/ is another filesystem in it than on the host's disk, of the
size asked) and registers the view with `SpaceViews`, which `SpacedFileSystem` consults on every
path: a path in a registered space is reached below the root it holds open
(`/proc/self/fd/<root>` + the path), any other goes to the inner filesystem as given. A
`FileSystemError` names the path as the caller gave it. `close` unregisters the view and closes
the descriptors; the kernel frees the space with the last of them (a round's namespace made from
it holds it too, until the round's processes are gone).
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import threading
from collections.abc import Callable
from typing import TypeVar

from concorde_workers.domain.ground.layout import RuntimeLayout
from concorde_workers.domain.ground.paths import DirEntry, Subdirs
from concorde_workers.domain.isolation.runtime_space import (
    SPACES,
    SpaceTools,
    in_space,
    join_argv,
    ready_pid,
    space_argv,
    view,
)
from concorde_workers.ports.machine.filesystem import (
    ArchiveOutcome,
    FileStat,
    FileSystem,
    FileSystemError,
    HeldLock,
)
from concorde_workers.ports.processes.process import ProcessRunner, ProcessStartFailed

__all__ = ["VIEWS", "KeeperSpace", "KeeperSpaces", "SpaceViews", "SpacedFileSystem"]

SETUP_SECONDS = 30.0
"""How long the keeper may take to make the space (a few mounts: milliseconds)."""

_MAX_LINKS = 40  # as the kernel's own limit on links followed in one lookup

T = TypeVar("T")


class SpaceViews:
    """The spaces this process holds: runtime directory -> the root it reaches them below."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._roots: dict[str, str] = {}

    def attach(self, runtime_root: str, view_root: str) -> None:
        with self._lock:
            self._roots[posixpath.normpath(runtime_root)] = view_root

    def detach(self, runtime_root: str) -> None:
        with self._lock:
            self._roots.pop(posixpath.normpath(runtime_root), None)

    def at(self, path: str) -> str:
        """Where the host reaches `path`: below a space's view when it lies in one."""
        if not path.startswith("/"):
            return path
        normal = posixpath.normpath(path)
        with self._lock:
            roots = list(self._roots.items())
        for root, seen in roots:
            if in_space(root, normal):
                return view(seen, normal)
        return path


VIEWS = SpaceViews()
"""This process's spaces: every `SpacedFileSystem` and `KeeperSpaces` shares them by default,
as the descriptors that hold the spaces are the process's."""


class KeeperSpace:
    """One run's space, held by this process's descriptors."""

    def __init__(
        self,
        views: SpaceViews,
        runtime: RuntimeLayout,
        tools: SpaceTools,
        fds: tuple[int, int, int],
    ) -> None:
        self._views = views
        self._runtime = runtime
        self._tools = tools
        self._fds: tuple[int, int, int] | None = fds  # user, mount, root

    def join(self) -> tuple[str, ...]:
        if self._fds is None:
            raise RuntimeError("the run's space is closed")
        user, mount, _ = self._fds
        return join_argv(self._tools, os.getpid(), user, mount, self._runtime.work)

    def used(self) -> dict[str, int]:
        if self._fds is None:
            return {}
        held: dict[str, int] = {}
        for name, folders in SPACES.items():
            try:
                st = os.statvfs(view(_fd_path(self._fds[2]), self._runtime.at(folders[0])))
            except OSError:
                continue
            held[name] = (st.f_blocks - st.f_bfree) * st.f_frsize
        return held

    def close(self) -> None:
        fds, self._fds = self._fds, None
        if fds is None:
            return
        self._views.detach(self._runtime.root)
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)


class KeeperSpaces:
    """The real `RuntimeSpaces`: a keeper in namespaces of its own makes each space."""

    def __init__(self, processes: ProcessRunner, views: SpaceViews = VIEWS) -> None:
        self._processes = processes
        self._views = views

    def open(self, runtime: RuntimeLayout, size_bytes: int, tools: SpaceTools) -> KeeperSpace | str:
        argv = space_argv(tools, runtime, size_bytes)
        try:
            handle = self._processes.start(argv, {}, "/", None, timeout_seconds=SETUP_SECONDS)
        except ProcessStartFailed as failed:
            return f"the keeper could not be started: {failed.os_error_text}"
        fds: list[int] = []
        try:
            pid = ready_pid(next(iter(handle.lines()), ""))
            if pid != handle.pid:
                handle.kill_group()
                handle.wait(None)
                said = handle.stderr_tail(2000).decode("utf-8", "replace").strip()
                return f"the keeper did not make it ({said or 'it said nothing'})"
            for name, flags in (
                ("ns/user", os.O_RDONLY),
                ("ns/mnt", os.O_RDONLY),
                ("root", os.O_PATH | os.O_DIRECTORY),
            ):
                fds.append(os.open(f"/proc/{pid}/{name}", flags | os.O_CLOEXEC))
        except OSError as error:
            for fd in fds:
                os.close(fd)
            said = handle.stderr_tail(2000).decode("utf-8", "replace").strip()
            return (
                f"the keeper's namespaces could not be held ({error.filename}: "
                f"{error.strerror or error}; the keeper said {said or 'nothing'}, "
                f"exit {handle.wait(0)})"
            )
        finally:
            handle.kill_group()  # its namespaces live on in the descriptors
            handle.wait(None)
        user, mount, root = fds
        problem = _not_there(runtime, _fd_path(root), size_bytes)
        if problem is not None:
            for fd in fds:
                os.close(fd)
            return problem
        self._views.attach(runtime.root, _fd_path(root))
        return KeeperSpace(self._views, runtime, tools, (user, mount, root))


def _fd_path(fd: int) -> str:
    return f"/proc/self/fd/{fd}"


def _not_there(runtime: RuntimeLayout, root: str, size_bytes: int) -> str | None:
    """Why the spaces are not what was asked (None: they are): each space's folders on one
    filesystem of its own, neither the disk's nor the other's, of the size asked."""
    try:
        seen = {os.stat(runtime.work).st_dev}
        for name, folders in SPACES.items():
            devices = {os.stat(view(root, runtime.at(d))).st_dev for d in folders}
            total = os.statvfs(view(root, runtime.at(folders[0])))
            if len(devices) != 1 or devices & seen:
                return f"the {name}'s space is not one filesystem of its own"
            if total.f_blocks * total.f_frsize != size_bytes:
                return (
                    f"the {name}'s space holds {total.f_blocks * total.f_frsize} bytes, "
                    f"not {size_bytes}"
                )
            seen |= devices
    except OSError as error:
        return f"the space could not be looked at: {error.strerror or error}"
    return None


class _Through:
    """Reaches a path through the space that holds it: below its view when it lies in a space
    this process holds, else as given to `inner`; an error names the path as the caller gave
    it."""

    def __init__(self, inner: FileSystem, views: SpaceViews = VIEWS) -> None:
        self._inner = inner
        self._views = views

    def _do(self, path: str, action: Callable[[str], T]) -> T:
        seen = self._views.at(path)
        if seen == path:
            return action(path)
        try:
            return action(seen)
        except FileSystemError as error:
            raise FileSystemError(path, error.op, error.os_error_text, error.errno) from error


class _SpacedReading(_Through):
    """Reads through the spaces (ports.machine.filesystem.FileReading)."""

    def read_bytes(self, path: str) -> bytes:
        return self._do(path, self._inner.read_bytes)

    def read_regular(self, path: str, max_bytes: int) -> bytes:
        return self._do(path, lambda seen: self._inner.read_regular(seen, max_bytes))

    def read_text(self, path: str) -> str:
        return self._do(path, self._inner.read_text)

    def file_digest(self, path: str) -> str:
        return self._do(path, self._inner.file_digest)


class _SpacedFacts(_Through):
    """Says what a path is through the spaces (ports.machine.filesystem.PathFacts)."""

    def stat(self, path: str) -> FileStat:
        return self._do(path, self._inner.stat)

    def exists(self, path: str) -> bool:
        return self._do(path, self._inner.exists)

    def lexists(self, path: str) -> bool:
        return self._do(path, self._inner.lexists)

    def is_dir(self, path: str) -> bool:
        return self._do(path, self._inner.is_dir)

    def is_file(self, path: str) -> bool:
        return self._do(path, self._inner.is_file)

    def is_symlink(self, path: str) -> bool:
        return self._do(path, self._inner.is_symlink)

    def realpath(self, path: str) -> str:
        """As the inner's; a path in a space is resolved step by step, each link read where it
        lies (a view's root is a link of /proc that no resolution may step through)."""
        if self._views.at(path) == path:
            return self._inner.realpath(path)
        done, rest, followed = "/", [p for p in path.split("/") if p], 0
        while rest:
            name = rest.pop(0)
            if name == ".":
                continue
            if name == "..":
                done = posixpath.dirname(done)
                continue
            step = posixpath.join(done, name)
            try:
                target = os.readlink(self._views.at(step))
            except OSError:  # no link (or nothing there: kept as given, as os.path.realpath)
                done = step
                continue
            followed += 1
            if followed > _MAX_LINKS:
                return posixpath.join(step, *rest)
            rest = [p for p in target.split("/") if p] + rest
            done = "/" if target.startswith("/") else done
        return done

    def which(self, program: str, search_path: str) -> str | None:
        return self._inner.which(program, search_path)


class _SpacedListing(_Through):
    """Lists a directory through the spaces (ports.machine.filesystem.DirectoryListing)."""

    def listdir(self, path: str) -> list[DirEntry]:
        return self._do(path, self._inner.listdir)

    def subdirectories(self, path: str, wanted: frozenset[str]) -> Subdirs:
        return self._do(path, lambda p: self._inner.subdirectories(p, wanted))


class _SpacedWriting(_Through):
    """Writes through the spaces (ports.machine.filesystem.FileWriting)."""

    def write_atomic(
        self, path: str, data: bytes | str, mode: int = 0o644, *, durable: bool = False
    ) -> None:
        self._do(path, lambda p: self._inner.write_atomic(p, data, mode, durable=durable))

    def append(
        self, path: str, data: bytes | str, mode: int = 0o600, *, durable: bool = False
    ) -> None:
        self._do(path, lambda p: self._inner.append(p, data, mode, durable=durable))

    def sync_directory(self, path: str) -> None:
        self._do(path, self._inner.sync_directory)

    def makedirs(self, path: str, mode: int = 0o755) -> None:
        self._do(path, lambda p: self._inner.makedirs(p, mode))

    def chmod(self, path: str, mode: int) -> None:
        self._do(path, lambda p: self._inner.chmod(p, mode))

    def archive(self, source: str, archive: str, max_bytes: int) -> ArchiveOutcome:
        return self._do(source, lambda s: self._inner.archive(s, archive, max_bytes))


class _SpacedRemoving(_Through):
    """Removes through the spaces (ports.machine.filesystem.Removing)."""

    def remove(self, path: str) -> None:
        self._do(path, self._inner.remove)

    def rmtree(self, path: str) -> None:
        self._do(path, self._inner.rmtree)

    def open_up(self, root: str) -> list[FileSystemError]:
        seen = self._views.at(root)
        errors = self._inner.open_up(seen)
        if seen == root:
            return errors
        return [
            FileSystemError(root + e.path[len(seen) :], e.op, e.os_error_text, e.errno)
            if e.path.startswith(seen)
            else e
            for e in errors
        ]


class _SpacedLocking(_Through):
    """Locks through the spaces (ports.machine.filesystem.Locking)."""

    def hold_lock(self, path: str, holder: str, shared: bool = False) -> HeldLock | str:
        return self._do(path, lambda p: self._inner.hold_lock(p, holder, shared))


class SpacedFileSystem(
    _SpacedReading, _SpacedFacts, _SpacedListing, _SpacedWriting, _SpacedRemoving, _SpacedLocking
):
    """`FileSystem` over `inner`, a path in a space this process holds reached in it: one class
    per capability of the port, each reaching its paths through the spaces (`_Through`)."""
