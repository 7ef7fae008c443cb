"""The dry-run planner (application/preparation/planner.py) through the Container, against the fakes.

The planner resolves a worker through the configuration reader when the request names an
Operation and a worker (seed 000 "Refusals before a run"), then runs the very preparation a run
would; it names a run id and a runtime directory and creates neither. Its JSON document and its
text show the same content.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from fakes.world import (
    BIN,
    PRIMARY,
    READING_GIT_CALLS,
    SPACE_PROGRAMS,
    USER_HOME,
    WORKTREE,
    PlanWorld,
)
from worlds.repository import GRANT

from concorde_workers.adapters.cli.views.plan_text import render
from concorde_workers.application.preparation.planner import Plan, plan_json
from concorde_workers.domain.boundary.grant import parse_grant
from concorde_workers.domain.configuration.request import RunRequest
from concorde_workers.domain.ground.errors import Reason

RUN_ID = "w-20260101T000000-abc123"
RT = "/tmp/concorde-abc123-0badcafe"
CONFIG = f"{WORKTREE}/.concorde/workers.json"
MAP = f"{USER_HOME}/.config/concorde/models.json"

WORKERS: dict[str, Any] = {
    "schema_version": 2,
    "enabled_models": {"m-claude": {"reasoning": "high"}, "m-local": {}},
    "default": {"model": "m-local"},
    "operations": {
        "implement": {
            "default": {"model": "m-local", "reasoning": "medium"},
            "workers": {"reviewer": {"backend": "claude", "model": "m-claude"}},
        },
    },
    "limits": {"max_turns": 25, "rounds": 1},
    "runtime": ["/opt/tools"],
}
MODELS: dict[str, Any] = {
    "schema_version": 1,
    "models": {
        "m-local": {"pi": "local/m-local"},
        "m-claude": {"claude": "claude-x-1", "pi": "anthropic/claude-x-1"},
    },
}
DECLARED = {"implement": {"worker", "reviewer"}}

# Seed 000 "Refusals before a run": the reason of each code, as the table lists it.
REASONS = {
    "config_missing": Reason.INPUT,
    "config_invalid": Reason.INPUT,
    "model_not_enabled": Reason.INPUT,
    "model_unresolved": Reason.INPUT,
    "backend_missing": Reason.ENVIRONMENT,
    "model_map_missing": Reason.ENVIRONMENT,
    "model_map_invalid": Reason.ENVIRONMENT,
    "model_unmapped": Reason.ENVIRONMENT,
}


def world_with(workers: Any = WORKERS, models: Any = MODELS, **kwargs: Any) -> PlanWorld:
    world = PlanWorld(**kwargs)
    world.fs.mkdir("/opt/tools")
    if workers is not None:
        world.commit_config(workers)
    if models is not None:
        world.write_model_map(models)
    world.forget_calls()
    return world


CONFIGURATION_GIT_CALLS = {"git_dirs", "committed_config"}
"""What the configuration reader asks Git: the worktree's Git directories, the committed file."""
PLACEMENT_GIT_CALLS = {"toplevel", "worktrees"}
"""What a reader's refusal then asks, so that a worktree that is none is said as itself."""


def request(**fields: Any) -> RunRequest:
    data: dict[str, Any] = {
        "worktree": WORKTREE,
        "task_type": "implement",
        "grant": copy.deepcopy(GRANT),
        "instructions": "Do the task.",
    }
    data.update(fields)
    return RunRequest(**data)


def planned(world: PlanWorld, req: RunRequest, declared: Any = DECLARED) -> Plan:
    return world.container().planner().plan(req, declared)


def assert_wrote_nothing(world: PlanWorld) -> None:
    assert world.fs_writes() == []
    assert set(world.git_methods()) <= READING_GIT_CALLS


# --- identity and resolution ----------------------------------------------------------------------


def test_the_run_id_and_runtime_directory_come_from_the_clock_and_random_and_are_not_made() -> None:
    world = world_with()
    plan = planned(world, request(backend="claude"))
    assert plan.launches
    assert (plan.run_id, plan.runtime_directory) == (RUN_ID, RT)
    assert world.random.calls == [("hex_token", 6), ("hex_token", 8)]
    assert world.fs.node_at(RT) is None
    assert not any(path.startswith(RT) for _, path in world.fs.ops if path.startswith("/"))
    assert_wrote_nothing(world)


