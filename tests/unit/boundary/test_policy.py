"""The policy (notes/harness.md §1.4-§1.5, §2.4-§2.6, §5): read/write tables, search roots and
tool sets, and what is hidden always, all from one frozen grant (the deny rules and the sandbox
lists: test_deny_rules.py, test_sandbox_lists.py)."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st
from policy_world import (
    FILES,
    GIT,
    GRANT,
    HOME,
    NOT_GRANTED_TAIL,
    POLICY,
    PRIMARY,
    PYROOT,
    RT,
    VENV,
    WT,
    make_grant,
    memory_tree,
    policy_for,
    rd,
)

from concorde_workers.adapters.claude.profile import CLAUDE
from concorde_workers.adapters.pi.profile import PI
from concorde_workers.container import PROFILES
from concorde_workers.domain.boundary.deny_rules import rule_covers
from concorde_workers.domain.boundary.grant import Grant, Level
from concorde_workers.domain.boundary.policy import (
    GIT_REASON,
    GRANT_PREFIX,
    NO_FILE_REASON,
    Policy,
    build_policy,
    could_not_decide,
    decide_read,
    decide_search_root,
    decide_write,
    with_prefix,
)
from concorde_workers.domain.boundary.task_types import TASK_TYPES, TaskType
from concorde_workers.domain.configuration.credentials import credential_origins
from concorde_workers.domain.configuration.profile import entries_of, tool_set
from concorde_workers.domain.gitview.placement import (
    AdminPath,
    collect_admin_paths,
    find_git_entries,
)
from concorde_workers.domain.ground.paths import EntryKind, is_within, subdirs_of

RUNTIME_ENTRIES = entries_of(PROFILES)

# --- read table (§2.4) ---------------------------------------------------------------------------

READ_ROWS = [
    pytest.param(f"{WT}/.git/config", None, GIT_REASON, id="1 .git segment"),
    pytest.param(f"{WT}/src/app/.git", None, GIT_REASON, id="1 .git segment below rw"),
    pytest.param(f"{PRIMARY}/.git/HEAD", None, GIT_REASON, id="1 admin path outside worktree"),
    pytest.param(f"{VENV}/lib/site.py", None, None, id="2 runtime path inside the worktree"),
    pytest.param(f"{PYROOT}/lib/os.py", None, None, id="2 runtime path outside"),
    pytest.param(f"{WT}/src/app/mod.py", None, None, id="3 rw"),
    pytest.param(f"{WT}/specs/a/module.md", None, None, id="3 ro below a dir entry"),
    pytest.param(
        f"{WT}/src/app/secret.py",
        None,
        "only the name of src/app/secret.py is visible to this task",
        id="4 names",
    ),
    pytest.param(
        f"{WT}/docs/readme.md",
        None,
        "only the name of docs/readme.md is visible to this task",
        id="4 names dir",
    ),
    pytest.param(
        f"{WT}/checks/c1.py", None, "checks/c1.py is not in this task's grant", id="5 other"
    ),
    pytest.param(WT, None, f"{WT} is not in this task's grant", id="5 the worktree root"),
    pytest.param(
        f"{RT}/control/settings.json",
        None,
        f"{RT}/control/settings.json belongs to the host",
        id="6 control",
    ),
    pytest.param(
        f"{RT}/config/auth.json", None, f"{RT}/config/auth.json belongs to the host", id="6 config"
    ),
    pytest.param(
        f"{RT}/tmp/jiti/x.mjs",
        None,
        f"{RT}/tmp/jiti/x.mjs belongs to the host",
        id="6 hardening: jiti cache",
    ),
    pytest.param(
        "/proc/self/environ",
        None,
        "/proc/self/environ belongs to the host: no process's files are available to workers",
        id="6 hardening: the agent's own environment",
    ),
    pytest.param(
        f"{RT}/work/env",
        "/proc/1/environ",
        "/proc/1/environ belongs to the host: no process's files are available to workers",
        id="6 hardening: a link into /proc",
    ),
    pytest.param(f"{RT}/tmp/scratch.txt", None, None, id="7 own tmp"),
    pytest.param(f"{RT}/work/notes.md", None, None, id="7 own work"),
    pytest.param(
        f"{HOME}/.ssh/id_rsa",
        None,
        f"{HOME}/.ssh/id_rsa is outside this task's boundary",
        id="8 home",
    ),
    pytest.param(
        f"{PRIMARY}/src/main.py",
        None,
        f"{PRIMARY}/src/main.py is outside this task's boundary",
        id="8 primary",
    ),
    pytest.param("/etc/hosts", None, None, id="9 system"),
    pytest.param(f"{WT}/src/app/../bmod/x.py", None, None, id="normalised lexically"),
    pytest.param(
        f"{RT}/work/link",
        f"{WT}/checks/c1.py",
        "checks/c1.py is not in this task's grant",
        id="real path judged too",
    ),
    pytest.param(
        f"{WT}/checks/link",
        f"{WT}/src/app/mod.py",
        "checks/link is not in this task's grant",
        id="lexical path judged too",
    ),
    pytest.param(
        f"{WT}/src/app/link", f"{PRIMARY}/.git/config", GIT_REASON, id="a link into Git metadata"
    ),
]


@pytest.mark.req("File tools cannot read what the grant withheld when the rules were generated")
@pytest.mark.parametrize(("path", "real", "reason"), READ_ROWS)
def test_the_read_table(path: str, real: str | None, reason: str | None) -> None:
    decision = decide_read(POLICY, path, real)
    assert decision.allowed is (reason is None)
    assert decision.reason == reason
    assert decision.message == (None if reason is None else GRANT_PREFIX + reason)


# --- write table (§1.4, §2.5) --------------------------------------------------------------------

WRITE_ROWS = [
    pytest.param(
        f"{PRIMARY}/.git/config",
        f"{PRIMARY}/.git/config",
        False,
        GIT_REASON,
        id="admin path outside the worktree",
    ),
    pytest.param(
        "/etc/passwd",
        "/etc/passwd",
        False,
        "/etc/passwd is outside the task worktree",
        id="1 outside",
    ),
    pytest.param(
        f"{WT}/src/app/out",
        "/etc/passwd",
        True,
        f"{WT}/src/app/out is a symbolic link to /etc/passwd, outside the task worktree",
        id="1 outside through a link",
    ),
    pytest.param(
        f"{RT}/work/x.txt",
        f"{RT}/work/x.txt",
        False,
        f"{RT}/work/x.txt is outside the task worktree",
        id="1 own dirs are Bash's",
    ),
    pytest.param(f"{WT}/.git/config", f"{WT}/.git/config", False, GIT_REASON, id="2 .git"),
    pytest.param(
        f"{WT}/src/app/sub/.git/HEAD",
        f"{WT}/src/app/sub/.git/HEAD",
        False,
        GIT_REASON,
        id="2 nested .git below rw",
    ),
    pytest.param(f"{WT}/src/app/new.py", f"{WT}/src/app/new.py", False, None, id="3 rw new file"),
    pytest.param(f"{WT}/tests/test_a.py", f"{WT}/tests/test_a.py", False, None, id="3 rw file"),
    pytest.param(f"{WT}/src/app/l.py", f"{WT}/src/app/mod.py", True, None, id="3 link to rw"),
    pytest.param(
        f"{WT}/src/bmod/x.py",
        f"{WT}/src/bmod/x.py",
        False,
        "src/bmod/x.py is read-only for this task",
        id="4 ro",
    ),
    pytest.param(
        f"{WT}/src/app/to-spec.md",
        f"{WT}/specs/a/module.md",
        True,
        f"specs/a/module.md (the target of the symbolic link {WT}/src/app/to-spec.md) "
        "is read-only for this task",
        id="4 link at rw to ro",
    ),
    pytest.param(
        f"{WT}/src/app/secret.py",
        f"{WT}/src/app/secret.py",
        False,
        "only the name of src/app/secret.py is visible to this task",
        id="5 names",
    ),
    pytest.param(
        f"{WT}/src/a/../notes.txt",
        f"{WT}/src/notes.txt",
        False,
        "src/notes.txt" + NOT_GRANTED_TAIL,
        id="6 not granted",
    ),
    pytest.param(
        f"{WT}/checks/l",
        f"{WT}/src/app/mod.py",
        True,
        None,
        id="6 a link outside rw to an rw target writes",
    ),
    pytest.param(
        f"{VENV}/lib/site.py",
        f"{VENV}/lib/site.py",
        False,
        ".venv/lib/site.py is not in this task's grant; it lies in a runtime path, "
        "which workers may read but never change",
        id="runtime path never writable",
    ),
]


@pytest.mark.req("Only rw paths are writable by file tools")
@pytest.mark.parametrize(("given", "resolved", "link", "reason"), WRITE_ROWS)
def test_the_write_table(given: str, resolved: str, link: bool, reason: str | None) -> None:
    decision = decide_write(POLICY, given, resolved, link)
    assert decision.allowed is (reason is None)
    assert decision.reason == reason


def test_the_hook_reasons_outside_the_tables() -> None:
    assert NO_FILE_REASON == "the hook could not decide: the tool call names no file"
    assert could_not_decide("extension", "boom") == "the extension could not decide: boom"
    assert with_prefix("x") == "Concorde grant: x"


# --- search roots (§2.6) -------------------------------------------------------------------------

SEARCH_ROWS = [
    pytest.param(WT, None, True, None, id="worktree root with readable entries"),
    pytest.param(f"{WT}/src", None, True, None, id="dir holding readable entries"),
    pytest.param(f"{WT}/src/app", None, True, None, id="rw dir"),
    pytest.param(f"{WT}/specs/a", None, True, None, id="below an ro dir"),
    pytest.param(
        f"{WT}/checks", None, True, "checks holds nothing this task may read", id="nothing readable"
    ),
    pytest.param(f"{WT}/docs", None, True, "docs holds nothing this task may read", id="names"),
    pytest.param(f"{WT}/.git", None, True, GIT_REASON, id=".git"),
    pytest.param(VENV, None, True, None, id="runtime path"),
    pytest.param(f"{RT}/config", None, True, f"{RT}/config belongs to the host", id="host"),
    pytest.param("/", None, True, None, id="system root by the read table"),
    pytest.param(
        f"{RT}/work/src",
        f"{WT}/checks",
        True,
        "checks holds nothing this task may read",
        id="real path judged",
    ),
    pytest.param(f"{WT}/README.md", None, False, None, id="a file root by the read table"),
]


@pytest.mark.parametrize(("root", "real", "directory", "reason"), SEARCH_ROWS)
def test_the_search_root_decision(
    root: str, real: str | None, directory: bool, reason: str | None
) -> None:
    decision = decide_search_root(POLICY, root, real, directory)
    assert decision.allowed is (reason is None)
    assert decision.reason == reason


# --- tool sets (§1.5) ----------------------------------------------------------------------------

READ_ONLY = ("Read,Glob,Grep", "read,grep,find,ls,concorde_result")
FILES_ONLY = ("Read,Glob,Grep,Edit,Write", "read,grep,find,ls,edit,write,concorde_result")
WITH_BASH = ("Read,Glob,Grep,Edit,Write,Bash", "read,grep,find,ls,edit,write,bash,concorde_result")
TOOL_ROWS = {
    "understand": READ_ONLY,
    "review-spec": READ_ONLY,
    "review-code": READ_ONLY,
    "test": READ_ONLY,
    "review-architecture": READ_ONLY,
    "specify": FILES_ONLY,
    "code-to-spec": FILES_ONLY,
    "implement": WITH_BASH,
}


def test_the_tool_table_names_every_task_type() -> None:
    assert set(TOOL_ROWS) == set(TASK_TYPES)


@pytest.mark.parametrize(("task_type", "expected"), TOOL_ROWS.items())
def test_the_tool_set_per_task_type(task_type: str, expected: tuple[str, str]) -> None:
    grant = make_grant({"src/": "rw"}, task_type)
    assert (",".join(CLAUDE.tool_set(grant)), ",".join(PI.tool_set(grant))) == expected


@pytest.mark.parametrize("task_type", TASK_TYPES)
def test_a_grant_with_no_rw_entry_gets_the_read_only_set(task_type: str) -> None:
    grant = make_grant({"src/": "ro"}, task_type)
    tools = [tool_set(p.tools, TaskType(task_type), grant.has_rw) for p in (CLAUDE, PI)]
    assert (",".join(tools[0]), ",".join(tools[1])) == READ_ONLY


# --- one grant, one policy, JSON-able ------------------------------------------------------------


@pytest.mark.req("One grant for the whole run")
def test_one_grant_gives_one_policy_for_both_backends() -> None:
    again = policy_for()
    assert again == POLICY
    assert again.grant is GRANT or again.grant == GRANT
    data = POLICY.to_json()
    assert json.loads(json.dumps(data)) == data
    assert data["sandbox"] == POLICY.sandbox.to_json()
    assert data["rw"] == ["src/app/", "tests/test_a.py"]
    assert data["hidden"] == [f"{RT}/control", f"{RT}/config", f"{RT}/tmp/jiti"]
    assert data["own"] == [f"{RT}/work", f"{RT}/home", f"{RT}/tmp"]
    assert data["git"] == [g.path for g in GIT]
    assert data["runtime"] == [VENV, PYROOT]
    assert POLICY.grant_lists()["worktree"] == WT


@pytest.mark.req("A worker reads beside its grant only what its caller lists")
def test_the_runtime_paths_are_kept_exactly_as_given() -> None:
    given = (f"{PYROOT}/", VENV)
    policy = policy_for(runtime_paths=given)
    assert policy.runtime_paths == given
    assert policy.grant == GRANT


# --- properties ----------------------------------------------------------------------------------

NAMES = st.sampled_from(["a", "b", "c", "d.py", ".git"])
REL_PATHS = st.lists(NAMES, min_size=1, max_size=4).map("/".join)


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[str], Grant, list[str]]:
    files = sorted(set(draw(st.lists(REL_PATHS, min_size=1, max_size=25))))
    # a path cannot be both a file and a directory: drop files that are another's ancestor
    files = [f for f in files if not any(o.startswith(f + "/") for o in files)]
    candidates = sorted({"/".join(f.split("/")[:i]) for f in files for i in range(1, 5)} - {""})
    candidates = [c for c in candidates if ".git" not in c.split("/")]
    chosen = (
        draw(st.lists(st.sampled_from(candidates), unique=True, max_size=6)) if candidates else []
    )
    entries: dict[str, str] = {}
    for path in chosen:
        is_dir = any(f.startswith(path + "/") for f in files)
        entries[path + "/" if is_dir else path] = draw(st.sampled_from(["rw", "ro", "names"]))
    runtime = draw(st.lists(st.sampled_from(candidates), max_size=1)) if candidates else []
    return files, make_grant(entries), runtime


def _scenario_policy(files: list[str], grant: Grant, runtime: list[str]) -> Policy:
    """The policy with the Git admin paths Placement collects: the walk's `.git` entries."""
    list_dir = memory_tree([f"{WT}/{f}" for f in files])
    runtime_paths = [f"{WT}/{r}" for r in runtime]
    entries = [
        AdminPath(path=e.path, directory=e.kind is EntryKind.DIRECTORY)
        for e in find_git_entries(WT, subdirs_of(list_dir), runtime_paths)
    ]
    git = collect_admin_paths(f"{PRIMARY}/.git/worktrees/t1", f"{PRIMARY}/.git", entries)
    return build_policy(
        grant=grant,
        worktree=WT,
        primary=PRIMARY,
        user_home=HOME,
        runtime_dir=RT,
        runtime_paths=runtime_paths,
        git=git,
        list_dir=list_dir,
        runtime_entries=RUNTIME_ENTRIES,
    )


