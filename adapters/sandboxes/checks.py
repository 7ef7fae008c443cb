"""SandboxedCheckRunner: the real CheckRunner (ports/sandboxes/checks.py).

Runs: each check over a throwaway view of the tree it is given, in the check sandbox
(domain/isolation/check_sandbox.py), through the one process runner, which kills the whole process
group
when the check's timeout passes (and bwrap's PID namespace dies with its launcher):

* where the kernel lets a user namespace mount an overlay (asked once, `layer_problem`), over a
  copy-on-write layer (domain/isolation/check_layer.py): the tree itself as the lower layer, a tmpfs
  of
  the check's own as the upper, the run's mount plan as what it sees; its set-up does not grow
  with the tree, and nothing of it outlives the check's namespaces but an empty folder;
* elsewhere over a copy made for it, said in the check's node (`view`) and by `plan`.

Copies (the run's starting state; every check where no layer can be made): a new folder
`concorde-check-<random>` in the runtime parent (hidden from every worker by its confinement)
holding the host's owner record `owner.json`, written first, and the copy `tree/`
(domain/isolation/check_copies.py: a sweep removes the folder once its host is dead; a layer's
folder is
the same, with its mount point `layer/`), filled by a walk that never follows a link:
directories, links as links, regular files cloned (FICLONE: copy-on-write where the filesystem
shares extents: btrfs, XFS), else copied in the kernel (copy_file_range), else read and written;
their permission bits kept (a directory's after its content). Entries named `.git` (Git
metadata, as hidden from the worker's Bash) and special files are left out.

The sandbox's shell first prints a marker line on stdout and then sends stdout to stderr: a run
without the marker never reached the check (the layer or bwrap could not build the sandbox),
and the log is the runner's bounded tail of both streams in the order written.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import shutil
import stat
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from concorde_workers.adapters.processes.cgroups import close_check_group, open_check_group
from concorde_workers.domain.isolation.check_copies import (
    COPY_OWNER_FILE,
    COPY_PREFIX,
    COPY_TREE,
    CopyOwner,
    copy_owner_text,
    is_copy_name,
)
from concorde_workers.domain.isolation.check_layer import (
    EMPTY_FILE,
    LAYER_FOLDER,
    LayerTools,
    layer_prefix,
    view_args,
    view_source,
)
from concorde_workers.domain.isolation.check_sandbox import (
    ALWAYS_HIDDEN,
    CheckPlace,
    Keep,
    ProgramInView,
    check_argv,
    check_environment,
    program_in_view,
)
from concorde_workers.domain.run.checks import Check, CheckRun, CheckStatus, finished
from concorde_workers.ports.machine.filesystem import FileSystem, FileSystemError
from concorde_workers.ports.processes.liveness import ProcessTable
from concorde_workers.ports.processes.process import ProcessRunner, ProcessStartFailed
from concorde_workers.ports.processes.resources import ResourceGroups
from concorde_workers.ports.sandboxes.checks import CheckCopyFailed, OnCancel

FICLONE = 0x40049409
LOG_KEEP_BYTES = 80_000
STARTED = "concorde-check-started"
CANCELLED = "killed: the run was cancelled"
VIEW_LAYER = "layer"
VIEW_COPY = "copy"
PROBE_SECONDS = 30
NO_BWRAP = (
    "bubblewrap (bwrap) is not installed, and a check never runs outside its sandbox; "
    "install it (Debian: apt-get install bubblewrap)"
)
_NO_CLONE = {
    errno.EOPNOTSUPP,
    errno.ENOTTY,
    errno.EXDEV,
    errno.EINVAL,
    errno.ENOSYS,
    errno.EBADF,
    errno.EPERM,
}


class SandboxedCheckRunner:
    """Checks over throwaway copies, in a network-less bubblewrap sandbox."""

    def __init__(
        self,
        processes: ProcessRunner,
        fs: FileSystem,
        bwrap: str | None,
        host_env: Mapping[str, str],
        host_hidden: Sequence[str],
        copies_root: str,
        table: ProcessTable | None = None,
        layer_tools: LayerTools | None = None,
        groups: ResourceGroups | None = None,
        control_groups: Sequence[str] = (),
    ) -> None:
        self._groups = groups  # each check in a control group of its own (issue 20)
        self._control_groups = tuple(control_groups)  # shown empty to a check (issue 30 §2)
        self._processes = processes
        self._table = table
        self._fs = fs
        self._bwrap = bwrap
        self._env = dict(host_env)
        self._hidden = tuple(host_hidden)
        self._root = copies_root
        self._clone = True  # until the filesystem says it cannot
        self._layer_tools = layer_tools
        self._layer_answer: tuple[str | None] | None = None  # the kernel asked once
        self._later: dict[str, list[_Later]] = {}  # per copy, what `complete` copies

    def copy(
        self,
        source: str,
        keep: Callable[[str], Keep] | None = None,
        later: Callable[[str], bool] | None = None,
    ) -> str:
        folder = self._new_folder()
        target = os.path.join(folder, COPY_TREE)
        waiting: list[_Later] = []
        try:
            os.mkdir(target, 0o700)
            self._copy_dir(source, target, "", _Walk(keep or _everything, later, waiting))
            os.chmod(target, stat.S_IMODE(os.stat(source).st_mode) | stat.S_IRWXU)
        except OSError as error:
            self._remove_quietly(target)
            raise CheckCopyFailed(error.filename or source, error.strerror or str(error)) from error
        if waiting:
            self._later[target] = waiting
        return target

    def complete(self, tree: str) -> None:
        """Each file left for later, opened without following a link and copied only when the
        opened file is the one recorded (an identity taken of the descriptor, so a file swapped
        in between the check and the copy is never read)."""
        waiting = self._later.pop(tree, [])
        for at, entry in enumerate(waiting):
            try:
                self._copy_later(entry)
            except OSError as error:
                self._later[tree] = waiting[at:]
                raise CheckCopyFailed(entry.src, error.strerror or str(error)) from error
            except CheckCopyFailed:
                self._later[tree] = waiting[at:]
                raise

    def _copy_later(self, entry: _Later) -> None:
        mode = stat.S_IMODE(entry.identity[-1])
        if not entry.content:  # a name alone: nothing of the file is read
            _same_file(entry, os.lstat(entry.src))
            self._copy_file(entry.src, entry.dst, mode, content=False)
            return
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        source_fd = os.open(entry.src, flags)
        try:
            _same_file(entry, os.fstat(source_fd))
            target_fd = os.open(
                entry.dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600
            )
            try:
                self._fill(source_fd, target_fd)
                os.fchmod(target_fd, mode)
            finally:
                os.close(target_fd)
        finally:
            os.close(source_fd)

    def _layer_folder(self) -> str:
        """A new folder for one check's layer: the owner record, the mount point `layer/` and
        the empty file (raises `CheckCopyFailed`, leaving nothing)."""
        folder = self._new_folder()
        try:
            os.mkdir(os.path.join(folder, LAYER_FOLDER), 0o700)
            empty = os.path.join(folder, EMPTY_FILE)
            os.close(os.open(empty, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o444))
        except OSError as error:
            self._remove_quietly(folder)
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
            self._remove_quietly(folder)
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

    def _copy_dir(self, source: str, target: str, rel: str, walk: _Walk) -> bool:
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
                below = self._copy_dir(src, dst, child, walk)
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
                walk.waiting.append(_Later(src, dst, _identity(info), kept is Keep.CONTENT))
            else:
                self._copy_file(src, dst, stat.S_IMODE(info.st_mode), kept is Keep.CONTENT)
            anything = True
        return anything

    def _copy_file(self, src: str, dst: str, mode: int, content: bool = True) -> None:
        if not content:  # the name alone, as the worker sees a names-level file
            os.close(os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode))
            os.chmod(dst, mode)
            return
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
        source_fd = os.open(src, flags)
        try:
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

    def run(
        self, check: Check, tree: str, place: CheckPlace, on_cancel: OnCancel | None = None
    ) -> CheckRun:
        if not self._bwrap:
            return CheckRun(status=CheckStatus.NOT_STARTED, problem=NO_BWRAP)
        if self.layer_problem() is None:
            return self._run_layered(check, tree, place, on_cancel)
        return self._run_over_copy(check, tree, place, on_cancel)

    def _run_layered(
        self, check: Check, tree: str, place: CheckPlace, on_cancel: OnCancel | None
    ) -> CheckRun:
        """Over the tree itself, through a throwaway layer (domain/isolation/check_layer.py), in a
        folder
        of its own that also hides the layer's mounts from the check."""
        assert self._bwrap is not None and self._layer_tools is not None
        try:
            folder = self._layer_folder()
        except CheckCopyFailed as error:
            return CheckRun(
                status=CheckStatus.NOT_STARTED,
                view=VIEW_LAYER,
                problem=f"the check's layer could not be made: {error}",
            )
        empty = os.path.join(folder, EMPTY_FILE)
        try:
            seen = place.model_copy(update={"hidden": (*place.hidden, folder)})
            layer = os.path.join(folder, LAYER_FOLDER)
            shown = view_args(place.worktree, place.view, view_source(layer), empty)
            argv = [
                *layer_prefix(self._layer_tools, layer, tree),
                *check_argv(
                    self._bwrap,
                    seen,
                    shown,
                    _script(check),
                    self._hidden_forms(),
                    _kind,
                    self._control_groups,
                ),
            ]
            return self._execute(argv, check, place, on_cancel, VIEW_LAYER)
        finally:
            self._remove_quietly(folder)

    def _run_over_copy(
        self, check: Check, tree: str, place: CheckPlace, on_cancel: OnCancel | None
    ) -> CheckRun:
        """Where no layer can be made: over a copy of what the grant shows (of the whole tree
        when it is a copy of that already), made for this check and removed after it."""
        assert self._bwrap is not None
        try:
            copy = self.copy(tree, place.keep if place.view is not None else None)
        except CheckCopyFailed as failed:
            return CheckRun(
                status=CheckStatus.NOT_STARTED,
                view=VIEW_COPY,
                problem=f"the tree could not be copied for the check: {failed}",
            )
        try:
            argv = check_argv(
                self._bwrap,
                place,
                ["--bind", copy, place.worktree],
                _script(check),
                self._hidden_forms(),
                _kind,
                self._control_groups,
            )
            return self._execute(argv, check, place, on_cancel, VIEW_COPY)
        finally:
            self._remove_quietly(copy)

    def _execute(
        self,
        argv: list[str],
        check: Check,
        place: CheckPlace,
        on_cancel: OnCancel | None,
        view: str,
    ) -> CheckRun:
        env = check_environment(self._env, place.project_interpreter)
        group = open_check_group(self._groups, place.resources)
        if isinstance(group, str):
            return CheckRun(status=CheckStatus.NOT_STARTED, problem=group, view=view)
        started = time.monotonic()
        try:
            handle = self._processes.start(
                argv,
                env,
                self._root,
                None,
                timeout_seconds=check.timeout_seconds,
                prefix=group.prefix() if group else (),
            )
        except ProcessStartFailed as failed:
            close_check_group(group, place.resources)
            return CheckRun(status=CheckStatus.NOT_STARTED, problem=failed.os_error_text, view=view)
        cancelled: list[bool] = []

        def kill() -> None:
            cancelled.append(True)
            handle.kill_group()

        unregister = on_cancel(kill) if on_cancel is not None else None
        try:
            reached = any(line == STARTED for line in handle.lines())
            exit_code = handle.wait(None)
        finally:
            handle.kill_group()
            handle.wait(None)
            if unregister is not None:
                unregister()
            reached_limits = close_check_group(group, place.resources)
        log = handle.stderr_tail(LOG_KEEP_BYTES)
        ended = _Ended(
            exit_code,
            time.monotonic() - started,
            log,
            view,
            bool(cancelled),
            reached_limits,
            reached,
            handle.timed_out,
        )
        return _check_run(ended, check)

    def layer_problem(self) -> str | None:
        """Why no check can run over a copy-on-write layer on this machine (None: they do),
        asked of the kernel once: an overlay in a user namespace of the check's own."""
        if self._layer_answer is None:
            self._layer_answer = (self._probe_layer(),)
        return self._layer_answer[0]

    def _probe_layer(self) -> str | None:
        tools = self._layer_tools
        if tools is None:
            return "unshare, mount or mkdir (util-linux, coreutils) is not on the host's PATH"
        try:
            folder = self._layer_folder()
        except CheckCopyFailed as error:
            return f"no folder for a layer could be made: {error}"
        try:
            lower = os.path.join(folder, "probe")
            os.mkdir(lower, 0o700)
            argv = [
                *layer_prefix(tools, os.path.join(folder, LAYER_FOLDER), lower),
                tools.shell,
                "-c",
                ":",
            ]
            handle = self._processes.start(
                argv, {"PATH": "/nonexistent"}, self._root, None, timeout_seconds=PROBE_SECONDS
            )
            list(handle.lines())
            code = handle.wait(None)
            if code == 0:
                return None
            said = handle.stderr_tail(2000).decode("utf-8", "replace").strip()
            return (
                f"the kernel refused an overlay in a user namespace ({said or code}); "
                "each check runs over a copy instead"
            )
        except (OSError, ProcessStartFailed) as error:
            return f"the layer could not be tried: {error}"
        finally:
            self._remove_quietly(folder)

    def view(self) -> str:
        """What every check runs over on this machine, as `plan` says it."""
        problem = self.layer_problem()
        if problem is None:
            return (
                "over a copy-on-write layer of the worker's own view of the worktree "
                "(an overlay in the check's own namespaces; what it writes is thrown away)"
            )
        return f"over a copy of what the grant lets the worker read ({problem})"

    def _hidden_forms(self) -> list[str]:
        """The host's hidden places, each as given and with its links resolved."""
        return [*self._hidden, *(os.path.realpath(p) for p in self._hidden)]

    def program(self, check: Check, place: CheckPlace) -> ProgramInView:
        if not self._bwrap:
            return ProgramInView(said=NO_BWRAP, unavailable=NO_BWRAP)
        # The places check_argv hides, as it hides them: the host's, as given and real, the
        # ones every check hides, and the run's own.
        hidden = [*ALWAYS_HIDDEN, *self._hidden_forms(), *place.hidden]
        search = check_environment(self._env, place.project_interpreter).get("PATH", "")

        def executable(path: str) -> bool:
            return os.path.isfile(path) and os.access(path, os.X_OK)

        return program_in_view(check.command, place, search, hidden, os.path.realpath, executable)

    def discard(self, tree: str) -> None:
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

    def _remove_quietly(self, tree: str) -> None:
        with contextlib.suppress(CheckCopyFailed):
            self.discard(tree)


