#!/usr/bin/env python3
"""What one call of a Claude Code hook costs (issue 32 §3 "ship it compiled").

    .venv/bin/python benchmarks/hook_cost.py [--repeat 30] [--baseline REV]

Generates the read hook of benchmarks/policy_tables.py's policy (a 200-entry grant, runtime
paths, Git admin paths, homes) and runs it as Claude Code runs it (`python -I -S <hook>`, one
Read call on stdin), interleaved with `python -I -S -c pass` (the interpreter's own start), each
REPEAT times after a warm-up:

  pass        the interpreter's start alone (the floor);
  source      control/read_hook_source.py, the hook's source, compiled at the call (what every
              call cost before issue 32 §3);
  compiled    control/read_hook.py, the launcher the settings run: the same code, compiled when
              the run was prepared;
  baseline    (with --baseline REV) the read hook REV generates, run the same way.

Each sample is the child's CPU time (user + system, from the kernel's accounting of the
waited-for child), which a loaded machine inflates less than wall time; the wall time's medians
are printed after. The goal: at most 25 ms of CPU per call. The figures are in
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from interleave import baseline_tree
from policy_tables import RT, WT

GENERATE = """
import json, sys
sys.path.insert(0, {bench!r})
import policy_tables as P
from concorde_workers.adapters.claude.guard.hooks import hook_files
from concorde_workers.domain.boundary.grant import parse_grant
from concorde_workers.domain.boundary.policy import build_policy
from concorde_workers.domain.gitview.placement import AdminPath
grant = parse_grant({{"task_type": "implement", "context_identity": "sha256:bench",
                     "entries": P.grant_entries()}})
policy = build_policy(
    grant=grant, worktree=P.WT, primary=P.PRIMARY, user_home=P.HOME, runtime_dir=P.RT,
    runtime_paths=(f"{{P.WT}}/.venv", "/usr/lib/python3"), list_dir=lambda _p: [],
    git=(AdminPath(path=f"{{P.PRIMARY}}/.git", directory=True),
         AdminPath(path=f"{{P.WT}}/.git", directory=False)),
    homes=(P.HOME, "/srv/home/u"), config_dirs=("/opt/cfg/claude",),
    credentials=("/opt/cfg/claude/.credentials.json",),
    run_directories=("/srv/trace/op-1/workers",), **P.runtime_entries(build_policy))
json.dump(hook_files(policy), sys.stdout)
"""


def generated(env: dict[str, str]) -> dict[str, str]:
    """The hook files a revision generates for the benchmark's policy (path -> text)."""
    done = subprocess.run(
        [sys.executable, "-c", GENERATE.format(bench=str(Path(__file__).parent))],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    files: dict[str, str] = json.loads(done.stdout)
    return files


def write(folder: Path, files: dict[str, str], name: str) -> Path:
    """The files written below `folder` at their paths' tails (control/…), with the launcher's
    source path pointed there; the one named `name` returned."""
    for path, text in files.items():
        target = folder / Path(path).name
        target.write_text(text.replace(f"{RT}/control/", f"{folder}/"), encoding="utf-8")
    return folder / name


def one(argv: list[str], call: bytes) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one run of `argv` with `call` on stdin."""
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    done = subprocess.run(argv, input=call, capture_output=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert b"only the name" in done.stdout or b"names" in done.stdout, done
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--baseline", default=None)
    args = parser.parse_args()
    call = json.dumps(
        {
            "tool_name": "Read",
            "cwd": f"{RT}/work",
            "tool_input": {"file_path": f"{WT}/src/m01/d01/f001001.py"},
        }
    ).encode()
    interpreter = [sys.executable, "-I", "-S"]
    with tempfile.TemporaryDirectory(prefix="bench-hook-") as base:
        now = Path(base, "now")
        now.mkdir()
        files = generated(dict(os.environ))
        steps = {
            "pass": [*interpreter, "-c", "import sys; sys.stdout.write('names')"],
            "source": [*interpreter, str(write(now, files, "read_hook_source.py"))],
            "compiled": [*interpreter, str(write(now, files, "read_hook.py"))],
        }
        if args.baseline:
            old = Path(base, "baseline")
            old.mkdir()
            with baseline_tree(args.baseline) as env:
                steps["baseline"] = [*interpreter, str(write(old, generated(env), "read_hook.py"))]
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in steps}
        names = list(steps)
        for name in names:
            one(steps[name], call)  # warm-up
        for i in range(args.repeat):
            shift = i % len(names)
            for name in names[shift:] + names[:shift]:
                samples[name].append(one(steps[name], call))
    floor = statistics.median(c for c, _ in samples["pass"])
    print(f"{'step':<9} {'CPU median ms':>13} {'min':>6} {'wall median ms':>14}  {'over pass':>9}")
    for name, values in samples.items():
        cpu = [c for c, _ in values]
        wall = [w for _, w in values]
        print(
            f"{name:<9} {statistics.median(cpu) * 1000:>13.1f} {min(cpu) * 1000:>6.1f} "
            f"{statistics.median(wall) * 1000:>14.1f}  "
            f"{(statistics.median(cpu) - floor) * 1000:>+8.1f}"
        )
    print(
        f"(n = {args.repeat} each, interleaved; CPU of the child; "
        f"load average now {os.getloadavg()[0]:.1f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
