#!/usr/bin/env python3
"""What the host's audit costs over a bare `git status` on a large worktree.

    .venv/bin/python benchmarks/audit_overhead.py [--files 50000] [--changed 20] [--repeat 15]
                                                  [--no-round] [--keep]

Builds, in a temporary directory, a real repository with FILES tracked files (written directly,
then `git add -A` and one commit), a real linked worktree `.claude/worktrees/bench` made by
`git worktree add`, changes CHANGED tracked files in it, and measures, each REPEAT times in the
same process, alternating so that a cache warmed by one favours none:

  (a) the bare `git status --porcelain=v2 -z --untracked-files=all` in the worktree;
  (b) the host's audit step: `WorktreeObserver(GitCliReader, LocalFileSystem, repository)
      .observe(snapshot)` with the real adapters as production wires them (every Git call in
      bubblewrap's sandbox where it is installed), the same without the sandbox and one command
      after another, the audit as it was before issue 8 §1 (its five commands, rebuilt here),
      the same with the index re-read by Git every time (as after a change of the index file),
      and each command of the table on its own, with and without the sandbox;
  (c) unless --no-round: a whole no-op worker run, `WorkerHost.run` over the production wiring
      with the ProgramBackend (tests/fakes) playing one round that only returns its result.

It prints a table of medians (and min/max) and the ratio (b)/(a), and exits 0. The figures and
how to read them are in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the ProgramBackend lives with the test fakes

from concorde_workers.adapters.machine.filesystem import LocalFileSystem  # noqa: E402
from concorde_workers.adapters.repository.git import GitCliReader  # noqa: E402
from concorde_workers.application.rounds.worktree_state import WorktreeObserver  # noqa: E402
from concorde_workers.domain.gitview.git_status import GitRepository  # noqa: E402

STATUS = ("status", "--porcelain=v2", "-z", "--untracked-files=all")
# The audit before issue 8 §1: these options on every call, status beside four more commands.
OLD_OPTIONS = (
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "--no-optional-locks",
    "--literal-pathspecs",
)


def git_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        GIT_CONFIG_NOSYSTEM="1",
        LC_ALL="C",
        GIT_AUTHOR_NAME="b",
        GIT_AUTHOR_EMAIL="b@b",
        GIT_COMMITTER_NAME="b",
        GIT_COMMITTER_EMAIL="b@b",
    )
    return env


def git(env: dict[str, str], cwd: Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True).stdout


def build(base: Path, files: int, changed: int) -> tuple[Path, Path, dict[str, str]]:
    """A repository of `files` tracked files and its linked worktree with `changed` changes."""
    home = base / "home"
    (home / ".config").mkdir(parents=True)
    env = git_env(home)
    primary = base / "repo"
    primary.mkdir()
    git(env, primary, "init", "-q", "-b", "main")
    # 100 files per directory in a two-level tree, a few hundred bytes each.
    for i in range(files):
        d = primary / "src" / f"m{i // 10_000:02d}" / f"d{(i // 100) % 100:02d}"
        if i % 100 == 0:
            d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i:06d}.py").write_text(f"# file {i}\nVALUE = {i}\n" + "x = 1\n" * 20)
    (primary / ".gitignore").write_text("__pycache__/\n")
    git(env, primary, "add", "-A")
    git(env, primary, "commit", "-q", "-m", "many files")
    worktree = primary / ".claude" / "worktrees" / "bench"
    git(env, primary, "worktree", "add", "-q", "-b", "bench", str(worktree))
    tracked = sorted((worktree / "src").rglob("*.py"))
    step = max(1, len(tracked) // changed)
    for path in tracked[::step][:changed]:
        path.write_text(path.read_text() + "# changed\n")
    return primary, worktree, env


def old_audit(env: dict[str, str], worktree: Path) -> Callable[[], Any]:
    """The audit step as it was before issue 8 §1, rebuilt: `git status` (submodules not
    ignored) with its listed files measured here, while a helper thread runs symbolic-ref,
    rev-parse --verify, ls-files and the two rev-parse of the configuration digest."""
    from concurrent.futures import ThreadPoolExecutor

    fs = LocalFileSystem()

    def background() -> None:
        for args in (
            ("symbolic-ref", "-q", "HEAD"),
            ("rev-parse", "-q", "--verify", "HEAD"),
            ("ls-files", "--stage", "-v", "-z"),
            ("rev-parse", "--path-format=absolute", "--git-dir"),
            ("rev-parse", "--path-format=absolute", "--git-common-dir"),
        ):
            subprocess.run(
                ["git", *OLD_OPTIONS, "-C", str(worktree), *args],
                env=env,
                capture_output=True,
                check=False,
            )

    def run() -> None:
        with ThreadPoolExecutor(max_workers=1) as pool:
            future = pool.submit(background)
            out = git(env, worktree, *OLD_OPTIONS, *STATUS, "--no-renames", "--ignored=no")
            for record in out.split(b"\0"):
                if record.startswith(b"1 "):
                    fs.file_digest(str(worktree / record.split(b" ", 8)[-1].decode()))
            future.result()

    return run


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def row(name: str, samples: list[float]) -> tuple[str, float, float, float]:
    return name, statistics.median(samples), min(samples), max(samples)


def noop_round(worktree: Path, parent: Path, tmp: Path) -> Callable[[], Any]:
    """A callable that runs one whole no-op worker run (ProgramBackend, production wiring)."""
    from dependency_injector import providers
    from fakes.program_backend import ProgramBackend, Step

    from concorde_workers.container import production
    from concorde_workers.domain.configuration.request import Limits, RunRequest

    grant = {
        "task_type": "implement",
        "context_identity": "sha256:" + "1" * 64,
        "entries": [{"path": "src/m00/", "level": "rw"}],
    }
    result = {
        "status": "ok",
        "summary": "nothing",
        "error": None,
        "proposed_deletions": [],
        "output": {},
    }

    def run() -> None:
        backend = ProgramBackend(
            name="pi", scenarios=[[Step.session("s-1"), Step.transcript(), Step.result(result)]]
        )
        container = production(dict(os.environ))
        container.temp_root.override(providers.Object(str(tmp)))
        container.backends.override(
            providers.Dict(pi=providers.Object(backend), claude=providers.Object(backend))
        )
        record = container.worker_host().run(
            RunRequest(
                worktree=str(worktree),
                parent=str(parent),
                task_type="implement",
                grant=grant,
                limits=Limits(timeout_seconds=120, rounds=0, retries=0),
            )
        )
        if record.status != "ok":
            raise SystemExit(f"the no-op round did not end ok: {record.error}")

    return run


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--changed", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--no-round", action="store_true", help="skip the whole no-op run")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args(argv)

    base = Path(tempfile.mkdtemp(prefix="audit-bench-"))
    try:
        t0 = time.perf_counter()
        _primary, worktree, env = build(base, args.files, args.changed)
        built = time.perf_counter() - t0
        wt = str(worktree)
        reader = GitCliReader(environ=env)
        bare_reader = GitCliReader(environ=env, sandbox=None)
        rereading = GitCliReader(environ=env, reuse_index=False)
        git_dir, common = reader.git_dirs(wt)
        repo = GitRepository(worktree=wt, git_dir=git_dir, common_dir=common)
        fs = LocalFileSystem()
        observer = WorktreeObserver(
            reader, fs, repo, writable=["src/m00/d00/"], git_entries=[".git"]
        )
        unsandboxed = WorktreeObserver(
            bare_reader, fs, repo, writable=["src/m00/d00/"], git_entries=[".git"]
        )
        sequential = WorktreeObserver(
            reader, fs, repo, writable=["src/m00/d00/"], git_entries=[".git"], parallel=False
        )
        reread = WorktreeObserver(
            rereading, fs, repo, writable=["src/m00/d00/"], git_entries=[".git"]
        )
        snapshot = observer.snapshot()
        unsandboxed.snapshot()
        sequential.snapshot()
        reread.snapshot()
        changed = observer.observe(snapshot)
        listed = len(reader.status(repo).entries)

        def bare() -> None:
            git(env, worktree, *STATUS)

        def version(r: GitCliReader) -> Callable[[], Any]:
            argv = [*r.command_line("toplevel", wt)[:-4], "--version"]
            return lambda: subprocess.run(
                argv, env=r.environment("toplevel", wt), capture_output=True, check=True
            )

        measured: dict[str, Callable[[], Any]] = {
            "(a) git status --porcelain=v2 -z -uall": bare,
            "(b) audit: WorktreeObserver.observe": lambda: observer.observe(snapshot),
            "    the same, without the sandbox": lambda: unsandboxed.observe(snapshot),
            "    the same, parallel=False": lambda: sequential.observe(snapshot),
            "    the same, the index re-read by Git": lambda: reread.observe(snapshot),
            "    the audit before issue 8 (rebuilt)": old_audit(env, worktree),
            "    the listing (table), sandboxed": lambda: reader.status(repo, rules=observer.rules),
            "    the listing (table), no sandbox": lambda: bare_reader.status(
                repo, rules=observer.rules
            ),
            "    git ls-files (table), sandboxed": lambda: rereading.index(repo),
            "    git --version, sandboxed": version(reader),
            "    git --version, no sandbox": version(bare_reader),
        }
        if not args.no_round:
            parent = base / "trace"
            parent.mkdir()
            tmp = base / "tmp"
            tmp.mkdir()
            measured["(c) a whole no-op run (1 round)"] = noop_round(worktree, parent, tmp)
        for fn in measured.values():  # warm the caches once
            fn()
        samples: dict[str, list[float]] = {name: [] for name in measured}
        for _ in range(args.repeat):
            for name, fn in measured.items():
                samples[name].append(timed(fn))

        rows = [row(name, s) for name, s in samples.items()]
        print(
            f"machine: {platform.machine()} {platform.processor() or ''} "
            f"{os.cpu_count()} CPUs, {platform.system()} {platform.release()}, "
            f"{git(env, worktree, '--version').decode().strip()}, Python "
            f"{platform.python_version()}"
        )
        print(
            f"worktree: {args.files} tracked files, {args.changed} changed "
            f"({listed} listed by status, {len(changed.files)} observed), built in "
            f"{built:.1f} s; {args.repeat} repetitions each"
        )
        print()
        print(f"{'step':<42} {'median ms':>10} {'min ms':>9} {'max ms':>9}")
        for name, median, low, high in rows:
            print(f"{name:<42} {median * 1000:>10.1f} {low * 1000:>9.1f} {high * 1000:>9.1f}")
        a = statistics.median(samples["(a) git status --porcelain=v2 -z -uall"])
        b = statistics.median(samples["(b) audit: WorktreeObserver.observe"])
        u = statistics.median(samples["    the same, without the sandbox"])
        s = statistics.median(samples["    the same, parallel=False"])
        r = statistics.median(samples["    the same, the index re-read by Git"])
        o = statistics.median(samples["    the audit before issue 8 (rebuilt)"])
        low_a = min(samples["(a) git status --porcelain=v2 -z -uall"])
        low_b = min(samples["(b) audit: WorktreeObserver.observe"])
        print()
        print(f"sandbox: {reader.sandbox or 'none (bubblewrap not found)'}")
        print(
            f"ratio (b)/(a) = {b / a:.2f} of the medians, {low_b / low_a:.2f} of the minima "
            f"(aim: at most 1.2); without the sandbox {u / a:.2f}; sequential {s / a:.2f}; "
            f"the index re-read {r / a:.2f}; the audit before issue 8 {o / a:.2f}"
        )
    finally:
        if args.keep:
            print(f"kept: {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
