"""`init`: the files of a project's first run (application/setup/starter.py), said line by line with
the command to run next, and how this machine's runs are signed (issue 30 §4)."""

from __future__ import annotations

import argparse
from typing import TextIO

from concorde_workers.adapters.cli.output import print_json, print_refusal
from concorde_workers.adapters.cli.status import ExitStatus
from concorde_workers.adapters.cli.wiring import Wiring
from concorde_workers.domain.configuration.signing import KeyFact
from concorde_workers.domain.ground.errors import Refusal
from concorde_workers.domain.ground.text import terminal_lines


def run_init(args: argparse.Namespace, out: TextIO, err: TextIO, wiring: Wiring) -> ExitStatus:
    """0 the files are in place (written or kept), 2 refused (nothing further written)."""
    container = wiring.container()
    done = container.starter().init(args.repo, args.task, bool(args.force))
    if isinstance(done, Refusal):
        print_refusal(done, args.json, out, err)
        return ExitStatus.REFUSED
    key = container.signing_key()
    signing = KeyFact(location=key.location, key_id=key.key_id, problem=key.problem).said()[1]
    if args.json:
        print_json(
            {
                "primary": done.primary,
                "worktree": done.worktree,
                "grant": done.grant,
                "done": done.done,
                "next": done.next_command,
                "signing_key": signing,
            },
            out,
        )
    else:
        out.write(
            terminal_lines(
                [
                    f"concorde-workers init in {done.primary}",
                    *(f"  {line}" for line in done.done),
                    "",
                    f"  signing key: {signing}",
                    "",
                    "next:",
                    f"  {done.next_command}",
                ]
            )
        )
    return ExitStatus.OK
