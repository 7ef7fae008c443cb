"""The preparation (application/preparation/preparation.py) through the Container, against the fakes.

Seed 000 "Placement" ("Before it generates anything, the host checks this with read-only Git"),
"Launch", "Run directory and runtime directory"; seed 001 "Prerequisites" and "Launch". The
order is the spec's: the task type and the grant, the placement, the Git administrative paths,
the pi prerequisites, the policy and its run-directory guard, then the brief, the control files,
the command line and the environment. Every port call is recorded by the fakes, so the tests
see what was asked, and that nothing was written.
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import replace
from typing import Any

import pytest
from dependency_injector import providers
from fakes.world import (
    BIN,
    INTERPRETER,
    PI_MODELS,
    PRIMARY,
    PROGRAMS,
    READING_GIT_CALLS,
    SANDBOX_RUNTIME,
    SPACE_PROGRAMS,
    WORKTREE,
    PlanWorld,
)
from worlds.repository import GRANT

from concorde_workers.adapters.pi.prerequisites import HOW_TO_PROVIDE
from concorde_workers.application.preparation.prepared import Prepared, Progress
from concorde_workers.contracts import worker_result_schema
from concorde_workers.domain.boundary.grant import parse_grant
from concorde_workers.domain.boundary.policy import decide_read
from concorde_workers.domain.boundary.task_types import TASK_TYPES
from concorde_workers.domain.configuration.credentials import home_at_root
from concorde_workers.domain.configuration.request import Limits, RunRequest
from concorde_workers.domain.ground.errors import Reason, Refusal
from concorde_workers.domain.isolation.launch import schema_text

RUN_ID = "w-20260101T000000-abc123"
RT = "/tmp/concorde-abc123-0badcafe"
RESULT_SCHEMA = schema_text(worker_result_schema(None))


def request(**fields: Any) -> RunRequest:
    data: dict[str, Any] = {
        "worktree": WORKTREE,
        "task_type": "implement",
        "grant": copy.deepcopy(GRANT),
        "instructions": "Do the task.",
    }
    data.update(fields)
    return RunRequest(**data)


def prepare(
    world: PlanWorld, req: RunRequest, runtime_dir: str = RT, temp_root: str = "/tmp"
) -> tuple[Prepared | Refusal, Progress]:
    progress = Progress()
    world.forget_calls()
    result = (
        world.container(temp_root=temp_root).preparer().prepare(req, RUN_ID, runtime_dir, progress)
    )
    return result, progress


def sha256(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def assert_refused(result: Prepared | Refusal, code: str, reason: Reason, message: str) -> Refusal:
    assert isinstance(result, Refusal), result
    assert (result.code, result.reason, result.message) == (code, reason, message)
    return result


# --- the grant comes first ------------------------------------------------------------------------

MALFORMED = [
    (
        None,
        "grant_unavailable",
        "the grant has no task type, entries or context identity: it is missing; the caller must "
        "hand over the grant input with its task_type, entries and context_identity "
        "(contract.workers.grant-input)",
    ),
    (
        dict(GRANT, entries=[{"path": "src/", "level": "rw"}, {"path": "src/../x", "level": "ro"}]),
        "grant_malformed",
        'grant entry 2 ({"path": "src/../x", "level": "ro"}) is malformed: its path \'src/../x\' '
        "has a '..' segment, which would leave the worktree",
    ),
    (
        dict(GRANT, entries=[{"path": "a", "level": "write"}]),
        "grant_malformed",
        'grant entry 1 ({"path": "a", "level": "write"}) is malformed: its level \'write\' is none '
        "of names, ro, rw",
    ),
    (
        dict(GRANT, entries=["src/"]),
        "grant_malformed",
        'grant entry 1 ("src/") is malformed: it is a string, not an object with a path and a level',
    ),
    (
        dict(GRANT, entries=[{"path": "", "level": "rw"}]),
        "grant_malformed",
        'grant entry 1 ({"path": "", "level": "rw"}) is malformed: its path is empty',
    ),
]


@pytest.mark.req("Nothing is generated from a malformed grant")
@pytest.mark.req("A malformed grant's refusal names the entry")
@pytest.mark.parametrize(("grant", "code", "message"), MALFORMED)
@pytest.mark.parametrize("backend", ["claude", "pi"])
def test_a_malformed_grant_is_refused_before_placement_is_asked(
    grant: Any, code: str, message: str, backend: str
) -> None:
    # The worktree is misplaced too (the primary itself): the grant's refusal still comes first.
    world = PlanWorld(programs=(), sandbox_runtime=False)
    result, progress = prepare(world, request(grant=grant, worktree=PRIMARY, backend=backend))
    assert_refused(result, code, Reason.INPUT, message)
    assert world.git.calls == []
    assert world.fs.ops == []
    assert progress == Progress()


@pytest.mark.req("A task type the Protocol does not define is refused")
@pytest.mark.parametrize("task_type", ["deploy", "", "Implement", "review"])
def test_a_task_type_outside_the_eight_is_refused_before_placement(task_type: str) -> None:
    world = PlanWorld()
    result, progress = prepare(
        world, request(task_type=task_type, grant=dict(GRANT, task_type=task_type))
    )
    assert_refused(
        result,
        "grant_unavailable",
        Reason.INPUT,
        f"the request's task type {task_type!r} is not a known task type; a known "
        f"task type is one of {', '.join(TASK_TYPES)}",
    )
    assert world.git.calls == [] and world.fs.ops == []
    assert progress.grant is None


def test_a_grant_naming_another_task_type_than_the_request_is_malformed() -> None:
    world = PlanWorld()
    result, _ = prepare(world, request(task_type="review-code"))
    assert_refused(
        result,
        "grant_malformed",
        Reason.INPUT,
        "the grant's task type 'implement' differs from the request's 'review-code'",
    )
    assert world.git.calls == []


# --- placement before anything is generated -------------------------------------------------------


def _where(primary: str = PRIMARY) -> str:
    return (
        f"a worker runs only in a worktree lying directly in {primary}/.claude/worktrees/ "
        f"(create one with git worktree add {primary}/.claude/worktrees/<name>)"
    )


def _primary(world: PlanWorld) -> str:
    return PRIMARY


def _nested_worktree(world: PlanWorld) -> str:
    path = f"{PRIMARY}/.claude/worktrees/a/b"
    world.git.worktree_add(PRIMARY, path, new_branch="nested")
    return path


def _nested_directory(world: PlanWorld) -> str:
    world.fs.mkdir(f"{WORKTREE}/b")
    return f"{WORKTREE}/b"


def _elsewhere(world: PlanWorld) -> str:
    world.git.worktree_add(PRIMARY, "/srv/elsewhere", new_branch="elsewhere")
    return "/srv/elsewhere"


def _worktrees_folder(world: PlanWorld) -> str:
    return f"{PRIMARY}/.claude/worktrees"


def _no_git(world: PlanWorld) -> str:
    world.fs.mkdir(f"{PRIMARY}/.claude/worktrees/plain")
    world.git.fail("toplevel")
    return f"{PRIMARY}/.claude/worktrees/plain"


def _outside_any_repository(world: PlanWorld) -> str:
    world.fs.mkdir("/srv/plain")
    return "/srv/plain"


def _missing(world: PlanWorld) -> str:
    return f"{PRIMARY}/.claude/worktrees/gone"


def _relative(world: PlanWorld) -> str:
    return ".claude/worktrees/task"


def _a_file(world: PlanWorld) -> str:
    return f"{WORKTREE}/README.md"


MISPLACED = [
    (
        "the primary worktree itself",
        _primary,
        f"the worktree {PRIMARY} is the primary worktree itself; {_where()}",
    ),
    (
        "a worktree nested in .claude/worktrees/a/b",
        _nested_worktree,
        f"the worktree {PRIMARY}/.claude/worktrees/a/b lies below, not directly in, the primary "
        f"worktree's .claude/worktrees/; {_where()}",
    ),
    (
        "a directory inside a worktree",
        _nested_directory,
        f"the worktree {WORKTREE}/b is not the top level of a Git worktree (Git's top level is "
        f"{WORKTREE}); give the worktree's own directory in .claude/worktrees/",
    ),
    (
        "a worktree elsewhere",
        _elsewhere,
        "the worktree /srv/elsewhere does not lie in the primary worktree's .claude/worktrees/; "
        f"{_where()}",
    ),
    (
        "the .claude/worktrees folder",
        _worktrees_folder,
        f"the worktree {PRIMARY}/.claude/worktrees is not the top level of a Git worktree (Git's "
        f"top level is {PRIMARY}); give the worktree's own directory in .claude/worktrees/",
    ),
    (
        "no Git worktree (Git fails)",
        _no_git,
        f"Git found no primary worktree for the worktree {PRIMARY}/.claude/worktrees/plain (Git "
        "said: fatal: injected failure); a worker runs only in a worktree lying directly in "
        ".claude/worktrees/ of its repository's primary worktree, and a bare repository has none",
    ),
    (
        "a directory in no repository",
        _outside_any_repository,
        "Git found no primary worktree for the worktree /srv/plain (Git said: fatal: not a git "
        "repository (or any of the parent directories): .git); a worker runs only in a worktree "
        "lying directly in .claude/worktrees/ of its repository's primary worktree, and a bare "
        "repository has none",
    ),
    (
        "a missing path",
        _missing,
        f"the worktree {PRIMARY}/.claude/worktrees/gone does not exist or is no directory; create "
        "it with git worktree add under .claude/worktrees/ of the primary worktree",
    ),
    (
        "a file",
        _a_file,
        f"the worktree {WORKTREE}/README.md does not exist or is no directory; create it with git "
        "worktree add under .claude/worktrees/ of the primary worktree",
    ),
    (
        "a relative path",
        _relative,
        "the worktree '.claude/worktrees/task' is not an absolute path; give the absolute path of a "
        "worktree in .claude/worktrees/",
    ),
]


@pytest.mark.req("A worker runs only inside .claude/worktrees/")
@pytest.mark.parametrize(
    ("make", "message"),
    [(m, msg) for _, m, msg in MISPLACED],
    ids=[name for name, _, _ in MISPLACED],
)
@pytest.mark.parametrize("backend", ["claude", "pi"])
def test_a_misplaced_worktree_is_refused_before_any_backend_check_or_generation(
    make: Any, message: str, backend: str
) -> None:
    world = PlanWorld(programs=(), sandbox_runtime=False)  # pi would also lack its programs
    worktree = make(world)
    result, progress = prepare(world, request(worktree=worktree, backend=backend))
    assert_refused(result, "worktree_misplaced", Reason.ENVIRONMENT, message)
    assert set(world.git_methods()) <= {"toplevel", "worktrees"}
    assert not any(op == "which" for op, _ in world.fs.ops)  # no backend check ran
    assert world.fs_writes() == []
    assert progress.grant is not None
    assert (progress.placement, progress.admin_paths, progress.policy) == (None, (), None)


def test_placement_holds_through_a_symbolic_link_to_the_worktree() -> None:
    world = PlanWorld()
    world.fs.symlink(WORKTREE, "/home/dev/link")
    result, _ = prepare(world, request(worktree="/home/dev/link", backend="claude"))
    assert isinstance(result, Prepared)
    assert result.placement.worktree == WORKTREE
    assert (result.placement.primary, result.placement.name) == (PRIMARY, "task")


# --- the pi prerequisites, after placement and before the policy ----------------------------------


def test_every_missing_pi_prerequisite_is_named_with_how_to_provide_it() -> None:
    world = PlanWorld(programs=("claude",), sandbox_runtime=False)
    result, progress = prepare(world, request(backend="pi"))
    parts = [f"{name}: {HOW_TO_PROVIDE[name]}" for name in ("pi", "rg", "fd")]
    parts.append(
        f"sandbox-runtime (no dist/index.js in {SANDBOX_RUNTIME}): "
        f"{HOW_TO_PROVIDE['sandbox-runtime']}"
    )
    parts += [f"{name}: {HOW_TO_PROVIDE[name]}" for name in ("bwrap", "socat")]
    assert_refused(
        result,
        "pi_runtime_missing",
        Reason.ENVIRONMENT,
        "the pi backend needs programs this machine lacks; the run is never started "
        "without its sandbox. Missing: " + "; ".join(parts),
    )
    assert progress.placement is not None and progress.admin_paths
    assert progress.policy is None
    assert world.fs_writes() == []


def test_one_missing_prerequisite_is_named_alone_and_fd_is_found_as_fdfind() -> None:
    world = PlanWorld(programs=("pi", "fdfind", "bwrap", "socat"))
    result, _ = prepare(world, request(backend="pi"))
    assert_refused(
        result,
        "pi_runtime_missing",
        Reason.ENVIRONMENT,
        "the pi backend needs programs this machine lacks; the run is never started "
        f"without its sandbox. Missing: rg: {HOW_TO_PROVIDE['rg']}",
    )


def test_the_claude_backend_needs_none_of_the_pi_prerequisites() -> None:
    world = PlanWorld(programs=("claude", "bwrap", "env", *SPACE_PROGRAMS), sandbox_runtime=False)
    result, _ = prepare(world, request(backend="claude"))
    assert isinstance(result, Prepared)


@pytest.mark.parametrize(
    ("backend", "missing", "as_root", "code"),
    [
        ("claude", "bwrap", False, "launch_failed"),
        ("claude", "unshare", True, "launch_failed"),
        ("pi", "umount", True, "pi_runtime_missing"),
        *(("claude", program, False, "launch_failed") for program in SPACE_PROGRAMS),
        *(("pi", program, False, "pi_runtime_missing") for program in SPACE_PROGRAMS),
    ],
)
def test_no_confinement_is_a_refusal_before_launch_never_an_unconfined_agent(
    backend: str, missing: str, as_root: bool, code: str
) -> None:
    """The whole agent process runs confined; without bwrap (as root, util-linux's umount and
    unshare, which its helper runs; and what makes and enters the run's writable space:
    unshare, nsenter, mount, mkdir, setpriv, sleep) it never runs at all. (pi's own
    prerequisites name a missing bwrap first, with the same code.)"""
    world = PlanWorld(programs=tuple(p for p in PROGRAMS if p != missing))
    world.environ["CONCORDE_PI"] = f"{BIN}/pi"
    result = (
        world.container(as_root=as_root)
        .preparer()
        .prepare(request(backend=backend), RUN_ID, RT, Progress())
    )
    assert isinstance(result, Refusal) and result.code == code, result
    assert f"this machine lacks {missing}: install " in result.message
    assert "never without it" in result.message


def test_the_sandbox_runtime_defaults_to_the_primary_worktrees_tools_folder() -> None:
    world = PlanWorld(sandbox_runtime=False)
    del world.environ["CONCORDE_SANDBOX_RUNTIME"]
    package = f"{PRIMARY}/.concorde/tools/pi-runtime/node_modules/@anthropic-ai/sandbox-runtime"
    result, _ = prepare(world, request(backend="pi"))
    assert isinstance(result, Refusal)
    assert f"sandbox-runtime (no dist/index.js in {package})" in result.message
    world.fs.write(f"{package}/dist/index.js", "")
    result, _ = prepare(world, request(backend="pi"))
    assert isinstance(result, Prepared)


# --- the run-directory guard ----------------------------------------------------------------------


@pytest.mark.req("A run the deny rules would disable is refused")
@pytest.mark.parametrize("temp_root", [f"{PRIMARY}/.git/tmp", f"{PRIMARY}/.git/worktrees/task"])
def test_a_runtime_directory_under_a_hidden_git_path_is_refused_on_claude(temp_root: str) -> None:
    world = PlanWorld()
    rt = f"{temp_root}/concorde-abc123-0badcafe"
    result, progress = prepare(
        world, request(backend="claude"), runtime_dir=rt, temp_root=temp_root
    )
    assert_refused(
        result,
        "run_directory_denied",
        Reason.ENVIRONMENT,
        f"the generated deny rule Read(/{PRIMARY}/.git/**) covers the worker's own "
        f"directory {rt}/work; place the runtime directory outside the worktree, the "
        "user's home, the primary worktree and the Git administrative paths",
    )
    assert progress.policy is not None
    assert world.fs_writes() == []


# --- a full launch plan ---------------------------------------------------------------------------


@pytest.mark.req("The worker never works in the worktree")
@pytest.mark.req("Nothing ambient reaches the worker")
@pytest.mark.req("One grant for the whole run")
def test_a_claude_launch_plan_has_its_exact_command_environment_tools_and_digests() -> None:
    world = PlanWorld()
    world.environ.update(
        ANTHROPIC_API_KEY="sk-a",
        OPENAI_API_KEY="sk-o",
        EDITOR="vim",
        HTTPS_PROXY="http://proxy:3128",
        ALL_PROXY="socks5://x:1",
    )
    req = request(
        backend="claude",
        local_model="claude-x-1",
        reasoning="high",
        limits=Limits(max_turns=7, max_budget_usd=2.5),
    )
    result, progress = prepare(world, req)
    assert isinstance(result, Prepared)
    # The whole agent runs confined (domain/isolation/confinement.py): bwrap first, then the agent's own.
    assert result.confinement is not None and result.command.argv[3] == f"{BIN}/bwrap"
    assert result.command.argv == (
        *result.confinement.prefix(),
        f"{BIN}/claude",
        "-p",
        "--settings",
        f"{RT}/control/settings.json",
        "--tools",
        "Read,Glob,Grep,Edit,Write,Bash",
        "--json-schema",
        RESULT_SCHEMA,
        "--output-format",
        "stream-json",
        "--verbose",
        "--permission-mode",
        "bypassPermissions",
        "--allow-dangerously-skip-permissions",
        "--strict-mcp-config",
        "--max-turns",
        "7",
        "--max-budget-usd",
        "2.5",
        "--model",
        "claude-x-1",
        "--effort",
        "high",
    )
    assert result.command.cwd == f"{RT}/work"
    assert result.environment == {
        "PATH": f"{BIN}:/bin",
        "LANG": "C.UTF-8",
        "HOME": f"{RT}/home",
        "TMPDIR": f"{RT}/tmp",
        "CLAUDE_CONFIG_DIR": f"{RT}/config",
        "CLAUDE_CODE_DISABLE_CLAUDE_MDS": "1",
        "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "ANTHROPIC_API_KEY": "sk-a",
        "HTTPS_PROXY": "http://proxy:3128",
    }
    assert result.tools == ("Read", "Glob", "Grep", "Edit", "Write", "Bash")
    assert result.generated.tools == ("Read", "Glob", "Grep", "Edit", "Write", "Bash")
    assert result.program == f"{BIN}/claude" and result.program_found
    # One frozen grant: the digest is the request's grant input's, and the policy, the settings
    # and the brief are all built from it.
    assert result.grant == parse_grant(GRANT)
    assert result.grant_digest == parse_grant(GRANT).digest()
    canonical = json.dumps(GRANT, sort_keys=True, separators=(",", ":"))
    assert result.grant_digest == sha256(canonical)
    assert result.policy.grant is result.grant
    assert result.brief_digest == sha256(result.brief)
    assert result.brief.startswith("# Concorde worker task (implement)\n")
    assert "Do the task." in result.brief
    assert sorted(result.control_files) == [
        f"{RT}/control/empty",
        f"{RT}/control/read_hook.py",
        f"{RT}/control/read_hook_source.py",
        f"{RT}/control/result.schema.json",
        f"{RT}/control/search_hook.py",
        f"{RT}/control/search_hook_source.py",
        f"{RT}/control/settings.json",
        f"{RT}/control/wait.py",
        f"{RT}/control/write_hook.py",
        f"{RT}/control/write_hook_source.py",
    ]
    settings_text = result.control_files[f"{RT}/control/settings.json"]
    assert result.settings_digest == sha256(settings_text)
    settings = json.loads(settings_text)
    assert settings["permissions"]["deny"] == list(result.policy.deny_rules)
    assert settings["sandbox"]["filesystem"] == result.policy.sandbox.to_json()
    assert settings["sandbox"]["network"] == {
        "allowedDomains": [],
        "deniedDomains": ["*"],
        "strictAllowlist": True,
    }
    assert settings["sandbox"]["allowUnsandboxedCommands"] is False
    assert settings["env"] == {"CLAUDE_CODE_DISABLE_BACKGROUND_TASKS": "1"}  # not as root
    hook = settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    assert hook == f"{INTERPRETER} -I -S {RT}/control/write_hook.py"
    assert result.control_files[f"{RT}/control/result.schema.json"] == RESULT_SCHEMA
    assert result.placement.worktree == WORKTREE
    assert [p.path for p in result.admin_paths] == [f"{PRIMARY}/.git", f"{WORKTREE}/.git"]
    assert progress.policy is result.policy
    assert world.fs_writes() == []
    assert set(world.git_methods()) <= READING_GIT_CALLS


def test_as_root_the_claude_settings_mark_the_sandbox() -> None:
    world = PlanWorld()
    progress = Progress()
    result = (
        world.container(as_root=True)
        .preparer()
        .prepare(request(backend="claude"), RUN_ID, RT, progress)
    )
    assert isinstance(result, Prepared)
    settings = json.loads(result.control_files[f"{RT}/control/settings.json"])
    assert settings["env"] == {"IS_SANDBOX": "1", "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS": "1"}


@pytest.mark.req("The worker never works in the worktree")
@pytest.mark.req("Nothing ambient reaches the worker")
def test_a_pi_launch_plan_has_its_exact_command_environment_tools_and_digests() -> None:
    world = PlanWorld()
    world.environ.update(
        ANTHROPIC_API_KEY="sk-a",
        OPENAI_API_KEY="sk-o",
        EMPTY_API_KEY="",
        EDITOR="vim",
        CONCORDE_PI=f"{BIN}/pi",
    )
    req = request(backend="pi", local_model="local/m", reasoning="medium")
    result, _ = prepare(world, req)
    assert isinstance(result, Prepared)
    assert result.confinement is not None and result.command.argv[3] == f"{BIN}/bwrap"
    assert result.command.argv == (
        *result.confinement.prefix(),
        f"{BIN}/pi",
        "-p",
        "--mode",
        "json",
        "--no-extensions",
        "-e",
        f"{RT}/control/permission.ts",
        "--no-context-files",
        "--no-skills",
        "--no-prompt-templates",
        "--tools",
        "read,grep,find,ls,edit,write,bash,concorde_result",
        "--session-dir",
        f"{RT}/config/sessions",
        "--session",
        f"{RT}/config/sessions/{RUN_ID}.jsonl",
        "--model",
        "local/m",
        "--thinking",
        "medium",
    )
    assert result.command.cwd == f"{RT}/work"
    assert result.environment == {
        "PATH": f"{BIN}:/bin",
        "LANG": "C.UTF-8",
        "HOME": f"{RT}/home",
        "TMPDIR": f"{RT}/tmp",
        "CLAUDE_CODE_TMPDIR": f"{RT}/tmp",
        "PI_CODING_AGENT_DIR": f"{RT}/config",
        "PI_OFFLINE": "1",
        "PI_SKIP_VERSION_CHECK": "1",
        "PI_TELEMETRY": "0",
        "ANTHROPIC_API_KEY": "sk-a",
        "OPENAI_API_KEY": "sk-o",
    }
    assert result.tools == (
        "read",
        "grep",
        "find",
        "ls",
        "edit",
        "write",
        "bash",
        "concorde_result",
    )
    assert len(result.command.adaptations) == 2
    assert result.grant_digest == parse_grant(GRANT).digest()
    assert result.brief_digest == sha256(result.brief)
    extension = result.control_files[f"{RT}/control/permission.ts"]
    assert result.settings_digest == sha256(extension)
    assert sorted(result.control_files) == [
        f"{RT}/config/settings.json",
        f"{RT}/control/empty",
        f"{RT}/control/permission.ts",
        f"{RT}/control/pi_policy.ts",
        f"{RT}/control/result.schema.json",
        f"{RT}/control/wait.py",
    ]
    assert result.control_files[f"{RT}/control/result.schema.json"] == RESULT_SCHEMA
    assert result.control_files[f"{RT}/config/settings.json"] == (
        '{\n  "defaultProjectTrust": "never"\n}\n'
    )
    assert "concorde_result" in result.brief
    assert world.fs_writes() == []


@pytest.mark.req("The project's interpreter comes first on the worker's PATH")
@pytest.mark.req("The brief names the project's interpreter")
@pytest.mark.parametrize("backend", ["claude", "pi"])
def test_the_project_interpreter_comes_first_on_path_and_in_the_brief(backend: str) -> None:
    world = PlanWorld()
    world.fs.write("/proj/.venv/bin/python", "#!/bin/sh\n", 0o755)  # a missing one is refused
    result, _ = prepare(
        world, request(backend=backend, project_interpreter="/proj/.venv/bin/python")
    )
    assert isinstance(result, Prepared)
    assert result.environment["PATH"] == f"/proj/.venv/bin:{BIN}:/bin"
    assert "/proj/.venv/bin/python" in result.brief
    assert world.environ["PATH"] == f"{BIN}:/bin"  # the host's own environment is unchanged


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        (
            "reasoning",
            "-x",
            "the request cannot make a command line: invalid value for --effort: '-x'",
        ),
        (
            "local_model",
            "",
            "the request cannot make a command line: invalid value for --model: ''",
        ),
    ],
)
def test_a_request_that_cannot_make_a_command_line_is_refused(
    field: str, value: str, message: str
) -> None:
    world = PlanWorld()
    result, _ = prepare(world, request(backend="claude", **{field: value}))
    assert_refused(result, "request_invalid", Reason.INPUT, message)


@pytest.mark.req("A worker reads beside its grant only what its caller lists")
def test_runtime_paths_reach_the_policy_exactly_as_given() -> None:
    world = PlanWorld()
    world.fs.mkdir("/opt/venv")
    result, _ = prepare(world, request(backend="claude", runtime_paths=("/opt/venv",)))
    assert isinstance(result, Prepared)
    assert result.policy.runtime_paths == ("/opt/venv",)
    assert "/opt/venv" in result.policy.sandbox.allow_read
    assert "/opt/venv" not in result.policy.sandbox.allow_write
    assert result.grant == parse_grant(GRANT)


# --- what the policy hides, from the host's facts and the request (issue 8 §2-§4) ---------------


@pytest.mark.parametrize("backend", ["claude", "pi"])
def test_the_policy_hides_both_homes_every_origin_and_the_run_directory(backend: str) -> None:
    world = PlanWorld()
    world.environ.update(
        HOME="/srv/home/dev",
        CLAUDE_CONFIG_DIR="/opt/claude",
        PI_CODING_AGENT_DIR="/opt/pi",
        CONCORDE_MODEL_MAP="/opt/map.json",
    )
    world.fs.mkdir("/opt/claude")  # a directory variable names an existing one (issue 31 §1)
    world.fs.write("/opt/pi/models.json", json.dumps(PI_MODELS))
    world.fs.mkdir("/srv/trace/op-1/workers")
    world.fs.mkdir("/tmp/concorde-def456-zz")  # another run's runtime directory
    result, _ = prepare(world, request(backend=backend, parent="/srv/trace/op-1"))
    assert isinstance(result, Prepared), result
    policy = result.policy
    assert policy.boundaries == ("/home/dev", "/srv/home/dev", PRIMARY, "/opt/claude", "/opt/pi")
    assert policy.always_hidden.credentials == (
        "/opt/claude/.credentials.json",
        "/opt/pi/auth.json",
        "/opt/pi/models.json",
        "/srv/home/dev/.codex/auth.json",  # the Codex CLI's login (issue 33), whatever runs
        "/opt/map.json",
        "/opt/signing-key.pem",  # the machine's signing key, beside the model map (issue 30 §4)
    )
    assert policy.always_hidden.run_directories == ("/srv/trace/op-1/workers",)
    assert policy.other_runs == ("/tmp/concorde-def456-zz",)
    assert (policy.always_hidden.runtime_root, policy.always_hidden.runtime_directory) == (
        "/tmp",
        RT,
    )
    for path in (
        "/srv/home/dev/.ssh/id_rsa",
        "/opt/pi/auth.json",
        "/srv/trace/op-1/workers/w-1/grant.json",
        "/tmp/concorde-0a0a0a-x/config",
    ):
        assert not decide_read(policy, path).allowed, path


HOME_AT_ROOT = (
    "HOME is {shown}: a home of / cannot be hidden from the worker — hiding it "
    "would hide the system the agent program runs from, leaving it would leave "
    "every credential below it readable; set HOME to the user's own home directory, "
    "or unset it (then /home/dev, the password database's, is hidden)"
)


@pytest.mark.parametrize(
    ("home", "link", "shown"),
    [
        pytest.param("/", None, "/", id="/"),
        pytest.param("//", None, "// (which is /)", id="//"),
        pytest.param("/.", None, "/. (which is /)", id="/."),
        pytest.param("/srv/top", "/", "/srv/top (which is /)", id="a link to /"),
    ],
)
@pytest.mark.parametrize("backend", ["claude", "pi"])
def test_a_home_of_root_is_refused_naming_it_and_the_repair(
    backend: str, home: str, link: str | None, shown: str
) -> None:
    """Hiding both homes (issue 8 §4) with a home of / would hide everything (the agent's own
    program and every tool) or, left out, nothing: neither silently (docs/decisions.md "A home
    of /")."""
    world = PlanWorld()
    if link is not None:
        world.fs.symlink(link, home)
    world.environ.update(HOME=home)
    result, _ = prepare(world, request(backend=backend))
    assert_refused(result, "launch_failed", Reason.ENVIRONMENT, HOME_AT_ROOT.format(shown=shown))


@pytest.mark.parametrize("home", ["", "home/dev"], ids=["empty", "relative"])
def test_an_empty_or_relative_home_is_no_home_and_the_password_database_s_stands(home: str) -> None:
    world = PlanWorld()
    world.environ.update(HOME=home)
    result, _ = prepare(world, request(backend="claude"))
    assert isinstance(result, Prepared), result
    assert result.policy.boundaries == ("/home/dev", PRIMARY)


def test_a_password_database_home_of_root_is_refused() -> None:
    problem = home_at_root("/", {"HOME": "/home/dev"}, lambda p: p)
    assert problem is not None and problem.startswith(
        "the password database's home directory of this user is /: "
    )
    assert problem.endswith("; run the host as a user whose home directory is a folder of its own")
    assert home_at_root("/home/dev", {}, lambda p: p) is None


def test_a_linked_origin_is_hidden_as_given_and_really() -> None:
    world = PlanWorld()
    world.fs.mkdir("/data/claude")
    world.fs.symlink("/data/claude", "/opt/claude")
    world.environ.update(CLAUDE_CONFIG_DIR="/opt/claude")
    result, _ = prepare(world, request(backend="claude"))
    assert isinstance(result, Prepared), result
    hidden = result.policy.always_hidden
    assert hidden.credentials[:2] == (
        "/opt/claude/.credentials.json",
        "/data/claude/.credentials.json",
    )
    assert hidden.run_directories == ()  # no parent: nothing to hide
    assert "/data/claude" in result.policy.boundaries


def test_off_linux_the_agent_runs_unconfined() -> None:
    """No bubblewrap namespaces there: the command is the agent's own (docs/decisions.md)."""
    world = PlanWorld()
    container = world.container()
    container.host.override(providers.Object(replace(world.host(), linux=False)))
    result = container.preparer().prepare(request(backend="claude"), RUN_ID, RT, Progress())
    assert isinstance(result, Prepared) and result.confinement is None
    assert result.command.argv[0] == f"{BIN}/claude"
