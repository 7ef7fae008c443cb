"""The journal of deletions as text (domain/run/deletion_journal.py): written line by line, read
back to exactly what the host did, whatever instant a kill cut it at."""

from __future__ import annotations

import pytest

from concorde_workers.domain.run.deletion_journal import (
    deleted_text,
    failed_text,
    plan_text,
    read_journal,
)
from concorde_workers.domain.run.deletions import (
    DeletionPlan,
    PlannedDeletion,
    describe_interruption,
    outcome,
)

WORKTREE = "/work/repo/.claude/worktrees/task"
PLAN = DeletionPlan(
    to_delete=tuple(
        PlannedDeletion(path=p, target=f"{WORKTREE}/{p}") for p in ("a.py", "b.py", "c\u00e9.py")
    ),
    refused=("../x", "s\x01trange\n"),
    absent=("gone.py",),
)
HEAD = plan_text(PLAN, WORKTREE)


def test_every_line_is_one_ascii_json_object() -> None:
    text = HEAD + deleted_text("a.py") + failed_text("b.py", "Permission denied")
    assert text.isascii() and text.count("\n") == 3
    journal = read_journal(text)
    assert not isinstance(journal, str)
    assert (journal.worktree, journal.to_delete) == (WORKTREE, ("a.py", "b.py", "c\u00e9.py"))
    assert (journal.refused, journal.absent) == (PLAN.refused, PLAN.absent)


# what the journal says at each instant of the deletions, and what was done then:
# (lines after the plan, whether the path in flight still exists, deleted, failed, not performed)
INSTANTS = [
    pytest.param("", True, (), (), ("a.py", "b.py", "c\u00e9.py"), id="before the first unlink"),
    pytest.param("", False, ("a.py",), (), ("b.py", "c\u00e9.py"), id="first unlinked, unsaid"),
    pytest.param(
        deleted_text("a.py"), True, ("a.py",), (), ("b.py", "c\u00e9.py"), id="first said"
    ),
    pytest.param(
        deleted_text("a.py") + failed_text("b.py", "EBUSY"),
        True,
        ("a.py",),
        ("b.py",),
        ("c\u00e9.py",),
        id="second failed",
    ),
    pytest.param(
        deleted_text("a.py") + failed_text("b.py", "EBUSY") + deleted_text("c\u00e9.py"),
        True,
        ("a.py", "c\u00e9.py"),
        ("b.py",),
        (),
        id="all said",
    ),
    pytest.param(
        deleted_text("a.py") + deleted_text("b.py")[:-4],
        False,
        ("a.py", "b.py"),
        (),
        ("c\u00e9.py",),
        id="a line cut short",
    ),
]


@pytest.mark.parametrize("lines,exists,deleted,failed,left", INSTANTS)
def test_the_journal_read_back_says_what_was_done(
    lines: str,
    exists: bool,
    deleted: tuple[str, ...],
    failed: tuple[str, ...],
    left: tuple[str, ...],
) -> None:
    journal = read_journal(HEAD + lines)
    assert not isinstance(journal, str)
    settled = journal.settle(in_flight_gone=not exists)
    assert (settled.deleted, settled.failed, settled.not_performed) == (deleted, failed, left)
    assert settled.refused == PLAN.refused and settled.absent == PLAN.absent
    if failed:
        assert settled.errors == {"b.py": "EBUSY"}


@pytest.mark.parametrize(
    "text,problem",
    [
        ("", "it holds no plan"),
        (HEAD[:-3], "it holds no plan"),
        ("[]\n", "line 1 is not the plan"),
        (HEAD.replace("concorde-workers.deletions", "other"), "line 1 is not a plan of"),
        (HEAD.replace(WORKTREE, "relative/tree"), "not an absolute normalized path"),
        (HEAD.replace('"a.py"', '"../a.py"', 1), "not a path inside the worktree"),
        (HEAD + deleted_text("b.py"), "line 2 names 'b.py', not the next planned deletion"),
        (HEAD + "{}\n", "line 2 is not the outcome of a deletion"),
        (
            HEAD + "".join(deleted_text(p) for p in ("a.py", "b.py", "c\u00e9.py", "a.py")),
            "line 5 names 'a.py'",
        ),
    ],
)
def test_a_journal_that_is_not_the_hosts_is_refused_by_what_is_wrong(
    text: str, problem: str
) -> None:
    read = read_journal(text)
    assert isinstance(read, str) and problem in read, read


def test_the_outcome_of_an_interrupted_plan_names_what_was_not_performed() -> None:
    result = outcome(PLAN, {"b.py": "EBUSY"}, attempted=["a.py", "b.py"])
    assert (result.deleted, result.failed, result.not_performed) == (
        ("a.py",),
        ("b.py",),
        ("c\u00e9.py",),
    )
    assert describe_interruption(result) == (
        "the host had performed 2 of the 3 deletions it was to perform when the run was "
        "interrupted; deleted: a.py; failed: b.py (EBUSY); not performed, left as the "
        "interruption found them: c\u00e9.py"
    )
    assert describe_interruption(outcome(PLAN, {})) == ""  # all performed: nothing left


def test_an_interruption_names_at_most_ten_paths_of_each_list() -> None:
    many = DeletionPlan(
        to_delete=tuple(PlannedDeletion(path=f"f{i}", target=f"/w/f{i}") for i in range(30))
    )
    said = describe_interruption(outcome(many, {}, attempted=[f"f{i}" for i in range(12)]))
    assert "deleted: f0, f1, f2, f3, f4, f5, f6, f7, f8, f9 and 2 more;" in said
    assert said.endswith("f12, f13, f14, f15, f16, f17, f18, f19, f20, f21 and 8 more")
