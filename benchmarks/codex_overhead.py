#!/usr/bin/env python3
"""A one-round run of the REAL Codex CLI against the scripted Responses API server answering at
once, against `codex exec` alone on the same server (issue 33's closing figures).

    .venv/bin/python benchmarks/codex_overhead.py [--repeat 7]

The world is the Codex end-to-end tests' (tests/e2e/conftest_codex.py `build_codex_world`): a
real repository with a `.claude/worktrees/task` worktree, the scripted Responses API server on
127.0.0.1, the machine's `codex.json` reaching it, the pinned codex. The model answers every
request at once with a valid worker result. Measured interleaved, REPEAT times each after one
warm-up:

  (a) `codex exec` alone: the pinned native codex started directly on the worktree with the
      hardened configuration of ../shared/notes/codex.md in a fresh CODEX_HOME each time
      (tests/servers/codex_exec.py: `exec --json --strict-config --skip-git-repo-check -s
      workspace-write -C <worktree> -o <file> -`), the same prompt size on stdin: codex's own
      sandbox on, without the host's namespace, control group, audit or record;
  (b) `concorde-workers run --json` in a process of its own, as a user runs it (imports,
      placement, the runtime directory and CODEX_HOME, codex confined by the grant-built
      namespace with its own sandbox inside, the audit, the record, the cleanup).

It prints each, (b) - (a) and (b)/(a), and the load. Exits 0 (1 when a run did not end ok).
"""

from __future__ import annotations

import argparse
import os
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

from e2e.conftest_codex import build_codex_world, result_turn  # noqa: E402
from interleave import ROOT, compiled, interleaved, one_round_request, report  # noqa: E402
from servers.codex_exec import MODEL, CodexExec, find_codex, hardened_config  # noqa: E402
from worlds.repository import GRANT, remove_temp_root  # noqa: E402

CLI = ROOT / ".venv" / "bin" / "concorde-workers"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    compiled()
    root = Path(tempfile.mkdtemp(prefix="codex-bench-"))
    world = build_codex_world(root)
    program = find_codex()
    assert program is not None
    failures: list[str] = []
    try:
        request = one_round_request(root, world.worktree, GRANT, "codex", MODEL)
        env = {**world.environ, "PATH": f"{ROOT / '.venv' / 'bin'}:{world.environ['PATH']}"}
        prompt = "Do the scripted task. " * 40
        asked = {"codex exec alone": 0, "run": 0}

        def alone() -> None:
            scratch = Path(tempfile.mkdtemp(prefix="alone-", dir=root))
            codex = CodexExec(program, scratch, world.worktree)
            codex.configure(hardened_config(world.server.base_url))
            world.server.add(result_turn())
            before = len(world.server.requests)
            result = codex.run(prompt)
            if result.code != 0 or result.last_message is None:
                failures.append("codex exec alone: " + result.explain()[-800:])
            asked["codex exec alone"] = len(world.server.requests) - before
            shutil.rmtree(scratch, ignore_errors=True)

        def run() -> None:
            world.server.add(result_turn())
            before = len(world.server.requests)
            proc = subprocess.run(
                [str(CLI), "run", str(request), "--json"], env=env, capture_output=True, check=False
            )
            if proc.returncode != 0 or b'"status": "ok"' not in proc.stdout:
                failures.append(
                    "run: " + (proc.stdout + proc.stderr).decode(errors="replace")[-800:]
                )
            asked["run"] = len(world.server.requests) - before

        samples = interleaved(
            {"codex exec alone": alone, "one-round run (CLI, real codex)": run}, args.repeat
        )
        report(samples, "codex exec alone")
        run_s, alone_s = samples["one-round run (CLI, real codex)"], samples["codex exec alone"]
        print(
            f"host overhead: {statistics.median(run_s) - statistics.median(alone_s):.3f} s "
            f"(medians), {min(run_s) - min(alone_s):.3f} s (minima); "
            f"ratio {statistics.median(run_s) / statistics.median(alone_s):.2f} (medians)"
        )
        print(f"model requests per call: {asked}; load average {os.getloadavg()}")
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
