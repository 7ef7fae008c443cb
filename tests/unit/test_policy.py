"""The policy (notes/harness.md §1.2-§1.5, §2.4-§2.6, §5): deny rules, the run-directory guard,
sandbox lists, read/write tables, search roots and tool sets, all from one frozen grant."""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable, Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from concorde_workers.domain.credentials import credential_origins
from concorde_workers.domain.deny_rules import rule_covers, run_directory_denied
from concorde_workers.domain.errors import Reason
from concorde_workers.domain.grant import Grant, Level, parse_grant
from concorde_workers.domain.layout import RuntimeLayout
from concorde_workers.domain.paths import DirEntry, EntryKind, ListDir, is_within
from concorde_workers.domain.placement import AdminPath, collect_admin_paths, find_git_entries
from concorde_workers.domain.policy import (
    GIT_REASON,
    GRANT_PREFIX,
    NO_FILE_REASON,
    Policy,
    build_policy,
    could_not_decide,
    decide_read,
    decide_search_root,
    decide_write,
    tool_sets,
    with_prefix,
)
from concorde_workers.domain.task_types import TASK_TYPES, TaskType

HOME = "/home/u"
PRIMARY = f"{HOME}/proj"
WT = f"{PRIMARY}/.claude/worktrees/t1"
RT = "/tmp/concorde-abc123-k9"
VENV = f"{WT}/.venv"
PYROOT = "/opt/py/3.11"

NOT_GRANTED_TAIL = (
    " is not in this task's grant; a new file outside the bound directories is created and bound "
    "to a Module by the task level before a worker fills it, and a file another Module binds "
    "needs that Module bound to the task"
)


def memory_tree(files: Iterable[str], links: Iterable[str] = ()) -> ListDir:
    """An in-memory tree: files and symbolic links by absolute path, directories implied."""
    listing: dict[str, dict[str, EntryKind]] = {}

    def add(path: str, kind: EntryKind) -> None:
        parent, name = posixpath.split(path)
        listing.setdefault(parent, {})[name] = kind
        if parent != "/":
            add(parent, EntryKind.DIRECTORY)

    for f in files:
        add(f, EntryKind.FILE)
    for link in links:
        add(link, EntryKind.SYMLINK)

    def list_dir(path: str) -> Sequence[DirEntry]:
        return [DirEntry(name=n, kind=k) for n, k in listing.get(path, {}).items()]

    return list_dir


def make_grant(entries: dict[str, str], task_type: str = "implement") -> Grant:
    parsed = parse_grant({"task_type": task_type, "context_identity": "sha256:ctx",
                          "entries": [{"path": p, "level": lv} for p, lv in entries.items()]})
    assert isinstance(parsed, Grant), parsed
    return parsed


GRANT = make_grant({
    "src/app/": "rw",
    "src/app/secret.py": "names",
    "src/bmod/": "ro",
    "src/bmod/secret.py": "names",
    "specs/": "ro",
    "tests/test_a.py": "rw",
    "docs/": "names",
    "README.md": "ro",
})

FILES = [
    f"{WT}/.git", f"{WT}/README.md", f"{WT}/checks/c1.py", f"{WT}/docs/readme.md",
    f"{WT}/specs/a/module.md", f"{WT}/src/app/mod.py", f"{WT}/src/app/secret.py",
    f"{WT}/src/app/util.py", f"{WT}/src/bmod/secret.py", f"{WT}/src/bmod/x.py",
    f"{WT}/tests/test_a.py", f"{WT}/vendor/lib/.git", f"{WT}/vendor/lib/v.py",
    f"{VENV}/lib/site.py",
    f"{HOME}/.bashrc", f"{HOME}/.claude/settings.json", f"{HOME}/other/x.py",
    f"{PRIMARY}/src/main.py", f"{PRIMARY}/.git/config", f"{PRIMARY}/.concorde/workers.json",
    f"{PRIMARY}/.claude/settings.json", f"{PRIMARY}/.claude/worktrees/t2/a.py",
]
GIT = (AdminPath(path=f"{PRIMARY}/.git", directory=True),
       AdminPath(path=f"{WT}/.git", directory=False),
       AdminPath(path=f"{WT}/vendor/lib/.git", directory=False))


def policy_for(grant: Grant = GRANT, files: Sequence[str] = FILES, links: Sequence[str] = (),
               runtime_dir: str = RT, runtime_paths: Sequence[str] = (VENV, PYROOT),
               git: Sequence[AdminPath] = GIT, home: str = HOME) -> Policy:
    return build_policy(grant=grant, worktree=WT, primary=PRIMARY, user_home=home,
                        runtime_dir=runtime_dir, runtime_paths=runtime_paths, git=git,
                        list_dir=memory_tree(files, links))


POLICY = policy_for()


def rd(path: str, directory: bool = False) -> list[str]:
    target = "/" + path + ("/**" if directory else "")
    return [f"Read({target})", f"Edit({target})"]


def ed(path: str, directory: bool = False) -> list[str]:
    return [f"Edit(/{path}{'/**' if directory else ''})"]


# --- deny rules ----------------------------------------------------------------------------------

