"""Characters that are not text (domain/ground/text.py): escaped in every human output, written as JSON
escapes in JSON output, refused in every given path. Row by row, then over any text."""

from __future__ import annotations

import json
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from concorde_workers.domain.ground.text import (
    control_problem,
    escape_controls,
    json_document,
    printable_lines,
)

ESCAPES = [
    # (row, text, as a terminal is sent it)
    ("plain ASCII", "src/app/main.py", "src/app/main.py"),
    ("OSC window title", "ok\x1b]0;pwned\x07", "ok\\x1b]0;pwned\\x07"),
    (
        "OSC 8 hyperlink, ST-terminated",
        "\x1b]8;;http://x\x1b\\link",
        "\\x1b]8;;http://x\\x1b\\link",
    ),
    ("CSI clear screen and home", "\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H"),
    ("CSI cursor up, erase line", "a\x1b[1A\x1b[2K", "a\\x1b[1A\\x1b[2K"),
    ("carriage return overwrite", "ok\rFAILED", "ok\\rFAILED"),
    ("line feed", "one\ntwo", "one\\ntwo"),
    ("tab", "a\tb", "a\\tb"),
    ("backspace", "ok\x08\x08no", "ok\\x08\\x08no"),
    ("bell and NUL", "\x07\x00", "\\x07\\x00"),
    ("DEL", "a\x7f", "a\\x7f"),
    ("C1 CSI (8-bit)", "\x9b2J", "\\x9b2J"),
    ("C1 OSC and NEL", "\x9d0;t\x9c\x85", "\\x9d0;t\\x9c\\x85"),
    ("bidi override (Trojan Source)", "admin\u202e\u2066txt.exe", "admin\\u202e\\u2066txt.exe"),
    (
        "bidi isolates and marks",
        "\u2067\u2068\u2069\u200e\u200f\u061c",
        "\\u2067\\u2068\\u2069\\u200e\\u200f\\u061c",
    ),
    ("zero-width space", "src/ap\u200bp", "src/ap\\u200bp"),
    ("line and paragraph separators", "a\u2028b\u2029c", "a\\u2028b\\u2029c"),
    ("lone surrogate (undecodable byte)", "f\udcff", "f\\udcff"),
    ("a tag character beyond the BMP", "x\U000e0041", "x\\U000e0041"),
    ("other scripts and emoji stay", "café 日本 🎉 שלום", "café 日本 🎉 שלום"),
    ("a backslash stays", "C:\\x1b", "C:\\x1b"),
]


@pytest.mark.parametrize(("row", "text", "shown"), ESCAPES, ids=[r[0] for r in ESCAPES])
def test_escape_controls_row_by_row(row: str, text: str, shown: str) -> None:
    assert escape_controls(text) == shown


UNSAFE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


@given(st.text())
def test_nothing_escaped_reaches_a_terminal_and_what_is_safe_is_kept(text: str) -> None:
    shown = escape_controls(text)
    assert not any(unicodedata.category(c) in UNSAFE for c in shown)
    shown.encode("utf-8")  # never a character the terminal's encoding cannot write
    if not any(unicodedata.category(c) in UNSAFE for c in text):
        assert shown == text


def test_multi_line_text_is_split_at_its_line_breaks_and_each_line_escaped() -> None:
    assert printable_lines("first\x1b[2J\nsecond\rthird\u2028\x9b") == [
        "first\\x1b[2J",
        "second",
        "third",
        "\\x9b",
    ]


@given(
    st.recursive(
        st.none() | st.text() | st.integers(),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
        ),
        max_leaves=6,
    )
)
def test_a_json_document_keeps_every_value_and_sends_no_control_character(value: object) -> None:
    document = json_document(value)
    assert json.loads(document) == value
    assert not any(unicodedata.category(c) in UNSAFE for c in document if c != "\n")
    document.encode("utf-8")


def test_a_json_document_writes_each_unsafe_character_as_a_json_escape() -> None:
    document = json_document({"s": "a\x1b]0;t\x07\x9b\u202e\udcff\U000e0041é"})
    assert document == ('{\n  "s": "a\\u001b]0;t\\u0007\\u009b\\u202e\\udcff\\udb40\\udc41é"\n}')


REFUSED = [
    ("NUL", "a\x00b", "\\x00 (NUL) at position 2"),
    ("line feed", "a\nb", "\\n (line feed) at position 2"),
    ("carriage return", "\rb", "\\r (carriage return) at position 1"),
    ("tab", "a\tb", "\\t (tab)"),
    ("escape", "a\x1b[2J", "\\x1b (escape)"),
    ("DEL", "a\x7f", "\\x7f (delete)"),
    ("C1 NEL", "a\x85", "\\x85 (a control character)"),
    ("line separator", "a\u2028", "\\u2028 (line separator)"),
    ("paragraph separator", "a\u2029", "\\u2029 (paragraph separator)"),
]


@pytest.mark.parametrize(("row", "path", "problem"), REFUSED, ids=[r[0] for r in REFUSED])
def test_a_given_path_with_a_control_character_is_refused_row_by_row(
    row: str, path: str, problem: str
) -> None:
    found = control_problem(path)
    assert found is not None and problem in found, found


@pytest.mark.parametrize(
    "path",
    [
        "src/app/main.py",
        "docs/café.md",
        "a b/c",
        "日本/x",
        "admin\u202etxt",
        "zw\u200bsp",
        "x/\udcff",
    ],
)
def test_a_path_of_printable_text_is_not_refused(path: str) -> None:
    """Format characters (bidi, zero-width) break no line: a file may be named so, and every
    human output shows them escaped; a lone surrogate is an undecodable byte of a real name."""
    assert control_problem(path) is None
