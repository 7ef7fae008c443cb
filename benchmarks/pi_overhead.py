#!/usr/bin/env python3
"""A one-round run of the REAL pi against the scripted model server answering at once, against
pi alone (issue 12 item 4's own framing).

    .venv/bin/python benchmarks/pi_overhead.py [--repeat 7] [--baseline REV]

The world is the pi end-to-end tests' (tests/e2e/conftest_pi.py `build_world`): a real
repository with a `.claude/worktrees/task` worktree, the scripted OpenAI-compatible server on
127.0.0.1, a user's pi configuration reaching it, the pinned pi and sandbox-runtime. The model
answers every request at once with the `concorde_result` tool call. Measured interleaved, REPEAT
times each after one warm-up:

  (a) pi alone: the pinned pi started directly in the worktree with the arguments the host gives
      it that need no runtime directory (`-p --mode json --no-extensions --no-context-files
      --no-skills --no-prompt-templates --tools <the grant's tools> --model <the model>`,
      `--no-session`), the same prompt size on stdin, the same pi configuration: without the
      permission extension (`-e control/permission.ts`, generated into the run's runtime
      directory) and without the sandbox, both of which this ratio counts as the host's;
  (b) `concorde-workers run --json` in a process of its own, as a user runs it (imports,
      placement, the runtime directory, pi confined by bwrap and sandbox-runtime with the
      permission extension, the audit, the record, the cleanup).

With --baseline REV, (b) for REV's package too (the same console script, REV first on the
import path). It prints each, (b) - (a) (target: at most 0.3 s) and (b)/(a) (the issue
measured 4.6x with a stub agent). Exits 0 (1 when a run did not end ok).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from e2e.conftest_pi import MODEL, PI, build_world, reply, result_call  # noqa: E402
from interleave import (  # noqa: E402
    ROOT,
    baseline_tree,
    compiled,
    interleaved,
    one_round_request,
    report,
)
from worlds.repository import GRANT, remove_temp_root  # noqa: E402

CLI = ROOT / ".venv" / "bin" / "concorde-workers"
TOOLS = "read,bash,edit,write,grep,find,ls"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--baseline", metavar="REV")
    args = parser.parse_args(argv)
    compiled()
    root = Path(tempfile.mkdtemp(prefix="pi-bench-"))
    world = build_world(root)
    failures: list[str] = []
    try:
        request = one_round_request(root, world.worktree, GRANT, "pi", MODEL)
        env = {**world.environ, "PATH": f"{ROOT / '.venv' / 'bin'}:{world.environ['PATH']}"}
        prompt = "Do the scripted task. " * 40

        asked = {"pi alone": 0, "run": 0}

        def alone() -> None:
            world.server.add(reply(result_call()))
            before = len(world.server.requests)
            proc = subprocess.run(
                [
                    str(PI),
                    "-p",
                    "--mode",
                    "json",
                    "--no-extensions",
                    "--no-context-files",
                    "--no-skills",
                    "--no-prompt-templates",
                    "--tools",
                    TOOLS,
                    "--no-session",
                    "--model",
                    MODEL,
                ],
                input=prompt.encode(),
                cwd=world.worktree,
                env=env,
                capture_output=True,
                check=False,
            )
            if proc.returncode != 0 or b"concorde_result" not in proc.stdout:
                failures.append("pi alone: " + proc.stderr.decode(errors="replace")[-500:])
            asked["pi alone"] = len(world.server.requests) - before

        def run(env: dict[str, str] = env) -> None:
            world.server.add(reply(result_call()))
            before = len(world.server.requests)
            proc = subprocess.run(
                [str(CLI), "run", str(request), "--json"], env=env, capture_output=True, check=False
            )
            if proc.returncode != 0 or b'"status": "ok"' not in proc.stdout:
                failures.append(
                    "run: " + (proc.stdout + proc.stderr).decode(errors="replace")[-800:]
                )
            asked["run"] = len(world.server.requests) - before

        steps = {"pi alone": alone, "one-round run (CLI, real pi)": run}
        with baseline_tree(args.baseline) as old:
            if args.baseline:
                steps[f"{args.baseline}: one-round run"] = lambda: run(
                    {**env, "PYTHONPATH": old["PYTHONPATH"]}
                )
            samples = interleaved(steps, args.repeat)
        report(samples, "pi alone")
        run_s, alone_s = samples["one-round run (CLI, real pi)"], samples["pi alone"]
        print(
            f"host overhead: {statistics.median(run_s) - statistics.median(alone_s):.3f} s "
            f"(medians), {min(run_s) - min(alone_s):.3f} s (minima); target <= 0.3 s; "
            f"ratio {statistics.median(run_s) / statistics.median(alone_s):.2f} (medians)"
        )
        print(f"model requests per call: {asked}")
        if failures:
            print("failed:", failures[0])
            return 1
        return 0
    finally:
        world.server.stop()
        remove_temp_root(world.temp_root)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    start = time.perf_counter()
    status = main(sys.argv[1:])
    print(f"({time.perf_counter() - start:.0f} s)")
    sys.exit(status)
