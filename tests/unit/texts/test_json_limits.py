"""domain/ground/json_limits.py: one depth bound for every JSON the program reads (issue 19 §4)."""

from __future__ import annotations

import pytest

from concorde_workers.domain.ground.json_limits import MAX_DEPTH, TOO_DEEP, depth_exceeds, loads

ROWS = {
    "a scalar": ("1", False),
    "an object at the limit": ('{"a": ' * (MAX_DEPTH - 1) + "1" + "}" * (MAX_DEPTH - 1), False),
    "arrays at the limit": ("[" * MAX_DEPTH + "]" * MAX_DEPTH, False),
    "arrays one past the limit": ("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), True),
    "past the decoder's own recursion": ("[" * 100_000 + "]" * 100_000, True),
    "wide, not deep": ("[" + ",".join(["[1]"] * 10_000) + "]", False),
}


@pytest.mark.parametrize(("text", "too_deep"), ROWS.values(), ids=ROWS.keys())
def test_a_nesting_past_the_limit_is_a_value_error_never_a_recursion_error(
    text: str, too_deep: bool
) -> None:
    if too_deep:
        with pytest.raises(ValueError, match=TOO_DEEP):
            loads(text)
    else:
        assert loads(text) is not None


def test_depth_is_measured_without_recursion() -> None:
    value: list[object] = []
    for _ in range(50_000):
        value = [value]
    assert depth_exceeds(value)
    assert not depth_exceeds({"a": [1, {"b": 2}]}, limit=3)
    assert depth_exceeds({"a": [1, {"b": []}]}, limit=3)
