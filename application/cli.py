"""The command line: `concorde-workers plan` (the dry-run planner), `run` (one worker run, with
its progress live on stderr and its account at the end), `show` (the account of a run that
ended, read back from its run directory) and `sweep` (the runtime directories of hosts that died
without a chance to act removed, their runs' records finished as interrupted; `run` sweeps
first too).

Exit statuses live in one place, `ExitStatus`. Every bad input ends in a refusal that names the
file or entry and the repair, with status 2: a refusal the planned run would meet is part of the
plan, on stdout; a refusal of the command's own input (the request file, a flag) goes to stderr.
An unexpected fault prints one line naming it (and how to report it) with status 3, never a
traceback. A run exits 0 when it ended ok, 1 blocked or failed, 130 interrupted.

`run` runs `WorkerHost.run` in a worker thread; the main thread waits on its end with a timeout
and, between waits, reads the run's status.json (the run directory is the single new
`workers/w-*` folder below the parent) to show the progress line. SIGINT and SIGTERM cancel the
run through its `Cancellation` while it runs; the previous handlers are restored afterwards.
`main(..., container=...)` replaces the production wiring (tests give one with fakes).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import posixpath
import shutil
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from enum import IntEnum
from types import FrameType
from typing import TYPE_CHECKING, NoReturn, TextIO

from concorde_workers.application.cancellation import Cancellation
from concorde_workers.application.demo import add_demo_command, run_demo
from concorde_workers.application.display import (
    INTERRUPTED,
    ProgressWatcher,
    account,
    outcome_of,
    terminal_lines,
)
from concorde_workers.application.planner import (
    Plan,
    apply_resolution,
    render,
    settle_worker,
)
from concorde_workers.application.requests import RequestFlags, invalid
from concorde_workers.application.sweep import sweep_account
from concorde_workers.application.tracing import RECORD_UNREADABLE, read_record
from concorde_workers.domain.errors import Reason, Refusal
from concorde_workers.domain.records import RunRecord
from concorde_workers.domain.request import RunRequest
from concorde_workers.domain.text import json_document
from concorde_workers.ports.filesystem import FileSystem

if TYPE_CHECKING:
    from concorde_workers.application.container import Container


class ExitStatus(IntEnum):
    """The process exit statuses of every command."""

    OK = 0
    FAILED = 1
    REFUSED = 2
    INTERNAL = 3
    INTERRUPTED = 130


class UsageError(Exception):
    """A command line argparse cannot parse: which command said what."""

    def __init__(self, prog: str, message: str) -> None:
        super().__init__(message)
        self.prog = prog
        self.message = message


class _Parser(argparse.ArgumentParser):
    """argparse, except that a usage error is raised as a value, so that it becomes a refusal
    like any other bad input (one JSON document under --json), never argparse's own exit."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(self.prog, message)


def usage_refusal(usage: UsageError) -> Refusal:
    return invalid(f"{usage.prog}: {usage.message}; see {usage.prog} --help")


def _request_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("request", nargs="?", help="a request JSON file (seed 000's Inputs)")
    parser.add_argument("--worktree", help="absolute path of the worktree in .claude/worktrees/")
    parser.add_argument("--task-type", help="one of the eight Protocol task types")
    parser.add_argument("--grant", help="a grant input JSON file (contract.workers.grant-input)")
    parser.add_argument("--instructions", help="the task instructions, or @FILE to read them")
    parser.add_argument("--operation", help="the Operation the worker is launched for")
    parser.add_argument("--worker", help="the worker id within the Operation")
    parser.add_argument("--backend", help="claude or pi (overrides the worker configuration)")
    parser.add_argument("--interpreter", help="the project's own Python interpreter")
    parser.add_argument("--runtime-path", action="append", default=[],
                        help="an extra absolute path every tool may read (repeatable)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")