@dataclass(frozen=True)
class _Walk:
    """What one `copy` keeps, what of it may wait, and the list of what waits."""

    keep: Callable[[str], Keep]
    later: Callable[[str], bool] | None
    waiting: list[_Later]


@dataclass(frozen=True)
class _Later:
    """A file `complete` copies: from, to, its identity when the copy was made, and whether
    its content is kept (else only its name, an empty file)."""

    src: str
    dst: str
    identity: tuple[int, ...]
    content: bool


def _same_file(entry: _Later, now: os.stat_result) -> None:
    if _identity(now) != entry.identity:
        raise CheckCopyFailed(
            entry.src,
            "it changed after the run started, though no round can write it: the starting "
            "state it held is lost",
        )


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


def _script(check: Check) -> str:
    """The shell text a check's sandbox runs: the marker, then the command, stdout to stderr."""
    return f"printf '%s\\n' {STARTED}\nexec 1>&2\n{check.command}"


def _is_copy_tree(tree: str) -> bool:
    """Whether `tree` is the `tree/` of a copy's folder (`concorde-check-<hex>/tree`)."""
    folder, name = os.path.split(os.path.normpath(tree))
    return name == COPY_TREE and is_copy_name(os.path.basename(folder))


def _everything(rel: str) -> Keep:
    return Keep.CONTENT


