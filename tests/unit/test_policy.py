"""The policy (notes/harness.md §1.2-§1.5, §2.4-§2.6, §5): deny rules, the run-directory guard,
sandbox lists, read/write tables, search roots and tool sets, all from one frozen grant."""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterable, Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
    rule_covers,
    run_directory_denied,
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
                     f"{WT}/src/app/secret.py", f"{WT}/src/bmod/secret.py"],
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
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
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
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
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
