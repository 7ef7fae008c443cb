"""The path arithmetic a mount plan asks thousands of times (domain/ground/paths.py), held to
its definition: `relative_to` answers what posixpath.relpath answers of the normalized paths,
and `within_any(roots)` what `is_within` answers of each root (issue 32 §2: the fast paths
change no answer)."""

from __future__ import annotations

import posixpath

from hypothesis import given
from hypothesis import strategies as st

from concorde_workers.domain.ground.paths import is_within, relative_to, within_any

SEGMENT = st.sampled_from(["a", "b", "ab", ".", "..", "", ".git", "a.b", "b/"])
PATH = st.builds(
    lambda lead, segments: lead + "/".join(segments),
    st.sampled_from(["/", "//", "///", ""]),
    st.lists(SEGMENT, max_size=5),
).filter(bool)


def reference_relative_to(path: str, root: str) -> str:
    rel = posixpath.relpath(posixpath.normpath(path), posixpath.normpath(root))
    return "" if rel == "." else rel


@given(PATH, PATH)
def test_relative_to_answers_what_relpath_answers(path: str, root: str) -> None:
    assert relative_to(path, root) == reference_relative_to(path, root)


@given(PATH, st.lists(PATH, max_size=4))
def test_within_any_answers_what_is_within_answers_of_each_root(
    path: str, roots: list[str]
) -> None:
    assert within_any(roots)(path) == any(is_within(path, r) for r in roots)


def test_the_cases_the_fast_paths_must_leave_to_the_definition() -> None:
    assert relative_to("/w/a/b", "/w") == "a/b"
    assert relative_to("/w", "/w/") == ""
    assert relative_to("/x", "/") == "x"
    assert relative_to("//x", "/") == reference_relative_to("//x", "/") == "x"
    assert relative_to("/w/../v", "/w") == "../v"
    assert not within_any([])("/w")
    assert within_any(["/w/"])("/w/a") and not within_any(["/w"])("/wa")