def test_without_an_operation_every_value_comes_from_the_request() -> None:
    plan = planned(world_with(), request(backend="claude", local_model="x", reasoning="low"))
    assert {k: (c.value, c.source) for k, c in plan.resolution.items()} == {
        "backend": ("claude", "the request"),
        "model": (None, "the request"),
        "local_model": ("x", "the request"),
        "reasoning": ("low", "the request"),
        "limits": (plan.request.limits.model_dump(), "the request"),
        "runtime_paths": ([], "the request"),
    }


@pytest.mark.req("A worker's model comes from its worker configuration alone")
@pytest.mark.req("A worker's local model id comes from the model map alone")
def test_an_operation_worker_is_resolved_from_workers_json_and_the_model_map() -> None:
    world = world_with()
    world.fs.mkdir("/srv/logs")  # a runtime path that does not exist is refused
    plan = planned(
        world, request(operation="implement", worker="reviewer", runtime_paths=("/srv/logs",))
    )
    assert plan.launches, plan.refusal
    req = plan.request
    assert (req.backend, req.model, req.local_model, req.reasoning) == (
        "claude",
        "m-claude",
        "claude-x-1",
        "high",
    )
    assert (req.model_map, req.backend_source) == (MAP, "operations.implement.workers.reviewer")
    assert (req.limits.max_turns, req.limits.rounds) == (25, 1)
    assert req.runtime_paths == ("/opt/tools", "/srv/logs")
    assert {k: (c.value, c.source) for k, c in plan.resolution.items()} == {
        "backend": ("claude", f"{CONFIG}: operations.implement.workers.reviewer"),
        "model": ("m-claude", f"{CONFIG}: operations.implement.workers.reviewer"),
        "local_model": ("claude-x-1", MAP),
        "reasoning": ("high", f"{CONFIG}: enabled_models.m-claude"),
        "limits": (req.limits.model_dump(), f"{CONFIG}: limits (defaults filled)"),
        "runtime_paths": (["/opt/tools", "/srv/logs"], f"{CONFIG}: runtime, and the request"),
        "program": (f"{BIN}/claude", "the claude program on PATH"),
    }
    assert plan.prepared is not None
    argv = plan.prepared.command.argv
    assert argv[argv.index("--model") + 1] == "claude-x-1"  # never the project model name
    assert argv[argv.index("--effort") + 1] == "high"
    assert argv[argv.index("--max-turns") + 1] == "25"
    assert_wrote_nothing(world)


def test_the_default_worker_runs_on_pi_with_the_operations_default_model() -> None:
    plan = planned(world_with(), request(operation="implement", worker="worker"))
    assert plan.launches, plan.refusal
    assert plan.resolution["backend"].source == f"{CONFIG}: Concorde's default worker backend"
    assert plan.resolution["reasoning"].source == f"{CONFIG}: operations.implement.default"
    assert plan.prepared is not None
    argv = plan.prepared.command.argv
    assert argv[-4:] == ("--model", "local/m-local", "--thinking", "medium")


def test_a_worker_with_no_level_shows_the_programs_own_default() -> None:
    workers = dict(WORKERS, operations={"implement": {"default": {"model": "m-local"}}})
    plan = planned(
        world_with(workers),
        request(operation="implement", worker="worker"),
        {"implement": {"worker"}},
    )
    assert plan.launches, plan.refusal
    assert plan.resolution["reasoning"].value is None
    assert plan.resolution["reasoning"].source == "none set: the program's own default level"
    assert plan.prepared is not None
    assert "--thinking" not in plan.prepared.command.argv


def test_the_requested_worker_is_always_declared() -> None:
    workers = dict(WORKERS, operations={"implement": {"default": {"model": "m-local"}}})
    plan = planned(world_with(workers), request(operation="implement", worker="worker"), None)
    assert plan.launches, plan.refusal


# --- refusals before a run: nothing of the run is prepared ----------------------------------------


def _committed(world: PlanWorld) -> None:
    """The configuration as it is now, committed: a run reads it as committed (issue 18 §4)."""
    world.git.add(WORKTREE, ".concorde/workers.json")
    world.git.commit(WORKTREE, "worker configuration")


def _config_missing(world: PlanWorld) -> None:
    world.fs.remove(CONFIG)
    _committed(world)


def _retired(world: PlanWorld) -> None:
    world.fs.remove(CONFIG)
    world.fs.write(f"{WORKTREE}/.concorde/worker-models.json", "{}")
    _committed(world)


def _write(path: str, text: str) -> Any:
    def change(world: PlanWorld) -> None:
        world.fs.write(path, text)
        if path == CONFIG:
            _committed(world)

    return change


