"""The sandbox filesystem lists (domain/boundary/sandbox_lists.py, notes/harness.md §1.2), as the policy of
one frozen grant gives them to both backends."""

from __future__ import annotations

from policy_world import (
    FILES,
    GIT,
    GRANT,
    HOME,
    POLICY,
    PRIMARY,
    PYROOT,
    RT,
    VENV,
    WT,
    make_grant,
    memory_tree,
    policy_for,
)

from concorde_workers.container import PROFILES
from concorde_workers.domain.boundary.policy import build_policy
from concorde_workers.domain.configuration.profile import entries_of

RUNTIME_ENTRIES = entries_of(PROFILES)

# --- sandbox lists -------------------------------------------------------------------------------


def test_the_sandbox_lists() -> None:
    assert POLICY.sandbox.to_json() == {
        "denyRead": [
            WT,
            HOME,
            PRIMARY,
            f"{PRIMARY}/.git",
            f"{WT}/.git",
            f"{WT}/vendor/lib/.git",
            f"{RT}/control",
            f"{RT}/config",
            f"{RT}/tmp/jiti",
            f"{WT}/src/app/secret.py",
            f"{WT}/src/bmod/secret.py",
            # the temp root: other runs, those that start later too (issue 8 §2)
            "/tmp",
        ],
        "allowRead": sorted(
            [
                f"{WT}/README.md",
                f"{WT}/specs",
                f"{WT}/src/app",
                f"{WT}/src/bmod",
                f"{WT}/tests/test_a.py",
                f"{RT}/work",
                f"{RT}/home",
                f"{RT}/tmp",
                VENV,
                PYROOT,
            ]
        ),
        "allowWrite": sorted(
            [f"{WT}/src/app", f"{WT}/tests/test_a.py", f"{RT}/work", f"{RT}/home", f"{RT}/tmp"]
        ),
        "denyWrite": [f"{WT}/src/app/secret.py", f"{RT}/tmp/jiti", f"{RT}/work/.pi"],
    }


def test_the_primary_is_not_repeated_when_it_is_the_home() -> None:
    policy = build_policy(
        grant=GRANT,
        worktree=WT,
        primary=PRIMARY,
        user_home=PRIMARY,
        runtime_dir=RT,
        runtime_paths=(),
        git=GIT,
        list_dir=memory_tree(FILES),
        runtime_entries=RUNTIME_ENTRIES,
    )
    assert policy.sandbox.deny_read.count(PRIMARY) == 1


def test_an_ro_file_below_an_rw_dir_is_denied_writing() -> None:
    grant = make_grant({"src/": "rw", "src/gen.py": "ro", "src/keep/": "names"})
    policy = policy_for(grant=grant)
    assert policy.sandbox.deny_write[:2] == (f"{WT}/src/gen.py", f"{WT}/src/keep")
    assert f"{WT}/src/keep" in policy.sandbox.deny_read
    assert f"{WT}/src/gen.py" not in policy.sandbox.deny_read