# (1) the worktree walk, row by row (children in name order, depth first)
WALK_TABLE: list[tuple[str, list[str]]] = [
    (".git file: Read+Edit, no suffix", rd(f"{WT}/.git")),
    ("ro file: Edit", ed(f"{WT}/README.md")),
    ("dir with nothing readable: Read+Edit /**", rd(f"{WT}/checks", True)),
    ("names dir with nothing readable below", rd(f"{WT}/docs", True)),
    ("ro dir, nothing else below: Edit /**", ed(f"{WT}/specs", True)),
    ("hidden dir holding a .git: one rule pair", rd(f"{WT}/vendor", True)),
    ("names file below rw dir", rd(f"{WT}/src/app/secret.py")),
    ("names file below ro dir", rd(f"{WT}/src/bmod/secret.py")),
    ("ro file in a mixed ro dir", ed(f"{WT}/src/bmod/x.py")),
]
WALK_ROWS = [pytest.param(rules, id=name) for name, rules in WALK_TABLE]
WALK_EXPECTED = [r for _, rules in WALK_TABLE for r in rules]

OUTSIDE_EXPECTED = [
    *rd(f"{HOME}/.bashrc"), *rd(f"{HOME}/.claude", True), *rd(f"{HOME}/other", True),
    *rd(f"{PRIMARY}/.concorde", True), *rd(f"{PRIMARY}/.git", True), *rd(f"{PRIMARY}/src", True),
    *rd(f"{PRIMARY}/.claude/settings.json"), *rd(f"{PRIMARY}/.claude/worktrees/t2", True),
]
GIT_EXPECTED = rd(f"{WT}/vendor/lib/.git")  # the others are already listed: first occurrence kept
HOST_EXPECTED = [*rd(f"{RT}/control", True), *rd(f"{RT}/config", True), *rd("/proc", True)]


@pytest.mark.req("File tools cannot read what the grant withheld when the rules were generated")
def test_the_deny_rules_in_generation_order() -> None:
    assert list(POLICY.deny_rules) == (WALK_EXPECTED + OUTSIDE_EXPECTED + GIT_EXPECTED
                                       + HOST_EXPECTED)


@pytest.mark.parametrize("expected", WALK_ROWS)
def test_each_walk_row_gives_its_rules(expected: list[str]) -> None:
    for rule in expected:
        assert rule in POLICY.deny_rules


@pytest.mark.parametrize("untouched", [
    pytest.param(f"{WT}/src/app/mod.py", id="rw file"),
    pytest.param(f"{WT}/tests/test_a.py", id="rw file in a hidden dir"),
    pytest.param(VENV, id="runtime path"),
    pytest.param(f"{VENV}/lib/site.py", id="below a runtime path"),
    pytest.param(WT, id="the worktree"),
    pytest.param(PRIMARY, id="the primary worktree: never Read(//<primary>/**)"),
    pytest.param(HOME, id="the home holding the worktree"),
])
def test_no_rule_touches(untouched: str) -> None:
    assert not [r for r in POLICY.deny_rules if rule_covers(r, untouched)]


@pytest.mark.req("File tools cannot read what the grant withheld when the rules were generated")
@pytest.mark.parametrize("hidden", [
    f"{WT}/checks/c1.py", f"{WT}/docs/readme.md", f"{WT}/src/app/secret.py",
    f"{WT}/src/bmod/secret.py", f"{WT}/vendor/lib/v.py", f"{WT}/.git",
])
def test_every_withheld_worktree_file_has_a_read_rule(hidden: str) -> None:
    assert [r for r in POLICY.deny_rules if r.startswith("Read(") and rule_covers(r, hidden)]


def test_a_home_holding_nothing_kept_is_hidden_whole() -> None:
    policy = policy_for(home="/home/other-user",
                        files=[*FILES, "/home/other-user/.ssh/id_rsa"])
    assert policy.deny_rules[len(WALK_EXPECTED):len(WALK_EXPECTED) + 2] == tuple(
        rd("/home/other-user", True))


def test_a_symlinked_directory_is_treated_like_a_file() -> None:
    policy = policy_for(links=[f"{WT}/linkdir", f"{WT}/specs/to-src"])
    assert set(rd(f"{WT}/linkdir")) <= set(policy.deny_rules)
    assert f"Read(/{WT}/linkdir/**)" not in policy.deny_rules


def test_a_runtime_path_inside_an_rw_dir_is_still_not_editable() -> None:
    grant = make_grant({"web/": "rw"})
    policy = policy_for(grant=grant, files=[f"{WT}/web/app.js", f"{WT}/web/node_modules/x.js"],
                        runtime_paths=[f"{WT}/web/node_modules"])
    assert f"Edit(/{WT}/web/node_modules/**)" in policy.deny_rules
    assert not [r for r in policy.deny_rules if rule_covers(r, f"{WT}/web/app.js")]
    assert f"{WT}/web/node_modules" in policy.sandbox.deny_write


def test_a_names_dir_below_an_ro_dir_is_hidden_whole() -> None:
    grant = make_grant({"lib/": "ro", "lib/private/": "names"})
    files = [f"{WT}/lib/a.py", *(f"{WT}/lib/private/f{i}.py" for i in range(50))]
    policy = policy_for(grant=grant, files=files)
    assert list(policy.deny_rules[:3]) == [*ed(f"{WT}/lib/a.py"), *rd(f"{WT}/lib/private", True)]
    assert f"Read(/{WT}/lib/private/f1.py)" not in policy.deny_rules


