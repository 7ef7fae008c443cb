"""Strict JSON text (application/setup/json_text.py): what the configuration files, the request file
and the grant file hold. Duplicate keys, NaN/Infinity and numbers too large for a float are
problems, not values (docs/decisions.md "Configuration reader")."""

from __future__ import annotations

import pytest

from concorde_workers.application.setup.json_text import decode_json


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"a": 1, "a": 2}', 'duplicate key "a"'),
        ('{"a": {"b": 1, "b": 1}}', 'duplicate key "b"'),
        ("[Infinity]", "Infinity"),
        ("[1e999]", "too large"),
        ("[" * 100_000, "nested more than 128 levels deep"),
        ("{\n\n  x}", "line 3, column 3"),
        ("", "line 1, column 1"),
    ],
)
def test_decoding_is_strict(text: str, problem: str) -> None:
    decoded = decode_json(text)
    assert decoded.problem is not None and problem in decoded.problem


def test_decoding_keeps_a_plain_value() -> None:
    assert decode_json('{"a": [1, 2.5, null]}').value == {"a": [1, 2.5, None]}
