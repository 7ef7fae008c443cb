#!/usr/bin/env python3
"""What the lifeline costs a namespace's start (docs/decisions.md "A namespace's lifeline").

    .venv/bin/python benchmarks/lifeline_cost.py [--repeat 30]

Measures in one process, each REPEAT times, interleaved, after one warm-up, through the
production process runner (which waits for the namespace's init to exit, as a round and a check
do): a check's sandbox (`bwrap` with the host's `SANDBOX_ARGS`) running `/bin/true`, without and
with the lifeline in front (`/bin/sh -c LIFELINE_SCRIPT concorde-lifeline <fd>`), which makes the
runner put its guard (`GUARD_SCRIPT`, one `/bin/sh` more) in front of bwrap too. Prints medians,
minima and maxima and the ratio against the sandbox without it; exits 0.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from interleave import interleaved, report

from concorde_workers.adapters.processes.process import SubprocessRunner
from concorde_workers.domain.gitview.git_commands import SANDBOX_ARGS
from concorde_workers.domain.isolation.launch import NAMESPACE_REPORT_FD, lifeline


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        print("bubblewrap is not installed (./scripts/setup installs it)", file=sys.stderr)
        return 1
    runner = SubprocessRunner()
    sandbox = [bwrap, *SANDBOX_ARGS, "--info-fd", NAMESPACE_REPORT_FD, "--"]
    env = {"PATH": "/usr/bin:/bin"}

    def run(argv: list[str]) -> None:
        handle = runner.start(argv, env, "/")
        if handle.wait(60) != 0:
            raise SystemExit(f"{argv[-1]} failed in the sandbox")

    samples = interleaved(
        {
            "sandbox, /bin/true": lambda: run([*sandbox, "/bin/true"]),
            "sandbox + lifeline, /bin/true": lambda: run(
                [*sandbox, *lifeline("/bin/sh"), "/bin/true"]
            ),
        },
        args.repeat,
    )
    report(samples, "sandbox, /bin/true")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
