"""The command line's grammar: `plan`, `run`, `show`, `sweep`, `demo`, `doctor` and
`install-agents` (what their flags mean to the use cases is flags.py).

A usage error argparse finds is raised as a value (`UsageError`), so that it becomes a refusal
like any other bad input (one JSON document under --json), never argparse's own exit.

This module imports argparse and nothing of the application: `--help` and a usage error cost
the interpreter's start and argparse, no model, schema or adapter (benchmarks/cli_startup.py).
"""

from __future__ import annotations

import argparse
import os
import sys

from concorde_workers import __version__
from concorde_workers.domain.boundary.task_types import TASK_TYPE_LINES
from concorde_workers.domain.ground.backends import BACKENDS, DEMO_BACKENDS

TYPE_CHECKING = False
if TYPE_CHECKING:  # `typing` is a tenth of --help's import (issue 32 §2)
    from typing import Any, NoReturn


class UsageError(Exception):
    """A command line argparse cannot parse: which command said what."""

    def __init__(self, prog: str, message: str) -> None:
        super().__init__(message)
        self.prog = prog
        self.message = message


class _Parser(argparse.ArgumentParser):
    """argparse, except that a usage error is raised as a value."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(self.prog, message)

    def _get_formatter(self) -> argparse.HelpFormatter:
        # argparse asks `shutil` for the width, and `shutil` loads bz2 and lzma: a twentieth of
        # `--help` (issue 32 §2). The same answer: $COLUMNS, else the terminal's, else 80.
        # Every argparse formatter takes `width`; typeshed's protocol names only `prog`.
        formatter: Any = self.formatter_class
        width = _terminal_columns(self.columns_variable) - 2
        return formatter(prog=self.prog, width=width)  # type: ignore[no-any-return]

    # $COLUMNS as the entry point read it: only cli.main reads the environment.
    columns_variable: str | None = None


def _terminal_columns(variable: str | None) -> int:
    """shutil.get_terminal_size's columns, without importing shutil."""
    try:
        columns = int(variable or "0")
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


def _request_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("request", nargs="?", help="a request JSON file (seed 000's Inputs)")
    parser.add_argument("--worktree", help="absolute path of the worktree in .claude/worktrees/")
    parser.add_argument(
        "--task-type", help="one of the eight Protocol task types: " + ", ".join(TASK_TYPE_LINES)
    )
    parser.add_argument("--grant", help="a grant input JSON file (contract.workers.grant-input)")
    parser.add_argument("--instructions", help="the task instructions, or @FILE to read them")
    parser.add_argument("--operation", help="the Operation the worker is launched for")
    parser.add_argument("--worker", help="the worker id within the Operation")
    parser.add_argument(
        "--backend", help=f"{' or '.join(BACKENDS)} (overrides the worker configuration)"
    )
    parser.add_argument("--interpreter", help="the project's own Python interpreter")
    parser.add_argument(
        "--runtime-path",
        action="append",
        default=[],
        help="an extra absolute path every tool may read (repeatable)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument(
        "--max-processes",
        metavar="N",
        help='the run\'s process limit (default 512; also "resources" in the request file)',
    )
    parser.add_argument(
        "--max-memory",
        metavar="SIZE",
        help="the run's memory limit, swap off: MiB, or a size such as 512m or 2g (default 1g)",
    )
    parser.add_argument(
        "--max-space",
        metavar="SIZE",
        help="the size of each of the runtime directory's writable spaces, a tmpfs each: "
        "the agent's config/, and the worker's home/, tmp/ and work/ (default 512m)",
    )
    parser.add_argument("--max-tmp", metavar="SIZE", help=argparse.SUPPRESS)
    parser.add_argument(
        "--cpu-weight",
        metavar="N",
        help="the run's CPU weight, 1-10000 (default 100: an equal share)",
    )


def _check_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--check",
        action="append",
        default=[],
        metavar="CMD",
        help="a check, a shell command run after every round whose worker "
        "ended ok with a clean audit, over a throwaway copy-on-write view "
        "of the worktree in a network-less sandbox; a check the round "
        "broke is sent back "
        'as a repair (repeatable; also "checks" in the request file)',
    )


