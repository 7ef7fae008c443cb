#!/usr/bin/env python3
"""The unit suite's wall and CPU time, against a baseline revision, idle and beside CPU hogs.

    .venv/bin/python benchmarks/unit_suite.py [--baseline REV] [--hogs 0 2] [--repeat 2]

Checks the baseline revision out in a temporary Git worktree and runs, in one process,
interleaved (REPEAT rounds; in each, for every hog count, the baseline then this checkout):
`python -m pytest tests/unit -q -p no:cacheprovider` in each tree, with that tree's package first
on the import path (a `concorde_workers` link in a directory on PYTHONPATH, as scripts/typecheck
makes one) and, beside it, as many `yes > /dev/null` as the hog count asks. Each run's wall time
and CPU time (its processes' user + system) is taken; it prints medians per tree and hog count,
the ratios this checkout / baseline, the load average before each run, and exits 0 (1 when a
suite fails). The figures and how to read them are in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "concorde_workers"


@dataclass(frozen=True)
class Run:
    tree: str
    hogs: int
    wall: float
    cpu: float
    load: float
    summary: str


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_suite(tree: Path, shim: Path, hogs: int) -> tuple[float, float, float, str, int]:
    """(wall, cpu, load before, pytest's last line, exit status) of one unit-suite run."""
    env = {**os.environ, "PYTHONPATH": str(shim)}
    yes = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(hogs)]
    try:
        time.sleep(1)  # the hogs run before the suite starts
        load = os.getloadavg()[0]
        cpu, started = children_cpu(), time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "tests/unit", "-q", "-p", "no:cacheprovider"],
            cwd=tree,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - started
        cpu = children_cpu() - cpu  # before the hogs are reaped: theirs is not the suite's
    finally:
        for hog in yes:
            hog.kill()
            hog.wait()
    lines = done.stdout.strip().splitlines()
    return wall, cpu, load, lines[-1] if lines else "", done.returncode


def shim_for(name: str, tree: Path, base: Path) -> Path:
    shim = base / f"shim-{name}"
    shim.mkdir()
    (shim / PACKAGE).symlink_to(tree)
    return shim


def report(runs: list[Run], hog_counts: list[int]) -> None:
    print(
        f"{'tree':10} {'hogs':>4} {'wall s (median)':>16} {'cpu s (median)':>15} "
        f"{'load before':>12}"
    )
    medians: dict[tuple[str, int], tuple[float, float]] = {}
    for hogs in hog_counts:
        for tree in ("baseline", "checkout"):
            mine = [r for r in runs if r.tree == tree and r.hogs == hogs]
            wall = statistics.median(r.wall for r in mine)
            cpu = statistics.median(r.cpu for r in mine)
            medians[tree, hogs] = wall, cpu
            loads = ", ".join(f"{r.load:.1f}" for r in mine)
            print(f"{tree:10} {hogs:>4} {wall:>16.1f} {cpu:>15.1f} {loads:>12}")
        base_wall, base_cpu = medians["baseline", hogs]
        wall, cpu = medians["checkout", hogs]
        print(f"{'ratio':10} {hogs:>4} {wall / base_wall:>15.2f}x {cpu / base_cpu:>14.2f}x")
    for r in runs:
        print(f"  {r.tree} hogs={r.hogs}: {r.wall:.1f} s wall, {r.cpu:.1f} s cpu: {r.summary}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--baseline",
        default="bd73973",
        help="the revision to compare with (default: main before issue 10 §7)",
    )
    parser.add_argument("--hogs", type=int, nargs="+", default=[0, 2])
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    print(
        f"{os.cpu_count()} CPUs; PYTHONDONTWRITEBYTECODE="
        f"{os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r}; baseline {args.baseline}"
    )
    runs: list[Run] = []
    failed = False
    with tempfile.TemporaryDirectory(prefix="unit-suite-") as tmp:
        base = Path(tmp)
        baseline = base / "baseline"
        subprocess.run(
            [
                "git",
                "-C",
                str(ROOT),
                "worktree",
                "add",
                "--detach",
                "-q",
                str(baseline),
                args.baseline,
            ],
            check=True,
        )
        try:
            trees = {"baseline": baseline, "checkout": ROOT}
            shims = {name: shim_for(name, tree, base) for name, tree in trees.items()}
            for _ in range(args.repeat):
                for hogs in args.hogs:
                    for name, tree in trees.items():
                        wall, cpu, load, summary, status = run_suite(tree, shims[name], hogs)
                        failed = failed or status != 0
                        runs.append(Run(name, hogs, wall, cpu, load, summary))
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(baseline)],
                check=False,
            )
    report(runs, args.hogs)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
