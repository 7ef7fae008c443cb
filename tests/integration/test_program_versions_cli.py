"""Issue 11 through the CLI and the production container: an agent program older than the policy
relies on is refused before any run exists (no run directory, no record, no program started but
its `--version`), with a message naming the program, its version, the minimum and the upgrade;
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
from concorde_workers.application.host import RequestRefused
from concorde_workers.container import production
from concorde_workers.domain.program_versions import MINIMUMS
from concorde_workers.domain.request import RunRequest

pytestmark = pytest.mark.integration


def old_program(project: Any, name: str, says: str) -> Path:
    """A program in no npm package whose `--version` says `says` (and which would note any
    other start in `started`)."""
    path = project.root / "old" / name
    path.parent.mkdir(exist_ok=True)
    started = project.root / "old" / "started"
    path.write_text(f'#!/bin/sh\nif [ "$1" = --version ]; then echo "{says}"; exit 0; fi\n'
                    f"echo \"$@\" >> {started}\nexit 1\n")
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


def test_an_older_claude_is_refused_before_any_run(project: Any, parent: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    claude = old_program(project, "claude", "2.1.197 (Claude Code)")
    monkeypatch.setenv("CONCORDE_CLAUDE", str(claude))
    status, out, err = cli("run", str(project.request_file), "--backend", "claude",
                           "--parent", str(parent))
    assert status == 2, out + err
    assert "refused: backend_missing (environment)" in err
    row = MINIMUMS["claude"]
    for words in (f"Claude Code at {claude} is version 2.1.197", f"older than {row.minimum}",
                  row.upgrade, "choose the pi backend"):
        assert words in err, words
    assert not (parent / "workers").exists()  # no run directory, no record
    assert not (project.root / "old" / "started").exists()  # only `--version` ran
    # the same refusal under --json, and from plan (which exits 2 for a refused run)
    status, out, _ = cli("run", str(project.request_file), "--backend", "claude",
                         "--parent", str(parent), "--json")
    assert status == 2 and json.loads(out)["refusal"]["code"] == "backend_missing"
    status, out, _ = cli("plan", str(project.request_file), "--backend", "claude", "--json")
    plan = json.loads(out)
    assert status == 2 and plan["refusal"]["code"] == "backend_missing"
    assert [(p["program"], p["version"], p["minimum"]) for p in plan["programs"]] == [
        ("claude", "2.1.197", "2.1.332")]
    assert not (parent / "workers").exists()


def test_the_in_process_host_refuses_an_older_claude_before_a_run_exists(
        project: Any, parent: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Concorde calls WorkerHost.run itself: the refusal is raised, no run is made."""
    claude = old_program(project, "claude", "2.1.300 (Claude Code)")
    monkeypatch.setenv("CONCORDE_CLAUDE", str(claude))
    request = RunRequest.model_validate({
        **json.loads(project.request_file.read_text()), "backend": "claude",
        "parent": str(parent)})
    host = production().worker_host()
    assert host.refusal_before_run(request) is not None
    with pytest.raises(RequestRefused) as refused:
        host.run(request)
    assert refused.value.refusal.code == "backend_missing"
    assert "is version 2.1.300" in refused.value.refusal.message
    assert not (parent / "workers").exists()


def test_an_older_sandbox_runtime_refuses_a_pi_run_before_it_exists(
        project: Any, parent: Path) -> None:
    (project.sandbox_runtime / "package.json").write_text(json.dumps(
        {"name": "@anthropic-ai/sandbox-runtime", "version": "0.0.70"}))
    status, out, err = cli("run", str(project.request_file), "--backend", "pi",
                           "--parent", str(parent))
    assert status == 2, out + err
    assert "refused: pi_runtime_missing (environment)" in err
    assert f"sandbox-runtime at {project.sandbox_runtime} is version 0.0.70" in err
    assert "older than 0.0.78" in err and "CONCORDE_SANDBOX_RUNTIME" in err
    assert not (parent / "workers").exists()


def test_a_worker_configured_on_an_older_program_is_refused_by_the_reader(
        project: Any, monkeypatch: pytest.MonkeyPatch) -> None:
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
        project: Any) -> None:
    status, out, err = cli("plan", str(project.request_file), "--backend", "claude", "--json")
    assert status == 0, out + err
    plan = json.loads(out)
    lock = json.loads((Path(__file__).resolve().parents[2] / "package-lock.json").read_text())
    pinned = lock["packages"]["node_modules/@anthropic-ai/claude-code"]["version"]
    assert [(p["program"], p["path"], p["version"], p["problem"]) for p in plan["programs"]] == [
        ("claude", str(project.bin / "claude"), pinned, None)]
    assert plan["programs"][0]["source"].endswith("@anthropic-ai/claude-code/package.json")
    network = plan["settings"]["sandbox"]["network"]
    assert network == {"allowedDomains": [], "deniedDomains": ["*"], "strictAllowlist": True}
    status, text, _ = cli("plan", str(project.request_file), "--backend", "claude")
    assert status == 0 and "  sandbox.network.strictAllowlist: true\n" in text
    assert f"  claude {pinned} (at least 2.1.332) {project.bin / 'claude'}  ← " in text