def _kind(path: str) -> str | None:
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    if stat.S_ISLNK(mode):
        return "link"
    return "dir" if stat.S_ISDIR(mode) else "file"


@dataclass(frozen=True)
class _Ended:
    """How a check's process ended: its exit, time and log, and what else was seen."""

    exit_code: int | None
    duration: float
    log: bytes
    view: str
    cancelled: bool
    reached_limits: str | None
    started: bool
    timed_out: bool


def _check_run(ended: _Ended, check: Check) -> CheckRun:
    """The check's run from how its process ended: cancelled, at a limit, timed out, a sandbox
    that never started it, or its exit judged (`finished`)."""
    kept = {
        "exit_code": ended.exit_code,
        "duration_seconds": ended.duration,
        "log": ended.log,
        "view": ended.view,
    }
    if ended.cancelled:
        return CheckRun(status=CheckStatus.FAILED, problem=CANCELLED, **kept)
    if ended.reached_limits:
        return CheckRun(status=CheckStatus.LIMIT_REACHED, problem=ended.reached_limits, **kept)
    if ended.timed_out:
        return CheckRun(
            status=CheckStatus.TIMED_OUT,
            **kept,
            problem=f"timed out after {check.timeout_seconds:g} s",
        )
    if not ended.started:
        said = (
            ended.log.decode("utf-8", "replace").strip()[-2000:] or f"exit status {ended.exit_code}"
        )
        return CheckRun(
            status=CheckStatus.NOT_STARTED,
            **kept,
            problem=f"the sandbox could not be built: {said}",
        )
    return finished(ended.exit_code, ended.duration, ended.log).model_copy(
        update={"view": ended.view}
    )