@pytest.mark.req("File tools cannot read what the grant withheld when the rules were generated")
@given(scenarios())
def test_every_withheld_file_is_covered_and_no_readable_one(
    scenario: tuple[list[str], Grant, list[str]],
) -> None:
    files, grant, runtime = scenario
    policy = _scenario_policy(files, grant, runtime)
    reads = [r for r in policy.deny_rules if r.startswith("Read(")]
    for rel in files:
        path = f"{WT}/{rel}"
        covered = any(rule_covers(r, path) for r in reads)
        level = grant.level_of(rel)
        if in_runtime_path(rel, runtime):
            continue
        if level in (Level.RO, Level.RW) and ".git" not in rel.split("/"):
            assert not covered, (rel, level)
        else:
            assert covered, (rel, level)


def in_runtime_path(rel: str, runtime: list[str]) -> bool:
    return any(is_within("/" + rel, "/" + r) for r in runtime)


@pytest.mark.req("Only rw paths are writable by file tools")
@given(scenarios())
def test_no_edit_rule_covers_an_rw_file_and_only_rw_files_are_writable(
    scenario: tuple[list[str], Grant, list[str]],
) -> None:
    files, grant, runtime = scenario
    policy = _scenario_policy(files, grant, runtime)
    edits = [r for r in policy.deny_rules if r.startswith("Edit(")]
    for rel in files:
        path = f"{WT}/{rel}"
        plain = ".git" not in rel.split("/") and not in_runtime_path(rel, runtime)
        rw = grant.level_of(rel) is Level.RW and plain
        assert decide_write(policy, path, path).allowed is rw, rel
        if rw:
            assert not any(rule_covers(r, path) for r in edits), rel
        else:
            assert any(rule_covers(r, path) for r in edits) or not plain, rel


