"""Seed 000 "Audit": the snapshot, the observation after a round and the verdict."""

from __future__ import annotations

import pytest

from concorde_workers.domain.boundary.grant import Grant, parse_grant
from concorde_workers.domain.run.audit import (
    Audit,
    FileState,
    Observation,
    Snapshot,
    Verdict,
    Violation,
    ViolationKind,
    audit,
    changed_paths,
    describe_violations,
    observe,
    worktree_unchanged,
)

HEAD_A = FileState(digest="sha256:head-a", executable=False)
EDIT_1 = FileState(digest="sha256:edit-1", executable=False)
EDIT_2 = FileState(digest="sha256:edit-2", executable=False)
EDIT_1_X = FileState(digest="sha256:edit-1", executable=True)


def grant_of(*entries: tuple[str, str]) -> Grant:
    parsed = parse_grant(
        {
            "task_type": "implement",
            "entries": [{"path": p, "level": lvl} for p, lvl in entries],
            "context_identity": "ctx-1",
        }
    )
    assert isinstance(parsed, Grant)
    return parsed


GRANT = grant_of(
    ("src/", "rw"),
    ("src/ro.txt", "ro"),
    ("docs/", "ro"),
    ("names/", "names"),
    (".hidden-rw", "rw"),
    ("notes.md", "rw"),
)


def state(
    files: dict[str, FileState | None],
    branch: str | None = "main",
    commit: str | None = "c1",
    index: str = "i1",
) -> Snapshot:
    return Snapshot(head_branch=branch, head_commit=commit, index_digest=index, files=files)


def test_nothing_changed_is_clean() -> None:
    snap = state({"src/a.py": EDIT_1, "tmp.log": EDIT_2})
    result = audit(GRANT, snap, state({"src/a.py": EDIT_1, "tmp.log": EDIT_2}))
    assert result == Audit(verdict=Verdict.CLEAN, changed=(), violations=())
    assert worktree_unchanged(snap, snap)


@pytest.mark.req("Every round is audited")
@pytest.mark.parametrize(
    ("case", "before", "after", "changed", "violations"),
    [
        ("new file in rw", {}, {"src/new.py": EDIT_1}, ["src/new.py"], []),
        ("changed file in rw", {"src/a.py": EDIT_1}, {"src/a.py": EDIT_2}, ["src/a.py"], []),
        ("tracked file changed in rw", {}, {"src/a.py": EDIT_1}, ["src/a.py"], []),
        ("new file outside the grant", {}, {"other.txt": EDIT_1}, ["other.txt"], ["other.txt"]),
        ("file in a ro directory", {}, {"docs/x.md": EDIT_1}, ["docs/x.md"], ["docs/x.md"]),
        ("file in a names directory", {}, {"names/x": EDIT_1}, ["names/x"], ["names/x"]),
        (
            "ro file under a rw directory",
            {},
            {"src/ro.txt": EDIT_1},
            ["src/ro.txt"],
            ["src/ro.txt"],
        ),
        ("hidden rw path", {}, {".hidden-rw": EDIT_1}, [".hidden-rw"], []),
        ("hidden path outside the grant", {}, {".env": EDIT_1}, [".env"], [".env"]),
        ("deleted rw file", {}, {"src/a.py": None}, ["src/a.py"], ["src/a.py (deleted)"]),
        (
            "deleted tracked change in rw",
            {"src/a.py": EDIT_1},
            {"src/a.py": None},
            ["src/a.py"],
            ["src/a.py (deleted)"],
        ),
        (
            "untracked file deleted",
            {"scratch.txt": EDIT_1},
            {"scratch.txt": None},
            ["scratch.txt"],
            ["scratch.txt (deleted)"],
        ),
        (
            "file equal to HEAD again (rw)",
            {"src/a.py": EDIT_1},
            {"src/a.py": HEAD_A},
            ["src/a.py"],
            [],
        ),
        (
            "file equal to HEAD again (ro)",
            {"docs/a.md": EDIT_1},
            {"docs/a.md": HEAD_A},
            ["docs/a.md"],
            ["docs/a.md"],
        ),
        (
            "executable bit only",
            {"src/run.sh": EDIT_1},
            {"src/run.sh": EDIT_1_X},
            ["src/run.sh"],
            [],
        ),
        (
            "executable bit only outside rw",
            {},
            {"docs/run.sh": EDIT_1_X},
            ["docs/run.sh"],
            ["docs/run.sh"],
        ),
        (
            "changed back to its snapshot content",
            {"docs/a.md": EDIT_1},
            {"docs/a.md": EDIT_1},
            [],
            [],
        ),
        (
            "deletion already there at the snapshot",
            {"docs/gone.md": None},
            {"docs/gone.md": None},
            [],
            [],
        ),
        (
            "restored a file deleted before the snapshot",
            {"src/b.py": None},
            {"src/b.py": HEAD_A},
            ["src/b.py"],
            [],
        ),
        (
            "rename within rw",
            {},
            {"src/old.py": None, "src/new.py": EDIT_1},
            ["src/new.py", "src/old.py"],
            ["src/old.py (deleted)"],
        ),
        (
            "rename out of rw",
            {},
            {"src/old.py": None, "docs/new.py": EDIT_1},
            ["docs/new.py", "src/old.py"],
            ["docs/new.py", "src/old.py (deleted)"],
        ),
    ],
)
def test_each_observation_gets_its_verdict(
    case: str,
    before: dict[str, FileState | None],
    after: dict[str, FileState | None],
    changed: list[str],
    violations: list[str],
) -> None:
    result = audit(GRANT, state(before), state(after))
    assert list(result.changed) == changed, case
    assert list(result.violation_texts) == violations, case
    assert result.verdict is (Verdict.VIOLATION if violations else Verdict.CLEAN)
    assert result.clean is (not violations)


