"""Issue 31 §3, what a grant says that its author likely did not mean, row by row
(`domain.boundary.grant.grant_notes`): each entry named with what it does and the repair, the
grant read as seed 002 reads it (a warning is an addition, never a change of meaning)."""

from __future__ import annotations

from typing import Any

import pytest

from concorde_workers.domain.boundary.grant import Grant, Level, grant_notes, parse_grant
from concorde_workers.domain.ground.paths import EntryKind

WORKTREE: dict[str, EntryKind] = {
    "src": EntryKind.DIRECTORY,
    "src/app.py": EntryKind.FILE,
    "tests": EntryKind.DIRECTORY,
    "README.md": EntryKind.FILE,
    ".concorde": EntryKind.DIRECTORY,
    "docs": EntryKind.DIRECTORY,
    "link": EntryKind.SYMLINK,
}


def kind_of(rel: str) -> EntryKind | None:
    return WORKTREE.get(rel)


def names_in(rel: str) -> list[str]:
    prefix = f"{rel}/" if rel else ""
    return sorted(
        {p[len(prefix) :].split("/")[0] for p in WORKTREE if p.startswith(prefix) and p != rel}
    )


def grant(*entries: tuple[str, str], task_type: str = "implement") -> Grant:
    data: dict[str, Any] = {
        "task_type": task_type,
        "entries": [{"path": p, "level": level} for p, level in entries],
        "context_identity": "sha256:x",
    }
    parsed = parse_grant(data)
    assert isinstance(parsed, Grant), parsed
    return parsed


ROWS: dict[str, tuple[Grant, list[str]]] = {
    "a rw entry without the slash that names a folder": (
        grant(("src", "rw")),
        [
            "grant entry 1 ('src', rw) names a directory without the slash: a grant reads it "
            "as the entry src itself, so nothing below it is in the grant and the worker finds "
            "it empty; did you mean `src/`?"
        ],
    ),
    "a folder entry that names a file": (
        grant(("src/", "rw"), ("README.md/", "ro")),
        [
            "grant entry 2 ('README.md/', ro) names a file with a slash: a grant reads it as a "
            "folder, which covers nothing but the file itself; did you mean `README.md`?"
        ],
    ),
    "an entry naming nothing, with the name meant beside it": (
        grant(("src/", "rw"), ("tsets/", "ro")),
        [
            "grant entry 2 ('tsets/', ro) names nothing in the worktree, so the worker finds "
            "nothing there; did you mean `tests/`?"
        ],
    ),
    "an entry naming nothing but for its case": (
        grant(("src/", "rw"), ("readme.md", "names")),
        [
            "grant entry 2 ('readme.md', names) names nothing in the worktree, so the worker "
            "finds nothing there; did you mean `README.md`?"
        ],
    ),
    "a rw entry still to be made": (
        grant(("src/", "rw"), ("src/new.py", "rw")),
        [
            "grant entry 2 ('src/new.py', rw) names nothing in the worktree yet: the worker may "
            "create it (rw); check the spelling if it should be there"
        ],
    ),
    "a pattern taken literally": (
        grant(("src/*", "rw")),
        [
            "grant entry 1 ('src/*', rw) holds '*', which a grant takes literally: a grant path "
            "is a path, not a pattern; for everything below a folder write the folder, such as "
            "`src/`"
        ],
    ),
    "no rw for a task type that writes": (
        grant(("src/", "ro")),
        [
            "the grant has no rw entry, so the implement worker can change nothing (a grant "
            "without rw is how a reading worker is run); make the paths it is to change rw"
        ],
    ),
    "no entry at all for a task type that writes": (
        grant(),
        [
            "the grant has no rw entry, so the implement worker can change nothing (a grant "
            "without rw is how a reading worker is run); make the paths it is to change rw"
        ],
    ),
    "rw for a task type that writes nothing": (
        grant(("src/", "rw"), task_type="review-code"),
        [
            "the task type review-code writes nothing: its worker gets the read-only tools "
            "whatever the grant, so its rw entries change nothing; give a task type that "
            "writes, or make them ro"
        ],
    ),
    "rw on the worker configuration": (
        grant(("src/", "rw"), (".concorde/", "rw")),
        [
            "grant entry 2 ('.concorde/', rw) lets the worker change .concorde/, the project's "
            "worker configuration: this run reads workers.json as committed, but a change "
            "someone commits later configures every later worker; make it ro unless the task "
            "is to change it"
        ],
    ),
    "a grant as meant": (
        grant(("src/", "rw"), ("tests/", "ro"), ("README.md", "names"), ("link", "ro")),
        [],
    ),
    "a reading worker as meant": (grant(("src/", "ro"), task_type="review-code"), []),
}


@pytest.mark.parametrize(("given", "notes"), ROWS.values(), ids=ROWS.keys())
def test_what_a_grant_says_that_its_author_may_not_have_meant(
    given: Grant, notes: list[str]
) -> None:
    assert list(grant_notes(given, kind_of, names_in)) == notes


def test_without_the_worktree_only_what_needs_none_is_said() -> None:
    """`show` has no worktree: the pattern, .concorde/ and the task type are said, the rest
    needs the worktree's facts."""
    given = grant(("src", "rw"), ("src/*", "rw"), (".concorde/", "rw"), ("tsets/", "ro"))
    said = grant_notes(given)
    assert [n.split(")")[0] for n in said] == [
        "grant entry 2 ('src/*', rw",
        "grant entry 3 ('.concorde/', rw",
    ]


def test_a_note_never_changes_the_grant() -> None:
    given = grant(("src", "rw"))
    grant_notes(given, kind_of, names_in)
    assert given.level_of("src") is Level.RW and given.level_of("src/app.py") is None