def _no_model(world: PlanWorld) -> None:
    world.fs.write(CONFIG, json.dumps(dict(WORKERS, default={"reasoning": "low"}, operations={})))
    _committed(world)


def _not_enabled(world: PlanWorld) -> None:
    world.fs.write(CONFIG, json.dumps(dict(WORKERS, default={"model": "gpt-x"})))
    _committed(world)


def _map_missing(world: PlanWorld) -> None:
    world.fs.remove(MAP)


def _unmapped(world: PlanWorld) -> None:
    world.fs.write(MAP, json.dumps({"schema_version": 1, "models": {"m-claude": {"pi": "a/b"}}}))


def _no_program(world: PlanWorld) -> None:
    world.fs.remove(f"{BIN}/pi")


REFUSALS = [
    (
        "config_missing",
        _config_missing,
        CONFIG,
        [f"The worker configuration {CONFIG} is missing", "and commit it"],
    ),
    (
        "config_invalid",
        _retired,
        f"{WORKTREE}/.concorde/worker-models.json",
        [f"still has the retired file {WORKTREE}/.concorde/worker-models.json", MAP],
    ),
    (
        "config_invalid",
        _write(CONFIG, '{"schema_version": 1, "models": {}}'),
        CONFIG,
        [f"The worker configuration {CONFIG} is invalid: it has schema_version 1", MAP],
    ),
    (
        "config_invalid",
        _write(CONFIG, "[]"),
        CONFIG,
        [f"The worker configuration {CONFIG} is invalid: it must hold a JSON object."],
    ),
    (
        "model_unresolved",
        _no_model,
        CONFIG,
        [
            f"The worker configuration {CONFIG} settles no model for worker worker of Operation "
            "implement",
            'e.g. "default": {"model": "m-claude"}',
        ],
    ),
    (
        "model_not_enabled",
        _not_enabled,
        CONFIG,
        [
            'default chooses the model "gpt-x", which is not in enabled_models (enabled: m-claude, '
            "m-local)",
            'adding "gpt-x": {} to enabled_models',
        ],
    ),
    (
        "model_map_missing",
        _map_missing,
        MAP,
        [
            f"The model map {MAP} is missing",
            '{"schema_version": 1, "models": {"m-local": {"pi": "<provider/id>"}}}',
        ],
    ),
    (
        "model_map_invalid",
        _write(MAP, '{"schema_version": 1, "models": {"m": []}}'),
        MAP,
        [
            f"The model map {MAP} is invalid: models.m must be an object giving the model's claude "
            "and/or pi id"
        ],
    ),
    (
        "model_unmapped",
        _unmapped,
        MAP,
        [
            f"The model map {MAP} gives no local id for these workers:",
            '"m-local": {"pi": "<provider/id>"}',
        ],
    ),
    (
        "backend_missing",
        _no_program,
        CONFIG,
        [
            "its program pi is not found. Run concorde-workers install-agents (it installs the pinned @mariozechner/pi-coding-agent@0.73.1",
            "install pi or set CONCORDE_PI to its absolute path",
        ],
    ),
]


@pytest.mark.req("Every refusal before a run has its fixed reason")
@pytest.mark.req("A worker without a settled model is refused")
@pytest.mark.req("A worker the model map cannot place is refused")
@pytest.mark.req("A refusal of the model map names the map")
@pytest.mark.parametrize(
    ("code", "change", "file", "says"),
    REFUSALS,
    ids=[f"{r[0]}-{i}" for i, r in enumerate(REFUSALS)],
)
def test_a_refusal_before_a_run_stops_the_plan_before_git_is_asked(
    code: str, change: Any, file: str, says: list[str]
) -> None:
    world = world_with()
    change(world)
    world.forget_calls()
    plan = planned(world, request(operation="implement", worker="worker"))
    assert not plan.launches
    assert plan.refusal is not None
    assert (plan.refusal.code, plan.refusal.reason, plan.refusal.file) == (
        code,
        REASONS[code],
        file,
    )
    assert file in plan.refusal.message
    for phrase in says:
        assert phrase in plan.refusal.message
    assert plan.prepared is None
    # The configuration reader asks Git only for the committed configuration (issue 18 §4);
    # its refusal then asks the placement alone, which here finds a worktree (issue 19 §2).
    assert {call[0] for call in world.git.calls} <= (CONFIGURATION_GIT_CALLS | PLACEMENT_GIT_CALLS)
    assert plan.progress.grant is None and plan.progress.policy is None
    data = plan_json(plan)
    assert data["refusal"] == {
        "code": code,
        "reason": REASONS[code].value,
        "message": plan.refusal.message,
        "file": file,
    }
    assert "round1" not in data
    text = render(plan)
    assert f"REFUSED {code} (reason {REASONS[code].value})" in text
    assert_wrote_nothing(world)