def _declare_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--declare",
        action="append",
        default=[],
        metavar="OPERATION:WORKER",
        help="an Operation and worker id the caller may launch, against which "
        "every name of workers.json is checked (repeatable; the requested "
        "one is always declared)",
    )


def _demo_command(commands: Any) -> None:
    demo = commands.add_parser(
        "demo",
        help="run a real pi (or Codex CLI) worker offline in a throwaway repository",
        description="Create a throwaway repository, start a scripted model server on 127.0.0.1 "
        "and run a real pi worker (--backend codex: the Codex CLI) under a grant through the "
        "host: an allowed write, a refused read-only write, a failed network attempt, a "
        "proposed deletion. Exit 0 when everything went as shown.",
    )
    demo.add_argument(
        "--backend",
        choices=DEMO_BACKENDS,
        default=DEMO_BACKENDS[0],
        help=f"the program the worker runs: {' or '.join(DEMO_BACKENDS)} (default "
        f"{DEMO_BACKENDS[0]}); each against a scripted server of its own wire",
    )
    demo.add_argument(
        "--folder",
        metavar="DIR",
        help="create the throwaway repository below DIR (default: the system temporary directory)",
    )
    demo.add_argument("--json", action="store_true", help="print the run record as JSON")
    demo.add_argument(
        "--keep",
        action="store_true",
        help="keep the throwaway repository (by default it is removed at the end; "
        "the run's trace, beside it, is always kept)",
    )


def task_types_epilog() -> str:
    """The eight task types, one line each (`--help`)."""
    width = max(len(name) for name in TASK_TYPE_LINES)
    return "task types (--task-type, the grant's task_type):\n" + "\n".join(
        f"  {name:<{width}}  {line}" for name, line in TASK_TYPE_LINES.items()
    )


def _setup_commands(commands: Any) -> None:
    doctor = commands.add_parser(
        "doctor",
        help="check every prerequisite of a run and name the repair of each",
        description="One line per prerequisite: the agent programs (where found, their "
        "versions against the floors), sandbox-runtime, bubblewrap, socat, "
        "ripgrep, fd, node, Git, a command run in the worker's sandbox without "
        "network, the model map, each backend's credentials (never printed) and, "
        "inside a worktree, its workers.json. Exit 0 when all hold, 2 otherwise.",
    )
    doctor.add_argument(
        "--backend",
        choices=BACKENDS,
        help="judge only what this backend needs (default: the backends this "
        "worktree's workers.json names, else every one)",
    )
    doctor.add_argument("--json", action="store_true", help="print one JSON document")
    install = commands.add_parser(
        "install-agents",
        help="install the pinned agent programs into the user data folder (npm ci)",
        description="Install the agent programs this version pins (its package-lock.json: "
        "Claude Code, pi, sandbox-runtime) with npm ci into "
        "$XDG_DATA_HOME/concorde-workers (else ~/.local/share/concorde-workers), "
        "where every run finds them. Exit 0 installed (or already), 2 refused "
        "(no npm, no home), 1 npm failed.",
    )
    install.add_argument("--json", action="store_true", help="print one JSON document")
    init = commands.add_parser(
        "init",
        help="write the files of a project's first run (workers.json, a grant, the "
        "model map entry) and, with --task, make its worktree",
        description="In the primary worktree: write .concorde/workers.json for the backends "
        "found installed, a starter grant beside the model map, the model map's "
        "entry where it can, add .claude/worktrees/ to .git/info/exclude, and with "
        "--task NAME make .claude/worktrees/NAME on a new branch with workers.json "
        "committed there. Never overwrites (--force replaces). Exit 0 done, 2 "
        "refused.",
    )
    init.add_argument("--repo", metavar="DIR", help="the primary worktree (default: here)")
    init.add_argument("--task", metavar="NAME", help="make the worktree .claude/worktrees/NAME")
    init.add_argument("--force", action="store_true", help="replace the files that exist")
    init.add_argument("--json", action="store_true", help="print one JSON document")


