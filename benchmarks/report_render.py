#!/usr/bin/env python3
"""A run's HTML report at size (issue 21): a 10-round run with 1,000 tool calls.

    .venv/bin/python benchmarks/report_render.py [--repeat 5]

The run is real: `WorkerHost.run` on the production wiring with the real Git, over the
integration tests' project (tests/integration/conftest.py) and the test agent program
(tests/fakes/agent_programs/agent.py), ten rounds (nine repairs asked by a round validation),
each changing a file; its transcript is Claude Code's session format with 100 tool calls a round
(allowed, refused by the grant, refused by the sandbox, failed, in turn). Measured, interleaved,
REPEAT times after one warm-up:

  (a) building the page: `gather` (reading the run directory) and `report_html`;
  (b) headless Chromium rendering the page to PNG, against (c) the same Chromium rendering a
      one-line page: the browser's own start, the baseline of the same run.

Prints the page's size, (a), (b), (c) and (b)/(c). The figures are in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))

from fakes.program_backend import Step  # noqa: E402
from integration.conftest import build_project, isolate_environment  # noqa: E402
from integration.host_fixtures import HostHarness, ok_result  # noqa: E402

from concorde_workers.adapters.cli.views.report import report_html  # noqa: E402
from concorde_workers.adapters.machine.filesystem import LocalFileSystem  # noqa: E402
from concorde_workers.application.evidence.report import gather  # noqa: E402
from concorde_workers.application.runtime.validation import (  # noqa: E402
    ValidationInput,
    ValidationOutcome,
)
from concorde_workers.container import PROFILES  # noqa: E402
from concorde_workers.domain.configuration.request import Limits  # noqa: E402

ROUNDS = 10
CALLS_PER_ROUND = 100
ANSWERS = [
    ("File written", False),
    ("Concorde grant: src/app/util.py is read-only for this task", True),
    ("touch: cannot touch 'x': Read-only file system", True),
    ("No such file", True),
]


def transcript(worktree: Path) -> list[str]:
    lines: list[str] = []
    for round_number in range(1, ROUNDS + 1):
        lines.append(
            json.dumps(
                {"type": "user", "message": {"role": "user", "content": f"round {round_number}"}}
            )
        )
        for i in range(CALLS_PER_ROUND):
            call_id = f"t{round_number}-{i}"
            tool = "Bash" if i % 4 == 2 else "Write"
            arguments = (
                {"command": f"touch x{i}"}
                if tool == "Bash"
                else {"file_path": str(worktree / f"src/app/f{i}.py"), "content": "x"}
            )
            text, error = ANSWERS[i % 4]
            lines.append(
                json.dumps(
                    {
                        "type": "assistant",
                        "message": {
                            "content": [
                                {
                                    "type": "tool_use",
                                    "id": call_id,
                                    "name": tool,
                                    "input": arguments,
                                }
                            ]
                        },
                    }
                )
            )
            lines.append(
                json.dumps(
                    {
                        "type": "user",
                        "message": {
                            "content": [
                                {
                                    "type": "tool_result",
                                    "tool_use_id": call_id,
                                    "is_error": error,
                                    "content": text,
                                }
                            ]
                        },
                    }
                )
            )
    return lines


def make_run(base: Path) -> Path:
    with pytest.MonkeyPatch.context() as patch:
        project = build_project(base)
        isolate_environment(patch, project)
        harness = HostHarness(
            root=project.root,
            worktree=project.worktree,
            primary=project.primary,
            tmp=project.tmp,
            home=project.home,
            git_env=project.git_env,
        )
        main = "{worktree}/src/app/main.py"
        lines = transcript(project.worktree)
        scenarios = [
            [
                Step.session("s-1"),
                Step.transcript(lines if n == ROUNDS else None),
                Step.write(main, "".join(f"line {k}\n" for k in range(n * 20))),
                Step.result(ok_result()),
            ]
            for n in range(1, ROUNDS + 1)
        ]

        def validation(given: ValidationInput) -> ValidationOutcome:
            return ValidationOutcome(repair="again" if given.round < ROUNDS else None)

        run = harness.run(
            *scenarios,
            validation=validation,
            limits=Limits(timeout_seconds=120, rounds=ROUNDS - 1, retries=0, retry_delay_seconds=0),
        )
        assert run.record.status == "ok", run.record.error
        assert len(run.record.rounds) == ROUNDS
        return run.run_dir


def render(chromium: str, page: Path, png: Path, profile: Path) -> float:
    started = time.perf_counter()
    subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            f"--user-data-dir={profile}",
            f"--screenshot={png}",
            "--window-size=1200,2000",
            page.as_uri(),
        ],
        capture_output=True,
        check=True,
        timeout=120,
    )
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    chromium = shutil.which("chromium")
    if chromium is None:
        print("chromium is missing: run ./scripts/setup", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        run_dir = make_run(base / "project")
        fs = LocalFileSystem()
        page, small = base / "report.html", base / "small.html"
        small.write_text("<!DOCTYPE html><p>one line</p>")
        built: list[float] = []
        rendered: list[float] = []
        baseline: list[float] = []
        for index in range(args.repeat + 1):
            started = time.perf_counter()
            made = gather(fs, str(run_dir), PROFILES)
            page.write_text(report_html(made))
            took = time.perf_counter() - started
            full = render(chromium, page, base / "report.png", base / "profile")
            bare = render(chromium, small, base / "small.png", base / "profile")
            if index:  # the first is the warm-up
                built.append(took)
                rendered.append(full)
                baseline.append(bare)
        calls = len(made.calls)
        size = page.stat().st_size
    print(f"run: {ROUNDS} rounds, {calls} tool calls; page {size:,} bytes")
    print(
        f"(a) gather + report_html: median {statistics.median(built) * 1000:.0f} ms "
        f"(min {min(built) * 1000:.0f})"
    )
    print(
        f"(b) Chromium renders it to PNG: median {statistics.median(rendered):.2f} s "
        f"(min {min(rendered):.2f})"
    )
    print(
        f"(c) Chromium renders a one-line page: median {statistics.median(baseline):.2f} s "
        f"(min {min(baseline):.2f})"
    )
    print(f"(b)/(c): {statistics.median(rendered) / statistics.median(baseline):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