def _declare_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--declare", action="append", default=[], metavar="OPERATION:WORKER",
                        help="an Operation and worker id the caller may launch, against which "
                             "every name of workers.json is checked (repeatable; the requested "
                             "one is always declared)")


def parser() -> argparse.ArgumentParser:
    top = _Parser(
        prog="concorde-workers",
        description="Run one AI coding agent headless on a Git worktree under a frozen grant.")
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    plan = commands.add_parser(
        "plan", help="show what a worker run would do, or why it would be refused",
        description="Print what a worker run would do, without writing a file or starting a "
                    "program. Exit 0 when a run would launch, 2 when it would be refused.")
    _request_arguments(plan)
    _declare_argument(plan)
    plan.add_argument("--example", action="store_true",
                      help="plan a run in a throwaway example repository created in a "
                           "temporary folder")
    run = commands.add_parser(
        "run", help="run a worker, show its progress, and account for how it ended",
        description="Run one worker and print the account of its run record (or the record as "
                    "JSON). Exit 0 ok, 1 blocked or failed, 2 refused before a run, "
                    "130 interrupted (SIGINT or SIGTERM end the run interrupted).")
    _request_arguments(run)
    run.add_argument("--parent", metavar="DIR",
                     help="the trace node folder the run's directory workers/<run-id>/ is made "
                          "in (required; it must exist)")
    _declare_argument(run)
    show = commands.add_parser(
        "show", help="print the account of a run that ended, from its run directory",
        description="Rebuild the run record from a run directory <parent>/workers/<run-id>/ "
                    "and print its account (or the record as JSON). Exit 0 when the record "
                    "was read, 2 when the directory holds no readable record.")
    show.add_argument("run_dir", metavar="RUN_DIR",
                      help="the run directory, <parent>/workers/<run-id>/")
    show.add_argument("--json", action="store_true", help="print the run record as JSON")
    sweep = commands.add_parser(
        "sweep", help="remove the runtime directories of hosts that died, finish their records",
        description="Remove the runtime directories (credential copies first) whose host died "
                    "without a chance to act (SIGKILL, the out-of-memory killer) and finish "
                    "their runs' records as interrupted. Exit 0 when every stale directory is "
                    "gone, 1 when one remains or a record could not be written, 2 when the "
                    "runtime parent cannot be listed. `run` sweeps before each run too.")
    sweep.add_argument("--json", action="store_true", help="print what was done as JSON")
    add_demo_command(commands)
    return top


def flags_of(args: argparse.Namespace) -> RequestFlags:
    return RequestFlags(
        request_file=args.request, worktree=args.worktree, task_type=args.task_type,
        grant_file=args.grant, instructions=args.instructions, operation=args.operation,
        worker=args.worker, backend=args.backend, interpreter=args.interpreter,
        runtime_paths=tuple(args.runtime_path), parent=getattr(args, "parent", None))


def declarations(values: Sequence[str]) -> dict[str, set[str]] | Refusal:
    """`OPERATION:WORKER` flags as Operation -> worker ids."""
    declared: dict[str, set[str]] = {}
    for value in values:
        operation, colon, worker = value.partition(":")
        if not (operation and colon and worker):
            return invalid(f"--declare {value!r} is not OPERATION:WORKER, such as "
                           "--declare implement:worker")
        declared.setdefault(operation, set()).add(worker)
    return declared


def print_json(data: object, out: TextIO) -> None:
    """One JSON document: every value exactly as it is, control characters as JSON escapes."""
    out.write(json_document(data) + "\n")


def print_refusal(refusal: Refusal, as_json: bool, out: TextIO, err: TextIO) -> None:
    if as_json:
        print_json({"verdict": "refused", "refusal": {
            "code": refusal.code, "reason": refusal.reason.value, "message": refusal.message,
            "file": refusal.file}}, out)
    else:
        err.write(terminal_lines([
            f"concorde-workers: refused: {refusal.code} ({refusal.reason.value})",
            *(f"  {line}" for line in refusal.message.splitlines())]))