def synthetic_worktree(calls: list[str]) -> ListDir:
    """100 packages x 10 subpackages x 100 files = 100,000 files, listed lazily."""
    def list_dir(path: str) -> Sequence[DirEntry]:
        calls.append(path)
        if path == WT:
            return [DirEntry(name=f"pkg{i:02}", kind=EntryKind.DIRECTORY) for i in range(100)]
        depth = path[len(WT):].count("/")
        if not path.startswith(WT + "/") or depth > 2:
            return []
        if depth == 1:
            return [DirEntry(name=f"sub{i}", kind=EntryKind.DIRECTORY) for i in range(10)]
        return [DirEntry(name=f"f{i:03}.py", kind=EntryKind.FILE) for i in range(100)]
    return list_dir


@pytest.mark.req("File tools cannot read what the grant withheld when the rules were generated")
def test_the_cover_scales_with_the_grant_not_the_repository() -> None:
    grant = make_grant({
        "pkg01/": "rw", "pkg02/": "ro", "pkg03/sub1/": "rw", "pkg03/sub2/f001.py": "ro",
        "pkg04/sub0/": "ro", "pkg04/sub0/f050.py": "names", "pkg05/sub5/f005.py": "rw",
        "pkg06/": "names", "pkg06/sub3/": "ro", "pkg07/sub7/": "rw",
    })
    calls: list[str] = []
    policy = build_policy(grant=grant, worktree=WT, primary=PRIMARY, user_home=HOME,
                          runtime_dir=RT, runtime_paths=(), git=GIT,
                          list_dir=synthetic_worktree(calls))
    assert 200 < len(policy.deny_rules) < 1000  # a few hundred for 100,000 files
    assert len([c for c in calls if c.startswith(WT)]) < 20  # only the way to the grant is walked
    hidden = f"{WT}/pkg50/sub3/f042.py"
    assert [r for r in policy.deny_rules if r.startswith("Read(") and rule_covers(r, hidden)]
    assert not [r for r in policy.deny_rules if rule_covers(r, f"{WT}/pkg05/sub5/f005.py")]


def test_rules_are_deduplicated_keeping_the_first() -> None:
    assert len(set(POLICY.deny_rules)) == len(POLICY.deny_rules)


@pytest.mark.req("Every Git administrative path is hidden")
@pytest.mark.parametrize("admin", GIT, ids=lambda a: a.path)
def test_every_git_admin_path_has_read_and_edit_rules(admin: AdminPath) -> None:
    for kind in ("Read", "Edit"):
        assert [r for r in POLICY.deny_rules
                if r.startswith(kind + "(") and rule_covers(r, admin.path)]
    assert admin.path in POLICY.sandbox.deny_read


@pytest.mark.req("Every Git administrative path is hidden")
def test_an_admin_path_outside_home_and_primary_is_hidden_too() -> None:
    far = AdminPath(path="/srv/git/proj.git", directory=True)
    policy = policy_for(git=(*GIT, far))
    assert set(rd("/srv/git/proj.git", True)) <= set(policy.deny_rules)
    assert "/srv/git/proj.git" in policy.sandbox.deny_read
    assert not decide_read(policy, "/srv/git/proj.git/HEAD").allowed
    assert not decide_write(policy, "/srv/git/proj.git/HEAD", "/srv/git/proj.git/HEAD").allowed


# --- the run-directory guard ---------------------------------------------------------------------

RULE_COVERS = [
    ("Read(//a/b/**)", "/a/b", True), ("Read(//a/b/**)", "/a/b/c", True),
    ("Read(//a/b/**)", "/a/bc", False), ("Edit(//a/b)", "/a/b", True),
    ("Edit(//a/b)", "/a/b/c", False), ("Read(//a/b/c/**)", "/a/b", False),
]


@pytest.mark.parametrize(("rule", "path", "covers"), RULE_COVERS)
def test_rule_covers(rule: str, path: str, covers: bool) -> None:
    assert rule_covers(rule, path) is covers


GUARD_CASES = [
    pytest.param(f"{PRIMARY}/.git/rt", {}, [], f"Read(/{PRIMARY}/.git/**)",
                 f"{PRIMARY}/.git/rt/work", id="Read rule of a Git admin path"),
    pytest.param(f"{WT}/build/rt", {"build/": "ro"}, [f"{WT}/build/x.o"], f"Edit(/{WT}/build/**)",
                 f"{WT}/build/rt/work", id="Edit rule only: stricter than upstream"),
    pytest.param(f"{WT}/vendor/rt", {"vendor/": "ro"}, [f"{WT}/vendor/rt/home/.keep"],
                 f"Edit(/{WT}/vendor/**)", f"{WT}/vendor/rt/work", id="first own dir named"),
]


@pytest.mark.req("A run the deny rules would disable is refused")
@pytest.mark.parametrize(("runtime_dir", "entries", "files", "rule", "own"), GUARD_CASES)
def test_a_rule_over_the_workers_own_directory_refuses_the_run(
    runtime_dir: str, entries: dict[str, str], files: list[str], rule: str, own: str
) -> None:
    grant = make_grant(entries or {"src/app/": "rw"})
    policy = policy_for(grant=grant, files=[*FILES, *files], runtime_dir=runtime_dir)
    refusal = policy.run_directory_refusal
    assert refusal is not None
    assert refusal.code == "run_directory_denied"
    assert refusal.reason is Reason.ENVIRONMENT
    assert rule in refusal.message
    assert own in refusal.message


