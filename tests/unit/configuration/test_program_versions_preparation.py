"""Issue 11: the preparation, the planner and the configuration reader read each agent program's
version (through the ProgramVersions port, here its fake) and refuse a program older than the
policy relies on before anything is generated; the versions are shown and kept."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from fakes.world import BIN, SANDBOX_RUNTIME, SPACE_PROGRAMS, WORKTREE, PlanWorld
from worlds.repository import GRANT

from concorde_workers.adapters.cli.views.plan_text import render
from concorde_workers.application.preparation.planner import plan_json
from concorde_workers.application.preparation.prepared import Prepared, Progress
from concorde_workers.container import PROFILES
from concorde_workers.domain.configuration.profile import programs_of
from concorde_workers.domain.configuration.program_versions import ProgramLocation
from concorde_workers.domain.configuration.request import RunRequest
from concorde_workers.domain.ground.errors import Refusal

PROGRAMS = programs_of(PROFILES)

RUN_ID = "w-20260101T000000-abc123"
RT = "/tmp/concorde-abc123-0badcafe"


def request(**fields: Any) -> RunRequest:
    data: dict[str, Any] = {
        "worktree": WORKTREE,
        "task_type": "implement",
        "grant": copy.deepcopy(GRANT),
        "instructions": "Do the task.",
    }
    data.update(fields)
    return RunRequest(**data)


def world_with(**versions: str) -> PlanWorld:
    world = PlanWorld()
    world.environ["CONCORDE_PI"] = f"{BIN}/pi"
    world.versions.versions.update({k.replace("_", "-"): v for k, v in versions.items()})
    return world


def prepare(world: PlanWorld, backend: str) -> tuple[Prepared | Refusal, Progress]:
    progress = Progress()
    result = world.container().preparer().prepare(request(backend=backend), RUN_ID, RT, progress)
    return result, progress


def test_a_claude_run_is_prepared_with_the_version_of_its_program() -> None:
    world = world_with()
    result, _ = prepare(world, "claude")
    assert isinstance(result, Prepared), result
    assert world.versions.asked == [
        ProgramLocation(spec=PROGRAMS["claude"], path=f"{BIN}/claude", origin="PATH")
    ]
    ((claude,),) = [result.programs]
    assert (claude.program, claude.path, claude.version) == ("claude", f"{BIN}/claude", "2.1.332")


def test_a_pi_run_is_prepared_with_the_versions_of_pi_and_its_sandbox_runtime() -> None:
    world = world_with(pi="0.74.0", sandbox_runtime="0.0.83")
    result, _ = prepare(world, "pi")
    assert isinstance(result, Prepared), result
    assert [(p.program, p.path, p.version) for p in result.programs] == [
        ("pi", f"{BIN}/pi", "0.74.0"),
        ("sandbox-runtime", SANDBOX_RUNTIME, "0.0.83"),
    ]


@pytest.mark.parametrize(
    ("backend", "program", "older", "code"),
    [
        ("claude", "claude", "2.1.197", "launch_failed"),
        ("pi", "pi", "0.60.0", "pi_runtime_missing"),
        ("pi", "sandbox_runtime", "0.0.70", "pi_runtime_missing"),
    ],
)
def test_an_older_program_is_refused_before_anything_is_generated(
    backend: str, program: str, older: str, code: str
) -> None:
    world = world_with(**{program: older})
    result, progress = prepare(world, backend)
    assert isinstance(result, Refusal) and result.code == code, result
    assert f"is version {older}" in result.message and "older than" in result.message
    assert progress.policy is None  # refused at the prerequisites, before the policy
    assert world.fs_writes() == []
    # not a refusal before the run: the run ends failed with this code and its record
    assert world.container().preparer().refusal_before_run(request(backend=backend), "/tmp") is None


def test_a_program_whose_version_cannot_be_read_is_refused() -> None:
    world = world_with()
    world.versions.unreadable[f"{BIN}/claude"] = "it exited 2 and printed 'usage: claude'"
    result, _ = prepare(world, "claude")
    assert isinstance(result, Refusal) and result.code == "launch_failed"
    assert "could not be read (it exited 2 and printed 'usage: claude')" in result.message


def test_a_program_that_is_not_found_keeps_its_own_refusal() -> None:
    """No version to read: the run meets what it always met (pi: pi_runtime_missing naming
    the missing program; claude: launch_failed when round 1 starts)."""
    world = PlanWorld(programs=("rg", "fd", "bwrap", "socat", "env", "umount", *SPACE_PROGRAMS))
    result, _ = prepare(world, "pi")
    assert isinstance(result, Refusal) and result.code == "pi_runtime_missing"
    assert "Missing: pi" in result.message
    claude, _ = prepare(world, "claude")
    assert isinstance(claude, Prepared) and not claude.program_found and claude.programs == ()
    assert world.versions.asked == []  # the missing prerequisite first; no claude to ask


def test_the_plan_shows_the_versions_and_the_claude_settings_beside_the_lists() -> None:
    world = world_with(claude="2.1.400")
    plan = world.container().planner().plan(request(backend="claude"))
    data = plan_json(plan)
    assert data["programs"] == [
        {
            "program": "claude",
            "path": f"{BIN}/claude",
            "version": "2.1.400",
            "minimum": "2.1.332",
            "source": "the test's FakeProgramVersions",
            "problem": None,
            "origin": "PATH",
        }
    ]
    assert data["settings"]["sandbox"]["network"] == {
        "allowedDomains": [],
        "deniedDomains": ["*"],
        "strictAllowlist": True,
    }
    assert data["settings"]["env"] == {"CLAUDE_CODE_DISABLE_BACKGROUND_TASKS": "1"}
    text = render(plan)
    assert (
        f"claude 2.1.400 (at least 2.1.332) {BIN}/claude  ← the test's FakeProgramVersions"
    ) in text
    assert "  sandbox.network.strictAllowlist: true\n" in text


def test_a_refused_plan_still_shows_the_version_it_was_refused_for() -> None:
    world = world_with(claude="2.1.197")
    data = plan_json(world.container().planner().plan(request(backend="claude")))
    assert data["verdict"] == "refused" and data["refusal"]["code"] == "launch_failed"
    assert [p["version"] for p in data["programs"]] == ["2.1.197"]
    assert "settings" not in data
