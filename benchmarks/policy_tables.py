#!/usr/bin/env python3
"""What the read, write and search tables cost per path, against a baseline revision.

    .venv/bin/python benchmarks/policy_tables.py [--paths 100000] [--repeat 7] [--baseline REV]
                                                 [--hook-calls 20]

Each repetition starts one process per revision (this checkout, and with --baseline REV that
revision's package first on the import path), interleaved, in an order rotated every repetition.
A process builds one policy (a 200-entry grant of rw, ro and names directories and files, runtime
paths inside and outside the worktree, Git admin paths, credential files, a run directory, the
homes), makes PATHS paths (nine in ten in the worktree, as a walk over a 100,000-file tree gives
them; the rest in the runtime paths, the worker's own directories, the homes, the system), and
times, over all of them:

  read         decide_read(policy, path)
  read+real    decide_read(policy, path, path): the lexical and the real path, as a walk judges
  write        decide_write(policy, path, path)
  search root  decide_search_root(policy, directory): pi's grep/find/ls roots (each path's folder)
  search       decide_search(policy, directory): Claude Code's Grep/Glob roots, every tenth
               folder (a denial names the directories to search instead, which costs more)
  hook         the generated control/read_hook.py run as Claude Code runs it (`python -I -S`), one
               Read call, per call (HOOK_CALLS calls)

It prints medians, minima and maxima per revision and the ratio of this checkout to the baseline
(medians and minima). The figures are in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from interleave import baseline_tree, compiled

HOME = "/home/u"
PRIMARY = f"{HOME}/proj"
WT = f"{PRIMARY}/.claude/worktrees/bench"
RT = "/tmp/concorde-abc123-bench"
STEPS = ("read", "read+real", "write", "search root", "search", "hook")


def grant_entries() -> list[dict[str, str]]:
    """200 entries: modules rw, ro or names by directory, a few files and subdirectories apart."""
    entries = []
    for m in range(50):
        level = ("rw", "ro", "ro", "names", "ro")[m % 5]
        entries.append({"path": f"src/m{m:02}/", "level": level})
        entries.append({"path": f"src/m{m:02}/d0{m % 10}/", "level": "rw" if m % 2 else "ro"})
        entries.append({"path": f"src/m{m:02}/d01/f{m:03}001.py", "level": "names"})
        entries.append({"path": f"tests/t{m:02}.py", "level": "rw" if m % 3 else "ro"})
    return entries


def paths(count: int) -> list[str]:
    """Nine in ten in the worktree (100 modules of 10 folders of 100 files), the rest beside."""
    outside = [
        f"{WT}/.venv/lib/site.py",
        "/usr/lib/python3/os.py",
        f"{RT}/work/notes.md",
        f"{RT}/tmp/x.txt",
        f"{RT}/control/settings.json",
        f"{HOME}/.ssh/id_rsa",
        f"{PRIMARY}/src/main.py",
        "/etc/hosts",
        "/proc/self/environ",
        f"{WT}/.git",
        f"{PRIMARY}/.git/config",
        "/tmp/concorde-def456-z1/config/auth.json",
    ]
    out = []
    for i in range(count):
        if i % 10 == 9:
            out.append(outside[(i // 10) % len(outside)])
        else:
            n = i % 100_000
            out.append(f"{WT}/src/m{n // 1000:02}/d{n // 100 % 10:02}/f{n:06}.py")
    return out


def child(count: int, hook_calls: int) -> dict[str, float]:
    """The timings of one process (seconds per step; the hook's per call)."""
    from concorde_workers.adapters.claude.guard.hooks import hook_files
    from concorde_workers.adapters.claude.guard.search_guard import decide_search
    from concorde_workers.domain.boundary.grant import Grant, parse_grant
    from concorde_workers.domain.boundary.policy import (
        build_policy,
        decide_read,
        decide_search_root,
        decide_write,
    )
    from concorde_workers.domain.gitview.placement import AdminPath

    grant = parse_grant(
        {"task_type": "implement", "context_identity": "sha256:bench", "entries": grant_entries()}
    )
    assert isinstance(grant, Grant)
    policy = build_policy(
        grant=grant,
        worktree=WT,
        primary=PRIMARY,
        user_home=HOME,
        runtime_dir=RT,
        runtime_paths=(f"{WT}/.venv", "/usr/lib/python3"),
        list_dir=lambda _p: [],
        git=(
            AdminPath(path=f"{PRIMARY}/.git", directory=True),
            AdminPath(path=f"{WT}/.git", directory=False),
        ),
        homes=(HOME, "/srv/home/u"),
        config_dirs=("/opt/cfg/claude",),
        credentials=("/opt/cfg/claude/.credentials.json",),
        run_directories=("/srv/trace/op-1/workers",),
        **runtime_entries(build_policy),
    )
    judged = paths(count)
    folders = [p.rsplit("/", 1)[0] for p in judged]
    steps: dict[str, Any] = {
        "read": lambda: [decide_read(policy, p) for p in judged],
        "read+real": lambda: [decide_read(policy, p, p) for p in judged],
        "write": lambda: [decide_write(policy, p, p) for p in judged],
        "search root": lambda: [decide_search_root(policy, d) for d in folders],
        "search": lambda: [decide_search(policy, d) for d in folders[::10]],
    }
    out: dict[str, float] = {}
    for name, step in steps.items():
        start = time.perf_counter()
        step()
        out[name] = time.perf_counter() - start
    out["hook"] = hook_time(hook_files(policy), hook_calls)
    return out


def runtime_entries(build_policy: Any) -> dict[str, Any]:
    """The registered backends' runtime entries, where the revision's policy takes them (issue
    22 §1; a baseline before it has none to give)."""
    import inspect

    if "runtime_entries" not in inspect.signature(build_policy).parameters:
        return {}
    from concorde_workers.container import PROFILES
    from concorde_workers.domain.configuration.profile import entries_of

    return {"runtime_entries": entries_of(PROFILES)}


def hook_time(files: dict[str, str], calls: int) -> float:
    """Seconds per call of the generated read hook, run as the settings say."""
    source = next(text for path, text in files.items() if path.endswith("/read_hook.py"))
    call = json.dumps(
        {
            "tool_name": "Read",
            "cwd": f"{RT}/work",
            "tool_input": {"file_path": f"{WT}/src/m01/d01/f001001.py"},
        }
    )
    with tempfile.TemporaryDirectory(prefix="bench-hook-") as base:
        hook = Path(base, "read_hook.py")
        hook.write_text(source, encoding="utf-8")
        argv = [sys.executable, "-I", "-S", str(hook)]
        subprocess.run(argv, input=call, text=True, capture_output=True, check=True)  # warm-up
        start = time.perf_counter()
        for _ in range(calls):
            done = subprocess.run(argv, input=call, text=True, capture_output=True, check=True)
            assert "names" in done.stdout or "only the name" in done.stdout, done.stdout
        return (time.perf_counter() - start) / calls


def run_child(env: dict[str, str], count: int, hook_calls: int) -> dict[str, float]:
    done = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            "--paths",
            str(count),
            "--hook-calls",
            str(hook_calls),
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    timings: dict[str, float] = json.loads(done.stdout)
    return timings


def show(samples: dict[str, list[dict[str, float]]], baseline: str | None, count: int) -> None:
    print(f"per {count:,} paths (ms; search: per {count // 10:,}; the hook: ms per call)")
    print(
        f"{'step':<12} {'revision':<10} {'median':>9} {'min':>9} {'max':>9}  "
        f"{'ratio med':>9} {'ratio min':>9}"
    )
    for step in STEPS:
        base = [s[step] for s in samples[baseline]] if baseline else None
        for name, runs in samples.items():
            values = [s[step] for s in runs]
            med, low = statistics.median(values), min(values)
            ratio = ""
            if base is not None:
                ratio = f"{med / statistics.median(base):>9.2f} {low / min(base):>9.2f}"
            print(
                f"{step:<12} {name:<10} {med * 1000:>9.1f} {low * 1000:>9.1f} "
                f"{max(values) * 1000:>9.1f}  {ratio}"
            )
    runs = len(next(iter(samples.values())))
    print(
        f"(n = {runs} processes each, interleaved; ratios against {baseline!r}; "
        f"load average now {os.getloadavg()[0]:.1f})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--paths", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--hook-calls", type=int, default=20)
    parser.add_argument("--baseline")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.paths, args.hook_calls)))
        return 0
    compiled()
    with baseline_tree(args.baseline) as base_env:
        envs = {"this": dict(os.environ)}
        if args.baseline:
            envs = {"baseline": base_env, **envs}
        samples: dict[str, list[dict[str, float]]] = {name: [] for name in envs}
        names = list(envs)
        for i in range(args.repeat):
            shift = i % len(names)
            for name in names[shift:] + names[:shift]:
                samples[name].append(run_child(envs[name], args.paths, args.hook_calls))
    show(samples, "baseline" if args.baseline else None, args.paths)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
