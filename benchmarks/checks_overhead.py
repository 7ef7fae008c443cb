#!/usr/bin/env python3
"""What a check costs beyond its own command, on a large worktree (issue 19 §1).

    .venv/bin/python benchmarks/checks_overhead.py [--repeat 9] [--files 100000] [--copies]

Builds a throwaway worktree-like tree: `src/` with FILES small files and `tests/` with a few
tests, both under the grant (`src/` and `tests/` rw, so the grant covers the whole tree), and
the run's mount plan inside the worktree for that grant (its skeleton, `src/` and `tests/`
bound), and measures, interleaved (benchmarks/interleave.py), REPEAT times after a warm-up,
two commands each

  bare        run in the tree, through the production process runner (the baseline);
  layer       as a round's check runs it: in the check sandbox over a copy-on-write layer of
              the plan's view (domain/isolation/check_layer.py);
  copies      (with --copies) as a check ran before the layer, and still runs where the kernel
              refuses it: over a copy of what the grant shows, made and removed around it.

The commands: `true` (the fixed cost alone) and `python -m pytest -q tests` with this
checkout's interpreter as the project's (README step 8's check). The bound: the layered pytest
check at most 1.2x the bare one. Prints medians, minima and maxima and the ratios to `bare`;
exits 0. The figures are in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

from interleave import interleaved, report

from concorde_workers.adapters.machine.filesystem import LocalFileSystem
from concorde_workers.adapters.processes.process import SubprocessRunner
from concorde_workers.adapters.sandboxes.checks import SandboxedCheckRunner
from concorde_workers.container import layer_tools
from concorde_workers.domain.boundary.grant import Grant, parse_grant
from concorde_workers.domain.isolation.check_sandbox import CheckPlace
from concorde_workers.domain.isolation.confinement import Mount, MountKind
from concorde_workers.domain.run.checks import Check, CheckStatus

INTERPRETER = str(Path(__file__).resolve().parents[1] / ".venv" / "bin" / "python")
COMMANDS = {"true": "true", "pytest": "python -m pytest -q tests"}
TESTS = "".join(f"def test_{n}():\n    assert {n} + 1 > {n}\n\n" for n in range(20))


def build(root: Path, files: int) -> Path:
    tree = root / "repo" / ".claude" / "worktrees" / "t"
    for n in range(files):
        path = tree / "src" / f"d{n % 100}" / f"f{n}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"x = {n}\n" * 20)
    (tree / "tests").mkdir()
    (tree / "tests" / "test_a.py").write_text(TESTS)
    return tree


def planned(tree: Path) -> CheckPlace:
    """The place of a round's check: the grant and the plan's mounts inside the worktree for it
    (as domain/isolation/mount_plan.py makes them: the worktree's skeleton, each entry bound)."""
    grant = parse_grant(
        {
            "task_type": "implement",
            "context_identity": "sha256:" + "1" * 64,
            "entries": [{"path": "src/", "level": "rw"}, {"path": "tests/", "level": "rw"}],
        }
    )
    assert isinstance(grant, Grant)
    view = (
        Mount(kind=MountKind.EMPTY_DIR, path=str(tree), why="the task worktree", named=True),
        Mount(kind=MountKind.WRITABLE, path=f"{tree}/src", why="rw in the grant"),
        Mount(kind=MountKind.WRITABLE, path=f"{tree}/tests", why="rw in the grant"),
    )
    # The interpreter's installation read-only, as the request builder derives it from a venv.
    return CheckPlace(
        worktree=str(tree),
        grant=grant,
        view=view,
        project_interpreter=INTERPRETER,
        runtime_paths=(sys.prefix, sys.base_prefix),
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--copies", action="store_true", help="also measure checks over copies")
    args = parser.parse_args(argv)
    bwrap, tools = shutil.which("bwrap"), layer_tools()
    if bwrap is None or tools is None or not os.path.exists(INTERPRETER):
        print("bubblewrap, util-linux and .venv are required: run ./scripts/setup", file=sys.stderr)
        return 2
    env = {"PATH": f"{os.path.dirname(INTERPRETER)}:/usr/bin:/bin", "LANG": "C.UTF-8"}
    with tempfile.TemporaryDirectory(prefix="checks-bench-") as folder:
        tree = build(Path(folder), args.files)
        processes, fs = SubprocessRunner(), LocalFileSystem()
        layered = SandboxedCheckRunner(processes, fs, bwrap, env, (), folder, layer_tools=tools)
        copying = SandboxedCheckRunner(processes, fs, bwrap, env, (), folder)
        place = planned(tree)
        problem = layered.layer_problem()
        if problem is not None:
            print(f"no layer on this machine: {problem}", file=sys.stderr)
            return 2

        def bare(command: str) -> None:
            handle = processes.start(["/bin/sh", "-c", command], env, str(tree))
            list(handle.lines())
            assert handle.wait(None) == 0, command

        def checked(runner: SandboxedCheckRunner, command: str) -> None:
            ran = runner.run(Check(id="c", command=command, timeout_seconds=600), str(tree), place)
            assert ran.status is CheckStatus.PASSED, ran

        steps = {}
        for name, command in COMMANDS.items():
            steps[f"{name} bare"] = lambda c=command: bare(c)
            steps[f"{name} layer"] = lambda c=command: checked(layered, c)
            if args.copies:
                steps[f"{name} copies"] = lambda c=command: checked(copying, c)
        samples = interleaved(steps, args.repeat)
    print(f"tree: src/ {args.files} files, tests/ one file of 20 tests; grant src/ rw, tests/ rw")
    for name in COMMANDS:
        print(f"\n{name}: {COMMANDS[name]}")
        report({k: v for k, v in samples.items() if k.startswith(f"{name} ")}, f"{name} bare")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
