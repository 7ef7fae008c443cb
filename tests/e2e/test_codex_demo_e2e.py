"""Issue 33 "Done means": `concorde-workers demo --backend codex` runs end to end offline, typed
as a user types it (the installed console script, a fresh process): the real, pinned Codex CLI
found as the backend finds it (no CONCORDE_CODEX), the scripted Responses API server on
127.0.0.1 the demo starts, reached through the demo's own codex.json (the caller's is never
read), and the same outcome as pi's demo: the record ok, the allowed patch in the round's
change, the read-only write refused, no network from the shell, the proposed deletion done, the
report beside the trace."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from e2e.conftest_codex import require_codex
from timing import SLOW

from concorde_workers.adapters.codex.profile import PINS, native_relative

pytestmark = pytest.mark.e2e

SCRIPT = Path(sys.executable).parent / "concorde-workers"
PLANTED_KEY = "sk-user-own-key-never-used-by-the-demo-5521"


def _caller_env(home: Path) -> dict[str, str]:
    """A user's shell: their own HOME (with a Codex login and a key of their own), a
    CONCORDE_CODEX_CONFIG naming a file that is not there (the demo must not read it: a run
    would be refused on it) and no CONCORDE_CODEX (the program is found as for any run)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONCORDE_", "GIT_"))}
    (home / ".codex").mkdir(parents=True)
    (home / ".codex" / "auth.json").write_text(json.dumps({"OPENAI_API_KEY": PLANTED_KEY}))
    env.update(
        HOME=str(home),
        LANG="C.UTF-8",
        OPENAI_API_KEY=PLANTED_KEY,
        CONCORDE_CODEX_CONFIG=str(home / "no-such-codex.json"),
    )
    return env


def _cli(env: dict[str, str], cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=SLOW * 4,
        check=False,
    )


def test_issue_33_demo_backend_codex_runs_the_pinned_codex_offline_and_exits_0(
    tmp_path: Path,
) -> None:
    require_codex()
    folder = tmp_path / "here"
    folder.mkdir()
    env = _caller_env(tmp_path / "home")
    proc = _cli(env, tmp_path, "demo", "--backend", "codex", "--folder", str(folder), "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    record: dict[str, Any] = json.loads(proc.stdout)
    said = proc.stderr
    # The record: ok, on codex, one round whose audit saw the allowed patch alone.
    assert record["status"] == "ok" and record["error"] is None, record["error"]
    assert record["backend"] == "codex" and record["local_model"] == "gpt-5.5"
    (round_1,) = record["rounds"]
    assert round_1["codex"]["thread_id"] and round_1["codex"]["tool_calls"] == 3
    assert round_1["audit"] == {
        "verdict": "clean",
        "changed": ["src/shop/discount.py"],
        "violations": [],
    }
    assert round_1["usage"]["cost_usd"] > 0  # priced on the host with the demo's codex.json
    assert record["deleted"] == ["src/shop/obsolete.py"]
    assert record["worker_result"]["output"] == {"files": ["src/shop/discount.py"]}
    # What the demo shows, check by check (on stderr under --json).
    assert said.count("[ok]") == 6 and "FAILED" not in said, said
    assert "the read-only write was refused by the confinement" in said
    assert "Failed to write file" in said and "src/shop/legacy.py" in said
    assert "the shell could not reach the network" in said and "python_exit=1" in said
    assert "model requests served: 4" in said
    # The throwaway repository is gone; the trace stays beside it, with the round's patch.
    (left,) = list(folder.iterdir())
    assert left.name.startswith("workers-demo-trace-"), left
    trace = Path(record["run_directory"])
    assert trace.is_relative_to(left)
    patch = (trace / "rounds" / "1" / "changes.patch").read_text()
    assert "+++ b/src/shop/discount.py" in patch and "+def discount(total):" in patch
    assert "legacy.py" not in patch and "obsolete.py" not in patch
    # The program that ran is the pinned native codex of this checkout, found as any run finds it.
    (program,) = json.loads((trace / "programs.json").read_text())["programs"]
    assert program["program"] == "codex" and program["version"] == PINS["@openai/codex"]
    assert program["path"].endswith("/node_modules/" + native_relative())
    # The report beside the trace shows the change; `show --diff` prints it.
    report = left / "report.html"
    assert f"report: {report} " in said and "+def discount(total):" in report.read_text()
    shown = _cli(env, tmp_path, "show", str(trace), "--diff")
    assert shown.returncode == 0 and "+def discount(total):\n" in shown.stdout, shown.stderr
    # The user's own key and login reached nothing the run kept.
    for path in trace.rglob("*"):
        if path.is_file():
            assert PLANTED_KEY not in path.read_text(errors="replace"), path
