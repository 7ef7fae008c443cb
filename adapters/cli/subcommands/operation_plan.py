"""`plan --operation NAME --all-workers`: the configuration reader's check of a whole Operation
(issue 19 §3) from the command line, as Concorde asks it before it launches any of the
Operation's workers: every worker the worktree's `.concorde/workers.json` names under the
Operation, and every one `--declare NAME:ID` declares, settled at once against the model map and
the programs. Nothing runs and nothing is written.

It says either each worker as it settles (backend, model, local id, level, program, each with
where it came from) with status 0, or the one refusal the reader gives with status 2: a
model_unmapped then names every model and backend pair the map lacks. A worktree that is none is
said as itself (worktree_misplaced), not as the configuration it cannot hold.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from concorde_workers.adapters.cli.flags import declarations, flags_of
from concorde_workers.adapters.cli.output import print_json
from concorde_workers.adapters.cli.status import ExitStatus
from concorde_workers.application.preparation.requests import invalid
from concorde_workers.domain.configuration.config import ResolvedWorker
from concorde_workers.domain.ground.errors import Refusal
from concorde_workers.domain.ground.text import terminal_lines

if TYPE_CHECKING:
    from concorde_workers.container import Container

__all__ = ["plan_operation"]


def plan_operation(args: argparse.Namespace, container: Container, out: TextIO) -> ExitStatus:
    """Check every worker of `args.operation`; print them, or the refusal."""
    settled = _settled(args, container)
    if args.json:
        print_json(_document(args.operation, settled), out)
    else:
        out.write(terminal_lines(_text(args.operation, settled)))
    return ExitStatus.REFUSED if isinstance(settled, Refusal) else ExitStatus.OK


def _settled(args: argparse.Namespace, container: Container) -> list[ResolvedWorker] | Refusal:
    if not args.operation or args.worker:
        return invalid(
            "--all-workers checks every worker of one Operation: give --operation "
            "NAME, without --worker"
        )
    worktree = _worktree(args, container)
    if isinstance(worktree, Refusal):
        return worktree
    declared = declarations(args.declare)
    if isinstance(declared, Refusal):
        return declared
    settled = container.config_reader().check_all_workers(worktree, args.operation, declared)
    if isinstance(settled, Refusal):
        return container.preparer().placement_refusal(worktree) or settled
    return settled


def _worktree(args: argparse.Namespace, container: Container) -> str | Refusal:
    """--worktree, else the request file's worktree (its grant and instructions not needed)."""
    return container.requests().worktree(flags_of(args))


def _document(operation: str, settled: list[ResolvedWorker] | Refusal) -> object:
    if isinstance(settled, Refusal):
        return {
            "verdict": "refused",
            "operation": operation,
            "refusal": {
                "code": settled.code,
                "reason": settled.reason.value,
                "message": settled.message,
                "file": settled.file,
            },
        }
    return {
        "verdict": "settled",
        "operation": operation,
        "workers": [worker.model_dump(mode="json") for worker in settled],
    }


def _text(operation: str, settled: list[ResolvedWorker] | Refusal) -> list[str]:
    if isinstance(settled, Refusal):
        return [
            f"concorde-workers plan — Operation {operation}: refused: {settled.code} "
            f"({settled.reason.value})",
            *(f"  {line}" for line in settled.message.splitlines()),
        ]
    lines = [
        f"concorde-workers plan — Operation {operation}: every worker settles ({len(settled)})"
    ]
    for worker in settled:
        lines += ["", *_worker_lines(worker)]
    return lines


def _worker_lines(worker: ResolvedWorker) -> Sequence[str]:
    reasoning = (
        f"{worker.reasoning} ({worker.reasoning_source})"
        if worker.reasoning
        else "none set: the program's own default level"
    )
    return [
        f"worker {worker.worker}",
        f"  backend:   {worker.backend} ({worker.backend_source})",
        f"  model:     {worker.model} ({worker.model_source}) -> {worker.local_model} "
        f"({worker.model_map})",
        f"  reasoning: {reasoning}",
        f"  program:   {worker.program} ({worker.program_source})",
        *(f"  note:      {said}" for said in (worker.notice, worker.unnamed) if said),
    ]
