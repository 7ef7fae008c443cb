#!/usr/bin/env python3
"""What `plan` costs on a large worktree, and its walk for `.git` entries, over their baselines.

    .venv/bin/python benchmarks/plan_walk.py [--files 100000] [--repeat 11] [--reuse DIR]
                                             [--keep] [--baseline REV] [--grant-entries N]

Builds, in a temporary directory (or reuses one --keep left), a real repository of FILES tracked
files (100 per directory; audit_overhead.py's build), a linked worktree `.claude/worktrees/bench`,
its `.concorde/workers.json`, a model map, and a 10-entry grant (rw, ro and names entries), then
measures, interleaved, REPEAT times each after one warm-up:

  (a) `git ls-files` in the worktree, its output read and its lines counted (`| wc -l`);
  (b) a bare walk: os.scandir recursively, entering no `.git` and no symbolic link;
  (c) the placement walk as `plan` runs it: `find_git_entries` over
      LocalFileSystem.subdirectories;
  (d) `Planner.plan` in this process over the production wiring (a launchable plan, the pinned
      pi of node_modules), the imports already paid;
  (e) `concorde-workers plan --json` as a user runs it, a new process (its imports included);
  (f) with --baseline REV: (e) with REV's package first on the import path.

It prints medians, minima and maxima, and the ratios (c)/(b), (d)/(a), (e)/(a). The targets:
(e) at most 8x (a) (issue 32 §2; issue 12 item 4 asked 3x), (c) at most 1.5x (b) (issue 12).
Exits 0 (1 when the plan does not launch). The figures are in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from audit_overhead import build, git_env  # noqa: E402
from interleave import (  # noqa: E402
    baseline_tree,
    compiled,
    interleaved,
    project_programs,
    report,
)

from concorde_workers.adapters.machine.filesystem import LocalFileSystem  # noqa: E402
from concorde_workers.domain.gitview.placement import find_git_entries  # noqa: E402
from concorde_workers.domain.ground.paths import Subdirs  # noqa: E402
from concorde_workers.ports.machine.filesystem import FileSystemError  # noqa: E402

WORKERS_JSON = {
    "schema_version": 2,
    "enabled_models": {"bench-local": {}},
    "default": {"model": "bench-local"},
    "operations": {},
}
MODEL_MAP = {"schema_version": 1, "models": {"bench-local": {"pi": "local-openai/bench-local"}}}
GRANT = {
    "task_type": "implement",
    "context_identity": "sha256:" + "0" * 64,
    "entries": [
        {"path": "src/m00/d00/", "level": "rw"},
        {"path": "src/m00/d01/", "level": "rw"},
        {"path": "src/m00/d02/f000200.py", "level": "rw"},
        {"path": "src/m01/", "level": "ro"},
        {"path": "src/m02/d10/", "level": "ro"},
        {"path": "src/m03/d20/f030200.py", "level": "ro"},
        {"path": "src/m04/d30/", "level": "ro"},
        {"path": "src/m05/", "level": "names"},
        {"path": "src/m06/d40/", "level": "names"},
        {"path": ".gitignore", "level": "ro"},
    ],
}


def bare_walk(root: str) -> int:
    """os.scandir, recursively, entering no `.git` and no link: the least a walk can cost."""
    count, stack = 0, [root]
    while stack:
        with os.scandir(stack.pop()) as it:
            for entry in it:
                count += 1
                if entry.name != ".git" and entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
    return count


def placement_walk(worktree: str) -> Callable[[], object]:
    fs = LocalFileSystem()

    def subdirs(path: str, wanted: frozenset[str]) -> Subdirs:  # as Preparer._list_subdirs
        try:
            return fs.subdirectories(path, wanted)
        except FileSystemError:
            return [], {}

    return lambda: find_git_entries(worktree, subdirs)


def ls_files(worktree: str, env: dict[str, str]) -> Callable[[], object]:
    def run() -> int:
        out = subprocess.run(
            ["git", "ls-files"], cwd=worktree, env=env, check=True, capture_output=True
        ).stdout
        return out.count(b"\n")

    return run


def setup(base: Path, files: int) -> tuple[Path, Path, dict[str, str]]:
    """The repository (built once), and the plan's worktree, grant file and environment."""
    worktree = base / "repo" / ".claude" / "worktrees" / "bench"
    env = git_env(base / "home")
    if not (worktree / ".concorde").exists():
        _primary, worktree, env = build(base, files, 1)
        config = worktree / ".concorde"
        config.mkdir()
        (config / "workers.json").write_text(json.dumps(WORKERS_JSON))
        (base / "models.json").write_text(json.dumps(MODEL_MAP))
        (base / "grant.json").write_text(json.dumps(GRANT))
    env = {**env, "CONCORDE_MODEL_MAP": str(base / "models.json")}
    env.update(project_programs())
    return worktree, base / "grant.json", env


