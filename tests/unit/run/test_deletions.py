"""Seed 000 "Proposed deletions": normalize, dedupe, judge with directory links resolved."""

from __future__ import annotations

import posixpath

import pytest
from hypothesis import given
from hypothesis import strategies as st

from concorde_workers.domain.boundary.grant import Grant, parse_grant
from concorde_workers.domain.run.deletions import (
    DeletionOutcome,
    DeletionPlan,
    Kind,
    PlannedDeletion,
    dedupe,
    describe_outcome,
    normalize,
    outcome,
    plan_deletions,
)

WT = "/repo/.claude/worktrees/t1"


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
    ("src/keep.txt", "ro"),
    ("docs/", "ro"),
    ("notes.md", "rw"),
    ("linkdir/", "rw"),
    ("sub/", "rw"),
)


class FakeTree:
    """A worktree as kinds by absolute path, with directory links (link dir → real dir)."""

    def __init__(self, kinds: dict[str, Kind], dir_links: dict[str, str] | None = None) -> None:
        self.kinds = {posixpath.join(WT, p): k for p, k in kinds.items()}
        self.dir_links = {posixpath.join(WT, p): t for p, t in (dir_links or {}).items()}
        self.resolved: list[str] = []

    def resolve_parent(self, path: str) -> str:
        self.resolved.append(path)
        parent, name = posixpath.split(path)
        for link, target in self.dir_links.items():
            if parent == link or parent.startswith(link + "/"):
                parent = target + parent[len(link) :]
        return posixpath.join(parent, name)

    def kind(self, path: str) -> Kind:
        return self.kinds.get(path, "absent")


def plan(proposed: list[str], tree: FakeTree | None = None, grant: Grant = GRANT) -> DeletionPlan:
    tree = tree or FakeTree({})
    return plan_deletions(proposed, WT, grant, tree.resolve_parent, tree.kind)


def deleted(*paths: str) -> tuple[PlannedDeletion, ...]:
    return tuple(PlannedDeletion(path=p, target=posixpath.join(WT, p)) for p in paths)


@pytest.mark.req("Only the host deletes")
@pytest.mark.parametrize(
    ("case", "proposed", "kinds", "to_delete", "refused", "absent"),
    [
        ("file in rw", ["src/a.py"], {"src/a.py": "file"}, ["src/a.py"], [], []),
        ("exact rw file", ["notes.md"], {"notes.md": "file"}, ["notes.md"], [], []),
        ("final symlink in rw", ["src/l"], {"src/l": "symlink"}, ["src/l"], [], []),
        (
            "ro file under a rw directory",
            ["src/keep.txt"],
            {"src/keep.txt": "file"},
            [],
            ["src/keep.txt"],
            [],
        ),
        ("file in a ro directory", ["docs/a.md"], {"docs/a.md": "file"}, [], ["docs/a.md"], []),
        ("hidden file", [".env"], {".env": "file"}, [], [".env"], []),
        ("directory in rw", ["src/pkg"], {"src/pkg": "directory"}, [], ["src/pkg"], []),
        ("the rw directory itself", ["src"], {"src": "directory"}, [], ["src"], []),
        ("the rw directory with a slash", ["src/"], {"src": "directory"}, [], ["src/"], []),
        ("fifo in rw", ["src/fifo"], {"src/fifo": "other"}, [], ["src/fifo"], []),
        ("absent in rw", ["src/gone.py"], {}, [], [], ["src/gone.py"]),
        ("absent outside rw is refused", ["docs/gone.md"], {}, [], ["docs/gone.md"], []),
        ("outside the worktree", ["../other/x"], {}, [], ["../other/x"], []),
        ("absolute outside", ["/etc/passwd"], {}, [], ["/etc/passwd"], []),
        ("the worktree itself", [WT, "."], {}, [], [WT], []),
        ("sibling worktree sharing a prefix", [WT + "2/src/a.py"], {}, [], [WT + "2/src/a.py"], []),
        (
            "Git metadata in rw",
            ["src/.git", "src/vendor/.git/config"],
            {"src/.git": "file", "src/vendor/.git/config": "file"},
            [],
            ["src/.git", "src/vendor/.git/config"],
            [],
        ),
        ("empty and NUL", ["", "src/a\x00b"], {}, [], ["", "src/a\x00b"], []),
        (
            "absolute in the worktree",
            [WT + "/src/a.py"],
            {"src/a.py": "file"},
            ["src/a.py"],
            [],
            [],
        ),
        ("dot segments", ["src/./x/../a.py"], {"src/a.py": "file"}, ["src/a.py"], [], []),
    ],
)
def test_each_proposed_path_is_judged(
    case: str,
    proposed: list[str],
    kinds: dict[str, Kind],
    to_delete: list[str],
    refused: list[str],
    absent: list[str],
) -> None:
    result = plan(proposed, FakeTree(kinds))
    assert result.to_delete == deleted(*to_delete), case
    assert list(result.refused) == refused, case
    assert list(result.absent) == absent, case


@pytest.mark.req("An absent target is recorded, not refused")
def test_an_absent_rw_target_is_recorded_relative() -> None:
    result = plan([WT + "/src/gone.py", "notes.md"])
    assert result.absent == ("src/gone.py", "notes.md")
    assert result.refused == () and result.to_delete == ()