# --- what is hidden always, and every home (issue 8 §2-§4) ---------------------------------------

ENV_HOME = "/srv/home/u"  # $HOME, not the password database's home
CLAUDE_CFG = "/opt/cfg/claude"  # CLAUDE_CONFIG_DIR outside every home
PI_CFG = "/opt/cfg/pi"  # PI_CODING_AGENT_DIR outside every home
MODEL_MAP = "/opt/maps/models.json"  # CONCORDE_MODEL_MAP outside every home
CREDENTIALS = (
    f"{CLAUDE_CFG}/.credentials.json",
    f"{PI_CFG}/auth.json",
    f"{PI_CFG}/models.json",
    MODEL_MAP,
)
WORKERS = "/srv/trace/op-1/workers"  # the trace parent's workers/ tree
RUN_DIR = f"{WORKERS}/w-20260101T000000-abc123"
OTHER = "/tmp/concorde-def456-z1"  # another run, there when the rules are generated
LATER = "/tmp/concorde-0a0a0a-late"  # another run, started after
HIDDEN_FILES = [
    *FILES,
    f"{ENV_HOME}/.ssh/id_rsa",
    f"{ENV_HOME}/.pi/agent/auth.json",
    *CREDENTIALS,
    f"{PI_CFG}/settings.json",
    f"{RUN_DIR}/status.json",
    f"{WORKERS}/w-other/transcript.jsonl",
    f"{OTHER}/config/auth.json",
    f"{OTHER}/work/x",
    "/tmp/concordex/y",
    f"{RT}/work/.keep",
]


