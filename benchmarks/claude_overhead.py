#!/usr/bin/env python3
"""A one-round run of the REAL Claude Code against the scripted Messages API answering at once,
against Claude Code alone on the same server (issue 32 §4's table row), with where the host's
share goes.

    .venv/bin/python benchmarks/claude_overhead.py [--repeat 7] [--baseline REV]

The world is the end-to-end tests' (tests/e2e/conftest.py `claude_world`, built here without
pytest): a real repository with a `.claude/worktrees/task` worktree, the scripted Anthropic
server on 127.0.0.1 (tests/servers/anthropic_server.py), a user's CLAUDE_CONFIG_DIR with dummy
credentials, the pinned Claude Code as a hard link in a `node_modules` the confinement keeps
visible, and a wrapper beside it that adds ANTHROPIC_BASE_URL (a shell script only: the e2e
wrapper's Python start logger would be counted on one side only). The model answers every
request at once with the worker result through StructuredOutput. Measured interleaved, REPEAT
times each after one warm-up:

  (a) Claude Code alone: the same wrapper, started directly in the worktree with the round's
      argv (adapters/claude/launch.py `claude_command`) less `--settings` (so without the
      generated sandbox, hooks and permissions, which this ratio counts as the host's), the
      environment the host gives a round (the three CLAUDE_CODE_DISABLE_* variables), the
      same prompt size on stdin;
  (b) `concorde-workers run --json` in a process of its own, as a user runs it;
  (c) `python -c pass` and (d) the import of the run's path in a process (the imports' share).

With --baseline REV, (b) for REV's package too. Prints each, the ratio (b)/(a) (goal <= 1.5x)
and a breakdown of (b) - (a) by medians: the imports ((d) - (c)), the round inside the
confinement against Claude Code alone (the round's `duration_seconds` from the record minus
(a): the program's slowdown, its own sandbox set-up included), and the host's own steps (the
rest: interpreter, placement, runtime directory, confinement start, audit, record, cleanup).
Exits 0 (1 when a run did not end ok).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
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

from e2e.conftest import DUMMY_CREDENTIALS, ok_result  # noqa: E402
from e2e.conftest_pi import build_world  # noqa: E402
from interleave import (  # noqa: E402
    ROOT,
    baseline_tree,
    compiled,
    interleaved,
    one_round_request,
    report,
)
from servers.anthropic_server import AnthropicServer, Reply  # noqa: E402
from servers.claude_wrapper import find_claude, visible_copy  # noqa: E402
from worlds.repository import GRANT, remove_temp_root  # noqa: E402

from concorde_workers.adapters.claude.launch import claude_command  # noqa: E402
from concorde_workers.contracts import worker_result_schema  # noqa: E402
from concorde_workers.domain.isolation.launch import schema_text  # noqa: E402

CLI = ROOT / ".venv" / "bin" / "concorde-workers"
PY = str(ROOT / ".venv" / "bin" / "python")
MODEL = "claude-opus-4-8"
TOOLS = ("Read", "Edit", "Write", "Bash", "Glob", "Grep")
ROUND_ENV = {
    "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
    "CLAUDE_CODE_DISABLE_CLAUDE_MDS": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
}


def wrapper(root: Path, base_url: str) -> Path:
    """The pinned claude, visible to the confinement, behind a shell wrapper that points it at
    the scripted server (as tests/servers/claude_wrapper.py, without its logger)."""
    found = find_claude()
    if found is None:
        raise SystemExit("the pinned claude is missing: run ./scripts/setup")
    program = visible_copy(found, root / "programs")
    path = program.parent / "wrappers" / "bench" / "claude"
    path.parent.mkdir(parents=True)
    path.write_text(
        "#!/bin/sh\n"
        f"export ANTHROPIC_BASE_URL={shlex.quote(base_url)}\n"
        "export CLAUDE_CODE_MAX_RETRIES=0\n"
        f'exec {shlex.quote(str(program))} "$@"\n'
    )
    path.chmod(0o755)
    return path


def alone_argv(program: Path) -> list[str]:
    """The round's argv without `--settings <file>`."""
    schema = schema_text(worker_result_schema(None))  # as preparation.py gives it
    argv = list(
        claude_command(
            runtime="/nonexistent",
            tools=TOOLS,
            result_schema=schema,
            max_turns=5,
            model=MODEL,
            program=str(program),
        ).argv
    )
    at = argv.index("--settings")
    del argv[at : at + 2]
    return argv


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--baseline", metavar="REV")
    args = parser.parse_args(argv)
    compiled()
    root = Path(tempfile.mkdtemp(prefix="claude-bench-"))
    world = build_world(root)
    world.server.stop()  # the OpenAI-compatible server of pi's world: not used here
    server = AnthropicServer(repeat=Reply.structured(ok_result(summary="done"))).start()
    failures: list[str] = []
    durations: list[float] = []
    try:
        program = wrapper(root, server.url)
        config = root / "claude-config"
        config.mkdir()
        (config / ".credentials.json").write_text(DUMMY_CREDENTIALS)
        (config / ".credentials.json").chmod(0o600)
        environ = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "HOME": str(world.home),
            "CLAUDE_CONFIG_DIR": str(config),
            "CONCORDE_CLAUDE": str(program),
            "ANTHROPIC_API_KEY": "sk-ant-test",
        }
        request = one_round_request(root, world.worktree, GRANT, "claude", MODEL)
        env = {**environ, "PATH": f"{ROOT / '.venv' / 'bin'}:{environ['PATH']}"}
        alone_config = root / "alone-config"
        alone_env = {**environ, **ROUND_ENV, "CLAUDE_CONFIG_DIR": str(alone_config)}
        if os.getuid() == 0:  # as the host's settings say to a round run as root
            alone_env["IS_SANDBOX"] = "1"
        command = alone_argv(program)
        prompt = "Do the scripted task. " * 40
        asked = {"claude alone": 0, "run": 0}

        def alone() -> None:
            shutil.rmtree(alone_config, ignore_errors=True)
            shutil.copytree(config, alone_config)
            before = len(server.requests)
            proc = subprocess.run(
                command,
                input=prompt.encode(),
                cwd=world.worktree,
                env=alone_env,
                capture_output=True,
                check=False,
            )
            if proc.returncode != 0 or b'"subtype":"success"' not in proc.stdout:
                failures.append("claude alone: " + (proc.stdout + proc.stderr).decode()[-800:])
            asked["claude alone"] = len(server.requests) - before

        def run(env: dict[str, str] = env, keep: bool = True) -> None:
            before = len(server.requests)
            proc = subprocess.run(
                [str(CLI), "run", str(request), "--json"], env=env, capture_output=True, check=False
            )
            if proc.returncode != 0 or b'"status": "ok"' not in proc.stdout:
                failures.append("run: " + (proc.stdout + proc.stderr).decode()[-800:])
                return
            asked["run"] = len(server.requests) - before
            if keep:
                record = json.loads(proc.stdout)
                durations.append(float(record["rounds"][0]["duration"]))

        imports = (
            "import concorde_workers.adapters.cli.subcommands.commands, concorde_workers.container"
        )
        steps = {
            "claude alone": alone,
            "one-round run (CLI, real claude)": run,
            "python -c pass": lambda: subprocess.run([PY, "-c", "pass"], check=True),
            "import of the run path": lambda: subprocess.run([PY, "-c", imports], check=True),
        }
        with baseline_tree(args.baseline) as old:
            if args.baseline:
                steps[f"{args.baseline}: one-round run"] = lambda: run(
                    {**env, "PYTHONPATH": old["PYTHONPATH"]}, keep=False
                )
            samples = interleaved(steps, args.repeat)
        report(samples, "claude alone")
        med = {name: statistics.median(values) for name, values in samples.items()}
        run_m, alone_m = med["one-round run (CLI, real claude)"], med["claude alone"]
        imports_m = med["import of the run path"] - med["python -c pass"]
        round_m = statistics.median(durations[-args.repeat :]) if durations else float("nan")
        print(
            f"ratio {run_m / alone_m:.2f} (medians; goal <= 1.5); host's share "
            f"{run_m - alone_m:.3f} s: imports {imports_m:.3f} s, the program inside the "
            f"confinement +{round_m - alone_m:.3f} s (round {round_m:.3f} s), the host's own "
            f"steps {run_m - round_m - imports_m:.3f} s (the interpreter's start included)"
        )
        print(f"model requests per call: {asked}; load average {os.getloadavg()}")
        if failures:
            print("failed:", failures[0])
            return 1
        return 0
    finally:
        server.stop()
        remove_temp_root(world.temp_root)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    start = time.perf_counter()
    status = main(sys.argv[1:])
    print(f"({time.perf_counter() - start:.0f} s)")
    sys.exit(status)
