"""`concorde-workers run` and `show` end to end: real Git, the real adapters, the production
container with the agent backends replaced by ProgramBackend (agent.py in real processes).

Every test runs in the `project` fixture (tests/integration/conftest.py). `run` answers 0 for an ok
run and 1 for an audit violation (cli.main in process); SIGINT sent to the CLI running in a process
of its own (tests/fakes/cli_launcher.py) while round 1 runs ends the run interrupted, exit 130,
with its final record and no runtime directory left; `show` on a run directory rebuilds the record
the run returned.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.cli_launcher import program_container
from fakes.program_backend import Step
from timing import SLOW, Signal

from concorde_workers.adapters.cli.main import main

pytestmark = pytest.mark.integration

LAUNCHER = str(Path(__file__).resolve().parents[1] / "fakes" / "cli_launcher.py")
RESULT: dict[str, Any] = {
    "status": "ok",
    "summary": "greeting added",
    "error": None,
    "proposed_deletions": [],
    "output": {},
}
# The record's fields the run directory does not keep (seed 002, runs.read_record).
NOT_KEPT = ("worktree", "stderr_tail", "runtime_directory")


def ok_round(path: str = "{worktree}/src/app/main.py") -> list[dict[str, Any]]:
    return [
        Step.session("s-1"),
        Step.transcript(),
        Step.write(path, "print('hello')\n"),
        Step.result(RESULT),
    ]


@pytest.fixture
def parent(project: Any) -> Path:
    folder = project.root / "trace"
    folder.mkdir()
    return Path(folder)


def run_cli(project: Any, parent: Path, scenarios: list[Any], *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(
        ["run", str(project.request_file), "--parent", str(parent), *argv],
        out,
        err,
        container=program_container(scenarios),
    )
    assert "Traceback" not in out.getvalue() + err.getvalue()
    assert "internal error" not in err.getvalue(), err.getvalue()
    return status, out.getvalue(), err.getvalue()


def show_json(run_dir: str) -> dict[str, Any]:
    out, err = io.StringIO(), io.StringIO()
    assert main(["show", run_dir, "--json"], out, err) == 0, err.getvalue()
    data = json.loads(out.getvalue())
    assert isinstance(data, dict)
    return data


def without(record: dict[str, Any], keys: tuple[str, ...] = NOT_KEPT) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in keys}


def test_an_ok_run_exits_0_and_show_rebuilds_its_record(project: Any, parent: Path) -> None:
    status, out, err = run_cli(project, parent, [ok_round()], "--json")
    assert status == 0, out + err
    record = json.loads(out)
    assert record["status"] == "ok" and record["error"] is None
    assert record["rounds"][0]["audit"] == {
        "verdict": "clean",
        "changed": ["src/app/main.py"],
        "violations": [],
    }
    assert (project.worktree / "src" / "app" / "main.py").read_text() == "print('hello')\n"
    assert not os.path.exists(record["runtime_directory"])
    assert f"{record['run_id']} · round 1 · finished ok" in err
    assert without(show_json(record["run_directory"])) == without(record)

    text = io.StringIO()
    assert main(["show", record["run_directory"]], text, io.StringIO()) == 0
    assert text.getvalue().startswith(f"run {record['run_id']}: ok\n")


@pytest.mark.req("Every run leaves a final record")
@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda path: path.write_text('{"run_id": "w-2026'), id="cut off"),
        pytest.param(lambda path: path.unlink(), id="missing"),
    ],
)
def test_show_rebuilds_the_record_of_a_run_whose_progress_file_is_damaged(
    project: Any, parent: Path, damage: Callable[[Path], None]
) -> None:
    status, out, err = run_cli(project, parent, [ok_round()], "--json")
    assert status == 0, out + err
    record = json.loads(out)
    damage(Path(record["run_directory"]) / "status.json")
    rebuilt = show_json(record["run_directory"])
    assert rebuilt["worktree"] == record["worktree"]  # the brief as sent names it
    assert without(rebuilt, ("stderr_tail", "runtime_directory")) == without(
        record, ("stderr_tail", "runtime_directory")
    )


def test_an_audit_violation_exits_1(project: Any, parent: Path) -> None:
    status, out, _ = run_cli(project, parent, [ok_round("{worktree}/docs/notes.md")])
    assert status == 1
    assert out.splitlines()[0].endswith(": failed: audit_violation")
    assert "violations 1: docs/notes.md" in out


def test_a_configuration_refusal_exits_2_and_makes_no_run_directory(
    project: Any, parent: Path
) -> None:
    status, _, err = run_cli(
        project, parent, [ok_round()], "--operation", "implement", "--worker", "nobody"
    )
    assert status == 2, err
    assert "concorde-workers: refused: " in err
    assert list(parent.iterdir()) == []


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.req("A running run shows its progress")
def test_sigint_mid_round_ends_the_run_interrupted_with_exit_130(
    project: Any, parent: Path, processes: list[subprocess.Popen[str]]
) -> None:
    pidfile = project.root / "agent.pid"
    running = Signal(project.root / "running.fifo")
    scenario = [
        Step.session("s-1"),
        Step.transcript(),
        Step.record(str(pidfile)),
        Step.line("tool", tool="Bash", target="sleep 3600"),
        Step.signal(running.path),
        Step.sleep(3600),
        Step.result(RESULT),
    ]
    scenarios = project.root / "scenarios.json"
    scenarios.write_text(json.dumps([scenario]))
    proc = subprocess.Popen(
        [
            sys.executable,
            LAUNCHER,
            str(scenarios),
            "run",
            str(project.request_file),
            "--parent",
            str(parent),
            "--json",
        ],
        cwd=project.root,
        env=dict(os.environ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    processes.append(proc)
    running.wait()  # the agent has done every step before its hour of sleep
    assert proc.poll() is None, proc.communicate()
    [run_dir] = (parent / "workers").glob("w-*")  # made before the agent started
    assert json.loads((run_dir / "status.json").read_text())["phase"] == "worker"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=SLOW)
    assert proc.returncode == 130, out + err
    assert "Traceback" not in err
    record = json.loads(out)
    assert record["status"] == "failed"
    assert record["error"]["code"] == "interrupted"
    assert "SIGINT" in record["error"]["detail"]
    assert record["run_directory"] == str(run_dir)
    node = json.loads((run_dir / "trace.json").read_text())
    assert (node["status"], node["outcome"]) == ("failed", "interrupted")
    progress = json.loads((run_dir / "status.json").read_text())
    assert (progress["phase"], progress["status"]) == ("finished", "interrupted")
    assert not os.path.exists(record["runtime_directory"])
    assert (run_dir / "transcript.jsonl").is_file()
    agent_pid = json.loads(pidfile.read_text())["pid"]
    with pytest.raises(ProcessLookupError):
        os.kill(agent_pid, 0)
    assert without(show_json(str(run_dir))) == without(record)