def hiding_policy(
    runtime_dir: str = RT,
    runtime_paths: Sequence[str] = (VENV, PYROOT),
    files: Sequence[str] = HIDDEN_FILES,
    links: Sequence[str] = (),
) -> Policy:
    return build_policy(
        grant=GRANT,
        worktree=WT,
        primary=PRIMARY,
        user_home=HOME,
        runtime_dir=runtime_dir,
        runtime_paths=runtime_paths,
        git=GIT,
        list_dir=memory_tree(files, links),
        homes=(HOME, ENV_HOME),
        config_dirs=(CLAUDE_CFG, PI_CFG),
        credentials=CREDENTIALS,
        run_directories=(WORKERS,),
        runtime_entries=RUNTIME_ENTRIES,
    )


HIDING = hiding_policy()
OTHER_RUN = "belongs to another worker run"
RUN_DIRECTORY = "belongs to the host: run directories are not available to workers"
CREDENTIAL = "holds the user's credentials, which are not available to workers"
BOUNDARY = "is outside this task's boundary"

HIDDEN_READ_ROWS = [
    pytest.param(
        f"{OTHER}/config/auth.json",
        None,
        f"{OTHER}/config/auth.json {OTHER_RUN}",
        id="other run: its credential copy",
    ),
    pytest.param(OTHER, None, f"{OTHER} {OTHER_RUN}", id="other run: its directory"),
    pytest.param(
        f"{LATER}/config/.credentials.json",
        None,
        f"{LATER}/config/.credentials.json {OTHER_RUN}",
        id="other run: started later",
    ),
    pytest.param(
        f"{RT}/work/x",
        f"{OTHER}/config/auth.json",
        f"{OTHER}/config/auth.json {OTHER_RUN}",
        id="other run: by a link in work/",
    ),
    pytest.param("/tmp/concordex/y", None, None, id="not a run: another name"),
    pytest.param("/tmp", None, None, id="the temp root itself by the read table"),
    pytest.param(f"{RT}/work/x", None, None, id="own work/ is no other run"),
    pytest.param(
        f"{RT}/config/auth.json",
        None,
        f"{RT}/config/auth.json belongs to the host",
        id="own config/ still the host's",
    ),
    pytest.param(
        f"{RUN_DIR}/status.json",
        None,
        f"{RUN_DIR}/status.json {RUN_DIRECTORY}",
        id="run directory: status.json",
    ),
    pytest.param(
        f"{RUN_DIR}/grant.json",
        None,
        f"{RUN_DIR}/grant.json {RUN_DIRECTORY}",
        id="run directory: grant.json",
    ),
    pytest.param(
        f"{RUN_DIR}/rounds/1/stderr.log",
        None,
        f"{RUN_DIR}/rounds/1/stderr.log {RUN_DIRECTORY}",
        id="run directory: rounds/",
    ),
    pytest.param(
        f"{WORKERS}/w-other/transcript.jsonl",
        None,
        f"{WORKERS}/w-other/transcript.jsonl {RUN_DIRECTORY}",
        id="run directory: a sibling run's",
    ),
    pytest.param(WORKERS, None, f"{WORKERS} {RUN_DIRECTORY}", id="run directory: workers/"),
    pytest.param("/srv/trace/op-1/notes.md", None, None, id="the trace parent beside workers/"),
    *(pytest.param(c, None, f"{c} {CREDENTIAL}", id=f"credentials: {c}") for c in CREDENTIALS),
    pytest.param(
        f"{WT}/src/app/link",
        MODEL_MAP,
        f"{MODEL_MAP} {CREDENTIAL}",
        id="credentials: by a link in rw",
    ),
    pytest.param(
        f"{PI_CFG}/settings.json",
        None,
        f"{PI_CFG}/settings.json {BOUNDARY}",
        id="configuration directory: hidden whole",
    ),
    pytest.param(
        f"{ENV_HOME}/.ssh/id_rsa",
        None,
        f"{ENV_HOME}/.ssh/id_rsa {BOUNDARY}",
        id="$HOME: its ssh key",
    ),
    pytest.param(
        f"{ENV_HOME}/.pi/agent/auth.json",
        None,
        f"{ENV_HOME}/.pi/agent/auth.json {BOUNDARY}",
        id="$HOME: pi's default auth",
    ),
    pytest.param(
        f"{HOME}/.bashrc",
        None,
        f"{HOME}/.bashrc {BOUNDARY}",
        id="the password database's home still",
    ),
]