def test_a_backend_that_contradicts_the_configuration_is_refused() -> None:
    world = world_with()
    plan = planned(world, request(operation="implement", worker="worker", backend="claude"))
    assert plan.refusal is not None
    assert (plan.refusal.code, plan.refusal.reason, plan.refusal.file) == (
        "request_invalid",
        Reason.INPUT,
        CONFIG,
    )
    assert plan.refusal.message == (
        f"the request asks for the claude backend, but the worker configuration {CONFIG} "
        "chooses pi for worker worker of Operation implement (Concorde's default worker "
        "backend); the worker configuration alone chooses a configured worker's backend: drop "
        "--backend, or change the configuration's entry"
    )
    assert {call[0] for call in world.git.calls} <= CONFIGURATION_GIT_CALLS


def test_a_backend_that_agrees_with_the_configuration_is_accepted() -> None:
    plan = planned(
        world_with(), request(operation="implement", worker="reviewer", backend="claude")
    )
    assert plan.launches, plan.refusal


# --- what the preparation settled is shown beside its refusal --------------------------------------


def test_a_refused_preparation_shows_what_it_settled() -> None:
    world = world_with(programs=("claude",))  # pi lacks its prerequisites
    plan = planned(world, request(backend="pi"))
    assert plan.refusal is not None and plan.refusal.code == "pi_runtime_missing"
    data = plan_json(plan)
    assert data["verdict"] == "refused"
    assert data["placement"] == {
        "verdict": "holds",
        "worktree": WORKTREE,
        "primary": PRIMARY,
        "name": "task",
    }
    assert data["git_admin_paths"] == [f"{PRIMARY}/.git", f"{WORKTREE}/.git"]
    assert data["grant"] == GRANT["entries"]
    assert data["deny_rules"] is None and data["sandbox"] is None and data["tools"] is None
    assert "round1" not in data and "digests" not in data
    text = render(plan)
    assert text.startswith(
        "concorde-workers plan — a run would be refused: pi_runtime_missing: "
        f"{plan.refusal.message.splitlines()[0]}\n"
    )
    assert f"  holds: {WORKTREE} lies directly in {PRIMARY}/.claude/worktrees/" in text
    assert "Round 1 command" not in text
    assert_wrote_nothing(world)


def test_a_program_that_is_not_found_refuses_the_plan_as_round_1_would_end() -> None:
    """Issue 31 §2: plan exits 0 only when a run would really launch; a program that is not
    there ends the run launch_failed as round 1 starts, so the plan's verdict says so."""
    world = world_with(programs=("rg", "fd", "bwrap", "socat", "env", *SPACE_PROGRAMS))
    plan = planned(world, request(backend="claude"))
    assert not plan.launches and plan.refusal is None
    assert plan.prepared is not None
    confinement = plan.prepared.confinement
    assert confinement is not None
    assert plan.prepared.command.argv[len(confinement.prefix())] == "claude"
    [missing] = plan.reasons
    assert missing.code == "launch_failed"
    assert missing.message.startswith("the program claude was not found, so round 1 cannot start")
    # this world holds no claude credentials either (issue 19 §2: said beside it)
    assert [n for n in plan.progress.notes if n.startswith("no credentials")] == (
        plan.progress.notes
    )
    text = render(plan)
    assert text.startswith(
        "concorde-workers plan — a run would be refused: launch_failed: the program claude was "
        "not found, so round 1 cannot start: install the agent programs"
    )
    assert plan_json(plan)["verdict"] == "refused"
    assert plan_json(plan)["refusal"]["code"] == "launch_failed"


def test_plan_says_when_the_backend_has_no_credentials_and_not_when_it_has() -> None:
    world = world_with()
    bare = planned(world, request(backend="claude"))
    assert bare.launches
    [note] = [n for n in bare.progress.notes if n.startswith("no credentials")]
    assert note.startswith("no credentials of the claude backend were found (looked at ")
    assert "ANTHROPIC_API_KEY" in note and "log in once with claude" in note
    world.environ["ANTHROPIC_API_KEY"] = "sk-test-not-shown"
    keyed = planned(world, request(backend="claude"))
    assert not [n for n in keyed.progress.notes if n.startswith("no credentials")]
    assert "sk-test-not-shown" not in json.dumps(plan_json(keyed))


