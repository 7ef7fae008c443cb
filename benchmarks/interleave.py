"""What the start-up, plan and run benchmarks share: interleaved samples, medians and minima,
and a baseline revision's package put first on the import path.

Every benchmark measures its subject and its baseline in the same run, one after the other in
each repetition (so that load which comes and goes on a shared machine weighs on both), and
reports the median and the minimum of each and their ratios.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "concorde_workers"


def project_programs() -> dict[str, str]:
    """The agent programs this checkout pinned (package.json, installed by ./scripts/setup), by
    the variables that name them, so that every benchmark runs the same files."""
    found: dict[str, str] = {}
    for variable, rel in (
        ("CONCORDE_PI", ".bin/pi"),
        ("CONCORDE_CLAUDE", ".bin/claude"),
        ("CONCORDE_SANDBOX_RUNTIME", "@anthropic-ai/sandbox-runtime"),
    ):
        if (ROOT / "node_modules" / rel).exists():
            found[variable] = str(ROOT / "node_modules" / rel)
    return found


def compiled() -> None:
    """Byte-compile the package, as an installation does (pip writes the .pyc files): with
    PYTHONDONTWRITEBYTECODE set, as in some shells, every changed module would otherwise be
    compiled again by every process measured, a cost no installed copy pays."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "-x", r"/(\.venv|node_modules)/", str(ROOT)],
        check=False,
        stdout=subprocess.DEVNULL,
    )


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def interleaved(
    steps: Mapping[str, Callable[[], object]], repeat: int, warmup: int = 1
) -> dict[str, list[float]]:
    """Each step `repeat` times (after `warmup` untimed calls), one of each per repetition, in
    an order rotated every repetition so that none is always first after another."""
    names = list(steps)
    for _ in range(warmup):
        for name in names:
            steps[name]()
    samples: dict[str, list[float]] = {name: [] for name in names}
    for i in range(repeat):
        shift = i % len(names)
        for name in names[shift:] + names[:shift]:
            samples[name].append(timed(steps[name]))
    return samples


def report(
    samples: Mapping[str, list[float]], baseline: str, unit: float = 1000.0, label: str = "ms"
) -> dict[str, tuple[float, float]]:
    """Prints median, min, max of every step and its ratio to `baseline` (medians and minima);
    returns name -> (median ratio, min ratio)."""
    base_med = statistics.median(samples[baseline])
    base_min = min(samples[baseline])
    width = max(len(n) for n in samples)
    print(
        f"{'step':<{width}}  {'median ' + label:>11} {'min ' + label:>9} {'max ' + label:>9}"
        f"  {'ratio med':>9} {'ratio min':>9}"
    )
    ratios = {}
    for name, values in samples.items():
        med, low = statistics.median(values), min(values)
        ratios[name] = (med / base_med, low / base_min)
        print(
            f"{name:<{width}}  {med * unit:>11.1f} {low * unit:>9.1f} "
            f"{max(values) * unit:>9.1f}  {med / base_med:>9.2f} {low / base_min:>9.2f}"
        )
    print(
        f"(n = {len(samples[baseline])} each, interleaved; ratios against {baseline!r}; "
        f"load average now {os.getloadavg()[0]:.1f})"
    )
    return ratios


@contextlib.contextmanager
def baseline_tree(revision: str | None) -> Iterator[dict[str, str]]:
    """The environment that puts `revision`'s package first on the import path (a temporary
    Git worktree, a `concorde_workers` link in a directory on PYTHONPATH, as scripts/typecheck
    makes one); this checkout's environment when `revision` is None."""
    if revision is None:
        yield dict(os.environ)
        return
    with tempfile.TemporaryDirectory(prefix="bench-baseline-") as base:
        tree, shim = Path(base) / "tree", Path(base) / "shim"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(tree), revision],
            check=True,
        )
        try:
            shim.mkdir()
            (shim / PACKAGE).symlink_to(tree)
            subprocess.run(
                [sys.executable, "-m", "compileall", "-q", str(tree)],
                check=False,
                stdout=subprocess.DEVNULL,
            )
            yield {**os.environ, "PYTHONPATH": str(shim)}
        finally:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False
            )


def one_round_request(root: Path, worktree: Path, grant: object, backend: str, model: str) -> Path:
    """A one-round request file for `backend` on `worktree` (no repair round, no retry), its
    trace parent `root`/trace."""
    parent = root / "trace"
    parent.mkdir()
    request = root / "request.json"
    request.write_text(
        json.dumps(
            {
                "worktree": str(worktree),
                "task_type": "implement",
                "parent": str(parent),
                "grant": grant,
                "instructions": "Do the scripted task.",
                "backend": backend,
                "local_model": model,
                "limits": {"timeout_seconds": 300, "rounds": 0, "retries": 0},
            }
        )
    )
    return request