@pytest.mark.req("File tools cannot read what the grant withheld when the rules were generated")
@pytest.mark.parametrize(("path", "real", "reason"), HIDDEN_READ_ROWS)
def test_the_read_table_hides_other_runs_run_directories_and_credentials(
    path: str, real: str | None, reason: str | None
) -> None:
    decision = decide_read(HIDING, path, real)
    assert (decision.allowed, decision.reason) == (reason is None, reason)


@pytest.mark.parametrize(
    ("runtime_paths", "path", "reason"),
    [
        pytest.param(
            ("/tmp",),
            f"{LATER}/config/auth.json",
            f"{LATER}/config/auth.json {OTHER_RUN}",
            id="a runtime path over the temp root",
        ),
        pytest.param(
            ("/srv/trace",),
            f"{RUN_DIR}/brief.md",
            f"{RUN_DIR}/brief.md {RUN_DIRECTORY}",
            id="a runtime path over the trace parent",
        ),
        pytest.param(
            ("/opt",),
            f"{CLAUDE_CFG}/.credentials.json",
            f"{CLAUDE_CFG}/.credentials.json {CREDENTIAL}",
            id="a runtime path over a credential",
        ),
    ],
)
def test_what_is_hidden_always_comes_before_a_runtime_path(
    runtime_paths: tuple[str, ...], path: str, reason: str
) -> None:
    decision = decide_read(hiding_policy(runtime_paths=runtime_paths), path)
    assert (decision.allowed, decision.reason) == (False, reason)