def run_plan(args: argparse.Namespace, out: TextIO, err: TextIO,
             given: Container | None = None) -> ExitStatus:
    from concorde_workers.application.container import example_repository, production

    environ = dict(os.environ)
    if args.example:
        example, additions = example_repository()
        environ |= additions
        if args.request is None:
            args.request = example.request_file
        args.declare = [*args.declare, *example.declared]
        if not args.json:
            out.write(terminal_lines([f"example repository: {example.primary}",
                                      f"worktree:           {example.worktree}",
                                      f"request:            {example.request_file}", ""]))
    container = given if given is not None and not args.example else production(environ)
    request = container.requests().build(flags_of(args))
    if isinstance(request, Refusal):
        print_refusal(request, args.json, out, err)
        return ExitStatus.REFUSED
    declared = declarations(args.declare)
    if isinstance(declared, Refusal):
        print_refusal(declared, args.json, out, err)
        return ExitStatus.REFUSED
    plan: Plan = container.planner().plan(request, declared)
    if args.json:
        print_json(plan.to_json(), out)
    else:
        out.write(render(plan))
    return ExitStatus.OK if plan.launches else ExitStatus.REFUSED


# --- run ---------------------------------------------------------------------------------------

REFRESH_SECONDS = 0.5
"""How long the CLI waits for the run to end between two reads of its progress file."""

CANCEL_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def resolve_worker(container: Container, request: RunRequest,
                   declared: Mapping[str, set[str]]) -> RunRequest | Refusal:
    """With an Operation and a worker, the request as the worker configuration and the model map
    settle it (backend, model, reasoning, limits, runtime paths), exactly as the planner does;
    the configuration reader's refusal otherwise. A request without either goes as it is."""
    settled = settle_worker(container.config_reader(), request, declared)
    if settled is None or isinstance(settled, Refusal):
        return settled or request
    return apply_resolution(request, settled)


def parent_refusal(fs: FileSystem, request: RunRequest, args: argparse.Namespace
                   ) -> Refusal | None:
    """`run` needs an existing parent trace node folder: from --parent, else the request file."""
    if not request.parent:
        return invalid("a run needs --parent DIR: the trace node folder in which the run's "
                       "directory workers/<run-id>/ is made; give --parent with an existing "
                       "directory (or a \"parent\" field in the request file)", args.request)
    if fs.is_dir(request.parent):
        return None
    where = ("--parent" if args.parent is not None or not args.request
             else f"the \"parent\" field of the request file {args.request}")
    what = "is not a directory" if fs.lexists(request.parent) else "does not exist"
    return invalid(f"the parent trace node folder {request.parent} ({where}) {what}; create it "
                   "first or give an existing directory: a run never creates its parent",
                   request.parent)


@contextlib.contextmanager
def cancel_on_signals(cancel: Cancellation) -> Iterator[None]:
    """SIGINT and SIGTERM cancel the run for as long as it runs; the handlers the process had
    before are restored afterwards. Only the main thread can install handlers: elsewhere the
    run is cancelled only by its caller."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        cancel.cancel(f"concorde-workers received {signal.Signals(signum).name} and ended the "
                      "run")

    previous: dict[signal.Signals, Callable[[int, FrameType | None], object] | int | None] = {}
    try:
        for sig in CANCEL_SIGNALS:
            previous[sig] = signal.signal(sig, handler)
        yield
    finally:
        for sig, before in previous.items():
            signal.signal(sig, before if before is not None else signal.SIG_DFL)


def run_watched(container: Container, request: RunRequest, cancel: Cancellation,
                watcher: ProgressWatcher, refresh_seconds: float | None = None) -> RunRecord:
    """`WorkerHost.run` in a worker thread while this thread shows its progress: it waits on the
    run's end with a timeout between two reads of status.json (no busy polling)."""
    interval = REFRESH_SECONDS if refresh_seconds is None else refresh_seconds
    host = container.worker_host()
    done = threading.Event()
    outcome: dict[str, RunRecord | BaseException] = {}

    def target() -> None:
        try:
            outcome["record"] = host.run(request, cancel=cancel)
        except BaseException as fault:  # handed to the main thread, raised there
            outcome["fault"] = fault
        finally:
            done.set()

    thread = threading.Thread(target=target, name="concorde-workers-run", daemon=True)
    thread.start()
    try:
        while True:
            try:
                if done.wait(interval):
                    break
            except KeyboardInterrupt:  # no handler of ours (not the main thread's signals)
                cancel.cancel("concorde-workers was interrupted and ended the run")
                continue
            watcher.refresh()
        thread.join()
        watcher.refresh()
    finally:
        watcher.close()
    fault = outcome.get("fault")
    if isinstance(fault, BaseException):
        raise fault
    record = outcome["record"]
    assert isinstance(record, RunRecord)
    return record