@pytest.mark.req("A run the deny rules would disable is refused")
@pytest.mark.parametrize(("runtime_dir", "sibling"), [
    (f"{HOME}/other/rt", f"{HOME}/other/x.py"), (f"{WT}/checks/rt", f"{WT}/checks/c1.py")])
def test_the_walks_go_around_a_runtime_directory_in_a_hidden_area(
    runtime_dir: str, sibling: str
) -> None:
    own = [f"{runtime_dir}/{d}" for d in ("work", "home", "tmp")]
    policy = policy_for(files=[*FILES, *(f"{o}/.keep" for o in own)], runtime_dir=runtime_dir)
    assert policy.run_directory_refusal is None
    assert not [r for r in policy.deny_rules for o in own if rule_covers(r, o)]
    assert set(rd(sibling)) <= set(policy.deny_rules)


@pytest.mark.req("A run the deny rules would disable is refused")
def test_an_ordinary_runtime_directory_is_not_refused() -> None:
    assert POLICY.run_directory_refusal is None
    assert run_directory_denied([f"Read(/{RT}/tmp/jiti/**)"], RuntimeLayout(root=RT)) is None


# --- sandbox lists -------------------------------------------------------------------------------


def test_the_sandbox_lists() -> None:
    assert POLICY.sandbox.to_json() == {
        "denyRead": [WT, HOME, PRIMARY, f"{PRIMARY}/.git", f"{WT}/.git", f"{WT}/vendor/lib/.git",
                     f"{RT}/control", f"{RT}/config", f"{RT}/tmp/jiti",
                     f"{WT}/src/app/secret.py", f"{WT}/src/bmod/secret.py",
                     # the temp root: other runs, those that start later too (issue 8 §2)
                     "/tmp"],
        "allowRead": sorted([f"{WT}/README.md", f"{WT}/specs", f"{WT}/src/app", f"{WT}/src/bmod",
                             f"{WT}/tests/test_a.py", f"{RT}/work", f"{RT}/home", f"{RT}/tmp",
                             VENV, PYROOT]),
        "allowWrite": sorted([f"{WT}/src/app", f"{WT}/tests/test_a.py", f"{RT}/work",
                              f"{RT}/home", f"{RT}/tmp"]),
        "denyWrite": [f"{WT}/src/app/secret.py", f"{RT}/tmp/jiti", f"{RT}/work/.pi"],
    }


def test_the_primary_is_not_repeated_when_it_is_the_home() -> None:
    policy = build_policy(grant=GRANT, worktree=WT, primary=PRIMARY, user_home=PRIMARY,
                          runtime_dir=RT, runtime_paths=(), git=GIT, list_dir=memory_tree(FILES))
    assert policy.sandbox.deny_read.count(PRIMARY) == 1


def test_an_ro_file_below_an_rw_dir_is_denied_writing() -> None:
    grant = make_grant({"src/": "rw", "src/gen.py": "ro", "src/keep/": "names"})
    policy = policy_for(grant=grant)
    assert policy.sandbox.deny_write[:2] == (f"{WT}/src/gen.py", f"{WT}/src/keep")
    assert f"{WT}/src/keep" in policy.sandbox.deny_read
    assert f"{WT}/src/gen.py" not in policy.sandbox.deny_read


# --- read table (§2.4) ---------------------------------------------------------------------------