def test_a_snapshot_path_missing_from_the_observation_counts_as_gone() -> None:
    result = audit(GRANT, state({"src/a.py": EDIT_1}), state({}))
    assert result.violation_texts == ("src/a.py (deleted)",)


@pytest.mark.parametrize(
    ("after", "violations"),
    [
        (state({}, branch="other"), ["HEAD"]),
        (state({}, commit="c2"), ["HEAD"]),
        (state({}, branch=None), ["HEAD"]),
        (state({}, index="i2"), ["index"]),
        (
            state({"docs/z": EDIT_1, "a": None}, commit="c2", index="i2"),
            ["HEAD", "index", "a (deleted)", "docs/z"],
        ),
    ],
)
def test_git_state_comes_first_then_paths_in_path_order(
    after: Observation,
    violations: list[str],
) -> None:
    result = audit(GRANT, state({}), after)
    assert list(result.violation_texts) == violations
    assert result.verdict is Verdict.VIOLATION


def test_path_order_is_byte_order_of_utf8() -> None:
    after = state(
        {
            "src/é.py": EDIT_1,
            "src/z.py": EDIT_1,
            "src/Z.py": EDIT_1,
            "src/a b.py": EDIT_1,
            "src/a.py": EDIT_1,
            "src/a/b.py": EDIT_1,
            "src/a-b.py": EDIT_1,
        }
    )
    result = audit(GRANT, state({}), after)
    # Git's order: '-' (0x2d) < '.' (0x2e) < '/' (0x2f); upper case before lower; é after z.
    assert result.changed == (
        "src/Z.py",
        "src/a b.py",
        "src/a-b.py",
        "src/a.py",
        "src/a/b.py",
        "src/z.py",
        "src/é.py",
    )


def test_non_utf8_names_kept_as_surrogates_sort_and_are_judged() -> None:
    odd = b"src/\xff.bin".decode("utf-8", "surrogateescape")
    result = audit(GRANT, state({}), state({odd: EDIT_1, "src/\x7f": EDIT_1}))
    assert result.changed == ("src/\x7f", odd)
    assert result.clean
    lone = audit(GRANT, state({}), state({"src/\ud800": EDIT_1, "src/a": EDIT_1}))
    assert lone.changed == ("src/a", "src/\ud800")


def test_observe_measures_snapshot_paths_git_no_longer_lists() -> None:
    snap = state({"src/a.py": EDIT_1, "scratch.txt": EDIT_2, "src/keep.py": EDIT_1})
    measured = {"src/a.py": HEAD_A, "scratch.txt": None}
    seen: list[str] = []

    def measure(path: str) -> FileState | None:
        seen.append(path)
        return measured[path]

    obs = observe(snap, "main", "c1", "i1", {"src/keep.py": EDIT_1, "src/n.py": EDIT_2}, measure)
    assert sorted(seen) == ["scratch.txt", "src/a.py"]
    result = audit(GRANT, snap, obs)
    assert result.changed == ("scratch.txt", "src/a.py", "src/n.py")
    assert result.violation_texts == ("scratch.txt (deleted)",)
    assert changed_paths(snap, obs) == result.changed
    assert not worktree_unchanged(snap, obs)


