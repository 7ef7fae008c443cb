#!/usr/bin/env python3
"""What starting the command line costs over starting the interpreter.

    .venv/bin/python benchmarks/cli_startup.py [--repeat 21] [--baseline REV]

Runs, interleaved, REPEAT times each (after one warm-up of each), every step a fresh process:

  (a) `python -c pass` — the interpreter's own start, with this virtual environment's site;
  (b) `python -c "import concorde_workers.adapters.cli.main"` — the console script's import;
  (c) `concorde-workers --help` and `concorde-workers plan --help` (the installed script);
  (d) with --baseline REV: (b) and `python -m concorde_workers.adapters.cli.main --help` with
      that revision's package first on the import path (the "before" figures).

It prints medians, minima and maxima and each step's ratio to (a); the targets (issue 32 §2) are
at most 1.3 for (b) and 1.6 for (c) (issue 12 item 4 asked 3.0). Exits 0. The figures are in
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from interleave import baseline_tree, compiled, interleaved, report

PYTHON = sys.executable
SCRIPT = str(Path(PYTHON).parent / "concorde-workers")


def process(argv: list[str], env: Mapping[str, str] | None = None) -> Callable[[], object]:
    def run() -> None:
        subprocess.run(
            argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True
        )

    return run


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument(
        "--baseline",
        metavar="REV",
        help="also measure REV's import and --help (e.g. the commit before)",
    )
    args = parser.parse_args(argv)
    compiled()
    steps: dict[str, Callable[[], object]] = {
        "python -c pass": process([PYTHON, "-c", "pass"]),
        "import cli.main": process([PYTHON, "-c", "import concorde_workers.adapters.cli.main"]),
        "concorde-workers --help": process([SCRIPT, "--help"]),
        "concorde-workers plan --help": process([SCRIPT, "plan", "--help"]),
    }
    with baseline_tree(args.baseline) as env:
        if args.baseline:
            steps[f"{args.baseline}: import cli.main"] = process(
                [PYTHON, "-c", "import concorde_workers.adapters.cli.main"], env
            )
            steps[f"{args.baseline}: --help"] = process(
                [PYTHON, "-m", "concorde_workers.adapters.cli.main", "--help"], env
            )
        ratios = report(interleaved(steps, args.repeat), "python -c pass")
    helps = max(ratios[name][0] for name in list(steps)[2:4])
    print(
        f"targets: import at most 1.3x python -c pass (here {ratios['import cli.main'][0]:.2f}),"
        f" --help at most 1.6x (worst here {helps:.2f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