def _placed(primary: str) -> Policy:
    worktree = f"{primary}/.claude/worktrees/t1"
    return build_policy(
        grant=GRANT,
        worktree=worktree,
        primary=primary,
        user_home=HOME,
        runtime_dir=RT,
        runtime_paths=(),
        git=(),
        list_dir=memory_tree([]),
        run_directories=(WORKERS,),
        runtime_entries=RUNTIME_ENTRIES,
    )


@pytest.mark.req("A worker runs only inside .claude/worktrees/")
@pytest.mark.parametrize(
    ("primary", "why"),
    [
        pytest.param(
            "/tmp/concorde-demo-x6loa2sd/shop",
            OTHER_RUN,
            id="a repository in a folder of the temp root named concorde-*",
        ),
        pytest.param(f"{LATER}/work/repo", OTHER_RUN, id="a repository in another run"),
        pytest.param(f"{WORKERS}/repo", RUN_DIRECTORY, id="a repository in the run directories"),
    ],
)
def test_a_worktree_in_what_is_hidden_always_is_refused(primary: str, why: str) -> None:
    """Every tool of the worker would refuse every path of such a worktree, its write landing
    nowhere (the demo's own repository in /tmp/concorde-demo-* did): refused before the run."""
    refusal = _placed(primary).hidden_worktree_refusal
    assert refusal is not None and why in refusal.message
    assert "move the repository elsewhere" in refusal.message
    assert refusal.code == "worktree_misplaced"


def test_a_worktree_beside_what_is_hidden_always_is_not_refused() -> None:
    assert _placed("/tmp/cw-demo-x6loa2sd/shop").hidden_worktree_refusal is None
    assert _placed("/tmp/concordex/shop").hidden_worktree_refusal is None


