"""The checks' throwaway folders (issue 13, issue 19 §1, domain/isolation/check_copies.py): each
a new folder `concorde-check-<random>` in the runtime parent (hidden from every worker by its
confinement) holding the host's owner record `owner.json`, written first (a sweep removes the
folder once its host is dead), and then either the copy `tree/` (the run's starting state;
every check where no layer can be made), filled by adapters/sandboxes/check_copy.py, or a layer's
mount point `layer/` and empty file (domain/isolation/check_layer.py). Removing one opens unwritable
folders first and never follows a link (the `FileSystem` port)."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Callable

from concorde_workers.adapters.sandboxes.check_copy import Later, TreeCopier, Walk, everything
from concorde_workers.domain.isolation.check_copies import (
    COPY_OWNER_FILE,
    COPY_PREFIX,
    COPY_TREE,
    CopyOwner,
    copy_owner_text,
    is_copy_name,
)
from concorde_workers.domain.isolation.check_layer import EMPTY_FILE, LAYER_FOLDER
from concorde_workers.domain.isolation.check_sandbox import Keep
from concorde_workers.ports.machine.filesystem import Clearing, FileSystemError
from concorde_workers.ports.processes.liveness import ProcessTable
from concorde_workers.ports.sandboxes.checks import CheckCopyFailed

__all__ = ["CheckFolders"]


class CheckFolders:
    """The folders of one host's checks in the runtime parent `root`: copies of a tree (`copy`,
    `complete`), a layer's folder (`layer_folder`), and their removal (`discard`)."""

    def __init__(self, fs: Clearing, root: str, table: ProcessTable | None = None) -> None:
        self._fs = fs
        self._root = root
        self._table = table
        self._copier = TreeCopier()
        self._later: dict[str, list[Later]] = {}  # per copy, what `complete` copies

    def copy(
        self,
        source: str,
        keep: Callable[[str], Keep] | None = None,
        later: Callable[[str], bool] | None = None,
    ) -> str:
        """The `CheckRunner` port's `copy`: a new folder, its `tree/` the copy."""
        folder = self._new_folder()
        target = os.path.join(folder, COPY_TREE)
        waiting: list[Later] = []
        try:
            os.mkdir(target, 0o700)
            self._copier.copy_tree(source, target, "", Walk(keep or everything, later, waiting))
            os.chmod(target, stat.S_IMODE(os.stat(source).st_mode) | stat.S_IRWXU)
        except OSError as error:
            self.remove_quietly(target)
            raise CheckCopyFailed(error.filename or source, error.strerror or str(error)) from error
        except CheckCopyFailed:
            self.remove_quietly(target)
            raise
        if waiting:
            self._later[target] = waiting
        return target

    def complete(self, tree: str) -> None:
        """Each file left for later, copied only while it is the one recorded
        (`TreeCopier.copy_later`); what is left stays recorded when one fails."""
        waiting = self._later.pop(tree, [])
        for at, entry in enumerate(waiting):
            try:
                self._copier.copy_later(entry)
            except OSError as error:
                self._later[tree] = waiting[at:]
                raise CheckCopyFailed(entry.src, error.strerror or str(error)) from error
            except CheckCopyFailed:
                self._later[tree] = waiting[at:]
                raise

    def layer_folder(self) -> str:
        """A new folder for one check's layer: the owner record, the mount point `layer/` and
        the empty file (raises `CheckCopyFailed`, leaving nothing)."""
        folder = self._new_folder()
        try:
            os.mkdir(os.path.join(folder, LAYER_FOLDER), 0o700)
            empty = os.path.join(folder, EMPTY_FILE)
            os.close(os.open(empty, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o444))
        except OSError as error:
            self.remove_quietly(folder)
            raise CheckCopyFailed(folder, error.strerror or str(error)) from error
        return folder

    def _new_folder(self) -> str:
        """A new folder `concorde-check-<hex>` in the runtime parent, holding the host's owner
        record (raises `CheckCopyFailed`, leaving nothing)."""
        folder = os.path.join(self._root, COPY_PREFIX + secrets.token_hex(6))
        try:
            os.mkdir(folder, 0o700)
        except OSError as error:
            raise CheckCopyFailed(folder, error.strerror or str(error)) from error
        try:
            self._write_owner(folder)
        except OSError as error:
            self.remove_quietly(folder)
            raise CheckCopyFailed(folder, error.strerror or str(error)) from error
        return folder

    def _write_owner(self, folder: str) -> None:
        """The host's owner record, before the copy exists: a sweep removes the folder once its
        host is dead, and never while it lives (domain/isolation/check_copies.py)."""
        if self._table is None:
            return  # a caller without a process table: swept only once old (domain.evidence.sweep)
        text = copy_owner_text(CopyOwner.of(self._table.own())).encode()
        fd = os.open(
            os.path.join(folder, COPY_OWNER_FILE),
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW,
            0o600,
        )
        try:
            os.write(fd, text)
        finally:
            os.close(fd)

    def discard(self, tree: str) -> None:
        """The `CheckRunner` port's `discard`: a copy with its folder, or a layer's folder."""
        self._later.pop(tree, None)
        # The copy's folder (the owner record beside the tree) goes with it.
        folder = os.path.dirname(os.path.normpath(tree)) if _is_copy_tree(tree) else tree
        opened = self._fs.open_up(folder)
        try:
            self._fs.rmtree(folder)
        except FileSystemError as error:
            problems = "; ".join(e.os_error_text for e in opened)
            raise CheckCopyFailed(
                tree, error.os_error_text + (f" ({problems})" if problems else "")
            ) from error
        if self._fs.lexists(folder):
            raise CheckCopyFailed(folder, "it is still there after its removal")

    def remove_quietly(self, tree: str) -> None:
        with contextlib.suppress(CheckCopyFailed):
            self.discard(tree)


def _is_copy_tree(tree: str) -> bool:
    """Whether `tree` is the `tree/` of a copy's folder (`concorde-check-<hex>/tree`)."""
    folder, name = os.path.split(os.path.normpath(tree))
    return name == COPY_TREE and is_copy_name(os.path.basename(folder))
