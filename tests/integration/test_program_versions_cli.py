"""Issues 11 and 19 through the CLI and the production container: a run on an agent program
older than the policy relies on ends failed before launch with its record (no program started
but its `--version`), its message naming the program, its version, the minimum and the upgrade;
the configuration reader refuses a worker configured on one (backend_missing);
`plan --json` of a Claude Code worker shows the versions and the strict network allowlist.

The project's stub claude and pi lie in npm packages whose package.json says the pinned version
(tests/integration/conftest.py); the old programs here are scripts in no package, which the host
asks `--version` (and caches, below the project's own HOME).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from concorde_workers.adapters.cli.main import main
from concorde_workers.container import PROFILES, production
from concorde_workers.domain.configuration.profile import programs_of
from concorde_workers.domain.configuration.request import RunRequest

PROGRAMS = programs_of(PROFILES)

pytestmark = pytest.mark.integration


def old_program(project: Any, name: str, says: str) -> Path:
    """A program in no npm package whose `--version` says `says` (and which would note any
    other start in `started`)."""
    path = project.root / "old" / name
    path.parent.mkdir(exist_ok=True)
    started = project.root / "old" / "started"
    path.write_text(
        f'#!/bin/sh\nif [ "$1" = --version ]; then echo "{says}"; exit 0; fi\n'
        f'echo "$@" >> {started}\nexit 1\n'
    )
    path.chmod(0o755)
    return path


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), out, err)
    assert "Traceback" not in out.getvalue() + err.getvalue()
    return status, out.getvalue(), err.getvalue()


@pytest.fixture
def parent(project: Any) -> Path:
    folder = project.root / "trace"
    folder.mkdir()
    return Path(folder)


def ended(parent: Path) -> dict[str, Any]:
    """The one run's record below `parent` (`show --json` reads it back)."""
    [run_dir] = (parent / "workers").glob("w-*")
    status, out, err = cli("show", str(run_dir), "--json")
    assert status == 0, out + err
    return dict(json.loads(out))


def test_an_older_claude_ends_its_run_launch_failed_with_its_record(
    project: Any, parent: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 19 §3: a program below its floor ends like a missing one, a run failed before
    launch with its record (claude: launch_failed), never a refusal without a record."""
    claude = old_program(project, "claude", "2.1.197 (Claude Code)")
    monkeypatch.setenv("CONCORDE_CLAUDE", str(claude))
    status, out, err = cli(
        "run", str(project.request_file), "--backend", "claude", "--parent", str(parent)
    )
    assert status == 1, out + err
    assert "launch_failed" in out + err
    row = PROGRAMS["claude"]
    record = ended(parent)
    assert record["status"] == "failed" and record["error"]["code"] == "launch_failed"
    message = record["error"]["detail"]
    for words in (
        f"Claude Code at {claude} is version 2.1.197",
        f"older than {row.minimum}",
        row.upgrade,
        "choose the pi backend",
    ):
        assert words in message, words
    assert not (project.root / "old" / "started").exists()  # only `--version` ran
    # plan says the same ending (and exits 2 for a run that would not launch)
    status, out, _ = cli("plan", str(project.request_file), "--backend", "claude", "--json")
    plan = json.loads(out)
    assert status == 2 and plan["refusal"]["code"] == "launch_failed"
    assert [(p["program"], p["version"], p["minimum"]) for p in plan["programs"]] == [
        ("claude", "2.1.197", "2.1.332")
    ]


def test_the_in_process_host_ends_an_older_claudes_run_with_its_record(
    project: Any, parent: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Concorde calls WorkerHost.run itself: no refusal is raised, the run ends failed."""
    claude = old_program(project, "claude", "2.1.300 (Claude Code)")
    monkeypatch.setenv("CONCORDE_CLAUDE", str(claude))
    request = RunRequest.model_validate(
        {**json.loads(project.request_file.read_text()), "backend": "claude", "parent": str(parent)}
    )
    host = production().worker_host()
    assert host.refusal_before_run(request) is None
    record = host.run(request)
    assert record.status == "failed" and record.error is not None
    assert record.error.code == "launch_failed"
    assert "is version 2.1.300" in record.error.detail
    assert ended(parent)["error"]["code"] == "launch_failed"


def test_an_older_sandbox_runtime_ends_a_pi_run_pi_runtime_missing_with_its_record(
    project: Any, parent: Path
) -> None:
    (project.sandbox_runtime / "package.json").write_text(
        json.dumps({"name": "@anthropic-ai/sandbox-runtime", "version": "0.0.70"})
    )
    status, out, err = cli(
        "run", str(project.request_file), "--backend", "pi", "--parent", str(parent)
    )
    assert status == 1, out + err
    record = ended(parent)
    assert record["status"] == "failed" and record["error"]["code"] == "pi_runtime_missing"
    message = record["error"]["detail"]
    assert f"sandbox-runtime at {project.sandbox_runtime} is version 0.0.70" in message
    assert "older than 0.0.78" in message and "CONCORDE_SANDBOX_RUNTIME" in message


def test_a_worker_configured_on_an_older_program_is_refused_by_the_reader(
    project: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With --operation/--worker the configuration reader refuses it (backend_missing, naming
    the worker and its configuration) before the preparation is asked."""
    claude = old_program(project, "claude", "2.1.197 (Claude Code)")
    monkeypatch.setenv("CONCORDE_CLAUDE", str(claude))
    request = project.request(operation="implement", worker="reviewer")
    status, out, _ = cli("plan", str(request), "--declare", "implement:reviewer", "--json")
    plan = json.loads(out)
    assert status == 2 and plan["refusal"]["code"] == "backend_missing", plan["refusal"]
    message = plan["refusal"]["message"]
    assert "worker reviewer of Operation implement runs on backend claude" in message
    assert f"Claude Code at {claude} is version 2.1.197" in message


def test_plan_json_of_a_claude_worker_shows_the_versions_and_the_strict_allowlist(
    project: Any,
) -> None:
    status, out, err = cli("plan", str(project.request_file), "--backend", "claude", "--json")
    assert status == 0, out + err
    plan = json.loads(out)
    lock = json.loads((Path(__file__).resolve().parents[2] / "package-lock.json").read_text())
    pinned = lock["packages"]["node_modules/@anthropic-ai/claude-code"]["version"]
    assert [(p["program"], p["path"], p["version"], p["problem"]) for p in plan["programs"]] == [
        ("claude", str(project.bin / "claude"), pinned, None)
    ]
    assert plan["programs"][0]["source"].endswith("@anthropic-ai/claude-code/package.json")
    network = plan["settings"]["sandbox"]["network"]
    assert network == {"allowedDomains": [], "deniedDomains": ["*"], "strictAllowlist": True}
    status, text, _ = cli("plan", str(project.request_file), "--backend", "claude")
    assert status == 0 and "  sandbox.network.strictAllowlist: true\n" in text
    assert f"  claude {pinned} (at least 2.1.332) {project.bin / 'claude'}  ← " in text
