"""Seed 000's Requirements as the test plan: every SHALL title is named by at least one test.

The titles not proven elsewhere are proven here at the level this project has today: the
Claude-Code-only ones (Bash sandbox, network allowlist, unsandboxed commands) by the worker
settings the real ClaudeBackend generates from the one policy, as the host writes them into
control/; the real program proves them again in a later issue.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import spec
from compiled_hooks import launcher_code, launcher_values
from fakes.agent import Round
from fakes.host_world import RUN_ID, RUNTIME_DIR, HostWorld, ok_result
from fakes.world import PRIMARY, WORKTREE, PlanWorld
from worlds.repository import GRANT

from concorde_workers.application.preparation.prepared import Prepared
from concorde_workers.domain.boundary.policy import decide_read, decide_write
from concorde_workers.domain.boundary.task_types import READ_ONLY_TASK_TYPES, TASK_TYPES
from concorde_workers.domain.configuration.request import RunRequest


def test_every_requirement_of_seed_000_is_named_by_a_test() -> None:
    named = spec.named_requirements()
    uncovered = [t for t in spec.requirement_titles(spec.RUN_MECHANICS) if t not in named]
    assert not uncovered, "seed 000 requirements no test names:\n" + "\n".join(uncovered)


# --- the generated Claude Code settings -----------------------------------------------------------


def _claude_prepared(world: PlanWorld | None = None, **fields: Any) -> Prepared:
    world = world or PlanWorld()
    data: dict[str, Any] = {
        "backend": "claude",
        "worktree": WORKTREE,
        "task_type": "implement",
        "grant": GRANT,
        "instructions": "Do it.",
    }
    data.update(fields)
    prepared = world.container().preparer().prepare(RunRequest(**data), RUN_ID, RUNTIME_DIR)
    assert isinstance(prepared, Prepared), prepared
    return prepared


def _settings(prepared: Prepared) -> dict[str, Any]:
    text = prepared.control_files[f"{RUNTIME_DIR}/control/settings.json"]
    data: dict[str, Any] = json.loads(text)
    return data


@pytest.mark.req("Bash runs sandboxed without network")
@pytest.mark.parametrize("task_type", ["implement", "test"])
def test_the_worker_settings_sandbox_bash_with_no_allowed_domain(task_type: str) -> None:
    grant = dict(GRANT, task_type=task_type)
    sandbox = _settings(_claude_prepared(task_type=task_type, grant=grant))["sandbox"]
    assert sandbox["enabled"] is True
    assert sandbox["failIfUnavailable"] is True  # no sandbox: Bash does not run at all
    assert sandbox["network"]["allowedDomains"] == []


@pytest.mark.req("An unlisted host is denied, never approved")
def test_the_worker_settings_deny_every_host_the_allowlist_does_not_list() -> None:
    settings = _settings(_claude_prepared())
    # strictAllowlist (Claude Code 2.1.332): an unlisted host is denied, never put to the
    # permission mode; the denied "*" of the versions before it stays beside it (decisions.md)
    assert settings["sandbox"]["network"] == {
        "allowedDomains": [],
        "deniedDomains": ["*"],
        "strictAllowlist": True,
    }


@pytest.mark.req("Bash runs sandboxed without network")
def test_the_worker_settings_hide_the_api_key_from_bash_and_keep_no_background_task() -> None:
    settings = _settings(_claude_prepared())
    # the credentials only sandbox.credentials hides from a sandboxed command: the API key and
    # what Claude Code puts into its own environment (its inbox's token and socket, the OAuth
    # and session tokens of a refreshed login), each unset
    assert settings["sandbox"]["credentials"] == {
        "envVars": [
            {"name": name, "mode": "deny"}
            for name in (
                "ANTHROPIC_API_KEY",
                "ANTHROPIC_AUTH_TOKEN",
                "CLAUDE_CODE_MESSAGING_TOKEN",
                "CLAUDE_CODE_MESSAGING_SOCKET",
                "CLAUDE_CODE_OAUTH_TOKEN",
                "CLAUDE_CODE_SESSION_ACCESS_TOKEN",
            )
        ]
    }
    # no background Bash holds the round open (Claude Code 2.1.332 waits for it before exiting)
    assert settings["env"]["CLAUDE_CODE_DISABLE_BACKGROUND_TASKS"] == "1"


@pytest.mark.req("No Bash command runs outside the sandbox")
def test_the_worker_settings_disable_unsandboxed_commands() -> None:
    sandbox = _settings(_claude_prepared())["sandbox"]
    assert sandbox["allowUnsandboxedCommands"] is False


@pytest.mark.req("Only rw paths are writable by file tools")
def test_the_write_hook_is_wired_for_every_file_writing_tool() -> None:
    prepared = _claude_prepared()
    hooks = _settings(prepared)["hooks"]["PreToolUse"]
    hook = next(h for h in hooks if "Write" in h["matcher"].split("|"))
    assert {"Edit", "Write"} <= set(hook["matcher"].split("|"))
    assert hook["hooks"][0]["command"].endswith(f"{RUNTIME_DIR}/control/write_hook.py")


def test_the_write_hook_the_settings_run_is_generated_with_the_grant_embedded() -> None:
    prepared = _claude_prepared()
    hook = prepared.control_files.get(f"{RUNTIME_DIR}/control/write_hook.py")
    source = prepared.control_files.get(f"{RUNTIME_DIR}/control/write_hook_source.py")
    assert hook is not None and source is not None
    assert WORKTREE in source and "src/app/" in source
    # What runs is the source's code, compiled when the run was prepared (issue 32 §3).
    source_path = f"{RUNTIME_DIR}/control/write_hook_source.py"
    assert launcher_values(hook)["SOURCE"] == source_path
    assert launcher_code(hook) == compile(source, source_path, "exec")


# --- Git ------------------------------------------------------------------------------------------


@pytest.mark.req("Workers never see Git")
@pytest.mark.req("Every Git administrative path is hidden")
@pytest.mark.parametrize(
    "path",
    [
        f"{PRIMARY}/.git/config",
        f"{PRIMARY}/.git/HEAD",
        f"{WORKTREE}/.git",
        f"{PRIMARY}/.git/worktrees/task/index",
    ],
)
def test_no_tool_reaches_git_metadata(path: str) -> None:
    prepared = _claude_prepared()
    policy = prepared.context.policy
    assert not decide_read(policy, path).allowed
    assert not decide_write(policy, path, path).allowed
    assert any(path == g or path.startswith(g.rstrip("/") + "/") for g in policy.sandbox.deny_read)
    rules = _settings(prepared)["permissions"]["deny"]
    assert f"Read(/{PRIMARY}/.git/**)" in rules and f"Edit(/{PRIMARY}/.git/**)" in rules


# --- the grant and the task types through the run host -------------------------------------------


@pytest.mark.req("The grant comes from the request alone")
@pytest.mark.req("A worker reads beside its grant only what its caller lists")
def test_the_run_takes_the_grant_from_its_request_alone() -> None:
    world = HostWorld()
    world.fs.mkdir("/opt/venv")  # a runtime path that does not exist is refused
    # Material in the worktree that could be read as a grant is not one.
    world.commit_config({"grant": {"entries": [{"path": "secrets/", "level": "rw"}]}})
    grant = {
        "task_type": "implement",
        "context_identity": "sha256:" + "3" * 64,
        "entries": [
            {"path": "src/other/", "level": "rw"},
            {"path": "docs/notes.md", "level": "ro"},
        ],
    }
    record = world.run([Round.ok(ok_result())], grant=grant, runtime_paths=("/opt/venv",))
    policy = world.backend.contexts[-1].policy
    assert [(e.path, e.level.value) for e in policy.grant.entries] == [
        ("src/other/", "rw"),
        ("docs/notes.md", "ro"),
    ]
    assert policy.runtime_paths == ("/opt/venv",)
    assert json.loads(world.text(f"{record.run_directory}/grant.json")) == grant
    assert record.context_identity == grant["context_identity"]
    assert "secrets" not in world.text(f"{record.run_directory}/brief.md")


@pytest.mark.req("A worker of every Protocol task type launches")
@pytest.mark.parametrize("task_type", TASK_TYPES)
def test_a_worker_of_each_task_type_launches_and_ends_ok(task_type: str) -> None:
    world = HostWorld()
    record = world.run(
        [Round.ok(ok_result())], task_type=task_type, grant=dict(GRANT, task_type=task_type)
    )
    assert record.status == "ok" and len(world.runner.starts) == 1
    tools = set(record.tools.split(",")) if record.tools else set()
    writes = {"edit", "write", "bash"} & tools
    assert (writes == set()) == (task_type in {t.value for t in READ_ONLY_TASK_TYPES})


def test_every_requirement_of_seed_001_is_named_by_a_test() -> None:
    named = spec.named_requirements()
    uncovered = [t for t in spec.requirement_titles(spec.PI_MECHANICS) if t not in named]
    assert not uncovered, "pi requirements with no test naming them: " + "; ".join(uncovered)
