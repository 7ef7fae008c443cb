"""`run` (one worker run, with its progress live on stderr and its account at the end), `show`
(the account of a run that ended, read back from its run directory) and `sweep` (the runtime
directories of hosts that died without a chance to act removed, their runs' records finished as
interrupted; `run` sweeps first too). `plan` is plan.py, which loads none of this module's
display, report or record readers.

Every bad input ends in a refusal that names the file or entry and the repair, with status 2: a
refusal the planned run would meet is part of the plan, on stdout; a refusal of the command's
own input (the request file, a flag) goes to stderr.

`run` runs `WorkerHost.run` in a worker thread (watch.py); the main thread waits on its end with
a timeout and, between waits, reads the run's status.json (the run directory is the single new
`workers/w-*` folder below the parent) to show the progress line. SIGINT and SIGTERM cancel the
run through its `Cancellation` while it runs (signals.py).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import posixpath
import shutil
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TextIO

from concorde_workers.adapters.cli.flags import declarations, flags_of
from concorde_workers.adapters.cli.output import print_json, print_refusal
from concorde_workers.adapters.cli.signals import cancel_on_signals
from concorde_workers.adapters.cli.status import ExitStatus
from concorde_workers.adapters.cli.subcommands.plan import parent_refusal
from concorde_workers.adapters.cli.views.diff import patch_text
from concorde_workers.adapters.cli.views.display import print_record, status_of
from concorde_workers.adapters.cli.views.events import JsonLinesEvents
from concorde_workers.adapters.cli.views.progress import ProgressWatcher
from concorde_workers.adapters.cli.views.report import report_html
from concorde_workers.adapters.cli.views.watch import run_watched
from concorde_workers.adapters.cli.wiring import Wiring
from concorde_workers.application.checks.checks import ChecksValidation, place_for
from concorde_workers.application.evidence.report import gather
from concorde_workers.application.preparation.planner import apply_resolution, settle_worker
from concorde_workers.application.preparation.request_notes import notes_for_request, notes_for_run
from concorde_workers.application.preparation.requests import instructions_missing
from concorde_workers.application.preparation.worktree_lock import hold_worktree, writes
from concorde_workers.application.runtime.cancellation import Cancellation
from concorde_workers.application.sweep.sweep import sweep_account
from concorde_workers.application.tracing.reader import (
    RECORD_UNREADABLE,
    digest_failures,
    read_patch,
    read_programs,
    read_record,
    read_resources,
)
from concorde_workers.domain.configuration.profile import Profiles, programs_of
from concorde_workers.domain.configuration.request import RunRequest
from concorde_workers.domain.evidence.records import RunRecord
from concorde_workers.domain.ground.errors import Code, Reason, Refusal
from concorde_workers.domain.ground.paths import EntryKind
from concorde_workers.domain.ground.text import escape_controls, terminal_lines
from concorde_workers.ports.machine.filesystem import (
    BoundedReading,
    FileKeeping,
    FileSystemError,
    HeldLock,
    PathFacts,
)

if TYPE_CHECKING:
    from concorde_workers.application.run.host import WorkerHost
    from concorde_workers.container import Container


# --- run ---------------------------------------------------------------------------------------


def resolve_worker(
    container: Container, request: RunRequest, declared: Mapping[str, set[str]], err: TextIO
) -> RunRequest | Refusal:
    """With an Operation and a worker, the request as the worker configuration and the model map
    settle it (backend, model, reasoning, limits, runtime paths), exactly as the planner does;
    the configuration reader's refusal otherwise. A request without either goes as it is. A
    working copy of the configuration that differs from the committed one is said on `err`."""
    settled = settle_worker(
        container.config_reader(), request, declared, container.preparer().placement_refusal
    )
    if settled is None or isinstance(settled, Refusal):
        return settled or request
    for said in (settled.notice, settled.unnamed):
        if said is not None:
            err.write(terminal_lines([f"concorde-workers: {said}"]))
    return apply_resolution(request, settled)


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _refusal_before_run(
    container: Container,
    host: WorkerHost,
    request: RunRequest,
    args: argparse.Namespace,
    err: TextIO,
) -> RunRequest | Refusal:
    """The request as the run will take it, or the refusal of the command's own input: the
    parent, the declarations, the worker's configuration, the runtime paths and interpreter."""
    refusal = parent_refusal(container.filesystem(), request, args)
    if refusal is not None:
        return refusal
    declared = declarations(args.declare)
    if isinstance(declared, Refusal):
        return declared
    resolved = resolve_worker(container, request, declared, err)
    if isinstance(resolved, Refusal):
        return resolved
    # The request's runtime paths and interpreter, and the agent program's version, are judged
    # before a run exists, as WorkerHost.refusal_before_run does: refused like a bad flag.
    # The host that runs it judges it: the Git placement answers are kept for its run.
    refused = host.refusal_before_run(resolved)
    return refused if refused is not None else resolved


