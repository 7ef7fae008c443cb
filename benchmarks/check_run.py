#!/usr/bin/env python3
"""A whole one-round run on 100,000 files with `--check true` against the same run without it
(issue 32 §3's table row "a whole run on 100k files with --check true vs without").

    .venv/bin/python benchmarks/check_run.py [--repeat 7] [--reuse DIR] [--keep] [--baseline REV]

The tree and grant are plan_walk.py's (a repository of 100,000 tracked files, its
`.claude/worktrees/bench` worktree, the 10-entry grant of rw, ro and names entries: 201 rw
files, 10,201 ro, 10,100 names-only, as the issue measured). The run is `concorde-workers run
--json` in a process of its own through tests/fakes/cli_launcher.py: the production wiring, its
agent an agent.py that answers at once (a session, a transcript, the ok result) in the production
confinement (FAKE_CONFINED=1: a check then runs over the round's own mount plan, as after a real
agent's round, not over a copy of what the grant shows), so that what differs is the host's work
alone — with `--check true`, the check's starting state kept for gate
narrowing (issue 32 §3: lazily), the check's sandbox over its copy-on-write layer, and the
check's result in the record. Measured interleaved, REPEAT times each after one warm-up: wall
time and the CPU time of the run's process tree (user + system of the waited-for children).

With --baseline REV, both for REV's package too (the same launcher, REV first on the import
path). Prints medians, minima and maxima and the ratio with/without (goal: at most 1.1x wall).
Exits 0 (1 when a run did not end ok). The figures are in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from interleave import ROOT, baseline_tree, compiled, interleaved, report  # noqa: E402
from plan_walk import setup  # noqa: E402

PY = sys.executable
LAUNCHER = ROOT / "tests" / "fakes" / "cli_launcher.py"
SCENARIO = [
    {"do": "session", "id": "s-1"},
    {"do": "transcript"},
    {
        "do": "result",
        "result": {
            "status": "ok",
            "summary": "nothing",
            "error": None,
            "proposed_deletions": [],
            "output": {},
        },
    },
]


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--reuse", metavar="DIR", help="a directory an earlier --keep left")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument("--baseline", metavar="REV")
    args = parser.parse_args(argv)
    compiled()
    base = Path(args.reuse) if args.reuse else Path(tempfile.mkdtemp(prefix="plan-bench-"))
    failures: list[str] = []
    cpu: dict[str, list[float]] = {}
    runtime = Path(tempfile.mkdtemp(prefix="check-run-rt-"))
    try:
        worktree, grant, env = setup(base, args.files)
        (base / "scenarios.json").write_text(json.dumps([SCENARIO]))
        parent = base / "trace"
        parent.mkdir(exist_ok=True)
        request = base / "request.json"
        request.write_text(
            json.dumps(
                {
                    "worktree": str(worktree),
                    "task_type": "implement",
                    "parent": str(parent),
                    "grant": json.loads(grant.read_text()),
                    "instructions": "Nothing.",
                    "backend": "pi",
                    "limits": {"timeout_seconds": 300, "rounds": 0, "retries": 0},
                }
            )
        )
        env = {**env, "FAKE_RUNTIME_PARENT": str(runtime), "FAKE_CONFINED": "1"}

        command = [PY, str(LAUNCHER), str(base / "scenarios.json"), "run", str(request), "--json"]

        def run(name: str, extra: list[str], env: dict[str, str] = env) -> Callable[[], None]:
            def step() -> None:
                before = children_cpu()
                proc = subprocess.run(
                    [*command, *extra],
                    cwd=worktree,
                    env=env,
                    capture_output=True,
                    check=False,
                )
                cpu.setdefault(name, []).append(children_cpu() - before)
                if proc.returncode != 0 or b'"status": "ok"' not in proc.stdout:
                    failures.append(f"{name}: " + (proc.stdout + proc.stderr).decode()[-800:])

            return step

        steps = {
            "run": run("run", []),
            "run --check true": run("run --check true", ["--check", "true"]),
        }
        with baseline_tree(args.baseline) as old:
            if args.baseline:
                old_env = {**env, "PYTHONPATH": old["PYTHONPATH"]}
                steps[f"{args.baseline}: run"] = run(f"{args.baseline}: run", [], old_env)
                name = f"{args.baseline}: run --check true"
                steps[name] = run(name, ["--check", "true"], old_env)
            samples = interleaved(steps, args.repeat)
        print("wall time:")
        ratios = report(samples, "run")
        print("CPU time of the run's processes (the warm-up's dropped):")
        report({k: v[1:] for k, v in cpu.items()}, "run")
        print(
            "goal: `run --check true` <= 1.1x `run` wall "
            f"(here {ratios['run --check true'][0]:.2f})"
        )
        print(f"wall medians: {[round(statistics.median(v), 3) for v in samples.values()]}")
        print(f"load average {os.getloadavg()}")
        if failures:
            print("failed:", failures[0])
            return 1
        return 0
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
        if args.keep or args.reuse:
            print(f"kept {base} (--reuse {base})")
        else:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
