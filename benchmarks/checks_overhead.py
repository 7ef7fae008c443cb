#!/usr/bin/env python3
"""What a check costs beyond its own command: the throwaway copy, the sandbox, the removal.

    .venv/bin/python benchmarks/checks_overhead.py [--repeat 9] [--files 2000]

Builds a throwaway worktree-like tree: `src/` with FILES small files (granted rw) and `vendor/`
with 5 x FILES files that no grant entry reaches (as node_modules or a virtual environment), and
measures, interleaved (benchmarks/interleave.py), REPEAT times after a warm-up:

  bare        `/bin/sh -c true` in the tree, through the production process runner (baseline);
  sandbox     the same check in the check sandbox over an existing copy (bwrap's fixed cost);
  granted     what a round's check costs: copy under the grant + run + discard;
  whole       the same without a grant: every file copied (what the grant's pruning saves).

It prints medians, minima and maxima and the ratios to `bare`, and exits 0. The figures are in
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from interleave import interleaved, report

from concorde_workers.adapters.checks import SandboxedCheckRunner
from concorde_workers.adapters.filesystem import LocalFileSystem
from concorde_workers.adapters.process import SubprocessRunner
from concorde_workers.domain.check_sandbox import CheckPlace
from concorde_workers.domain.checks import Check
from concorde_workers.domain.grant import Grant, parse_grant

TRUE = Check(id="true", command="true", timeout_seconds=60)


def build(root: Path, files: int) -> Path:
    tree = root / "repo" / ".claude" / "worktrees" / "t"
    for folder, count in (("src", files), ("vendor", 5 * files)):
        for n in range(count):
            path = tree / folder / f"d{n % 50}" / f"f{n}.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"x = {n}\n" * 20)
    return tree


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--files", type=int, default=2000)
    args = parser.parse_args(argv)
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        print("bubblewrap (bwrap) is required: run ./scripts/setup", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="checks-bench-") as folder:
        tree = build(Path(folder), args.files)
        processes, fs = SubprocessRunner(), LocalFileSystem()
        runner = SandboxedCheckRunner(processes, fs, bwrap, {"PATH": "/usr/bin:/bin"}, (),
                                      folder)
        grant = parse_grant({"task_type": "implement", "context_identity": "sha256:" + "1" * 64,
                             "entries": [{"path": "src/", "level": "rw"}]})
        assert isinstance(grant, Grant)
        granted = CheckPlace(worktree=str(tree), grant=grant)
        whole = CheckPlace(worktree=str(tree))
        standing = runner.copy(str(tree), granted.keep)

        def bare() -> None:
            handle = processes.start(["/bin/sh", "-c", "true"], {"PATH": "/usr/bin:/bin"},
                                     str(tree))
            list(handle.lines())
            handle.wait(None)

        def round_check(place: CheckPlace) -> None:
            copy = runner.copy(str(tree), place.keep)
            try:
                runner.run(TRUE, copy, place)
            finally:
                runner.discard(copy)

        samples = interleaved({
            "bare": bare,
            "sandbox": lambda: runner.run(TRUE, standing, granted),
            "granted": lambda: round_check(granted),
            "whole": lambda: round_check(whole),
        }, args.repeat)
        runner.discard(standing)
    print(f"tree: src/ {args.files} files (granted), vendor/ {5 * args.files} files (not)")
    report(samples, "bare")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