READ_ROWS = [
    pytest.param(f"{WT}/.git/config", None, GIT_REASON, id="1 .git segment"),
    pytest.param(f"{WT}/src/app/.git", None, GIT_REASON, id="1 .git segment below rw"),
    pytest.param(f"{PRIMARY}/.git/HEAD", None, GIT_REASON, id="1 admin path outside worktree"),
    pytest.param(f"{VENV}/lib/site.py", None, None, id="2 runtime path inside the worktree"),
    pytest.param(f"{PYROOT}/lib/os.py", None, None, id="2 runtime path outside"),
    pytest.param(f"{WT}/src/app/mod.py", None, None, id="3 rw"),
    pytest.param(f"{WT}/specs/a/module.md", None, None, id="3 ro below a dir entry"),
    pytest.param(f"{WT}/src/app/secret.py", None,
                 "only the name of src/app/secret.py is visible to this task", id="4 names"),
    pytest.param(f"{WT}/docs/readme.md", None,
                 "only the name of docs/readme.md is visible to this task", id="4 names dir"),
    pytest.param(f"{WT}/checks/c1.py", None, "checks/c1.py is not in this task's grant",
                 id="5 other"),
    pytest.param(WT, None, f"{WT} is not in this task's grant", id="5 the worktree root"),
    pytest.param(f"{RT}/control/settings.json", None,
                 f"{RT}/control/settings.json belongs to the host", id="6 control"),
    pytest.param(f"{RT}/config/auth.json", None, f"{RT}/config/auth.json belongs to the host",
                 id="6 config"),
    pytest.param(f"{RT}/tmp/jiti/x.mjs", None, f"{RT}/tmp/jiti/x.mjs belongs to the host",
                 id="6 hardening: jiti cache"),
    pytest.param("/proc/self/environ", None,
                 "/proc/self/environ belongs to the host: no process's files are available to "
                 "workers", id="6 hardening: the agent's own environment"),
    pytest.param(f"{RT}/work/env", "/proc/1/environ",
                 "/proc/1/environ belongs to the host: no process's files are available to "
                 "workers", id="6 hardening: a link into /proc"),
    pytest.param(f"{RT}/tmp/scratch.txt", None, None, id="7 own tmp"),
    pytest.param(f"{RT}/work/notes.md", None, None, id="7 own work"),
    pytest.param(f"{HOME}/.ssh/id_rsa", None, f"{HOME}/.ssh/id_rsa is outside this task's boundary",
                 id="8 home"),
    pytest.param(f"{PRIMARY}/src/main.py", None,
                 f"{PRIMARY}/src/main.py is outside this task's boundary", id="8 primary"),
    pytest.param("/etc/hosts", None, None, id="9 system"),
    pytest.param(f"{WT}/src/app/../bmod/x.py", None, None, id="normalised lexically"),
    pytest.param(f"{RT}/work/link", f"{WT}/checks/c1.py",
                 "checks/c1.py is not in this task's grant", id="real path judged too"),
    pytest.param(f"{WT}/checks/link", f"{WT}/src/app/mod.py",
                 "checks/link is not in this task's grant", id="lexical path judged too"),
    pytest.param(f"{WT}/src/app/link", f"{PRIMARY}/.git/config", GIT_REASON,
                 id="a link into Git metadata"),
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
    pytest.param(f"{PRIMARY}/.git/config", f"{PRIMARY}/.git/config", False, GIT_REASON,
                 id="admin path outside the worktree"),
    pytest.param("/etc/passwd", "/etc/passwd", False, "/etc/passwd is outside the task worktree",
                 id="1 outside"),
    pytest.param(f"{WT}/src/app/out", "/etc/passwd", True,
                 f"{WT}/src/app/out is a symbolic link to /etc/passwd, outside the task worktree",
                 id="1 outside through a link"),
    pytest.param(f"{RT}/work/x.txt", f"{RT}/work/x.txt", False,
                 f"{RT}/work/x.txt is outside the task worktree", id="1 own dirs are Bash's"),
    pytest.param(f"{WT}/.git/config", f"{WT}/.git/config", False, GIT_REASON, id="2 .git"),
    pytest.param(f"{WT}/src/app/sub/.git/HEAD", f"{WT}/src/app/sub/.git/HEAD", False, GIT_REASON,
                 id="2 nested .git below rw"),
    pytest.param(f"{WT}/src/app/new.py", f"{WT}/src/app/new.py", False, None, id="3 rw new file"),
    pytest.param(f"{WT}/tests/test_a.py", f"{WT}/tests/test_a.py", False, None, id="3 rw file"),
    pytest.param(f"{WT}/src/app/l.py", f"{WT}/src/app/mod.py", True, None, id="3 link to rw"),
    pytest.param(f"{WT}/src/bmod/x.py", f"{WT}/src/bmod/x.py", False,
                 "src/bmod/x.py is read-only for this task", id="4 ro"),
    pytest.param(f"{WT}/src/app/to-spec.md", f"{WT}/specs/a/module.md", True,
                 f"specs/a/module.md (the target of the symbolic link {WT}/src/app/to-spec.md) "
                 "is read-only for this task", id="4 link at rw to ro"),
    pytest.param(f"{WT}/src/app/secret.py", f"{WT}/src/app/secret.py", False,
                 "only the name of src/app/secret.py is visible to this task", id="5 names"),
    pytest.param(f"{WT}/src/a/../notes.txt", f"{WT}/src/notes.txt", False,
                 "src/notes.txt" + NOT_GRANTED_TAIL, id="6 not granted"),
    pytest.param(f"{WT}/checks/l", f"{WT}/src/app/mod.py", True, None,
                 id="6 a link outside rw to an rw target writes"),
    pytest.param(f"{VENV}/lib/site.py", f"{VENV}/lib/site.py", False,
                 ".venv/lib/site.py is not in this task's grant; it lies in a runtime path, "
                 "which workers may read but never change", id="runtime path never writable"),
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
    pytest.param(f"{WT}/checks", None, True, "checks holds nothing this task may read",
                 id="nothing readable"),
    pytest.param(f"{WT}/docs", None, True, "docs holds nothing this task may read", id="names"),
    pytest.param(f"{WT}/.git", None, True, GIT_REASON, id=".git"),
    pytest.param(VENV, None, True, None, id="runtime path"),
    pytest.param(f"{RT}/config", None, True, f"{RT}/config belongs to the host", id="host"),
    pytest.param("/", None, True, None, id="system root by the read table"),
    pytest.param(f"{RT}/work/src", f"{WT}/checks", True, "checks holds nothing this task may read",
                 id="real path judged"),
    pytest.param(f"{WT}/README.md", None, False, None, id="a file root by the read table"),
]


@pytest.mark.parametrize(("root", "real", "directory", "reason"), SEARCH_ROWS)
def test_the_search_root_decision(root: str, real: str | None, directory: bool,
                                  reason: str | None) -> None:
    decision = decide_search_root(POLICY, root, real, directory)
    assert decision.allowed is (reason is None)
    assert decision.reason == reason