@pytest.mark.req("Only the host deletes")
def test_a_directory_link_below_rw_never_reaches_a_file_elsewhere() -> None:
    tree = FakeTree(
        {"docs/secret.md": "file", "src/a.py": "file"},
        dir_links={"linkdir/out": WT + "/docs", "sub/up": "/etc"},
    )
    result = plan(["linkdir/out/secret.md", "sub/up/passwd"], tree)
    assert result.to_delete == ()
    assert result.refused == ("linkdir/out/secret.md", "sub/up/passwd")


@pytest.mark.req("Only the host deletes")
def test_a_directory_link_into_rw_deletes_the_real_path() -> None:
    tree = FakeTree({"src/a.py": "file"}, dir_links={"linkdir/to-src": WT + "/src"})
    result = plan(["linkdir/to-src/a.py"], tree)
    assert result.to_delete == deleted("src/a.py")


@pytest.mark.req("Only the host deletes")
def test_a_final_symlink_is_removed_itself_never_its_target() -> None:
    tree = FakeTree({"src/l": "symlink", "docs/target.md": "file"})
    result = plan(["src/l"], tree)
    assert result.to_delete == (PlannedDeletion(path="src/l", target=WT + "/src/l"),)
    assert tree.resolved == [WT + "/src/l"]


@pytest.mark.req("A repeated deletion is performed once")
def test_a_path_named_twice_is_one_deletion() -> None:
    tree = FakeTree({"src/a.py": "file"})
    proposed = [
        "src/a.py",
        WT + "/src/a.py",
        "src/./a.py",
        "src//a.py",
        "./src/a.py",
        "src/x/../a.py",
    ]
    result = plan(proposed, tree)
    assert result.to_delete == deleted("src/a.py")
    assert result.refused == () and result.absent == ()


@pytest.mark.req("A repeated deletion is performed once")
def test_repeats_of_refused_and_absent_entries_count_once() -> None:
    result = plan(["docs/a", "docs/./a", "src/gone", WT + "/src/gone"])
    assert result.refused == ("docs/a",)
    assert result.absent == ("src/gone",)


@pytest.mark.req("A repeated deletion is performed once")
def test_two_names_through_a_directory_link_are_one_deletion() -> None:
    tree = FakeTree({"src/a.py": "file"}, dir_links={"linkdir/to-src": WT + "/src"})
    result = plan(["src/a.py", "linkdir/to-src/a.py"], tree)
    assert result.to_delete == deleted("src/a.py")


SEGMENTS = st.sampled_from(["src", "a.py", ".", "..", "", "docs", "x"])
PATHS = st.lists(SEGMENTS, min_size=1, max_size=5).map("/".join)
ENTRIES = st.lists(st.one_of(PATHS, PATHS.map(lambda p: WT + "/" + p)), max_size=8)


@pytest.mark.req("A repeated deletion is performed once")
@given(ENTRIES)
def test_dedupe_is_idempotent_and_keeps_one_entry_per_path(entries: list[str]) -> None:
    kept = dedupe(entries, WT)
    again = dedupe([given_ for given_, _ in kept], WT)
    assert again == kept
    normalized = [n for _, n in kept]
    assert len(set(normalized)) == len(normalized)
    assert {normalize(e, WT) for e in entries} == set(normalized)
    assert dedupe(entries + entries, WT) == kept


@given(ENTRIES)
def test_every_entry_lands_in_exactly_one_list(entries: list[str]) -> None:
    tree = FakeTree({"src/a.py": "file", "docs/a.py": "file", "src": "directory"})
    result = plan(entries, tree)
    accounted = len(result.to_delete) + len(result.refused) + len(result.absent)
    assert accounted == len(dedupe(entries, WT))
    for planned in result.to_delete:
        assert planned.target.startswith(WT + "/src/")


def test_normalize_reads_paths_in_the_worktree() -> None:
    assert normalize("src/a", WT) == WT + "/src/a"
    assert normalize("//etc//passwd", WT) == "/etc/passwd"
    assert normalize("/x/../etc", WT) == "/etc"
    assert normalize("", WT) is None


@pytest.mark.req("A failed deletion fails the run without stopping the others")
def test_the_outcome_keeps_going_past_a_failure() -> None:
    tree = FakeTree({"src/a.py": "file", "src/b.py": "file", "src/c.py": "file"})
    the_plan = plan(["src/a.py", "src/b.py", "src/c.py", "docs/x", "src/gone"], tree)
    result = outcome(the_plan, {"src/b.py": "[Errno 13] Permission denied"})
    assert result == DeletionOutcome(
        deleted=("src/a.py", "src/c.py"),
        refused=("docs/x",),
        absent=("src/gone",),
        failed=("src/b.py",),
        errors={"src/b.py": "[Errno 13] Permission denied"},
    )
    assert result.any_failed
    text = describe_outcome(result)
    assert "deleted: src/a.py, src/c.py" in text
    assert "failed: src/b.py ([Errno 13] Permission denied)" in text
    assert "refused: docs/x" in text and "already absent: src/gone" in text


def test_an_outcome_without_failures_deletes_the_plan() -> None:
    the_plan = plan(["src/a.py"], FakeTree({"src/a.py": "file"}))
    result = outcome(the_plan, {})
    assert result.deleted == ("src/a.py",) and not result.any_failed
    assert "failed: none" in describe_outcome(result)
    with pytest.raises(ValueError, match="does not delete"):
        outcome(the_plan, {"docs/x": "boom"})