# --- JSON and text show the same plan -------------------------------------------------------------


@pytest.mark.parametrize("backend", ["claude", "pi"])
def test_the_json_document_and_the_text_hold_the_same_plan(backend: str) -> None:
    world = world_with()
    plan = planned(world, request(backend=backend))
    assert plan.prepared is not None
    data = plan_json(plan)
    text = render(plan)
    assert data["verdict"] == "launch" and data["refusal"] is None
    assert (data["run_id"], data["runtime_directory"]) == (RUN_ID, RT)
    assert data["digests"] == {
        "grant_digest": parse_grant(GRANT).digest(),
        "settings_digest": plan.prepared.settings_digest,
        "brief_digest": plan.prepared.brief_digest,
    }
    assert data["round1"]["argv"] == list(plan.prepared.command.argv)
    assert data["round1"]["cwd"] == f"{RT}/work"
    assert data["control_files"] == sorted(plan.prepared.control_files)
    assert data["tools"] == ",".join(plan.prepared.tools)
    assert data["deny_rules"]["rules"] == list(plan.prepared.policy.deny_rules)
    assert f"  run id {RUN_ID}, runtime directory {RT} (not created)\n" in text
    for rule in data["deny_rules"]["rules"]:
        assert f"\n  {rule}\n" in text
    for key, value in data["round1"]["environment"].items():
        assert f"\n  {key}={value}\n" in text
    for key, value in data["digests"].items():
        assert f"\n  {key}: {value}\n" in text
    assert f"Deny rules ({data['deny_rules']['count']})\n" in text
    assert f"Tool set\n  {data['tools']}\n" in text
    for line in data["brief"].splitlines():
        assert f"  {line}".rstrip() in text


def test_secrets_are_redacted_in_the_shown_environment() -> None:
    world = world_with()
    world.environ.update(
        ANTHROPIC_API_KEY="sk-hush-a",
        OPENAI_API_KEY="sk-hush-o",
        HTTPS_PROXY="http://u:pw-hush@proxy:3128",
    )
    plan = planned(world, request(backend="pi"))
    assert plan.prepared is not None
    assert plan.prepared.environment["OPENAI_API_KEY"] == "sk-hush-o"  # the run gets it
    shown = plan_json(plan)["round1"]["environment"]
    assert shown["ANTHROPIC_API_KEY"] == shown["OPENAI_API_KEY"] == "<redacted>"
    assert shown["HTTPS_PROXY"] == "http://u:<redacted>@proxy:3128"
    text = render(plan) + json.dumps(plan_json(plan))
    assert "hush" not in text


# --- the configuration as committed (issue 18 §4) ----------------------------------------------


@pytest.mark.req("A worker's model comes from its worker configuration alone")
def test_a_working_copy_a_worker_rewrote_is_not_the_configuration_and_plan_says_so() -> None:
    """A worker with rw on .concorde/ rewrote workers.json (another model, a runtime path):
    the plan settles the worker from the file committed at HEAD and names the working copy
    with its repair."""
    world = world_with()
    committed = planned(world, request(operation="implement", worker="reviewer")).request
    world.fs.mkdir("/srv/secret")
    world.fs.write(
        CONFIG, json.dumps(dict(WORKERS, default={"model": "m-local"}, runtime=["/srv/secret"]))
    )
    plan = planned(world, request(operation="implement", worker="reviewer"))
    assert plan.launches, plan.refusal
    assert (plan.request.model, plan.request.runtime_paths) == (
        committed.model,
        committed.runtime_paths,
    )
    assert "/srv/secret" not in plan.request.runtime_paths
    said = plan.resolution["configuration"]
    assert said.value == CONFIG
    assert "differs from the file committed at HEAD" in said.source
    assert "git checkout -- .concorde/workers.json" in said.source
    assert "differs from the file committed at HEAD" in render(plan)


def test_a_configuration_only_in_the_working_copy_is_missing_and_plan_says_why() -> None:
    world = world_with(workers=None)
    world.fs.write(CONFIG, json.dumps(WORKERS))
    plan = planned(world, request(operation="implement", worker="reviewer"))
    assert plan.refusal is not None and plan.refusal.code == "config_missing"
    assert "is not committed at HEAD" in plan.refusal.message
    assert "commit it" in plan.refusal.message


def test_a_committed_configuration_the_working_copy_agrees_with_says_nothing() -> None:
    plan = planned(world_with(), request(operation="implement", worker="reviewer"))
    assert plan.launches and "configuration" not in plan.resolution