# --- tool sets (§1.5) ----------------------------------------------------------------------------

READ_ONLY = ("Read,Glob,Grep", "read,grep,find,ls,concorde_result")
FILES_ONLY = ("Read,Glob,Grep,Edit,Write", "read,grep,find,ls,edit,write,concorde_result")
WITH_BASH = ("Read,Glob,Grep,Edit,Write,Bash",
             "read,grep,find,ls,edit,write,bash,concorde_result")
TOOL_ROWS = {
    "understand": READ_ONLY, "review-spec": READ_ONLY, "review-code": READ_ONLY, "test": READ_ONLY,
    "review-architecture": READ_ONLY, "specify": FILES_ONLY, "code-to-spec": FILES_ONLY,
    "implement": WITH_BASH,
}


def test_the_tool_table_names_every_task_type() -> None:
    assert set(TOOL_ROWS) == set(TASK_TYPES)


@pytest.mark.parametrize(("task_type", "expected"), TOOL_ROWS.items())
def test_the_tool_set_per_task_type(task_type: str, expected: tuple[str, str]) -> None:
    grant = make_grant({"src/": "rw"}, task_type)
    policy = policy_for(grant=grant)
    assert (policy.tools_arg("claude"), policy.tools_arg("pi")) == expected


@pytest.mark.parametrize("task_type", TASK_TYPES)
def test_a_grant_with_no_rw_entry_gets_the_read_only_set(task_type: str) -> None:
    tools = tool_sets(TaskType(task_type), make_grant({"src/": "ro"}, task_type))
    assert (",".join(tools.claude), ",".join(tools.pi)) == READ_ONLY


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
    candidates = sorted({"/".join(f.split("/")[:i]) for f in files for i in range(1, 5)}
                        - {""})
    candidates = [c for c in candidates if ".git" not in c.split("/")]
    chosen = draw(st.lists(st.sampled_from(candidates), unique=True, max_size=6)) if candidates \
        else []
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
    entries = [AdminPath(path=e.path, directory=e.kind is EntryKind.DIRECTORY)
               for e in find_git_entries(WT, list_dir, runtime_paths)]
    git = collect_admin_paths(f"{PRIMARY}/.git/worktrees/t1", f"{PRIMARY}/.git", entries)
    return build_policy(grant=grant, worktree=WT, primary=PRIMARY, user_home=HOME, runtime_dir=RT,
                        runtime_paths=runtime_paths, git=git, list_dir=list_dir)


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

ENV_HOME = "/srv/home/u"                     # $HOME, not the password database's home
CLAUDE_CFG = "/opt/cfg/claude"               # CLAUDE_CONFIG_DIR outside every home
PI_CFG = "/opt/cfg/pi"                       # PI_CODING_AGENT_DIR outside every home
MODEL_MAP = "/opt/maps/models.json"          # CONCORDE_MODEL_MAP outside every home
CREDENTIALS = (f"{CLAUDE_CFG}/.credentials.json", f"{PI_CFG}/auth.json", f"{PI_CFG}/models.json",
               MODEL_MAP)
WORKERS = "/srv/trace/op-1/workers"          # the trace parent's workers/ tree
RUN_DIR = f"{WORKERS}/w-20260101T000000-abc123"
OTHER = "/tmp/concorde-def456-z1"            # another run, there when the rules are generated
LATER = "/tmp/concorde-0a0a0a-late"          # another run, started after
HIDDEN_FILES = [
    *FILES, f"{ENV_HOME}/.ssh/id_rsa", f"{ENV_HOME}/.pi/agent/auth.json", *CREDENTIALS,
    f"{PI_CFG}/settings.json", f"{RUN_DIR}/status.json", f"{WORKERS}/w-other/transcript.jsonl",
    f"{OTHER}/config/auth.json", f"{OTHER}/work/x", "/tmp/concordex/y", f"{RT}/work/.keep",
]


def hiding_policy(runtime_dir: str = RT, runtime_paths: Sequence[str] = (VENV, PYROOT),
                  files: Sequence[str] = HIDDEN_FILES, links: Sequence[str] = ()) -> Policy:
    return build_policy(grant=GRANT, worktree=WT, primary=PRIMARY, user_home=HOME,
                        runtime_dir=runtime_dir, runtime_paths=runtime_paths, git=GIT,
                        list_dir=memory_tree(files, links), homes=(HOME, ENV_HOME),
                        config_dirs=(CLAUDE_CFG, PI_CFG), credentials=CREDENTIALS,
                        run_directories=(WORKERS,))


HIDING = hiding_policy()
OTHER_RUN = "belongs to another worker run"
RUN_DIRECTORY = "belongs to the host: run directories are not available to workers"
CREDENTIAL = "holds the user's credentials, which are not available to workers"
BOUNDARY = "is outside this task's boundary"

