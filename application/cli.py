"""The command line: `concorde-workers plan` (the dry-run planner).

Exit statuses live in one place, `ExitStatus`. Every bad input ends in a refusal that names the
file or entry and the repair, with status 2: a refusal the planned run would meet is part of the
plan, on stdout; a refusal of the command's own input (the request file, a flag) goes to stderr.
An unexpected fault prints one line naming it (and how to report it) with status 3, never a
traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from enum import IntEnum
from typing import TextIO

from concorde_workers.application.planner import Plan, render
from concorde_workers.application.requests import RequestFlags, invalid
from concorde_workers.domain.errors import Refusal


class ExitStatus(IntEnum):
    """The process exit statuses of every command."""

    OK = 0
    FAILED = 1
    REFUSED = 2
    INTERNAL = 3
    INTERRUPTED = 130


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


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="concorde-workers",
        description="Run one AI coding agent headless on a Git worktree under a frozen grant.")
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    plan = commands.add_parser(
        "plan", help="show what a worker run would do, or why it would be refused",
        description="Print what a worker run would do, without writing a file or starting a "
                    "program. Exit 0 when a run would launch, 2 when it would be refused.")
    _request_arguments(plan)
    plan.add_argument("--declare", action="append", default=[], metavar="OPERATION:WORKER",
                      help="an Operation and worker id the caller may launch, against which "
                           "every name of workers.json is checked (repeatable; the requested "
                           "one is always declared)")
    plan.add_argument("--example", action="store_true",
                      help="plan a run in a throwaway example repository created in a "
                           "temporary folder")
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


def print_refusal(refusal: Refusal, as_json: bool, out: TextIO, err: TextIO) -> None:
    if as_json:
        json.dump({"verdict": "refused", "refusal": {
            "code": refusal.code, "reason": refusal.reason.value, "message": refusal.message,
            "file": refusal.file}}, out, indent=2)
        out.write("\n")
    else:
        err.write(f"concorde-workers: refused: {refusal.code} ({refusal.reason.value})\n"
                  f"  {refusal.message}\n")


def run_plan(args: argparse.Namespace, out: TextIO, err: TextIO) -> ExitStatus:
    from concorde_workers.application.container import example_repository, production

    environ = dict(os.environ)
    if args.example:
        example, additions = example_repository()
        environ |= additions
        if args.request is None:
            args.request = example.request_file
        args.declare = [*args.declare, *example.declared]
        if not args.json:
            out.write(f"example repository: {example.primary}\n"
                      f"worktree:           {example.worktree}\n"
                      f"request:            {example.request_file}\n\n")
    container = production(environ)
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
        json.dump(plan.to_json(), out, indent=2)
        out.write("\n")
    else:
        out.write(render(plan))
    return ExitStatus.OK if plan.launches else ExitStatus.REFUSED


def main(argv: Sequence[str] | None = None, out: TextIO | None = None,
         err: TextIO | None = None) -> int:
    """The console script `concorde-workers`."""
    out = out or sys.stdout
    err = err or sys.stderr
    args = parser().parse_args(argv)
    try:
        if args.command == "plan":
            return int(run_plan(args, out, err))
    except KeyboardInterrupt:
        err.write("concorde-workers: interrupted\n")
        return int(ExitStatus.INTERRUPTED)
    except Exception as fault:  # a defect of ours: say so in one line, never a traceback
        err.write(f"concorde-workers: internal error ({type(fault).__name__}: {fault}); "
                  "this is a defect of concorde-workers: report it with the command line\n")
        return int(ExitStatus.INTERNAL)
    return int(ExitStatus.REFUSED)
