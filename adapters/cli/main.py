"""The console script `concorde-workers`: parse the command line, wire, dispatch.

The host environment is read here, once, and handed to the command through its `Wiring`
(wiring.py), which imports the composition root only when the command needs a container. A
usage error is a refusal (status 2); Ctrl-C outside a run's own handling ends with 130; an
unexpected fault prints one line naming it (and how to report it) with status 3, never a
traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TextIO

from concorde_workers.adapters.cli.commands import run_plan, run_run, run_show, run_sweep
from concorde_workers.adapters.cli.output import print_refusal
from concorde_workers.adapters.cli.parser import UsageError, parser, usage_refusal
from concorde_workers.adapters.cli.status import ExitStatus
from concorde_workers.adapters.cli.wiring import Wiring
from concorde_workers.domain.text import terminal_lines

if TYPE_CHECKING:
    from concorde_workers.container import Container


def run_demo_command(args: argparse.Namespace, out: TextIO, err: TextIO,
                     wiring: Wiring) -> ExitStatus:
    """`demo` (demo.py): a real pi worker offline in a throwaway repository. Imported here, when
    asked for, so that no other command loads it."""
    from concorde_workers.adapters.cli.demo import run_demo

    return run_demo(args, out, err, wiring)


COMMANDS: dict[str, Callable[[argparse.Namespace, TextIO, TextIO, Wiring], ExitStatus]] = {
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
    wiring = Wiring(environ=dict(os.environ), given=container)
    try:
        return int(command(args, out, err, wiring))
    except KeyboardInterrupt:
        err.write("concorde-workers: interrupted\n")
        return int(ExitStatus.INTERRUPTED)
    except Exception as fault:  # a defect of ours: say so in one line, never a traceback
        err.write(terminal_lines([
            f"concorde-workers: internal error ({type(fault).__name__}: {fault}); this is a "
            "defect of concorde-workers: report it with the command line"]))
        return int(ExitStatus.INTERNAL)


if __name__ == "__main__":  # `python -m concorde_workers.adapters.cli.main`
    sys.exit(main())