HIDDEN_WRITE_ROWS = [
    pytest.param(
        f"{RUN_DIR}/status.json",
        f"{RUN_DIR}/status.json",
        False,
        f"{RUN_DIR}/status.json {RUN_DIRECTORY}",
        id="run directory",
    ),
    pytest.param(
        f"{LATER}/control/settings.json",
        f"{LATER}/control/settings.json",
        False,
        f"{LATER}/control/settings.json {OTHER_RUN}",
        id="another run's control/",
    ),
    pytest.param(
        f"{WT}/src/app/l",
        f"{PI_CFG}/auth.json",
        True,
        f"{PI_CFG}/auth.json {CREDENTIAL}",
        id="credentials through a link in rw",
    ),
    pytest.param(
        f"{ENV_HOME}/.bashrc",
        f"{ENV_HOME}/.bashrc",
        False,
        f"{ENV_HOME}/.bashrc is outside the task worktree",
        id="$HOME: outside",
    ),
]


@pytest.mark.req("Only rw paths are writable by file tools")
@pytest.mark.parametrize(("given", "resolved", "link", "reason"), HIDDEN_WRITE_ROWS)
def test_the_write_table_refuses_what_is_hidden_always(
    given: str, resolved: str, link: bool, reason: str
) -> None:
    decision = decide_write(HIDING, given, resolved, link)
    assert (decision.allowed, decision.reason) == (False, reason)


@pytest.mark.parametrize(
    ("root", "reason"),
    [
        pytest.param(OTHER, f"{OTHER} {OTHER_RUN}", id="another run"),
        pytest.param(f"{LATER}/config", f"{LATER}/config {OTHER_RUN}", id="a later run's config/"),
        pytest.param(WORKERS, f"{WORKERS} {RUN_DIRECTORY}", id="workers/"),
        pytest.param(PI_CFG, f"{PI_CFG} {BOUNDARY}", id="a configuration directory"),
        pytest.param(ENV_HOME, f"{ENV_HOME} {BOUNDARY}", id="$HOME"),
        pytest.param("/tmp", None, id="the temp root: the sandbox shows it empty"),
    ],
)
def test_the_search_root_decision_hides_them_too(root: str, reason: str | None) -> None:
    decision = decide_search_root(HIDING, root)
    assert (decision.allowed, decision.reason) == (reason is None, reason)


HIDDEN_RULE_ROWS = [
    pytest.param(rd(ENV_HOME, True), id="$HOME holding nothing kept: whole"),
    pytest.param(rd(CLAUDE_CFG, True), id="CLAUDE_CONFIG_DIR: whole"),
    pytest.param(rd(PI_CFG, True), id="PI_CODING_AGENT_DIR: whole"),
    pytest.param(rd(MODEL_MAP), id="the model map"),
    pytest.param(rd(f"{CLAUDE_CFG}/.credentials.json"), id="a credential file itself"),
    pytest.param(rd(WORKERS, True), id="the trace parent's workers/"),
    pytest.param(rd(OTHER, True), id="another run there at generation"),
]


@pytest.mark.req("File tools cannot read what the grant withheld when the rules were generated")
@pytest.mark.parametrize("expected", HIDDEN_RULE_ROWS)
def test_each_hidden_class_has_its_deny_rules(expected: list[str]) -> None:
    for rule in expected:
        assert rule in HIDING.deny_rules


def test_the_hidden_rules_follow_the_upstream_ones_in_order() -> None:
    upstream = list(POLICY.deny_rules)
    assert list(HIDING.deny_rules[: len(upstream)]) == upstream
    assert list(HIDING.deny_rules[len(upstream) :]) == [
        *rd(ENV_HOME, True),
        *rd(CLAUDE_CFG, True),
        *rd(PI_CFG, True),
        *(r for c in CREDENTIALS for r in rd(c)),
        *rd(WORKERS, True),
        *rd(OTHER, True),
    ]


@pytest.mark.req("A run the deny rules would disable is refused")
def test_no_hidden_rule_covers_the_workers_own_directories() -> None:
    assert HIDING.run_directory_refusal is None
    assert HIDING.other_runs == (OTHER,)
    assert not [r for r in HIDING.deny_rules if rule_covers(r, "/tmp/concordex/y")]


def test_a_home_holding_the_runtime_directory_is_walked_around_it() -> None:
    policy = build_policy(
        grant=GRANT,
        worktree=WT,
        primary=PRIMARY,
        user_home=HOME,
        runtime_dir=RT,
        runtime_paths=(),
        git=GIT,
        list_dir=memory_tree(HIDDEN_FILES),
        homes=("/tmp",),
        runtime_entries=RUNTIME_ENTRIES,
    )
    assert policy.run_directory_refusal is None
    assert set(rd(OTHER, True)) <= set(policy.deny_rules)
    assert set(rd(f"{RT}/control", True)) <= set(policy.deny_rules)