def _run_or_refusal(
    container: Container,
    host: WorkerHost,
    args: argparse.Namespace,
    err: TextIO,
    cancel: Cancellation,
) -> tuple[RunRequest, ChecksValidation | None] | Refusal:
    """The request and its checks' validation as the run takes them, or the first refusal of
    the command's own input, in the order `plan` lists them (planner.py `Plan.reasons`).

    The checks' validation copies the starting state before round 1 (gate narrowing) and
    discards it when the run has ended, however it ended. A check that cannot start in any
    round refuses the run before it exists, as `plan` says (issue 31 §2): no model round is
    spent only to end checks_unavailable after it."""
    built = container.requests().build(flags_of(args))
    checks = container.requests().checks(flags_of(args))
    if isinstance(built, Refusal):
        return built
    if isinstance(checks, Refusal):
        return checks
    request = _refusal_before_run(container, host, built, args, err)
    if isinstance(request, Refusal):
        return request
    missing = instructions_missing(request, flags_of(args))
    if missing is not None:
        return missing
    if not checks:
        return request, None
    validation = container.checks_validation(checks=checks, place=place_for(request), cancel=cancel)
    refused = validation.refusal_before_run()
    return refused if refused is not None else (request, validation)


def run_run(args: argparse.Namespace, out: TextIO, err: TextIO, wiring: Wiring) -> ExitStatus:
    container = wiring.container()
    host = container.worker_host()
    cancel = Cancellation()
    settled = _run_or_refusal(container, host, args, err, cancel)
    if isinstance(settled, Refusal):
        print_refusal(settled, args.json, out, err)
        return ExitStatus.REFUSED
    request, validation = settled
    assert request.parent is not None
    # What the request says that its author may not have meant: said now, and in the account;
    # the run takes the request as it reads (issue 31 §3).
    notes = notes_for_request(
        container.filesystem(), request, container.profiles().get(request.backend)
    )
    err.write(terminal_lines([f"concorde-workers: note: {note}" for note in notes]))
    held = _hold_worktree(container, host, request)
    if isinstance(held, Refusal):
        print_refusal(held, args.json, out, err)
        return ExitStatus.REFUSED
    try:
        return _run_held(args, out, err, container, host, request, validation, cancel, notes)
    finally:
        if held is not None:
            held.release()


def _hold_worktree(
    container: Container, host: WorkerHost, request: RunRequest
) -> HeldLock | Refusal | None:
    """The command line's lock on the worktree for the run
    (application/preparation/worktree_lock.py): exclusive when the grant writes, shared when it
    only reads; None when the worktree is no
    worktree a run can be made in (the run refuses it itself, worktree_misplaced)."""
    git_dir = host.git_dir(request)
    if git_dir is None:
        return None
    holder = json.dumps(
        {
            "command": "concorde-workers run",
            "host_pid": container.host_pid(),
            "parent": request.parent,
        }
    )
    return hold_worktree(
        container.filesystem(), git_dir, request.worktree, holder, shared=not writes(request.grant)
    )


