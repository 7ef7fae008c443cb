"""`plan` (the dry-run planner): what a run of this request would do, or the refusals it would
meet, with nothing launched and nothing written.

Every bad input ends in a refusal that names the file or entry and the repair, with status 2: a
refusal the planned run would meet is part of the plan, on stdout; a refusal of the command's
own input (the request file, a flag) goes to stderr.

This module imports only what planning needs (issue 32 §2): `run`, `show` and `sweep` live in
commands.py with the display, the report and the record readers, which a plan never loads.
`run` takes `parent_refusal` from here, so both judge the parent alike.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from concorde_workers.adapters.cli.flags import declarations, flags_of
from concorde_workers.adapters.cli.output import print_json, print_refusal
from concorde_workers.adapters.cli.status import ExitStatus
from concorde_workers.adapters.cli.subcommands.operation_plan import plan_operation
from concorde_workers.adapters.cli.views.plan_text import render
from concorde_workers.application.checks.checks import place_for
from concorde_workers.application.preparation.planner import Plan
from concorde_workers.application.preparation.requests import instructions_missing, invalid
from concorde_workers.application.setup.resources import RunResources
from concorde_workers.domain.ground.errors import Code, Reason, Refusal
from concorde_workers.domain.ground.text import terminal_lines
from concorde_workers.domain.run.checks import Check, format_seconds

if TYPE_CHECKING:
    from concorde_workers.adapters.cli.wiring import ExampleRepository, Wiring
    from concorde_workers.container import Container
    from concorde_workers.domain.configuration.request import RunRequest
    from concorde_workers.ports.machine.filesystem import PathFacts

__all__ = ["checks_plan", "parent_refusal", "resources_plan", "run_plan"]


# --- plan --------------------------------------------------------------------------------------


def run_plan(args: argparse.Namespace, out: TextIO, err: TextIO, wiring: Wiring) -> ExitStatus:
    """0 a run would launch, 2 it would be refused; `--example` plans in a throwaway example
    repository, on the production wiring pointed at it."""
    if args.example:
        made = wiring.example()
        if isinstance(made, Refusal):
            print_refusal(made, args.json, out, err)
            return ExitStatus.REFUSED
        example, additions = made
        if args.request is None:
            args.request = example.request_file
        args.declare = [*args.declare, *example.declared]
        if not args.json:
            out.write(
                terminal_lines(
                    [
                        f"example repository: {example.primary}",
                        f"worktree:           {example.worktree}",
                        f"request:            {example.request_file}",
                        "",
                    ]
                )
            )
        try:
            return _plan(args, wiring.production({**wiring.environ, **additions}), out, err)
        finally:
            _discard_example(example, bool(args.keep), err)
    return _plan(args, wiring.container(), out, err)


def _discard_example(example: ExampleRepository, keep: bool, err: TextIO) -> None:
    """The example repository goes once planned, unless --keep (docs/decisions.md "The
    throwaway repositories"): the plan names its paths, and nothing ran in it."""
    if keep:
        err.write(terminal_lines([f"kept (--keep): {example.primary}"]))
        return
    try:
        example.discard()
    except OSError as error:
        err.write(
            terminal_lines(
                [
                    f"the example repository {example.primary} could not be "
                    f"removed ({error}); remove it by hand"
                ]
            )
        )


def _plan(args: argparse.Namespace, container: Container, out: TextIO, err: TextIO) -> ExitStatus:
    if args.all_workers:
        return plan_operation(args, container, out)
    request = container.requests().build(flags_of(args))
    checks = container.requests().checks(flags_of(args))
    declared = declarations(args.declare)
    for bad in (request, checks, declared):
        if isinstance(bad, Refusal):
            print_refusal(bad, args.json, out, err)
            return ExitStatus.REFUSED
    assert not isinstance(request, Refusal) and not isinstance(checks, Refusal)
    assert not isinstance(declared, Refusal)
    plan: Plan = container.planner().plan(request, declared)
    # What `run` refuses of the request before it exists is the plan's verdict too: a parent
    # the request file names (plan has no --parent) and the instructions (issue 31 §2, §3).
    parent = parent_refusal(container.filesystem(), request, args) if request.parent else None
    plan.input_refusals += [parent] if parent is not None else []
    missing = instructions_missing(request, flags_of(args))
    plan.request_refusals += [missing] if missing is not None else []
    # Nothing runs: what each check's first word resolves to in its sandbox (issue 19 §1), and
    # a check that cannot start refuses the run as `run` refuses it (issue 31 §2).
    preview = (
        container.checks_validation(checks=checks, place=place_for(plan.request)).preview()
        if checks
        else None
    )
    plan.checks_refusal = preview.refusal() if preview is not None else None
    resources = RunResources(
        container.resource_groups(), plan.request.resources, "", container.machine_resources()
    )
    refused = resources.refused()
    if refused is not None:
        plan.launch_refusals.insert(
            0, Refusal(code=Code.LAUNCH_FAILED, reason=Reason.ENVIRONMENT, message=refused)
        )
    if args.json:
        print_json(
            {
                **plan.to_json(),
                **(preview.to_json() if preview is not None else {}),
                "resources": {**resources.metadata(), "refused": refused},
            },
            out,
        )
    else:
        lines = [
            *(
                checks_plan(checks, [p.said for p in preview.programs], preview.view)
                if preview is not None
                else []
            ),
            *resources_plan(resources),
        ]
        out.write(render(plan) + terminal_lines(lines))
    return ExitStatus.OK if plan.launches else ExitStatus.REFUSED


def resources_plan(resources: RunResources) -> list[str]:
    """What `plan` says of the run's resource limits (issue 20): the limits, how this machine
    enforces them, and when it cannot while the request asked for them, that the run would end
    launch_failed."""
    lines = [
        "",
        f"Resources (each round in a control group of its own): "
        f"{resources.limits.text()}; {resources.enforcement.text()}",
        f"  the runtime directory's writable spaces, the run's own for a confined run: the "
        f"agent's (config/) and the worker's (home/, tmp/ and work/), a tmpfs of "
        f"{resources.limits.space_mib} MiB each: a write past one fails (ENOSPC), and nothing "
        "of either reaches the disk",
    ]
    refused = resources.refused()
    if refused:
        lines.append(f"  the run would end launch_failed: {refused}")
    return lines


def checks_plan(checks: Sequence[Check], programs: Sequence[str] = (), view: str = "") -> list[str]:
    """What `plan` says of the run's checks (README "CLI", `--check`), each with what its first
    word resolves to in its sandbox when `programs` says it, and what they run over (`view`,
    the runner's answer on this machine)."""
    if not checks:
        return []
    over = view or "on a view of their own of what the grant lets the worker read"
    lines = [
        "",
        f"Checks (after every round whose worker ended ok with a clean audit, {over}, "
        "in a network-less sandbox; one that fails is run again on the run's starting "
        "state):",
    ]
    for index, c in enumerate(checks):
        lines.append(f"  {c.id}: {c.command} (timeout {format_seconds(c.timeout_seconds)} s)")
        if index < len(programs):
            lines.append(f"    {programs[index]}")
    return lines


def parent_refusal(fs: PathFacts, request: RunRequest, args: argparse.Namespace) -> Refusal | None:
    """`run` needs an existing parent trace node folder: from --parent, else the request file."""
    if not request.parent:
        return invalid(
            "a run needs --parent DIR: the trace node folder in which the run's "
            "directory workers/<run-id>/ is made; give --parent with an existing "
            'directory (or a "parent" field in the request file)',
            args.request,
        )
    if fs.is_dir(request.parent):
        return None
    where = (
        "--parent"
        if getattr(args, "parent", None) is not None or not args.request
        else f'the "parent" field of the request file {args.request}'
    )
    what = "is not a directory" if fs.lexists(request.parent) else "does not exist"
    return invalid(
        f"the parent trace node folder {request.parent} ({where}) {what}; create it "
        "first or give an existing directory: a run never creates its parent",
        request.parent,
    )
