"""Runtime paths and the project interpreter through the preparation `plan` and `run` share
(application/preparation/preparation.py), over the fakes: from the Python API's RunRequest, the worker
configuration's runtime list and the request alike, a path that is empty, relative, missing or
would uncover what the Harness hides is refused with request_invalid before anything is generated;
one that uncovers nothing reaches the Harness exactly as given (seed 000 "Reading beside the
grant", "A worker reads beside its grant only what its caller lists")."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from fakes.agent import Round
from fakes.host_world import RUN_ID, TRACE_PARENT, HostWorld, ok_result
from fakes.world import PRIMARY, USER_HOME, WORKTREE, PlanWorld
from worlds.repository import GRANT

from concorde_workers.application.preparation.planner import Plan
from concorde_workers.application.run.host import RequestRefused
from concorde_workers.application.runtime.outcomes import as_run_refusal
from concorde_workers.domain.boundary.beside import INTERPRETER_REPAIR, RUNTIME_REPAIR
from concorde_workers.domain.configuration.request import RunRequest
from concorde_workers.domain.ground.errors import Reason, Refusal

RUNTIME = "the runtime path"


def request(**fields: Any) -> RunRequest:
    data: dict[str, Any] = {
        "worktree": WORKTREE,
        "task_type": "implement",
        "grant": copy.deepcopy(GRANT),
        "instructions": "Do the task.",
        "parent": TRACE_PARENT,
        "backend": "claude",
    }
    data.update(fields)
    return RunRequest(**data)


def planned(world: PlanWorld, req: RunRequest) -> Plan:
    return world.container().planner().plan(req, {})


def setup_world(world: PlanWorld) -> None:
    fs = world.fs
    fs.mkdir(TRACE_PARENT)
    fs.mkdir("/opt/venv/lib")
    fs.mkdir("/srv/home2/.ssh")
    fs.symlink(USER_HOME, "/opt/home-link")
    fs.symlink("/", f"{WORKTREE}/.venv")
    fs.mkdir("/tmp/concorde-0a1b2c-other/config")
    fs.mkdir(f"{TRACE_PARENT}/workers/w-20250101T000000-0a1b2c")
    fs.mkdir(f"{TRACE_PARENT}/checks")
    fs.write("/opt/py/bin/python3", "#!/bin/sh\n", 0o755)
    fs.write(f"{WORKTREE}/src/app/bin/python", "#!/bin/sh\n", 0o755)
    world.environ["HOME"] = "/srv/home2"  # $HOME is not the password database's home


REFUSED: list[tuple[str, dict[str, Any], str]] = [
    ("empty", {"runtime_paths": ("",)}, f"{RUNTIME} '' is empty"),
    ("relative", {"runtime_paths": (".venv",)}, f"{RUNTIME} '.venv' is not an absolute path"),
    (
        "a control character",
        {"runtime_paths": ("/opt/venv\n/",)},
        f"{RUNTIME} '/opt/venv\\n/' contains the character \\n (line feed)",
    ),
    ("missing", {"runtime_paths": ("/opt/nope",)}, f"{RUNTIME} '/opt/nope' does not exist"),
    ("/", {"runtime_paths": ("/",)}, f"{RUNTIME} '/' is / itself"),
    (
        "the password database's home",
        {"runtime_paths": (USER_HOME,)},
        f"{RUNTIME} '{USER_HOME}' is the user's home {USER_HOME}",
    ),
    (
        "$HOME",
        {"runtime_paths": ("/srv/home2",)},
        f"{RUNTIME} '/srv/home2' is the user's home /srv/home2",
    ),
    (
        "a link to the home",
        {"runtime_paths": ("/opt/home-link",)},
        f"{RUNTIME} '/opt/home-link' resolves to {USER_HOME}, which is the user's home",
    ),
    (
        "a link in the worktree to /",
        {"runtime_paths": (f"{WORKTREE}/.venv",)},
        f"{RUNTIME} '{WORKTREE}/.venv' resolves to /, which is / itself",
    ),
    (
        "the primary worktree",
        {"runtime_paths": (PRIMARY,)},
        f"{RUNTIME} '{PRIMARY}' is the primary worktree {PRIMARY}",
    ),
    ("the worktree", {"runtime_paths": (WORKTREE,)}, f"{RUNTIME} '{WORKTREE}' is the worktree"),
    ("Git metadata", {"runtime_paths": (f"{PRIMARY}/.git",)}, "has a .git segment"),
    (
        "the temp root",
        {"runtime_paths": ("/tmp",)},
        f"{RUNTIME} '/tmp' is /tmp, the folder of the runtime directories",
    ),
    (
        "another run's runtime directory",
        {"runtime_paths": ("/tmp/concorde-0a1b2c-other/config",)},
        "lies in concorde-0a1b2c-other, the runtime directory of a run",
    ),
    (
        "the trace parent",
        {"runtime_paths": (TRACE_PARENT,)},
        f"holds {TRACE_PARENT}/workers, the folder of the run directories",
    ),
    (
        "another run's directory",
        {"runtime_paths": (f"{TRACE_PARENT}/workers/w-20250101T000000-0a1b2c",)},
        f"lies in {TRACE_PARENT}/workers, the folder of the run directories",
    ),
    (
        "the second path",
        {"runtime_paths": ("/opt/venv", "/opt/nope")},
        f"{RUNTIME} '/opt/nope' does not exist",
    ),
    (
        "a missing interpreter",
        {"project_interpreter": "/opt/py/bin/python9"},
        "the project interpreter '/opt/py/bin/python9' does not exist",
    ),
    (
        "a relative interpreter",
        {"project_interpreter": "python3"},
        "the project interpreter 'python3' is not an absolute path",
    ),
    (
        "an interpreter the worker may replace",
        {"project_interpreter": f"{WORKTREE}/src/app/bin/python"},
        f"lies in {WORKTREE}/src/app/bin, which the worker may write",
    ),
]


@pytest.mark.req("A worker reads beside its grant only what its caller lists")
@pytest.mark.parametrize(("row", "fields", "says"), REFUSED, ids=[r[0] for r in REFUSED])
def test_plan_and_run_refuse_alike_before_anything_is_generated(
    row: str, fields: dict[str, Any], says: str
) -> None:
    world = PlanWorld()
    setup_world(world)
    world.forget_calls()
    plan = planned(world, request(**fields))
    assert plan.refusal is not None and plan.prepared is None, row
    assert (plan.refusal.code, plan.refusal.reason.value) == ("request_invalid", "input")
    assert says in plan.refusal.message, plan.refusal.message
    repair = INTERPRETER_REPAIR if "interpreter" in row else RUNTIME_REPAIR
    assert plan.refusal.message.endswith(repair)
    assert plan.progress.policy is None  # nothing generated, not even the policy
    assert world.fs_writes() == []

    # The run host meets the very refusal before a run exists: no run directory, no runtime
    # directory, nothing started (its code is none of a run's codes: the caller asks first).
    host = HostWorld()
    setup_world(host)
    host.forget_calls()
    with pytest.raises(RequestRefused) as raised:
        host.run([Round.ok(ok_result())], backend="claude", **fields)
    assert raised.value.refusal == plan.refusal
    assert not host.runner.starts
    assert host.fs_writes() == []
    assert not host.fs.lexists(f"{TRACE_PARENT}/workers/{RUN_ID}")


@pytest.mark.req("A worker reads beside its grant only what its caller lists")
def test_what_uncovers_nothing_reaches_the_policy_exactly_as_given() -> None:
    world = PlanWorld()
    setup_world(world)
    given = ("/opt/venv/", "/opt/venv/lib/../lib", f"{TRACE_PARENT}/checks", f"{PRIMARY}/src")
    plan = planned(world, request(runtime_paths=given, project_interpreter="/opt/py/bin/python3"))
    assert plan.launches, plan.refusal
    assert plan.prepared is not None
    assert plan.prepared.policy.runtime_paths == given
    assert plan.prepared.environment["PATH"].startswith("/opt/py/bin:")


def test_a_grant_refused_first_is_met_by_the_run_not_before_it() -> None:
    world = PlanWorld()
    setup_world(world)
    bad = request(grant=dict(GRANT, entries=[{"path": "/etc", "level": "ro"}]), runtime_paths=("",))
    plan = planned(world, bad)
    assert plan.refusal is not None and plan.refusal.code == "grant_malformed"
    assert world.container().preparer().beside_refusal(bad, "/tmp") is None


@pytest.mark.parametrize(
    ("runtime", "says"),
    [
        ([USER_HOME], f"{RUNTIME} '{USER_HOME}' is the user's home"),
        (["../../.."], "the workspace itself or a folder above it"),
        (["../../../.git"], 'runtime lists "../../../.git", which has a .git segment'),
        (["lo\u2028gs"], "contains the character \\u2028 (line separator)"),
    ],
)
def test_the_worker_configuration_s_runtime_list_is_judged_too(
    runtime: list[str], says: str
) -> None:
    world = PlanWorld()
    setup_world(world)
    world.commit_config(
        {
            "schema_version": 2,
            "enabled_models": {"m": {}},
            "default": {"model": "m"},
            "runtime": runtime,
        }
    )
    world.fs.write(
        "/srv/home2/.config/concorde/models.json",  # at $HOME
        '{"schema_version": 1, "models": {"m": {"claude": "c-1", "pi": "p/1"}}}',
    )
    configured = RunRequest(
        worktree=WORKTREE, task_type="implement", grant=GRANT, operation="implement", worker="w"
    )
    plan = world.container().planner().plan(configured, {"implement": {"w"}})
    assert isinstance(plan.refusal, Refusal), plan.refusal
    assert plan.refusal.code in ("request_invalid", "config_invalid")
    assert says in plan.refusal.message, plan.refusal.message


def test_a_refusal_a_run_still_meets_ends_it_launch_failed_never_with_a_foreign_code() -> None:
    """Between `refusal_before_run` and the preparation the disk may change; a run then ends
    with a code of its own table, the refusal quoted."""
    met = Refusal(
        code="request_invalid",
        reason=Reason.INPUT,
        message="the runtime path '/opt/venv' does not exist; ...",
    )
    ended = as_run_refusal(met)
    assert (ended.code, ended.reason) == ("launch_failed", Reason.ENVIRONMENT)
    assert ended.message == f"the run could not launch (request_invalid): {met.message}"
    own = Refusal(code="grant_malformed", reason=Reason.INPUT, message="grant entry 1 ...")
    assert as_run_refusal(own) is own


def test_git_metadata_only_the_walk_finds_is_refused_by_the_preparation_the_run_meets() -> None:
    """A nested repository's Git directory outside the repository is named only by its `.git`
    file, which the walk of the worktree finds: `plan` refuses it; the host's check before a
    run makes no walk, so the run meets it and ends launch_failed, quoting it."""
    target = "/srv/repos/lib.git"

    def nested(world: PlanWorld) -> None:
        setup_world(world)
        world.fs.mkdir(f"{target}/hooks")
        world.fs.write(f"{WORKTREE}/vendor/lib/.git", f"gitdir: {target}\n")

    says = f"the runtime path '{target}/hooks' lies in the Git metadata {target}"
    world = PlanWorld()
    nested(world)
    plan = planned(world, request(runtime_paths=(f"{target}/hooks",)))
    assert plan.refusal is not None and says in plan.refusal.message
    host = HostWorld()
    nested(host)
    record = host.run([Round.ok(ok_result())], backend="claude", runtime_paths=(f"{target}/hooks",))
    assert record.error is not None and record.error.code == "launch_failed"
    assert record.error.detail.startswith("the run could not launch (request_invalid): " + says)
    assert not host.runner.starts


@pytest.mark.parametrize(
    "parent", [f"{TRACE_PARENT}/op\n1", f"{TRACE_PARENT}/\x1b]0;x\x07", "relative/trace"]
)
def test_a_parent_the_command_line_would_refuse_is_refused_to_the_python_api_too(
    parent: str,
) -> None:
    """The command line refuses a parent with a control character (or a relative one); a
    request made in Python meets the same refusal, before any run directory exists."""
    host = HostWorld()
    host.fs.makedirs(parent if parent.startswith("/") else f"{TRACE_PARENT}/x")
    host.forget_calls()
    with pytest.raises(RequestRefused) as raised:
        host.run([Round.ok(ok_result())], parent=parent)
    refusal = raised.value.refusal
    assert (refusal.code, refusal.reason) == ("request_invalid", Reason.INPUT)
    assert repr(parent) in refusal.message and "parent" in refusal.message
    assert host.fs_writes() == [] and not host.runner.starts
