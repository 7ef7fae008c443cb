#!/usr/bin/env python3
"""What the host adds to an agent that answers at once: one round, one run and 16 at a time.

    .venv/bin/python benchmarks/run_overhead.py [--repeat 9] [--concurrent 16]
                                                [--concurrent-repeat 3] [--baseline REV]

The agent is tests/fakes/agent_programs/agent.py playing one scenario (a session line, a
transcript, the ok result; nothing else), run through the real host path: the CLI in a process
of its own (tests/fakes/cli_launcher.py: `concorde-workers run` on the production wiring, its
pi backend replaced by ProgramBackend, which starts agent.py through the real process runner,
confinement and stream reader), on a real repository and `.claude/worktrees/` worktree. Measured
interleaved, REPEAT times each after one warm-up:

  (a) the agent alone: the same agent.py and scenario, started directly in the worktree;
  (b) a one-round `run --json` (imports, planning, the runtime directory, the round, the audit,
      the record, the cleanup): its overhead is (b) - (a);
  (c) `python -c pass` and the import of the run's modules, for the share of imports;
  (d) CONCURRENT runs started at once, each in its own worktree, against CONCURRENT agents
      alone started at once (CONCURRENT_REPEAT times each): the wall time until all ended.
  With --baseline REV, (b) and (d) for REV's package and launcher too.

Targets (issue 12 item 4): (b) - (a) at most 0.3 s; (d) runs at most 1.5x (d) agents alone.
Exits 0 (1 when a run did not end ok). The figures are in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from interleave import ROOT, baseline_tree, compiled, interleaved, report  # noqa: E402

PY = sys.executable
RESULT = {
    "status": "ok",
    "summary": "nothing",
    "error": None,
    "proposed_deletions": [],
    "output": {},
}
SCENARIO = [
    {"do": "session", "id": "s-1"},
    {"do": "transcript"},
    {"do": "result", "result": RESULT},
]


def git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=b", "-c", "user.email=b@b", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def build(base: Path, worktrees: int) -> list[Path]:
    """A repository with a few files and `worktrees` linked worktrees, a request file each."""
    repo = base / "repo"
    (repo / "src").mkdir(parents=True)
    for i in range(20):
        (repo / "src" / f"m{i}.py").write_text(f"VALUE = {i}\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "init")
    (base / "scenarios.json").write_text(json.dumps([SCENARIO]))
    (base / "alone").mkdir()
    (base / "alone" / "round-1.json").write_text(json.dumps(SCENARIO))
    found = []
    for n in range(worktrees):
        wt = repo / ".claude" / "worktrees" / f"w{n}"
        git(repo, "worktree", "add", "-q", "-b", f"w{n}", str(wt))
        parent = base / "trace" / f"w{n}"
        parent.mkdir(parents=True)
        grant = {
            "task_type": "implement",
            "context_identity": "sha256:" + "0" * 64,
            "entries": [{"path": "src/", "level": "rw"}],
        }
        (base / f"request-{n}.json").write_text(
            json.dumps(
                {
                    "worktree": str(wt),
                    "task_type": "implement",
                    "parent": str(parent),
                    "grant": grant,
                    "instructions": "Nothing.",
                    "backend": "pi",
                    "limits": {"timeout_seconds": 120, "rounds": 0, "retries": 0},
                }
            )
        )
        found.append(wt)
    return found


class Bench:
    def __init__(self, base: Path, worktrees: list[Path]) -> None:
        self.base, self.worktrees = base, worktrees
        self.env = {**os.environ, "FAKE_RUNTIME_PARENT": str(base / "rt")}
        (base / "rt").mkdir()
        self.failures: list[str] = []

    def agent(self, n: int) -> subprocess.Popen[bytes]:
        state = tempfile.mkdtemp(dir=self.base, prefix="state-")
        return subprocess.Popen(
            [
                PY,
                str(ROOT / "tests" / "fakes" / "agent_programs" / "agent.py"),
                str(self.base / "alone"),
                "--state",
                state,
                "--kind",
                "initial",
                "--session",
                "-",
            ],
            cwd=self.worktrees[n],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )

    def run(self, n: int, launcher: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [
                PY,
                str(launcher),
                str(self.base / "scenarios.json"),
                "run",
                str(self.base / f"request-{n}.json"),
                "--json",
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )

    def wait_all(self, started: list[subprocess.Popen[bytes]], check: bool) -> None:
        for process in started:
            out, _ = process.communicate()
            if check and (process.returncode != 0 or b'"status": "ok"' not in out):
                self.failures.append(out.decode(errors="replace")[-500:])

    def step(
        self, start: Callable[[int], subprocess.Popen[bytes]], count: int, check: bool = False
    ) -> Callable[[], None]:
        return lambda: self.wait_all([start(n) for n in range(count)], check)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--concurrent", type=int, default=16)
    parser.add_argument("--concurrent-repeat", type=int, default=3)
    parser.add_argument("--baseline", metavar="REV")
    args = parser.parse_args(argv)
    compiled()
    base = Path(tempfile.mkdtemp(prefix="run-bench-"))
    try:
        bench = Bench(base, build(base, args.concurrent))
        launcher = ROOT / "tests" / "fakes" / "cli_launcher.py"
        mine = bench.env
        imports = (
            "import concorde_workers.adapters.cli.subcommands.commands, concorde_workers.container"
        )
        with baseline_tree(args.baseline) as old:
            one = {
                "agent alone": bench.step(bench.agent, 1),
                "one-round run": bench.step(lambda n: bench.run(n, launcher, mine), 1, True),
                "python -c pass": lambda: subprocess.run([PY, "-c", "pass"], check=True),
                "import of the run path": lambda: subprocess.run([PY, "-c", imports], check=True),
            }
            many = {
                f"{args.concurrent} agents alone": bench.step(bench.agent, args.concurrent),
                f"{args.concurrent} runs": bench.step(
                    lambda n: bench.run(n, launcher, mine), args.concurrent, True
                ),
            }
            if args.baseline:
                tree = Path(old["PYTHONPATH"]) / "concorde_workers"
                old_launcher = tree.resolve() / "tests" / "fakes" / "cli_launcher.py"
                old_env = {**old, "FAKE_RUNTIME_PARENT": str(base / "rt")}
                one[f"{args.baseline}: one-round run"] = bench.step(
                    lambda n: bench.run(n, old_launcher, old_env), 1
                )
                many[f"{args.baseline}: {args.concurrent} runs"] = bench.step(
                    lambda n: bench.run(n, old_launcher, old_env), args.concurrent
                )
            singles = interleaved(one, args.repeat)
            report(singles, "agent alone")
            crowd = interleaved(many, args.concurrent_repeat, warmup=0)
            ratios = report(crowd, f"{args.concurrent} agents alone", unit=1.0, label="s")
        overhead = statistics.median(singles["one-round run"]) - statistics.median(
            singles["agent alone"]
        )
        low = min(singles["one-round run"]) - min(singles["agent alone"])
        print(
            f"host overhead of a one-round run: {overhead:.3f} s (medians), {low:.3f} s "
            f"(minima); target <= 0.3 s"
        )
        print(
            f"{args.concurrent} runs / {args.concurrent} agents alone: "
            f"{ratios[f'{args.concurrent} runs'][0]:.2f} (medians); target <= 1.5; "
            f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"
        )
        if bench.failures:
            print("a run did not end ok:", bench.failures[0])
            return 1
        return 0
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    start = time.perf_counter()
    status = main(sys.argv[1:])
    print(f"({time.perf_counter() - start:.0f} s)")
    sys.exit(status)
