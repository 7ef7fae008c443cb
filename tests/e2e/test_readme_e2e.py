"""Issue 31 §1: every code block of README.md runs as written — the documentation cannot drift
from the program. tests/e2e/readme_walkthrough.py takes the blocks from README.md itself and runs
them in order on a fresh project, inside a network namespace of its own where the README's two
local endpoints are scripted model servers: the Quickstart's demo, the steps by hand (the
worktree, the grant, the model map, workers.json committed, the endpoints of step 6, doctor in
the worktree, plan, a real Claude Code run through the gateway, show), the resource limits, the
signing key, the Python example's real pi run through the local provider, and verify with the
public key. A changed example fails here until it works."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from readme_blocks import readme_blocks

pytestmark = pytest.mark.e2e

DRIVER = Path(__file__).resolve().parent / "readme_walkthrough.py"
WALK_SECONDS = 3600.0
"""Only ends a hung walk (never a timed assertion): each block has its own bound inside."""


def walk(root: Path) -> dict[str, Any]:
    """The walk in a network namespace of its own (as root; else in a user namespace too)."""
    unshare = ["unshare", "--net"] if os.geteuid() == 0 else ["unshare", "-r", "--net"]
    done = subprocess.run(
        [*unshare, "--", sys.executable, str(DRIVER), str(root)],
        capture_output=True,
        text=True,
        timeout=WALK_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    report: dict[str, Any] = json.loads((root / "report.json").read_text())
    return report


def test_every_block_of_the_readme_runs_as_written_on_a_fresh_project(tmp_path: Path) -> None:
    report = walk(tmp_path)
    blocks = report["blocks"]
    for ran in blocks:
        assert ran["status"] == 0, json.dumps(ran, indent=1)
    assert [b["line"] for b in blocks] == [b.line for b in readme_blocks()]  # none left out
    # Claude Code went to the gateway of endpoints.json with its token, never elsewhere
    assert report["gateway"] and report["gateway_failures"] == []
    assert {r["authorization"] for r in report["gateway"]} == {"Bearer gw-readme-token-31"}
    # pi went to the local provider of models.json with the key of $LOCAL_API_KEY
    assert {r["authorization"] for r in report["local"]} == {"Bearer sk-readme-local-31"}
    home = tmp_path / "home"
    form = home / "src/myproject/.claude/worktrees/task-1/src/app/form.py"
    assert form.read_text().startswith("def validate(name):")
    said = {b["line"]: b.get("stdout_head", "") for b in blocks}
    ends = [b.get("stdout", "") for b in blocks]
    assert any(text.endswith("all prerequisites hold\n") for text in ends)
    assert any(
        text.startswith("concorde-workers plan — a run would launch") for text in said.values()
    )
    assert any(text.startswith("verified: the trace holds") for text in said.values())
    # step 8's run and step 9's account of it, then the Python example's run
    assert sum(text.startswith("run w-") and ": ok\n" in text for text in said.values()) == 2
    assert [b["stdout"] for b in blocks if b["kind"] == "python"] == ["ok \n"]