HIDDEN_READ_ROWS = [
    pytest.param(f"{OTHER}/config/auth.json", None, f"{OTHER}/config/auth.json {OTHER_RUN}",
                 id="other run: its credential copy"),
    pytest.param(OTHER, None, f"{OTHER} {OTHER_RUN}", id="other run: its directory"),
    pytest.param(f"{LATER}/config/.credentials.json", None,
                 f"{LATER}/config/.credentials.json {OTHER_RUN}", id="other run: started later"),
    pytest.param(f"{RT}/work/x", f"{OTHER}/config/auth.json",
                 f"{OTHER}/config/auth.json {OTHER_RUN}", id="other run: by a link in work/"),
    pytest.param("/tmp/concordex/y", None, None, id="not a run: another name"),
    pytest.param("/tmp", None, None, id="the temp root itself by the read table"),
    pytest.param(f"{RT}/work/x", None, None, id="own work/ is no other run"),
    pytest.param(f"{RT}/config/auth.json", None, f"{RT}/config/auth.json belongs to the host",
                 id="own config/ still the host's"),
    pytest.param(f"{RUN_DIR}/status.json", None, f"{RUN_DIR}/status.json {RUN_DIRECTORY}",
                 id="run directory: status.json"),
    pytest.param(f"{RUN_DIR}/grant.json", None, f"{RUN_DIR}/grant.json {RUN_DIRECTORY}",
                 id="run directory: grant.json"),
    pytest.param(f"{RUN_DIR}/rounds/1/stderr.log", None,
                 f"{RUN_DIR}/rounds/1/stderr.log {RUN_DIRECTORY}", id="run directory: rounds/"),
    pytest.param(f"{WORKERS}/w-other/transcript.jsonl", None,
                 f"{WORKERS}/w-other/transcript.jsonl {RUN_DIRECTORY}",
                 id="run directory: a sibling run's"),
    pytest.param(WORKERS, None, f"{WORKERS} {RUN_DIRECTORY}", id="run directory: workers/"),
    pytest.param("/srv/trace/op-1/notes.md", None, None, id="the trace parent beside workers/"),
    *(pytest.param(c, None, f"{c} {CREDENTIAL}", id=f"credentials: {c}") for c in CREDENTIALS),
    pytest.param(f"{WT}/src/app/link", MODEL_MAP, f"{MODEL_MAP} {CREDENTIAL}",
                 id="credentials: by a link in rw"),
    pytest.param(f"{PI_CFG}/settings.json", None, f"{PI_CFG}/settings.json {BOUNDARY}",
                 id="configuration directory: hidden whole"),
    pytest.param(f"{ENV_HOME}/.ssh/id_rsa", None, f"{ENV_HOME}/.ssh/id_rsa {BOUNDARY}",
                 id="$HOME: its ssh key"),
    pytest.param(f"{ENV_HOME}/.pi/agent/auth.json", None,
                 f"{ENV_HOME}/.pi/agent/auth.json {BOUNDARY}", id="$HOME: pi's default auth"),
    pytest.param(f"{HOME}/.bashrc", None, f"{HOME}/.bashrc {BOUNDARY}",
                 id="the password database's home still"),
]


@pytest.mark.req("File tools cannot read what the grant withheld when the rules were generated")
@pytest.mark.parametrize(("path", "real", "reason"), HIDDEN_READ_ROWS)
def test_the_read_table_hides_other_runs_run_directories_and_credentials(
        path: str, real: str | None, reason: str | None) -> None:
    decision = decide_read(HIDING, path, real)
    assert (decision.allowed, decision.reason) == (reason is None, reason)


@pytest.mark.parametrize(("runtime_paths", "path", "reason"), [
    pytest.param(("/tmp",), f"{LATER}/config/auth.json", f"{LATER}/config/auth.json {OTHER_RUN}",
                 id="a runtime path over the temp root"),
    pytest.param(("/srv/trace",), f"{RUN_DIR}/brief.md", f"{RUN_DIR}/brief.md {RUN_DIRECTORY}",
                 id="a runtime path over the trace parent"),
    pytest.param(("/opt",), f"{CLAUDE_CFG}/.credentials.json",
                 f"{CLAUDE_CFG}/.credentials.json {CREDENTIAL}", id="a runtime path over a "
                 "credential"),
])
def test_what_is_hidden_always_comes_before_a_runtime_path(
        runtime_paths: tuple[str, ...], path: str, reason: str) -> None:
    decision = decide_read(hiding_policy(runtime_paths=runtime_paths), path)
    assert (decision.allowed, decision.reason) == (False, reason)


HIDDEN_WRITE_ROWS = [
    pytest.param(f"{RUN_DIR}/status.json", f"{RUN_DIR}/status.json", False,
                 f"{RUN_DIR}/status.json {RUN_DIRECTORY}", id="run directory"),
    pytest.param(f"{LATER}/control/settings.json", f"{LATER}/control/settings.json", False,
                 f"{LATER}/control/settings.json {OTHER_RUN}", id="another run's control/"),
    pytest.param(f"{WT}/src/app/l", f"{PI_CFG}/auth.json", True,
                 f"{PI_CFG}/auth.json {CREDENTIAL}", id="credentials through a link in rw"),
    pytest.param(f"{ENV_HOME}/.bashrc", f"{ENV_HOME}/.bashrc", False,
                 f"{ENV_HOME}/.bashrc is outside the task worktree", id="$HOME: outside"),
]


@pytest.mark.req("Only rw paths are writable by file tools")
@pytest.mark.parametrize(("given", "resolved", "link", "reason"), HIDDEN_WRITE_ROWS)
def test_the_write_table_refuses_what_is_hidden_always(given: str, resolved: str, link: bool,
                                                       reason: str) -> None:
    decision = decide_write(HIDING, given, resolved, link)
    assert (decision.allowed, decision.reason) == (False, reason)


