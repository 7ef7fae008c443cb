"""What the command line's flags mean to the use cases: the request flags (`RequestFlags`), the
declared Operations and workers, and a usage error as a refusal.

Apart from the grammar (parser.py), so that parsing (and `--help`) imports no model: this module
is imported when a command runs, or a usage error is reported.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING

from concorde_workers.application.preparation.requests import RequestFlags, invalid
from concorde_workers.domain.ground.errors import Refusal

if TYPE_CHECKING:
    from concorde_workers.adapters.cli.parser import UsageError


def usage_refusal(usage: UsageError) -> Refusal:
    return invalid(f"{usage.prog}: {usage.message}; see {usage.prog} --help")


def flags_of(args: argparse.Namespace) -> RequestFlags:
    return RequestFlags(
        request_file=args.request,
        worktree=args.worktree,
        task_type=args.task_type,
        grant_file=args.grant,
        instructions=args.instructions,
        operation=args.operation,
        worker=args.worker,
        backend=args.backend,
        interpreter=args.interpreter,
        runtime_paths=tuple(args.runtime_path),
        parent=getattr(args, "parent", None),
        checks=tuple(getattr(args, "check", ())),
        max_processes=args.max_processes,
        max_memory=args.max_memory,
        cpu_weight=args.cpu_weight,
        max_space=args.max_space,
        max_tmp=args.max_tmp,
    )


def declarations(values: Sequence[str]) -> dict[str, set[str]] | Refusal:
    """`OPERATION:WORKER` flags as Operation -> worker ids."""
    declared: dict[str, set[str]] = {}
    for value in values:
        operation, colon, worker = value.partition(":")
        if not (operation and colon and worker):
            return invalid(
                f"--declare {value!r} is not OPERATION:WORKER, such as --declare implement:worker"
            )
        declared.setdefault(operation, set()).add(worker)
    return declared
