"""SandboxedCheckRunner: the real CheckRunner (ports/sandboxes/checks.py).

Runs: each check over a throwaway view of the tree it is given, in the check sandbox
(domain/isolation/check_sandbox.py), through the one process runner, which kills the whole
process group when the check's timeout passes (and bwrap's PID namespace dies with its
launcher):

* where the kernel lets a user namespace mount an overlay (asked once, `layer_problem`), over a
  copy-on-write layer (domain/isolation/check_layer.py): the tree itself as the lower layer, a
  tmpfs of the check's own as the upper, the run's mount plan as what it sees; its set-up does
  not grow with the tree, and nothing of it outlives the check's namespaces but an empty folder;
* elsewhere over a copy made for it, said in the check's node (`view`) and by `plan`.

The copies and the layers' folders, each with the host's owner record in the runtime parent,
are adapters/sandboxes/check_folders.py (the copy's walk adapters/sandboxes/check_copy.py); the
script the sandbox runs and the judgement of how its process ended are
adapters/sandboxes/check_outcome.py; this module chooses the view, builds the sandbox's command and
runs it in the check's control group.

The sandbox's shell first prints a marker line on stdout and then sends stdout to stderr: a run
without the marker never reached the check (the layer or bwrap could not build the sandbox),
and the log is the runner's bounded tail of both streams in the order written.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Mapping, Sequence

from concorde_workers.adapters.processes.cgroups import close_check_group, open_check_group
from concorde_workers.adapters.sandboxes.check_folders import CheckFolders
from concorde_workers.adapters.sandboxes.check_outcome import (
    STARTED,
    Ended,
    check_run,
    check_script,
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
from concorde_workers.domain.run.checks import Check, CheckRun, CheckStatus
from concorde_workers.ports.machine.filesystem import Clearing
from concorde_workers.ports.processes.liveness import ProcessTable
from concorde_workers.ports.processes.process import ProcessRunner, ProcessStartFailed
from concorde_workers.ports.processes.resources import ResourceGroups
from concorde_workers.ports.sandboxes.checks import CheckCopyFailed, OnCancel

LOG_KEEP_BYTES = 80_000
VIEW_LAYER = "layer"
VIEW_COPY = "copy"
PROBE_SECONDS = 30
NO_BWRAP = (
    "bubblewrap (bwrap) is not installed, and a check never runs outside its sandbox; "
    "install it (Debian: apt-get install bubblewrap)"
)


class SandboxedCheckRunner:
    """Checks over throwaway copies, in a network-less bubblewrap sandbox."""

    def __init__(
        self,
        processes: ProcessRunner,
        fs: Clearing,
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
        self._bwrap = bwrap
        self._env = dict(host_env)
        self._hidden = tuple(host_hidden)
        self._root = copies_root
        self._folders = CheckFolders(fs, copies_root, table)
        self._layer_tools = layer_tools
        self._layer_answer: tuple[str | None] | None = None  # the kernel asked once

    def copy(
        self,
        source: str,
        keep: Callable[[str], Keep] | None = None,
        later: Callable[[str], bool] | None = None,
    ) -> str:
        return self._folders.copy(source, keep, later)

    def complete(self, tree: str) -> None:
        self._folders.complete(tree)

    def discard(self, tree: str) -> None:
        self._folders.discard(tree)

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
        folder of its own that also hides the layer's mounts from the check."""
        assert self._bwrap is not None and self._layer_tools is not None
        try:
            folder = self._folders.layer_folder()
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
                    check_script(check),
                    self._hidden_forms(),
                    _kind,
                    self._control_groups,
                ),
            ]
            return self._execute(argv, check, place, on_cancel, VIEW_LAYER)
        finally:
            self._folders.remove_quietly(folder)

    def _run_over_copy(
        self, check: Check, tree: str, place: CheckPlace, on_cancel: OnCancel | None
    ) -> CheckRun:
        """Where no layer can be made: over a copy of what the grant shows (of the whole tree
        when it is a copy of that already), made for this check and removed after it."""
        assert self._bwrap is not None
        try:
            copy = self._folders.copy(tree, place.keep if place.view is not None else None)
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
                check_script(check),
                self._hidden_forms(),
                _kind,
                self._control_groups,
            )
            return self._execute(argv, check, place, on_cancel, VIEW_COPY)
        finally:
            self._folders.remove_quietly(copy)

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
        ended = Ended(
            exit_code,
            time.monotonic() - started,
            log,
            view,
            bool(cancelled),
            reached_limits,
            reached,
            handle.timed_out,
        )
        return check_run(ended, check)

    def layer_problem(self) -> str | None:
        """Why no check can run over a copy-on-write layer on this machine (None: they do),
        asked of the kernel once: an overlay in a user namespace of the check's own."""
        if self._layer_answer is None:
            self._layer_answer = (
                _probe_layer(self._processes, self._folders, self._layer_tools, self._root),
            )
        return self._layer_answer[0]

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


def _probe_layer(
    processes: ProcessRunner, folders: CheckFolders, tools: LayerTools | None, root: str
) -> str | None:
    """Why no overlay can be mounted in a user namespace of a check's own here (None: it can),
    tried once in a throwaway layer folder."""
    if tools is None:
        return "unshare, mount or mkdir (util-linux, coreutils) is not on the host's PATH"
    try:
        folder = folders.layer_folder()
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
        handle = processes.start(
            argv, {"PATH": "/nonexistent"}, root, None, timeout_seconds=PROBE_SECONDS
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
        folders.remove_quietly(folder)


def _kind(path: str) -> str | None:
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return None
    if stat.S_ISLNK(mode):
        return "link"
    return "dir" if stat.S_ISDIR(mode) else "file"