def test_ignored_paths_are_never_observed() -> None:
    # Git does not list ignored paths, so an observation built from its listing never has them.
    snap = state({})
    obs = observe(snap, "main", "c1", "i1", {}, lambda p: pytest.fail(f"measured {p}"))
    assert audit(GRANT, snap, obs).clean
    assert worktree_unchanged(snap, obs)


def test_worktree_unchanged_sees_git_state() -> None:
    assert not worktree_unchanged(state({}), state({}, index="i2"))
    assert not worktree_unchanged(state({}), state({}, commit="c2"))


def test_the_audit_object_is_the_round_trace_shape() -> None:
    result = audit(GRANT, state({}), state({"docs/x": EDIT_1}, index="i9"))
    assert result.to_json() == {
        "verdict": "violation",
        "changed": ["docs/x"],
        "violations": ["index", "docs/x"],
    }


def test_describe_violations_names_every_violation() -> None:
    result = audit(
        GRANT, state({}), state({"docs/x": EDIT_1, "src/a.py": None}, commit="c2", index="i2")
    )
    text = describe_violations(result)
    assert text.startswith("the audit found 4 violations: ")
    for part in (
        "HEAD names another branch or commit",
        "the index changed",
        "docs/x was created or changed outside",
        "src/a.py was deleted",
    ):
        assert part in text
    assert describe_violations(audit(GRANT, state({}), state({}))) == ""
    assert describe_violations(["x"]) == (
        "the audit found 1 violation: x was created or changed outside the grant's rw paths"
    )


def test_a_changed_git_configuration_is_a_git_state_violation_after_head_and_index() -> None:
    # Beyond the spec's table (docs/decisions.md): info/exclude or the config decide which files
    # Git lists; a worker that changed them could hide a write outside rw from the audit.
    before = state({}).model_copy(update={"config_digest": "sha256:a"})
    after = state({"docs/x.md": EDIT_1}, commit="c2", index="i2").model_copy(
        update={"config_digest": "sha256:b"}
    )
    result = audit(GRANT, before, after)
    assert result.violation_texts == ("HEAD", "index", "Git configuration", "docs/x.md")


@pytest.mark.req("Workers never see Git")
def test_git_metadata_is_a_violation_even_inside_rw() -> None:
    snap = state({})
    result = audit(GRANT, snap, state({"src/.git": EDIT_1, "src/ok.py": EDIT_2}))
    assert result.changed == ("src/.git", "src/ok.py")
    assert result.violation_texts == ("src/.git",)


@pytest.mark.req("Every round is audited")
@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            {},
            {
                "src/evil": FileState(
                    digest="git directory sha256:1", executable=False, git_dir=True
                )
            },
        ),
        (
            {
                "src/evil": FileState(
                    digest="git directory sha256:1", executable=False, git_dir=True
                )
            },
            {
                "src/evil": FileState(
                    digest="git directory sha256:2", executable=False, git_dir=True
                )
            },
        ),
    ],
)
def test_a_directory_git_takes_for_a_git_directory_is_git_metadata_even_in_rw(
    before: dict[str, FileState], after: dict[str, FileState]
) -> None:
    result = audit(GRANT, state(dict(before)), state(dict(after)))
    assert result.violation_texts == ("src/evil",)


def test_a_changed_git_configuration_is_explained_as_such() -> None:
    # The configuration is no path the worker wrote outside rw: it says what changed.
    text = describe_violations(["Git configuration"])
    assert text == (
        "the audit found 1 violation: the Git configuration that decides which files "
        "Git lists (the repository's config or info/exclude) changed"
    )
    assert "outside the grant's rw paths" not in text


@pytest.mark.parametrize(
    ("violation", "text"),
    [
        (Violation(ViolationKind.HEAD), "HEAD"),
        (Violation(ViolationKind.INDEX), "index"),
        (Violation(ViolationKind.CONFIG), "Git configuration"),
        (Violation.of_path("src/a.py"), "src/a.py"),
        (Violation.of_path("src/a.py", deleted=True), "src/a.py (deleted)"),
    ],
)
def test_a_violation_is_a_value_rendered_to_the_round_trace_text(
    violation: Violation, text: str
) -> None:
    assert str(violation) == text
    assert Violation.parse(text) == violation
    assert Audit(verdict=Verdict.VIOLATION, changed=(), violations=(violation,)).to_json()[
        "violations"
    ] == [text]
