"""A tree copied for the checks (adapters/sandboxes/check_folders.py makes the folder it goes in):
a walk that never follows a link, filling the copy as the grant's view says (`Keep`) - directories,
links as links, regular files cloned (FICLONE: copy-on-write where the filesystem shares
extents: btrfs, XFS), else copied in the kernel (copy_file_range), else read and written; their
permission bits kept (a directory's after its content). Entries named `.git` (Git metadata, as
hidden from the worker's Bash) and special files are left out. A file the walk may leave for
later is recorded with its identity and copied only while it is still that file."""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import stat
from collections.abc import Callable
from dataclasses import dataclass

from concorde_workers.domain.isolation.check_sandbox import Keep
from concorde_workers.ports.sandboxes.checks import CheckCopyFailed

__all__ = ["Later", "TreeCopier", "Walk", "everything"]

FICLONE = 0x40049409
_NO_CLONE = {
    errno.EOPNOTSUPP,
    errno.ENOTTY,
    errno.EXDEV,
    errno.EINVAL,
    errno.ENOSYS,
    errno.EBADF,
    errno.EPERM,
}


@dataclass(frozen=True)
class Later:
    """A file `complete` copies: from, to, its identity when the copy was made, and whether
    its content is kept (else only its name, an empty file)."""

    src: str
    dst: str
    identity: tuple[int, ...]
    content: bool


@dataclass(frozen=True)
class Walk:
    """What one copy keeps, what of it may wait, and the list of what waits."""

    keep: Callable[[str], Keep]
    later: Callable[[str], bool] | None
    waiting: list[Later]


def everything(rel: str) -> Keep:
    return Keep.CONTENT


class TreeCopier:
    """Copies a tree's entries into a new folder, file by file, never following a link."""

    def __init__(self) -> None:
        self._clone = True  # until the filesystem says it cannot

    def copy_tree(self, source: str, target: str, rel: str, walk: Walk) -> bool:
        """Copy the folder `source` into `target` as `walk` says; whether anything below it is
        kept (copied now or left for later)."""
        with os.scandir(source) as entries:
            listed = list(entries)
        anything = False
        for entry in listed:
            if entry.name == ".git":
                continue
            src, dst = entry.path, os.path.join(target, entry.name)
            child = f"{rel}/{entry.name}" if rel else entry.name
            info = entry.stat(follow_symlinks=False)
            kept = walk.keep(child)
            if kept is Keep.PRUNED:
                continue
            if stat.S_ISDIR(info.st_mode):
                os.mkdir(dst, 0o700)
                below = self.copy_tree(src, dst, child, walk)
                if kept is Keep.NOTHING and not below:
                    os.rmdir(dst)  # nothing below it is kept
                else:
                    os.chmod(dst, stat.S_IMODE(info.st_mode) | stat.S_IRWXU)
                    anything = True
                continue
            if kept is Keep.NOTHING:
                continue
            if stat.S_ISLNK(info.st_mode):
                os.symlink(os.readlink(src), dst)
            elif not stat.S_ISREG(info.st_mode):
                continue
            elif walk.later is not None and walk.later(child):
                walk.waiting.append(Later(src, dst, _identity(info), kept is Keep.CONTENT))
            else:
                self.copy_file(src, dst, stat.S_IMODE(info.st_mode), kept is Keep.CONTENT)
            anything = True
        return anything

    def copy_later(self, entry: Later) -> None:
        """A file left for later, opened without following a link and copied only when the
        opened file is the one recorded (an identity taken of the descriptor, so a file swapped
        in between the check and the copy is never read)."""
        mode = stat.S_IMODE(entry.identity[-1])
        if not entry.content:  # a name alone: nothing of the file is read
            _same_file(entry, os.lstat(entry.src))
            self.copy_file(entry.src, entry.dst, mode, content=False)
            return
        self._copy_opened(entry.src, entry.dst, mode, lambda opened: _same_file(entry, opened))

    def copy_file(self, src: str, dst: str, mode: int, content: bool = True) -> None:
        if not content:  # the name alone, as the worker sees a names-level file
            os.close(os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode))
            os.chmod(dst, mode)
            return
        self._copy_opened(src, dst, mode, lambda opened: _regular(src, opened))

    def _copy_opened(
        self, src: str, dst: str, mode: int, judge: Callable[[os.stat_result], None]
    ) -> None:
        """Open `src` without following a link or waiting (a FIFO put in its place never
        blocks the host), judge the opened file's own identity, then fill a new `dst` from
        that descriptor: what is copied is what was judged."""
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        source_fd = os.open(src, flags)
        try:
            judge(os.fstat(source_fd))
            target_fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            try:
                self._fill(source_fd, target_fd)
                os.fchmod(target_fd, mode)
            finally:
                os.close(target_fd)
        finally:
            os.close(source_fd)

    def _fill(self, source_fd: int, target_fd: int) -> None:
        if self._clone:
            try:
                fcntl.ioctl(target_fd, FICLONE, source_fd)
                return
            except OSError as error:
                if error.errno not in _NO_CLONE:
                    raise
                self._clone = False
        size = os.fstat(source_fd).st_size
        try:
            while size > 0:
                copied = os.copy_file_range(source_fd, target_fd, size)
                if copied == 0:
                    break
                size -= copied
            return
        except OSError as error:
            if error.errno not in _NO_CLONE:
                raise
        os.lseek(source_fd, 0, os.SEEK_SET)
        os.lseek(target_fd, 0, os.SEEK_SET)
        os.ftruncate(target_fd, 0)
        with (
            os.fdopen(os.dup(source_fd), "rb") as reading,
            os.fdopen(os.dup(target_fd), "wb") as writing,
        ):
            shutil.copyfileobj(reading, writing)


def _same_file(entry: Later, now: os.stat_result) -> None:
    if _identity(now) != entry.identity:
        raise CheckCopyFailed(
            entry.src,
            "it changed after the run started, though no round can write it: the starting "
            "state it held is lost",
        )


def _regular(path: str, opened: os.stat_result) -> None:
    if not stat.S_ISREG(opened.st_mode):
        raise CheckCopyFailed(path, "it is no longer a regular file: it changed during the copy")


def _identity(info: os.stat_result) -> tuple[int, ...]:
    """Device, inode, size, modification and change times, mode (last): a file rewritten,
    replaced or chmodded since differs in one of them."""
    return (
        info.st_dev,
        info.st_ino,
        info.st_size,
        info.st_mtime_ns,
        info.st_ctime_ns,
        info.st_mode,
    )
