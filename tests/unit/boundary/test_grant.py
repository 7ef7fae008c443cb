"""Grant input (seed 002) and the level of a path (seed 000, Audit)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from concorde_workers.domain.boundary.grant import (
    MAX_ENTRIES,
    MAX_PATH_BYTES,
    Grant,
    Level,
    directory_level,
    entries_below,
    parse_grant,
)
from concorde_workers.domain.boundary.task_types import TASK_TYPES, TaskType, writes_nothing
from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.ground.errors import Reason, Refusal


def grant_input(entries: Any, **over: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "task_type": "implement",
        "entries": entries,
        "context_identity": "sha256:abc",
    }
    data.update(over)
    return data


def ok(data: Any) -> Grant:
    parsed = parse_grant(data)
    assert isinstance(parsed, Grant), parsed
    return parsed


def refused(data: Any, **kw: Any) -> Refusal:
    parsed = parse_grant(data, **kw)
    assert isinstance(parsed, Refusal), parsed
    assert parsed.reason is Reason.INPUT
    return parsed


# --- grant_unavailable -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "names"),
    [
        (None, "task type, entries or context identity"),
        ({"entries": [], "context_identity": "c"}, "task type"),
        ({"task_type": "implement", "context_identity": "c"}, "entries"),
        ({"task_type": "implement", "entries": []}, "context identity"),
        ({"task_type": "implement", "entries": [], "context_identity": ""}, "context identity"),
    ],
)
def test_a_grant_without_task_type_entries_or_identity_is_unavailable(
    data: Any, names: str
) -> None:
    refusal = refused(data)
    assert refusal.code == "grant_unavailable"
    assert names in refusal.message


@pytest.mark.req("A task type the Protocol does not define is refused")
@pytest.mark.parametrize("task_type", ["deploy", "Implement", "review", 3])
def test_an_unknown_task_type_is_refused_naming_it(task_type: Any) -> None:
    refusal = refused(grant_input([], task_type=task_type))
    assert refusal.code == "grant_unavailable"
    assert json.dumps(task_type) in refusal.message
    assert "a known task type" in refusal.message


@pytest.mark.req("A worker of every Protocol task type launches")
@pytest.mark.parametrize("task_type", TASK_TYPES)
def test_every_protocol_task_type_is_accepted(task_type: str) -> None:
    assert ok(grant_input([], task_type=task_type)).task_type == TaskType(task_type)


def test_the_eight_task_types_and_which_write_nothing() -> None:
    assert len(TASK_TYPES) == 8
    assert {t.value for t in TaskType if writes_nothing(t)} == {
        "understand",
        "review-spec",
        "review-code",
        "test",
        "review-architecture",
    }


# --- grant_malformed: the first malformed entry and what is wrong -------------------------------

MALFORMED = [
    ("not an object", "src/a.py", "it is a string, not an object"),
    ("a list", ["src/a.py", "rw"], "it is a list, not an object"),
    (
        "unknown field",
        {"path": "a", "level": "rw", "why": "x"},
        "the field(s) why, besides path and level",
    ),
    ("missing path", {"level": "rw"}, "it has no path"),
    ("empty path", {"path": "", "level": "rw"}, "its path is empty"),
    ("non-string path", {"path": 3, "level": "rw"}, "its path is a number, not a string"),
    ("absolute path", {"path": "/etc/passwd", "level": "ro"}, "is absolute"),
    ("dot-dot segment", {"path": "src/../secret", "level": "ro"}, "'..' segment"),
    ("leading dot-dot", {"path": "../x", "level": "ro"}, "'..' segment"),
    ("dot segment", {"path": "./src", "level": "ro"}, "a '.' segment"),
    ("empty segment", {"path": "src//a.py", "level": "ro"}, "an empty segment"),
    ("double slash dir", {"path": "src//", "level": "ro"}, "an empty segment"),
    ("missing level", {"path": "a"}, "it has no level"),
    ("bad level", {"path": "a", "level": "write"}, "its level 'write' is none of names, ro, rw"),
    ("null level", {"path": "a", "level": None}, "its level null is none of names, ro, rw"),
    ("NUL in path", {"path": "a\x00b", "level": "ro"}, "NUL"),
    # Control characters are refused, never quoted (docs/decisions.md "Control characters").
    (
        "newline in path",
        {"path": "src/a\nb.py", "level": "rw"},
        "its path 'src/a\\nb.py' contains the character \\n (line feed) at position 6: it would "
        "break the brief, the plan and the sandbox lists, which name paths one per line; rename "
        "the file, or leave it out of the grant",
    ),
    ("carriage return in path", {"path": "src/a\r", "level": "ro"}, "\\r (carriage return)"),
    ("tab in a directory entry", {"path": "src\t/", "level": "ro"}, "\\t (tab)"),
    ("OSC in path", {"path": "x\x1b]0;t\x07", "level": "ro"}, "\\x1b (escape) at position 2"),
    ("C1 NEL in path", {"path": "a\x85b", "level": "ro"}, "\\x85"),
    ("DEL in path", {"path": "a\x7f", "level": "names"}, "\\x7f (delete)"),
    ("line separator in path", {"path": "a\u2028b", "level": "ro"}, "\\u2028 (line separator)"),
    ("conflicting duplicate", None, "already listed by entry 1"),
]


@pytest.mark.req("Nothing is generated from a malformed grant")
@pytest.mark.req("A malformed grant's refusal names the entry")
@pytest.mark.parametrize(("case", "entry", "problem"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_a_malformed_entry_is_refused_naming_the_first_and_the_problem(
    case: str, entry: Any, problem: str
) -> None:
    good = {"path": "src/ok.py", "level": "rw"}
    if entry is None:  # a path listed twice with two levels
        entries: list[Any] = [good, {"path": "src/ok.py", "level": "ro"}]
        index = 2
    else:
        entries = [good, entry, {"path": "also bad//", "level": "nope"}]
        index = 2
    refusal = refused(grant_input(entries))
    assert refusal.code == "grant_malformed"
    assert refusal.message.startswith(f"grant entry {index} (")
    assert problem in refusal.message


def test_entries_that_are_no_list_are_malformed() -> None:
    refusal = refused(grant_input("src/"))
    assert (refusal.code, "the entries are a string, not a list") == (
        "grant_malformed",
        refusal.message.split(" of objects")[0],
    )


def test_an_extra_top_level_field_is_malformed() -> None:
    refusal = refused(grant_input([], modules=["m"]))
    assert refusal.code == "grant_malformed"
    assert "modules" in refusal.message


def test_a_task_type_other_than_the_requests_is_malformed() -> None:
    refusal = refused(grant_input([], task_type="review-code"), request_task_type="implement")
    assert refusal.code == "grant_malformed"
    assert "'review-code' differs from the request's 'implement'" in refusal.message


def test_a_non_string_context_identity_is_malformed() -> None:
    assert refused(grant_input([], context_identity=7)).code == "grant_malformed"


def test_the_same_path_twice_with_the_same_level_is_accepted() -> None:
    grant = ok(grant_input([{"path": "a", "level": "ro"}, {"path": "a", "level": "ro"}]))
    assert grant.level_of("a") is Level.RO


# --- level_of -----------------------------------------------------------------------------------

GRANT = ok(
    grant_input(
        [
            {"path": "src/", "level": "rw"},
            {"path": "src/legacy.py", "level": "ro"},
            {"path": "src/vendor/", "level": "names"},
            {"path": "src/vendor/shim.py", "level": "rw"},
            {"path": "docs/", "level": "ro"},
            {"path": "docs/internal/", "level": "names"},
            {"path": "README.md", "level": "ro"},
        ]
    )
)

LEVELS = [
    ("src/cart.py", Level.RW, "below a rw directory"),
    ("src/legacy.py", Level.RO, "a ro file below a rw directory stays ro"),
    ("src/vendor/lib.py", Level.NAMES, "the longest directory entry wins"),
    ("src/vendor/shim.py", Level.RW, "an exact entry wins over its directory"),
    ("src", Level.RW, "a directory entry is the exact entry of the directory itself"),
    ("docs/guide.md", Level.RO, "below a ro directory"),
    ("docs/internal/plan.md", Level.NAMES, "names below ro"),
    ("README.md", Level.RO, "an exact file entry"),
    ("README.md.bak", None, "a prefix of a file entry is no entry"),
    ("srcx/a.py", None, "a directory entry covers only what lies below it"),
    ("tests/test_cart.py", None, "no entry: hidden"),
]


@pytest.mark.parametrize(("path", "level", "why"), LEVELS, ids=[x[2] for x in LEVELS])
def test_level_of_takes_the_most_specific_entry(path: str, level: Level | None, why: str) -> None:
    assert GRANT.level_of(path) is level


def test_the_grant_lists_paths_by_level_and_digests_canonically() -> None:
    assert GRANT.paths(Level.NAMES) == ("src/vendor/", "docs/internal/")
    assert GRANT.has_rw
    same = ok(json.loads(json.dumps(GRANT.to_input())))
    assert same.digest() == GRANT.digest()
    assert GRANT.digest().startswith("sha256:") and len(GRANT.digest()) == 71


# --- fuzz: any input gives a Grant or a Refusal, never an exception -----------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
paths = st.lists(
    st.sampled_from(["a", "b", ".", "..", "", "src", "x y", "é"]), min_size=1, max_size=4
).map("/".join)
entries = st.one_of(
    st.fixed_dictionaries(
        {"path": paths | st.text(max_size=6), "level": st.sampled_from(["rw", "ro", "names", "x"])}
    ),
    json_values,
)


@given(
    st.one_of(
        json_values,
        st.fixed_dictionaries(
            {
                "task_type": st.sampled_from([*TASK_TYPES, "bogus"]),
                "entries": st.lists(entries, max_size=5),
                "context_identity": st.text(max_size=5),
            }
        ),
    )
)
def test_the_grant_parser_never_raises(data: Any) -> None:
    parsed = parse_grant(data)
    assert isinstance(parsed, Grant | Refusal)
    if isinstance(parsed, Refusal):
        assert parsed.code in {"grant_unavailable", "grant_malformed"}
        assert parsed.message
    else:
        for entry in parsed.entries:
            assert not entry.path.startswith("/")
            assert ".." not in entry.path.rstrip("/").split("/")


# --- every input bounded (issue 19 §4) -------------------------------------------------------


def _grant_of(entries: list[dict[str, str]]) -> object:
    return parse_grant(
        {"task_type": "implement", "context_identity": "sha256:x", "entries": entries}
    )


def test_a_grant_past_the_entry_limit_is_refused_naming_the_limit() -> None:
    at_limit = [{"path": f"d{i}/", "level": "ro"} for i in range(MAX_ENTRIES)]
    assert isinstance(_grant_of(at_limit), Grant)
    over = _grant_of([*at_limit, {"path": "one-more", "level": "ro"}])
    assert isinstance(over, Refusal) and over.code == Code.GRANT_MALFORMED
    assert f"more than the limit of {MAX_ENTRIES:,}" in over.message
    assert "directory entry" in over.message


def test_a_grant_path_past_path_max_is_refused_naming_the_entry() -> None:
    long = "a/" * (MAX_PATH_BYTES // 2) + "b"
    refused = _grant_of([{"path": "ok.py", "level": "ro"}, {"path": long, "level": "ro"}])
    assert isinstance(refused, Refusal) and refused.code == Code.GRANT_MALFORMED
    assert refused.message.startswith("grant entry 2 ")
    assert f"longer than {MAX_PATH_BYTES} bytes" in refused.message


def test_the_index_answers_as_the_entries_do() -> None:
    """level_of, directory_level and entries_below through the index, against the rule said
    over the entries themselves (seed 000 "Audit": the exact entry, else the longest directory
    entry above; no entry means hidden)."""
    entries = [
        {"path": "src/", "level": "ro"},
        {"path": "src/app/", "level": "rw"},
        {"path": "src/app/util.py", "level": "ro"},
        {"path": "src/app/x", "level": "names"},
        {"path": "src/app/x/", "level": "ro"},
        {"path": "docs/a.md", "level": "names"},
        {"path": "srcx/", "level": "rw"},
    ]
    grant = _grant_of(entries)
    assert isinstance(grant, Grant)

    def by_rule(rel: str) -> Level | None:
        exact = [e for e in grant.entries if e.bare == rel and not e.is_directory]
        if exact:
            return exact[0].level
        covering = [
            e for e in grant.entries if e.is_directory and (e.bare == rel or rel.startswith(e.path))
        ]
        return max(covering, key=lambda e: len(e.bare)).level if covering else None

    for rel in (
        "src",
        "src/a.py",
        "src/app",
        "src/app/util.py",
        "src/app/x",
        "src/app/x/y",
        "srcx/z",
        "srcy",
        "docs",
        "docs/a.md",
        "docs/b.md",
        "",
    ):
        assert grant.level_of(rel) is by_rule(rel), rel
    assert [e.path for e in entries_below(grant, "src")] == [
        "src/app/",
        "src/app/util.py",
        "src/app/x",
        "src/app/x/",
    ]
    assert len(entries_below(grant, "")) == len(entries)
    assert entries_below(grant, "nothing") == []
    assert directory_level(grant, "src/app/x") is Level.RO
    assert directory_level(grant, "docs") is None
