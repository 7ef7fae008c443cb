#!/usr/bin/env python3
"""What keeping a run's starting state costs before round 1 (issue 32 §3 "no work the run does
not need").

    .venv/bin/python benchmarks/start_state.py [--repeat 7] [--files 100000]

Builds a throwaway worktree of FILES small files in 100 folders of `src/`, and a grant of the
shape issue 32 measured (about a tenth of the tree readable, a tenth names-only): `src/d0/` and
`src/d1/` rw, `src/d2/` … `src/d9/` ro, `src/d10/` … `src/d19/` names, the rest not granted.
Then measures, interleaved (benchmarks/interleave.py), REPEAT times after a warm-up, what
`ChecksValidation.start` asks of the real runner (adapters/sandboxes/checks.py), each copy
discarded after:

  eager       the whole starting state copied before round 1 (what every run with checks paid
              before issue 32 §3);
  lazy        what is copied before round 1 now: the rw files, the rest recorded by identity
              (what a run whose checks pass pays), the grant asked once per folder where
              no entry lies below it (`CheckPlace.rules()`);
  per entry   the same, the grant asked twice for every entry (`CheckPlace.keep` and
              `.later`: the walk before issue 32 §3's second pass);
  lazy+later  that, then `complete` (what a run pays whose check fails once).

Prints medians, minima and maxima and the ratios to `eager`; exits 0. The figures are in
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from interleave import interleaved, report

from concorde_workers.adapters.machine.filesystem import LocalFileSystem
from concorde_workers.adapters.processes.process import SubprocessRunner
from concorde_workers.adapters.sandboxes.checks import SandboxedCheckRunner
from concorde_workers.domain.boundary.grant import Grant, parse_grant
from concorde_workers.domain.isolation.check_sandbox import CheckPlace

FOLDERS = 100


def build(root: Path, files: int) -> Path:
    tree = root / "repo" / ".claude" / "worktrees" / "t"
    for n in range(files):
        path = tree / "src" / f"d{n % FOLDERS}" / f"f{n}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"x = {n}\n" * 20)
    return tree


def grant() -> Grant:
    levels = {**dict.fromkeys(range(2), "rw"), **dict.fromkeys(range(2, 10), "ro")}
    levels |= dict.fromkeys(range(10, 20), "names")
    parsed = parse_grant(
        {
            "task_type": "implement",
            "context_identity": "sha256:" + "1" * 64,
            "entries": [{"path": f"src/d{n}/", "level": lv} for n, lv in levels.items()],
        }
    )
    assert isinstance(parsed, Grant)
    return parsed


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--files", type=int, default=100_000)
    args = parser.parse_args(argv)
    bwrap = shutil.which("bwrap")
    with tempfile.TemporaryDirectory(prefix="start-bench-") as folder:
        tree = build(Path(folder), args.files)
        copies = Path(folder, "copies")
        copies.mkdir()
        runner = SandboxedCheckRunner(
            SubprocessRunner(), LocalFileSystem(), bwrap, {}, (), str(copies)
        )
        place = CheckPlace(worktree=str(tree), grant=grant())

        def eager() -> None:
            runner.discard(runner.copy(str(tree), place.keep))

        def lazy() -> None:
            rules = place.rules()
            runner.discard(runner.copy(str(tree), rules.keep, rules.later))

        def per_entry() -> None:
            runner.discard(runner.copy(str(tree), place.keep, place.later))

        def lazy_then_later() -> None:
            rules = place.rules()
            copy = runner.copy(str(tree), rules.keep, rules.later)
            runner.complete(copy)
            runner.discard(copy)

        cpu: dict[str, list[float]] = {}

        def counted(name: str, step: Callable[[], None]) -> Callable[[], None]:
            def run() -> None:
                start = time.process_time()
                step()
                cpu.setdefault(name, []).append(time.process_time() - start)

            return run

        steps = {
            "eager": eager,
            "lazy": lazy,
            "per entry": per_entry,
            "lazy+later": lazy_then_later,
        }
        samples = interleaved({n: counted(n, s) for n, s in steps.items()}, args.repeat)
    print(
        f"tree: src/ {args.files} files in {FOLDERS} folders; grant: 2 folders rw, 8 ro, "
        "10 names, the rest not granted"
    )
    print("wall time:")
    report(samples, "eager")
    print("CPU time of this process (the warm-up's dropped):")
    report({name: values[1:] for name, values in cpu.items()}, "eager")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