def status_of(record: RunRecord) -> ExitStatus:
    """0 ok, 130 interrupted, 1 blocked or failed."""
    outcome = outcome_of(record)
    if outcome == "ok":
        return ExitStatus.OK
    if outcome == INTERRUPTED:
        return ExitStatus.INTERRUPTED
    return ExitStatus.FAILED


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def print_record(record: RunRecord, as_json: bool, out: TextIO) -> None:
    if as_json:
        print_json(record.to_json(), out)
    else:
        out.write(account(record))


def run_run(args: argparse.Namespace, out: TextIO, err: TextIO,
            given: Container | None = None) -> ExitStatus:
    if given is None:
        from concorde_workers.application.container import production
        container = production()
    else:
        container = given
    request = container.requests().build(flags_of(args))
    if isinstance(request, Refusal):
        print_refusal(request, args.json, out, err)
        return ExitStatus.REFUSED
    refusal = parent_refusal(container.filesystem(), request, args)
    declared = declarations(args.declare)
    if refusal is None and isinstance(declared, Refusal):
        refusal = declared
    if refusal is None and not isinstance(declared, Refusal):
        resolved = resolve_worker(container, request, declared)
        if isinstance(resolved, Refusal):
            refusal = resolved
        else:
            request = resolved
            # The request's runtime paths and interpreter are judged before a run exists, as
            # WorkerHost.refusal_before_run does: a bad one is refused like a bad flag.
            refusal = container.preparer().beside_refusal(request, container.temp_root())
    if refusal is not None:
        print_refusal(refusal, args.json, out, err)
        return ExitStatus.REFUSED
    assert request.parent is not None
    sweep_before_run(container, err)
    cancel = Cancellation()
    live = _is_tty(err)
    watcher = ProgressWatcher(
        container.filesystem(), request.parent, err, live=live,
        now=container.clock().now_utc, width=shutil.get_terminal_size().columns,
        host_pid=container.host_pid())
    with cancel_on_signals(cancel):
        record = run_watched(container, request, cancel, watcher)
    print_record(record, args.json, out)
    return status_of(record)


# --- sweep ---------------------------------------------------------------------------------------

SWEEP_REFUSED = "runtime_parent_unreadable"
"""The refusal of `sweep` when the runtime parent cannot be listed."""


def sweep_before_run(container: Container, err: TextIO) -> None:
    """Every `run` first sweeps the stale runtime directories of hosts that died, and says so on
    stderr when it found one; a defect of the sweep is named and the run goes on (a run is
    never stopped by another run's leftovers)."""
    try:
        report = container.sweeper().sweep()
    except Exception as fault:  # a defect of ours: named, never a traceback, never a lost run
        err.write(terminal_lines([
            f"concorde-workers: the sweep of stale runtime directories failed "
            f"({type(fault).__name__}: {fault}); this is a defect of concorde-workers; "
            "the run goes on"]))
        return
    err.write(terminal_lines([f"concorde-workers: {line}"
                              for line in sweep_account(report, quiet=True).splitlines()]))