@pytest.mark.parametrize(("root", "reason"), [
    pytest.param(OTHER, f"{OTHER} {OTHER_RUN}", id="another run"),
    pytest.param(f"{LATER}/config", f"{LATER}/config {OTHER_RUN}", id="a later run's config/"),
    pytest.param(WORKERS, f"{WORKERS} {RUN_DIRECTORY}", id="workers/"),
    pytest.param(PI_CFG, f"{PI_CFG} {BOUNDARY}", id="a configuration directory"),
    pytest.param(ENV_HOME, f"{ENV_HOME} {BOUNDARY}", id="$HOME"),
    pytest.param("/tmp", None, id="the temp root: the sandbox shows it empty"),
])
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
    assert list(HIDING.deny_rules[:len(upstream)]) == upstream
    assert list(HIDING.deny_rules[len(upstream):]) == [
        *rd(ENV_HOME, True), *rd(CLAUDE_CFG, True), *rd(PI_CFG, True),
        *(r for c in CREDENTIALS for r in rd(c)), *rd(WORKERS, True), *rd(OTHER, True)]


@pytest.mark.req("A run the deny rules would disable is refused")
def test_no_hidden_rule_covers_the_workers_own_directories() -> None:
    assert HIDING.run_directory_refusal is None
    assert HIDING.other_runs == (OTHER,)
    assert not [r for r in HIDING.deny_rules if rule_covers(r, "/tmp/concordex/y")]


def test_a_home_holding_the_runtime_directory_is_walked_around_it() -> None:
    policy = build_policy(grant=GRANT, worktree=WT, primary=PRIMARY, user_home=HOME,
                          runtime_dir=RT, runtime_paths=(), git=GIT,
                          list_dir=memory_tree(HIDDEN_FILES), homes=("/tmp",))
    assert policy.run_directory_refusal is None
    assert set(rd(OTHER, True)) <= set(policy.deny_rules)
    assert set(rd(f"{RT}/control", True)) <= set(policy.deny_rules)


def test_a_boundary_inside_another_adds_nothing() -> None:
    nested = build_policy(grant=GRANT, worktree=WT, primary=PRIMARY, user_home=HOME,
                          runtime_dir=RT, runtime_paths=(VENV, PYROOT), git=GIT,
                          list_dir=memory_tree(FILES), homes=(HOME,),
                          config_dirs=(f"{HOME}/.claude", f"{HOME}/.pi/agent"))
    assert nested.deny_rules == POLICY.deny_rules
    assert nested.boundaries == (HOME,)


def test_the_sandbox_hides_every_class() -> None:
    deny_read = HIDING.sandbox.deny_read
    assert list(deny_read[:len(POLICY.sandbox.deny_read) - 1]) == list(
        POLICY.sandbox.deny_read[:-1])
    assert list(deny_read[len(POLICY.sandbox.deny_read) - 1:]) == [
        ENV_HOME, CLAUDE_CFG, PI_CFG, *CREDENTIALS, WORKERS, "/tmp"]
    assert HIDING.sandbox.allow_read == POLICY.sandbox.allow_read


def test_a_runtime_directory_at_the_root_lists_the_other_runs_instead() -> None:
    runtime = "/concorde-abc123-k9"
    policy = hiding_policy(runtime_dir=runtime,
                           files=[*FILES, "/concorde-def456-z1/config/auth.json", "/etc/hosts"])
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


# --- where the credentials really are (domain.credentials) ---------------------------------------

ORIGIN_ROWS = [
    pytest.param({"HOME": "/home/u"}, "/home/u", ("/home/u",),
                 ("/home/u/.claude", "/home/u/.pi/agent"),
                 ("/home/u/.claude/.credentials.json", "/home/u/.pi/agent/auth.json",
                  "/home/u/.pi/agent/models.json", "/home/u/.config/concorde/models.json"),
                 id="defaults below the one home"),
    pytest.param({"HOME": "/srv/h", "CLAUDE_CONFIG_DIR": "/opt/c", "PI_CODING_AGENT_DIR": "~/pi",
                  "CONCORDE_MODEL_MAP": "/opt/m.json"}, "/home/u", ("/home/u", "/srv/h"),
                 ("/opt/c", "/srv/h/pi"),
                 ("/opt/c/.credentials.json", "/srv/h/pi/auth.json", "/srv/h/pi/models.json",
                  "/opt/m.json"), id="HOME apart, every origin moved"),
    pytest.param({"XDG_CONFIG_HOME": "/x", "CLAUDE_CONFIG_DIR": "rel/c",
                  "PI_CODING_AGENT_DIR": "/p"}, "/home/u", ("/home/u",), ("/p",),
                 ("/p/auth.json", "/p/models.json", "/x/concorde/models.json"),
                 id="no HOME; a relative directory left out"),
]


@pytest.mark.parametrize(("environ", "user_home", "homes", "directories", "files"), ORIGIN_ROWS)
def test_the_credential_origins(environ: dict[str, str], user_home: str, homes: tuple[str, ...],
                                directories: tuple[str, ...], files: tuple[str, ...]) -> None:
    origins = credential_origins(environ, user_home)
    assert (origins.homes, origins.directories, origins.files) == (homes, directories, files)