def test_a_boundary_inside_another_adds_nothing() -> None:
    nested = build_policy(
        grant=GRANT,
        worktree=WT,
        primary=PRIMARY,
        user_home=HOME,
        runtime_dir=RT,
        runtime_paths=(VENV, PYROOT),
        git=GIT,
        list_dir=memory_tree(FILES),
        homes=(HOME,),
        config_dirs=(f"{HOME}/.claude", f"{HOME}/.pi/agent"),
        runtime_entries=RUNTIME_ENTRIES,
    )
    assert nested.deny_rules == POLICY.deny_rules
    assert nested.boundaries == (HOME,)


def test_the_sandbox_hides_every_class() -> None:
    deny_read = HIDING.sandbox.deny_read
    assert list(deny_read[: len(POLICY.sandbox.deny_read) - 1]) == list(
        POLICY.sandbox.deny_read[:-1]
    )
    assert list(deny_read[len(POLICY.sandbox.deny_read) - 1 :]) == [
        ENV_HOME,
        CLAUDE_CFG,
        PI_CFG,
        *CREDENTIALS,
        WORKERS,
        "/tmp",
    ]
    assert HIDING.sandbox.allow_read == POLICY.sandbox.allow_read


def test_a_runtime_directory_at_the_root_lists_the_other_runs_instead() -> None:
    runtime = "/concorde-abc123-k9"
    policy = hiding_policy(
        runtime_dir=runtime, files=[*FILES, "/concorde-def456-z1/config/auth.json", "/etc/hosts"]
    )
    assert "/" not in policy.sandbox.deny_read
    assert policy.sandbox.deny_read[-1] == "/concorde-def456-z1"
    assert not decide_read(policy, "/concorde-0a0a0a-late/config/auth.json").allowed
    assert decide_read(policy, "/etc/hosts").allowed


def test_the_hidden_classes_are_in_the_policy_json() -> None:
    data = HIDING.to_json()
    assert data["boundaries"] == [HOME, ENV_HOME, CLAUDE_CFG, PI_CFG]
    assert data["runtimeRoot"] == "/tmp" and data["runtimeDirectory"] == RT
    assert data["runDirectories"] == [WORKERS]
    assert data["credentials"] == list(CREDENTIALS)


# --- where the credentials really are (domain.configuration.credentials) ---------------------------------------

ORIGIN_ROWS = [
    pytest.param(
        {"HOME": "/home/u"},
        "/home/u",
        ("/home/u",),
        ("/home/u/.claude", "/home/u/.pi/agent"),
        (
            "/home/u/.claude/.credentials.json",
            "/home/u/.pi/agent/auth.json",
            "/home/u/.pi/agent/models.json",
            "/home/u/.config/concorde/models.json",
            "/home/u/.config/concorde/signing-key.pem",
        ),
        id="defaults below the one home",
    ),
    pytest.param(
        {
            "HOME": "/srv/h",
            "CLAUDE_CONFIG_DIR": "/opt/c",
            "PI_CODING_AGENT_DIR": "~/pi",
            "CONCORDE_MODEL_MAP": "/opt/m.json",
            "CONCORDE_SIGNING_KEY": "/etc/concorde/key.pem",
        },
        "/home/u",
        ("/home/u", "/srv/h"),
        ("/opt/c", "/srv/h/pi"),
        (
            "/opt/c/.credentials.json",
            "/srv/h/pi/auth.json",
            "/srv/h/pi/models.json",
            "/opt/m.json",
            "/etc/concorde/key.pem",
        ),
        id="HOME apart, every origin moved (the signing key outside every home)",
    ),
    pytest.param(
        {"XDG_CONFIG_HOME": "/x", "CLAUDE_CONFIG_DIR": "rel/c", "PI_CODING_AGENT_DIR": "/p"},
        "/home/u",
        ("/home/u",),
        ("/p",),
        (
            "/p/auth.json",
            "/p/models.json",
            "/x/concorde/models.json",
            "/x/concorde/signing-key.pem",
        ),
        id="no HOME; a relative directory left out",
    ),
]


@pytest.mark.parametrize(("environ", "user_home", "homes", "directories", "files"), ORIGIN_ROWS)
def test_the_credential_origins(
    environ: dict[str, str],
    user_home: str,
    homes: tuple[str, ...],
    directories: tuple[str, ...],
    files: tuple[str, ...],
) -> None:
    origins = credential_origins(environ, user_home, [p.credentials for p in (CLAUDE, PI)])
    assert (origins.homes, origins.directories, origins.files) == (homes, directories, files)