def run_sweep(args: argparse.Namespace, out: TextIO, err: TextIO,
              given: Container | None = None) -> ExitStatus:
    """0 every stale runtime directory is gone and every record that could be found finished;
    1 a directory (or part of it) remains, or a record could not be written; 2 the runtime
    parent cannot be listed (nothing done)."""
    if given is None:
        from concorde_workers.application.container import production
        container = production()
    else:
        container = given
    report = container.sweeper().sweep()
    if report.problem is not None:
        print_refusal(Refusal(code=SWEEP_REFUSED, reason=Reason.ENVIRONMENT,
                              message=f"{report.problem}; make it readable, or run where the "
                                      "runtime directories are made",
                              file=report.runtime_parent), args.json, out, err)
        return ExitStatus.REFUSED
    if args.json:
        print_json(report.to_json(), out)
    else:
        out.write(terminal_lines(sweep_account(report).splitlines()))
    return ExitStatus.FAILED if report.failures else ExitStatus.OK


# --- show --------------------------------------------------------------------------------------


def run_show(args: argparse.Namespace, out: TextIO, err: TextIO,
             given: Container | None = None) -> ExitStatus:
    if given is None:
        from concorde_workers.application.container import production
        container = production()
    else:
        container = given
    fs = container.filesystem()
    run_dir = posixpath.normpath(posixpath.join(container.cwd(), args.run_dir))
    repair = ("give RUN_DIR as the run directory <parent>/workers/<run-id>/ of a run that "
              "has ended")
    if not fs.is_dir(run_dir):
        what = "is not a directory" if fs.lexists(run_dir) else "does not exist"
        print_refusal(Refusal(code=RECORD_UNREADABLE, reason=Reason.INPUT, file=run_dir,
                              message=f"the run directory {run_dir} {what}; {repair}"),
                      args.json, out, err)
        return ExitStatus.REFUSED
    record = read_record(fs, run_dir)
    if isinstance(record, Refusal):
        print_refusal(record.model_copy(update={"message": f"{record.message}; {repair}"}),
                      args.json, out, err)
        return ExitStatus.REFUSED
    print_record(record, args.json, out)
    return ExitStatus.OK


# --- the console script ----------------------------------------------------------------------


def run_demo_command(args: argparse.Namespace, out: TextIO, err: TextIO,
                     given: Container | None = None) -> ExitStatus:
    """`demo` (application/demo.py): a real pi worker offline in a throwaway repository."""
    return ExitStatus(run_demo(args, out, err, given))


COMMANDS: dict[str, Callable[[argparse.Namespace, TextIO, TextIO, Container | None],
                             ExitStatus]] = {
    "plan": run_plan, "run": run_run, "show": run_show, "sweep": run_sweep,
    "demo": run_demo_command,
}


def main(argv: Sequence[str] | None = None, out: TextIO | None = None,
         err: TextIO | None = None, container: Container | None = None) -> int:
    """The console script `concorde-workers`. `container` replaces the production wiring (the
    tests give one with fakes); `plan --example` always wires its own."""
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        args = parser().parse_args(argv)
    except UsageError as usage:
        given = sys.argv[1:] if argv is None else list(argv)
        print_refusal(usage_refusal(usage), "--json" in given, out, err)
        return int(ExitStatus.REFUSED)
    command = COMMANDS.get(args.command)
    if command is None:
        return int(ExitStatus.REFUSED)
    try:
        return int(command(args, out, err, container))
    except KeyboardInterrupt:
        err.write("concorde-workers: interrupted\n")
        return int(ExitStatus.INTERRUPTED)
    except Exception as fault:  # a defect of ours: say so in one line, never a traceback
        err.write(terminal_lines([
            f"concorde-workers: internal error ({type(fault).__name__}: {fault}); this is a "
            "defect of concorde-workers: report it with the command line"]))
        return int(ExitStatus.INTERNAL)
