#!/usr/bin/env python3
"""What the confinement costs when an agent program starts.

    .venv/bin/python benchmarks/confinement_startup.py [--repeat 15]

Builds a throwaway example repository (the one `plan --example` uses), prepares a Claude Code and
a pi run in it with the production preparation (the real mount plan: the homes, /tmp and the
primary worktree absent, the worktree and the runtime directory bound back, the grant's masks,
the agent's installations kept), makes the runtime directory the plan binds, and measures in one
process, each REPEAT times, interleaved (so a cache one warms favours none), after one warm-up
of each:

  (a) the bare program start: `claude --version`, `pi --version` (the pinned programs of this
      checkout), with the round's own environment;
  (b) the same command inside the confinement: the exact prefix round 1 runs
      (`bwrap ... -- /bin/sh -c <helper> concorde-confine <python> -I -S <control/wait.py>
      <fd> env ...`) in front of it, through the production process runner (which waits for
      the namespace's init to exit, as a round does);
  (c) the confinement's fixed cost alone: `/bin/true` bare and confined;
  (d) the waiter's share of it: `/bin/true` confined without the waiter ("bare") and with it.

It prints medians, minima and maxima and the ratios (b)/(a), and exits 0. The figures and how to
read them are in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from interleave import project_programs

from concorde_workers.adapters.demo.example_repository import (
    GRANT,
    create_example,
)
from concorde_workers.adapters.processes.process import SubprocessRunner
from concorde_workers.application.preparation.prepared import Prepared
from concorde_workers.container import PROFILES, production
from concorde_workers.domain.configuration.profile import example_ids_of
from concorde_workers.domain.configuration.request import RunRequest

RUN_ID = "w-20260101T000000-abc123"


def prepare(backend: str, worktree: str, environ: dict[str, str], runtime: Path) -> Prepared:
    container = production(environ)
    request = RunRequest.model_validate(
        {
            "backend": backend,
            "worktree": worktree,
            "task_type": "implement",
            "grant": GRANT,
            "instructions": "benchmark",
            "local_model": "m",
        }
    )
    prepared = container.preparer().prepare(request, RUN_ID, str(runtime))
    if not isinstance(prepared, Prepared):
        sys.exit(f"the {backend} run would be refused: {prepared.code}: {prepared.message}")
    if prepared.confinement is None:
        sys.exit(f"the {backend} backend runs unconfined")
    for sub in ("control", "config", "home", "tmp", "work"):
        (runtime / sub).mkdir(parents=True, exist_ok=True, mode=0o700)
    for path, text in prepared.confinement.control_files().items():  # empty, wait.py
        Path(path).write_text(text)
    return prepared


def timed(argv: Sequence[str], env: dict[str, str], cwd: str) -> float:
    """Milliseconds from the start to the end as a round sees it, through the production process
    runner (which gives bwrap its report pipes and waits for the namespace's init), for the bare
    command as well, so that the runner's own cost is on both sides."""
    started = time.perf_counter()
    handle = SubprocessRunner().start(list(argv), env, cwd)
    for _ in handle.lines():
        pass
    status = handle.wait(None)
    elapsed = (time.perf_counter() - started) * 1000
    if status != 0:
        tail = handle.stderr_tail(2000).decode(errors="replace")
        sys.exit(f"{argv[-2:]} failed ({status}): {tail}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    programs = project_programs()
    if "CONCORDE_CLAUDE" not in programs or "CONCORDE_PI" not in programs:
        sys.exit("the pinned claude and pi are missing: run ./scripts/setup")
    example = create_example(example_ids_of(PROFILES))
    runtime_root = Path(example.folder) / "rt"
    try:
        environ = {**os.environ, **programs}
        cases: dict[str, tuple[list[str], list[str], dict[str, str], str]] = {}
        for backend, program in (
            ("claude", programs["CONCORDE_CLAUDE"]),
            ("pi", programs["CONCORDE_PI"]),
        ):
            runtime = Path("/tmp") / f"concorde-bench0-{backend}"
            shutil.rmtree(runtime, ignore_errors=True)
            prepared = prepare(backend, example.worktree, environ, runtime)
            assert prepared.confinement is not None
            prefix = list(prepared.confinement.prefix())
            env, cwd = prepared.environment, prepared.command.cwd
            cases[f"{backend} --version"] = (
                [program, "--version"],
                [*prefix, program, "--version"],
                env,
                cwd,
            )
            if backend == "claude":
                cases["/bin/true"] = (["/bin/true"], [*prefix, "/bin/true"], env, cwd)
                # The waiter's own share: the same confinement without it ("bare") and with it.
                tools = prepared.confinement.tools.model_copy(update={"python": None})
                unwaited = prepared.confinement.model_copy(update={"tools": tools}).prefix()
                cases["waiter"] = ([*unwaited, "/bin/true"], [*prefix, "/bin/true"], env, cwd)
            print(
                f"{backend}: {len(prepared.confinement.mounts)} mounts, "
                f"{len(prefix)} arguments before the program"
            )
        samples: dict[str, dict[str, list[float]]] = {
            name: {"bare": [], "confined": []} for name in cases
        }
        for bare, confined, env, cwd in cases.values():  # warm-up
            timed(bare, env, cwd)
            timed(confined, env, cwd)
        for _ in range(args.repeat):
            for name, (bare, confined, env, cwd) in cases.items():
                samples[name]["bare"].append(timed(bare, env, cwd))
                samples[name]["confined"].append(timed(confined, env, cwd))
        report(samples, args.repeat)
    finally:
        for backend in ("claude", "pi"):
            shutil.rmtree(Path("/tmp") / f"concorde-bench0-{backend}", ignore_errors=True)
        shutil.rmtree(example.folder, ignore_errors=True)
        shutil.rmtree(runtime_root, ignore_errors=True)
    return 0


def report(samples: dict[str, dict[str, list[float]]], repeat: int) -> None:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"\n{platform.machine()}, {os.cpu_count()} CPUs, Linux {platform.release()}, "
        f"load {load:.1f}, {repeat} repetitions, interleaved\n"
    )
    print(f"{'command':<20} {'':<9} {'median ms':>10} {'min ms':>8} {'max ms':>8}")
    for name, kinds in samples.items():
        for kind, values in kinds.items():
            print(
                f"{name:<20} {kind:<9} {statistics.median(values):>10.1f} "
                f"{min(values):>8.1f} {max(values):>8.1f}"
            )
        bare, confined = statistics.median(kinds["bare"]), statistics.median(kinds["confined"])
        least = min(kinds["confined"]) / min(kinds["bare"])
        print(
            f"{'':<20} {'ratio':<9} {confined / bare:>10.2f} {least:>8.2f}   "
            f"(+{confined - bare:.1f} ms median)"
        )


if __name__ == "__main__":
    raise SystemExit(main())