def parser(columns: str | None = None) -> argparse.ArgumentParser:
    """The whole grammar; `columns` is $COLUMNS, the help's width where it is set."""

    # A class per call, so the subcommands' parsers (argparse makes them of the top's class)
    # wrap to the same width and no call changes another's.
    class _Sized(_Parser):
        columns_variable = columns

    top = _Sized(
        prog="concorde-workers",
        description="Run one AI coding agent headless on a Git worktree under a frozen grant.",
        epilog=task_types_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    # The package's own version (issue 19 §2), alone or as JSON (issue 31 §3: `--version
    # --json` printed text, `--version plan` dropped the command); main.py says it, and
    # nothing is imported beyond the package's __init__.
    top.add_argument("--version", action="store_true", help="print the version and exit")
    top.add_argument(
        "--json",
        dest="version_json",
        action="store_true",
        help="with --version: print it as one JSON document",
    )
    commands = top.add_subparsers(dest="command", metavar="COMMAND")
    _plan_command(commands)
    _run_command(commands)
    _show_command(commands)
    _verify_command(commands)
    sweep = commands.add_parser(
        "sweep",
        help="remove the runtime directories of hosts that died, finish their records",
        description="Remove the runtime directories (credential copies first) whose host died "
        "without a chance to act (SIGKILL, the out-of-memory killer) and finish "
        "their runs' records as interrupted. Exit 0 when every stale directory is "
        "gone, 1 when one remains or a record could not be written, 2 when the "
        "runtime parent cannot be listed. `run` sweeps before each run too.",
    )
    sweep.add_argument("--json", action="store_true", help="print what was done as JSON")
    _demo_command(commands)
    _setup_commands(commands)
    return top


def version_text(as_json: bool) -> str:
    """What `--version` prints: `concorde-workers <version>`, or with `--json` one document."""
    if as_json:
        return f'{{"program": "concorde-workers", "version": "{__version__}"}}\n'
    return f"concorde-workers {__version__}\n"


def unused_flags(args: argparse.Namespace) -> str | None:
    """Why a command line argparse accepted gives a setting the command would not honour, or
    None (issue 31 §3: a setting is honoured or refused, never dropped). Each message names the
    flags and the repair."""
    if args.version:
        if args.command is not None:
            return (
                "--version takes no command and no flag but --json: give "
                "`concorde-workers --version [--json]` alone, or the command without it"
            )
        return None
    if args.command is None:
        return "the following arguments are required: COMMAND"
    if args.version_json:
        return (
            "--json before the command goes with --version; give it after the command, such "
            f"as `concorde-workers {args.command} ... --json`"
        )
    if args.command == "show":
        return _show_unused(args)
    if args.command == "plan":
        return _plan_unused(args)
    return None


def _show_unused(args: argparse.Namespace) -> str | None:
    modes = [
        flag
        for flag, given in (
            ("--json", args.json),
            ("--diff", args.diff),
            ("--html FILE", args.html is not None),
        )
        if given
    ]
    if len(modes) > 1:
        return (
            f"show {' and '.join(modes)}: show prints the account, or the one thing --json, "
            "--diff or --html asks for; give one of them"
        )
    if args.round_number is not None and not args.diff:
        return (
            "--round N chooses the round whose change --diff prints; add --diff, or leave "
            "--round out"
        )
    return None


ALL_WORKERS_UNUSED = (
    ("--grant", "grant"),
    ("--instructions", "instructions"),
    ("--task-type", "task_type"),
    ("--backend", "backend"),
    ("--interpreter", "interpreter"),
    ("--runtime-path", "runtime_path"),
    ("--check", "check"),
    ("--max-processes", "max_processes"),
    ("--max-memory", "max_memory"),
    ("--max-tmp", "max_tmp"),
    ("--cpu-weight", "cpu_weight"),
)
"""What `plan --all-workers` does not use: it checks the Operation's workers against the model
map and the programs, from the worktree's workers.json and --declare alone."""


def _plan_unused(args: argparse.Namespace) -> str | None:
    if args.keep and not args.example:
        return (
            "--keep keeps the example repository of --example; add --example, or leave --keep out"
        )
    if args.example and (args.request is not None or args.worktree is not None):
        given = "a request file" if args.request is not None else "--worktree"
        return (
            f"--example plans in a throwaway example repository of its own, and {given} names "
            "another worktree; give one of them"
        )
    if args.all_workers:
        unused = [
            flag for flag, dest in ALL_WORKERS_UNUSED if getattr(args, dest) not in (None, [])
        ]
        if unused:
            return (
                f"--all-workers checks every worker of the Operation against workers.json, "
                f"the model map and the programs: {', '.join(unused)} would not be used; leave "
                "them out, or plan one worker with --worker"
            )
    return None


def _show_command(commands: Any) -> None:
    show = commands.add_parser(
        "show",
        help="print the account of a run that ended, from its run directory",
        description="Rebuild the run record from a run directory <parent>/workers/<run-id>/ "
        "and print its account (or the record as JSON). Exit 0 when the record "
        "was read, 2 when the directory holds no readable record.",
    )
    show.add_argument(
        "run_dir", metavar="RUN_DIR", help="the run directory, <parent>/workers/<run-id>/"
    )
    show.add_argument("--json", action="store_true", help="print the run record as JSON")
    show.add_argument(
        "--diff",
        action="store_true",
        help="print each round's change (rounds/<n>/changes.patch) instead of "
        "the account: coloured on a terminal, plain when piped",
    )
    show.add_argument(
        "--round", type=int, metavar="N", dest="round_number", help="with --diff: only round N"
    )
    show.add_argument(
        "--html",
        metavar="FILE",
        help="write a self-contained HTML report of the run to FILE (no network, "
        "no external asset) instead of the account",
    )


def _verify_command(commands: Any) -> None:
    verify = commands.add_parser(
        "verify",
        help="check a run's trace and its signed attestation, wherever it was copied",
        description="Check a run directory <parent>/workers/<run-id>/: every file each trace "
        "node lists is there with its digest, the record agrees with the nodes, the rounds' "
        "patches follow on to the tree the last audit saw (with Git when the run's repository "
        "is at hand), and attestation.json holds the statement the trace gives; with --key, "
        "that its signature holds for that public key. Exit 0 when all holds, 1 naming each "
        "discrepancy, 2 when RUN_DIR holds no run.",
    )
    verify.add_argument(
        "run_dir", metavar="RUN_DIR", help="the run directory, <parent>/workers/<run-id>/"
    )
    verify.add_argument(
        "--key",
        metavar="PUBKEY",
        help="the PEM Ed25519 public key the statement must be signed with",
    )
    verify.add_argument("--json", action="store_true", help="print the findings as JSON")


def _plan_command(commands: Any) -> None:
    """`plan`: what a run would do, or why it would be refused."""
    plan = commands.add_parser(
        "plan",
        help="show what a worker run would do, or why it would be refused",
        description="Print what a worker run would do, without writing a file or starting a "
        "program. The first line is the verdict, with the first reason and its repair. "
        "Exit 0 when a run would launch and every check could start, 2 when it would be "
        "refused.",
    )
    _request_arguments(plan)
    _check_argument(plan)
    _declare_argument(plan)
    plan.add_argument(
        "--example",
        action="store_true",
        help="plan a run in a throwaway example repository created in a "
        "temporary folder, removed once planned",
    )
    plan.add_argument(
        "--keep", action="store_true", help="with --example: keep the example repository"
    )
    plan.add_argument(
        "--all-workers",
        action="store_true",
        help="with --operation NAME: check every worker of the Operation that "
        "workers.json names or --declare declares, against the model map "
        "and the programs, at once (exit 0 every one settles, 2 refused)",
    )


def _run_command(commands: Any) -> None:
    """`run`: one worker run, its progress and its account."""
    run = commands.add_parser(
        "run",
        help="run a worker, show its progress, and account for how it ended",
        description="Run one worker and print the account of its run record (or the record as "
        "JSON). Exit 0 ok, 1 blocked or failed, 2 refused before a run, "
        "130 interrupted (SIGINT or SIGTERM end the run interrupted).",
    )
    _request_arguments(run)
    run.add_argument(
        "--parent",
        metavar="DIR",
        help="the trace node folder the run's directory workers/<run-id>/ is made "
        "in (required; it must exist)",
    )
    _check_argument(run)
    _declare_argument(run)
    run.add_argument(
        "--events",
        action="store_true",
        help="print the run's events as JSON Lines on stdout while it goes (run "
        "started, round started, each tool call and its decision, audit, "
        "check, retry, deletion, run ended; schema in README); the account "
        "then goes to stderr",
    )