def large_grant(base: Path, worktree: Path, entries: int) -> Path:
    """A grant of `entries` file entries (issue 19 §4), the first tracked files in path order,
    every one ro but the first, rw."""
    files = sorted(str(p.relative_to(worktree)) for p in (worktree / "src").rglob("*.py"))
    if len(files) < entries:
        sys.exit(f"--grant-entries {entries} needs at least as many --files")
    listed = [{"path": rel, "level": "ro"} for rel in files[:entries]]
    listed[0]["level"] = "rw"
    path = base / f"grant-{entries}.json"
    path.write_text(json.dumps({**GRANT, "entries": listed}))
    return path


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=11)
    parser.add_argument("--reuse", metavar="DIR", help="a directory an earlier --keep left")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument("--baseline", metavar="REV", help="also time REV's `plan --json`")
    parser.add_argument(
        "--grant-entries",
        type=int,
        metavar="N",
        help="a grant of N entries instead: the first N tracked files, ro",
    )
    args = parser.parse_args(argv)
    compiled()
    base = Path(args.reuse) if args.reuse else Path(tempfile.mkdtemp(prefix="plan-bench-"))
    try:
        worktree, grant, env = setup(base, args.files)
        if args.grant_entries:
            grant = large_grant(base, worktree, args.grant_entries)
        wt = str(worktree)
        command = [
            "plan",
            "--json",
            "--worktree",
            wt,
            "--grant",
            str(grant),
            "--task-type",
            "implement",
            "--instructions",
            "Benchmark the plan.",
        ]
        script = str(Path(sys.executable).parent / "concorde-workers")
        first = subprocess.run(
            [script, *command], cwd=wt, env=env, capture_output=True, text=True, check=False
        )
        verdict = json.loads(first.stdout).get("verdict") if first.stdout.startswith("{") else None
        print(
            f"worktree {wt}: {ls_files(wt, env)()} tracked files, {bare_walk(wt)} entries; "
            f"plan verdict {verdict!r}"
        )
        if first.returncode != 0:
            print(first.stdout[:2000], first.stderr[:2000])
            return 1
        from concorde_workers.adapters.cli.flags import flags_of
        from concorde_workers.adapters.cli.parser import parser as cli_parser
        from concorde_workers.container import production

        container = production(env)
        request = container.requests().build(flags_of(cli_parser().parse_args(command)))
        assert not hasattr(request, "code"), request

        def in_process() -> object:
            return container.planner().plan(request, {})  # type: ignore[arg-type]

        steps: dict[str, Callable[[], object]] = {
            "git ls-files | wc -l": ls_files(wt, env),
            "bare os.scandir walk": lambda: bare_walk(wt),
            "find_git_entries": placement_walk(wt),
            "Planner.plan (in process)": in_process,
            "concorde-workers plan --json": lambda: subprocess.run(
                [script, *command], cwd=wt, env=env, capture_output=True, check=True
            ),
        }
        with baseline_tree(args.baseline) as old_env:
            if args.baseline:
                steps[f"{args.baseline}: plan --json"] = lambda: subprocess.run(
                    [sys.executable, "-m", "concorde_workers.adapters.cli.main", *command],
                    cwd=wt,
                    env={**env, "PYTHONPATH": old_env["PYTHONPATH"]},
                    capture_output=True,
                    check=False,
                )
            samples = interleaved(steps, args.repeat)
        ratios = report(samples, "git ls-files | wc -l")
        walk = report(
            {k: samples[k] for k in ("bare os.scandir walk", "find_git_entries")},
            "bare os.scandir walk",
        )
        print(
            f"targets: plan --json <= 8.0x git ls-files (here {ratios[list(steps)[4]][0]:.2f}"
            f" median); the walk <= 1.5x bare scandir (here {walk['find_git_entries'][0]:.2f})"
        )
        return 0
    finally:
        if args.keep or args.reuse:
            print(f"kept {base} (--reuse {base})")
        else:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
