"""The deny rules of Claude Code's settings (domain/boundary/deny_rules.py, notes/harness.md §1.3) and the
run-directory guard, as the policy of one frozen grant gives them."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from policy_world import (
    FILES,
    GIT,
    HOME,
    POLICY,
    PRIMARY,
    RT,
    VENV,
    WT,
    ed,
    make_grant,
    policy_for,
    rd,
)

from concorde_workers.container import PROFILES
from concorde_workers.domain.boundary.deny_rules import rule_covers, run_directory_denied
from concorde_workers.domain.boundary.policy import build_policy, decide_read, decide_write
from concorde_workers.domain.configuration.profile import entries_of
from concorde_workers.domain.gitview.placement import AdminPath
from concorde_workers.domain.ground.errors import Reason
from concorde_workers.domain.ground.layout import RuntimeLayout
from concorde_workers.domain.ground.paths import DirEntry, EntryKind, ListDir

RUNTIME_ENTRIES = entries_of(PROFILES)

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
    *rd(f"{HOME}/.bashrc"),
    *rd(f"{HOME}/.claude", True),
    *rd(f"{HOME}/other", True),
    *rd(f"{PRIMARY}/.concorde", True),
    *rd(f"{PRIMARY}/.git", True),
    *rd(f"{PRIMARY}/src", True),
    *rd(f"{PRIMARY}/.claude/settings.json"),
    *rd(f"{PRIMARY}/.claude/worktrees/t2", True),
]
GIT_EXPECTED = rd(f"{WT}/vendor/lib/.git")  # the others are already listed: first occurrence kept
HOST_EXPECTED = [*rd(f"{RT}/control", True), *rd(f"{RT}/config", True), *rd("/proc", True)]


@pytest.mark.req("File tools cannot read what the grant withheld when the rules were generated")
def test_the_deny_rules_in_generation_order() -> None:
    assert list(POLICY.deny_rules) == (
        WALK_EXPECTED + OUTSIDE_EXPECTED + GIT_EXPECTED + HOST_EXPECTED
    )


@pytest.mark.parametrize("expected", WALK_ROWS)
def test_each_walk_row_gives_its_rules(expected: list[str]) -> None:
    for rule in expected:
        assert rule in POLICY.deny_rules


@pytest.mark.parametrize(
    "untouched",
    [
        pytest.param(f"{WT}/src/app/mod.py", id="rw file"),
        pytest.param(f"{WT}/tests/test_a.py", id="rw file in a hidden dir"),
        pytest.param(VENV, id="runtime path"),
        pytest.param(f"{VENV}/lib/site.py", id="below a runtime path"),
        pytest.param(WT, id="the worktree"),
        pytest.param(PRIMARY, id="the primary worktree: never Read(//<primary>/**)"),
        pytest.param(HOME, id="the home holding the worktree"),
    ],
)
def test_no_rule_touches(untouched: str) -> None:
    assert not [r for r in POLICY.deny_rules if rule_covers(r, untouched)]


@pytest.mark.req("File tools cannot read what the grant withheld when the rules were generated")
@pytest.mark.parametrize(
    "hidden",
    [
        f"{WT}/checks/c1.py",
        f"{WT}/docs/readme.md",
        f"{WT}/src/app/secret.py",
        f"{WT}/src/bmod/secret.py",
        f"{WT}/vendor/lib/v.py",
        f"{WT}/.git",
    ],
)
def test_every_withheld_worktree_file_has_a_read_rule(hidden: str) -> None:
    assert [r for r in POLICY.deny_rules if r.startswith("Read(") and rule_covers(r, hidden)]


def test_a_home_holding_nothing_kept_is_hidden_whole() -> None:
    policy = policy_for(home="/home/other-user", files=[*FILES, "/home/other-user/.ssh/id_rsa"])
    assert policy.deny_rules[len(WALK_EXPECTED) : len(WALK_EXPECTED) + 2] == tuple(
        rd("/home/other-user", True)
    )


def test_a_symlinked_directory_is_treated_like_a_file() -> None:
    policy = policy_for(links=[f"{WT}/linkdir", f"{WT}/specs/to-src"])
    assert set(rd(f"{WT}/linkdir")) <= set(policy.deny_rules)
    assert f"Read(/{WT}/linkdir/**)" not in policy.deny_rules


def test_a_runtime_path_inside_an_rw_dir_is_still_not_editable() -> None:
    grant = make_grant({"web/": "rw"})
    policy = policy_for(
        grant=grant,
        files=[f"{WT}/web/app.js", f"{WT}/web/node_modules/x.js"],
        runtime_paths=[f"{WT}/web/node_modules"],
    )
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
        depth = path[len(WT) :].count("/")
        if not path.startswith(WT + "/") or depth > 2:
            return []
        if depth == 1:
            return [DirEntry(name=f"sub{i}", kind=EntryKind.DIRECTORY) for i in range(10)]
        return [DirEntry(name=f"f{i:03}.py", kind=EntryKind.FILE) for i in range(100)]

    return list_dir


@pytest.mark.req("File tools cannot read what the grant withheld when the rules were generated")
def test_the_cover_scales_with_the_grant_not_the_repository() -> None:
    grant = make_grant(
        {
            "pkg01/": "rw",
            "pkg02/": "ro",
            "pkg03/sub1/": "rw",
            "pkg03/sub2/f001.py": "ro",
            "pkg04/sub0/": "ro",
            "pkg04/sub0/f050.py": "names",
            "pkg05/sub5/f005.py": "rw",
            "pkg06/": "names",
            "pkg06/sub3/": "ro",
            "pkg07/sub7/": "rw",
        }
    )
    calls: list[str] = []
    policy = build_policy(
        grant=grant,
        worktree=WT,
        primary=PRIMARY,
        user_home=HOME,
        runtime_dir=RT,
        runtime_paths=(),
        git=GIT,
        list_dir=synthetic_worktree(calls),
        runtime_entries=RUNTIME_ENTRIES,
    )
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
        assert [
            r for r in POLICY.deny_rules if r.startswith(kind + "(") and rule_covers(r, admin.path)
        ]
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
    ("Read(//a/b/**)", "/a/b", True),
    ("Read(//a/b/**)", "/a/b/c", True),
    ("Read(//a/b/**)", "/a/bc", False),
    ("Edit(//a/b)", "/a/b", True),
    ("Edit(//a/b)", "/a/b/c", False),
    ("Read(//a/b/c/**)", "/a/b", False),
]


@pytest.mark.parametrize(("rule", "path", "covers"), RULE_COVERS)
def test_rule_covers(rule: str, path: str, covers: bool) -> None:
    assert rule_covers(rule, path) is covers


GUARD_CASES = [
    pytest.param(
        f"{PRIMARY}/.git/rt",
        {},
        [],
        f"Read(/{PRIMARY}/.git/**)",
        f"{PRIMARY}/.git/rt/work",
        id="Read rule of a Git admin path",
    ),
    pytest.param(
        f"{WT}/build/rt",
        {"build/": "ro"},
        [f"{WT}/build/x.o"],
        f"Edit(/{WT}/build/**)",
        f"{WT}/build/rt/work",
        id="Edit rule only: stricter than upstream",
    ),
    pytest.param(
        f"{WT}/vendor/rt",
        {"vendor/": "ro"},
        [f"{WT}/vendor/rt/home/.keep"],
        f"Edit(/{WT}/vendor/**)",
        f"{WT}/vendor/rt/work",
        id="first own dir named",
    ),
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
@pytest.mark.parametrize(
    ("runtime_dir", "sibling"),
    [(f"{HOME}/other/rt", f"{HOME}/other/x.py"), (f"{WT}/checks/rt", f"{WT}/checks/c1.py")],
)
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