def _run_held(
    args: argparse.Namespace,
    out: TextIO,
    err: TextIO,
    container: Container,
    host: WorkerHost,
    request: RunRequest,
    validation: ChecksValidation | None,
    cancel: Cancellation,
    notes: Sequence[str],
) -> ExitStatus:
    assert request.parent is not None
    sweep_before_run(container, err)
    watcher = ProgressWatcher(
        container.filesystem(),
        request.parent,
        err,
        live=_is_tty(err),
        now=container.clock().now_utc,
        width=shutil.get_terminal_size().columns,
        host_pid=container.host_pid(),
    )
    with cancel_on_signals(cancel), validation or contextlib.nullcontext():
        record = run_watched(
            host,
            request,
            cancel,
            watcher,
            validation=validation,
            events=JsonLinesEvents(out) if args.events else None,
        )
    if validation is not None and validation.leftover:
        err.write(terminal_lines([f"concorde-workers: {validation.leftover}"]))
    fs = container.filesystem()
    print_record(
        record,
        args.json,
        err if args.events else out,  # stdout holds the events alone
        read_programs(fs, record.run_directory, programs_of(container.profiles())),
        read_resources(fs, record.run_directory, len(record.rounds)),
        notes,
    )
    return status_of(record)


# --- sweep ---------------------------------------------------------------------------------------

SWEEP_REFUSED = Code.RUNTIME_PARENT_UNREADABLE
"""The refusal of `sweep` when the runtime parent cannot be listed."""


def sweep_before_run(container: Container, err: TextIO) -> None:
    """Every `run` first sweeps the stale runtime directories of hosts that died, and says so on
    stderr when it found one; a defect of the sweep is named and the run goes on (a run is
    never stopped by another run's leftovers)."""
    try:
        report = container.sweeper().sweep()
    except Exception as fault:  # a defect of ours: named, never a traceback, never a lost run
        err.write(
            terminal_lines(
                [
                    f"concorde-workers: the sweep of stale runtime directories failed "
                    f"({type(fault).__name__}: {fault}); this is a defect of concorde-workers; "
                    "the run goes on"
                ]
            )
        )
        return
    err.write(
        terminal_lines(
            [f"concorde-workers: {line}" for line in sweep_account(report, quiet=True).splitlines()]
        )
    )


def run_sweep(args: argparse.Namespace, out: TextIO, err: TextIO, wiring: Wiring) -> ExitStatus:
    """0 every stale runtime directory is gone and every record that could be found finished;
    1 a directory (or part of it) remains, or a record could not be written; 2 the runtime
    parent cannot be listed (nothing done)."""
    report = wiring.container().sweeper().sweep()
    if report.problem is not None:
        print_refusal(
            Refusal(
                code=SWEEP_REFUSED,
                reason=Reason.ENVIRONMENT,
                message=f"{report.problem}; make it readable, or run where the "
                "runtime directories are made",
                file=report.runtime_parent,
            ),
            args.json,
            out,
            err,
        )
        return ExitStatus.REFUSED
    if args.json:
        print_json(report.to_json(), out)
    else:
        out.write(terminal_lines(sweep_account(report).splitlines()))
    return ExitStatus.FAILED if report.failures else ExitStatus.OK


# --- show --------------------------------------------------------------------------------------


def run_show(args: argparse.Namespace, out: TextIO, err: TextIO, wiring: Wiring) -> ExitStatus:
    """0 the record was read and accounted for, 2 the directory holds no readable record."""
    container = wiring.container()
    fs = container.filesystem()
    run_dir = posixpath.normpath(posixpath.join(container.cwd(), args.run_dir))
    repair = "give RUN_DIR as the run directory <parent>/workers/<run-id>/ of a run that has ended"
    if not fs.is_dir(run_dir):
        what = "is not a directory" if fs.lexists(run_dir) else "does not exist"
        print_refusal(
            Refusal(
                code=RECORD_UNREADABLE,
                reason=Reason.INPUT,
                file=run_dir,
                message=f"the run directory {run_dir} {what}; {repair}",
            ),
            args.json,
            out,
            err,
        )
        return ExitStatus.REFUSED
    if args.html:
        return _show_html(args.html, run_dir, container.cwd(), fs, out, err, container.profiles())
    record = read_record(fs, run_dir)
    if isinstance(record, Refusal):
        print_refusal(
            record.model_copy(update={"message": f"{record.message}; {repair}"}),
            args.json,
            out,
            err,
        )
        return ExitStatus.REFUSED
    if args.diff:
        plain = bool(container.environ().get("NO_COLOR"))
        return _show_diff(args, record, run_dir, fs, out, err, plain)
    print_record(
        record,
        args.json,
        out,
        read_programs(fs, run_dir, programs_of(container.profiles())),
        read_resources(fs, run_dir, len(record.rounds)),
        notes_for_run(fs, run_dir),
    )
    if not args.json:  # what the account shows is not what the host wrote: said (issue 30 §4)
        failures = digest_failures(fs, run_dir)
        out.write(terminal_lines([f"WARNING: {failure}" for failure in failures]))
        if failures:
            out.write(f"run `concorde-workers verify {run_dir}` for the whole check\n")
    return ExitStatus.OK


def _show_diff(
    args: argparse.Namespace,
    record: RunRecord,
    run_dir: str,
    fs: BoundedReading,
    out: TextIO,
    err: TextIO,
    plain: bool,
) -> ExitStatus:
    """Each round's changes.patch (issue 21 §2); a round the run does not have is refused."""
    rounds = [r.round for r in record.rounds]
    if args.round_number is not None and args.round_number not in rounds:
        had = ", ".join(map(str, rounds)) or "none"
        err.write(
            f"error: --round {args.round_number}: the run has no such round (its rounds: "
            f"{had}); give one of them, or leave --round out for all\n"
        )
        return ExitStatus.REFUSED
    asked = [args.round_number] if args.round_number is not None else rounds
    colour = out.isatty() and not plain
    out.write(patch_text([(n, read_patch(fs, run_dir, n)) for n in asked], colour))
    return ExitStatus.OK


def _show_html(
    file: str, run_dir: str, cwd: str, fs: FileKeeping, out: TextIO, err: TextIO, profiles: Profiles
) -> ExitStatus:
    """The run's report as one HTML page (issue 21 §3); a damaged trace gets a page that says
    so. `-` is standard output; a file is written atomically, and only as a new name or over a
    regular file (issue 31 §3: a device, a FIFO, a link or a folder at FILE is refused, never
    renamed over: as root it replaced /dev/full)."""
    page = report_html(gather(fs, run_dir, profiles))
    if file == "-":
        out.write(page)
        return ExitStatus.OK
    target = posixpath.normpath(posixpath.join(cwd, file))
    refused = _html_target_problem(fs, target)
    try:
        if refused is None:
            fs.write_atomic(target, page)
    except FileSystemError as error:
        refused = (
            f"{error.os_error_text}; give --html a file in a folder that exists and can be written"
        )
    if refused is not None:
        err.write(
            f"error: the report cannot be written to {escape_controls(target)}: "
            f"{escape_controls(refused)}\n"
        )
        return ExitStatus.REFUSED
    out.write(f"report: {escape_controls(target)} ({len(page.encode())} bytes)\n")
    return ExitStatus.OK


def _html_target_problem(fs: PathFacts, target: str) -> str | None:
    """Why the report may not be written at `target`: what is there is no regular file (its
    final link not followed); None for a regular file or a new name."""
    try:
        kind = fs.stat(target).kind
    except FileSystemError as error:
        return None if error.not_found else error.os_error_text
    if kind is EntryKind.FILE:
        return None
    what = {
        EntryKind.SYMLINK: "a symbolic link",
        EntryKind.DIRECTORY: "a directory",
    }.get(kind, "a device, a FIFO or a socket")
    return (
        f"it is {what}, not a regular file; give --html a new file name or a regular file to "
        "replace (or - for standard output)"
    )
