"""Characters that are not text: what a path may not hold, and what a terminal is never sent.

Two uses of one notion (docs/decisions.md "Control characters"):

* `control_problem` refuses, in every path the caller gives (grant entries, runtime paths, the
  project interpreter, the worktree), a character that breaks a line or steers a terminal: the
  C0 and C1 controls and DEL (Unicode category Cc) and the line and paragraph separators (Zl,
  Zp). Such a path would split the brief, the plan and the sandbox lists across lines. Refused,
  not quoted: a quoted path in the brief would no longer be the file's name. A lone surrogate
  (Cs) is not refused: it is how Python names an undecodable byte of a real file name.
* `escape_controls` makes every such character visible in text meant for a person at a
  terminal (`\\x1b`, `\\n`, `\\u202e`), and also the format characters (Cf: the bidirectional
  overrides and isolates, zero-width characters), which could make a path look like another,
  and lone surrogates, which no terminal encoding can write.
  Worker- and request-given text therefore can neither retitle the window (OSC), clear the
  screen (CSI), move the cursor nor reorder what is shown. JSON output keeps every value as it is
  and only writes these characters as JSON escapes (`json_document`).
"""

from __future__ import annotations

import hashlib
import json
import math
import unicodedata
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

REFUSED_CATEGORIES = frozenset({"Cc", "Zl", "Zp"})
"""Characters a given path may not contain: the controls and the line separators."""

ESCAPED_CATEGORIES = REFUSED_CATEGORIES | {"Cf", "Cs"}
"""Characters never sent raw to a terminal: the refused ones, the format characters and lone
surrogates (an undecodable byte of a file name, which no terminal encoding can write)."""

_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _category(char: str) -> str:
    return unicodedata.category(char)


def escaped_char(char: str) -> str:
    """One character as a visible escape: `\\n`, `\\r`, `\\t`, `\\xNN` below 256, else
    `\\uNNNN` or `\\UNNNNNNNN`."""
    if char in _SHORT:
        return _SHORT[char]
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def escape_controls(text: str) -> str:
    """`text` with every control, format, separator or surrogate character made a visible
    escape; everything else (letters of any script, emoji, backslashes) as it is."""
    if text.isprintable() and text.isascii():
        return text
    return "".join(escaped_char(c) if _category(c) in ESCAPED_CATEGORIES else c for c in text)


def terminal_lines(lines: Sequence[str]) -> str:
    """Lines for a terminal: each with its control characters escaped (a line break inside one
    included), joined and ended by a newline."""
    return "".join(escape_controls(line) + "\n" for line in lines)


def printable_lines(text: str) -> list[str]:
    """Multi-line text (an error's detail, a refusal's message, the brief) as lines, each line
    escaped: a line break in the text starts a new line, never anything else."""
    return [escape_controls(line) for line in text.splitlines()]


_NAMES = {
    "\x00": "NUL",
    "\n": "line feed",
    "\r": "carriage return",
    "\t": "tab",
    "\x1b": "escape",
    "\x7f": "delete",
}


def _character_name(char: str) -> str:
    return unicodedata.name(char, "").lower() or _NAMES.get(char, "a control character")


def control_problem(text: str) -> str | None:
    """What makes `text` unfit as a given path, or None: the first refused character, named
    with its escape, its name and its position (counted from 1)."""
    for index, char in enumerate(text, start=1):
        if _category(char) in REFUSED_CATEGORIES:
            return (
                f"contains the character {escaped_char(char)} ({_character_name(char)}) at "
                f"position {index}: it would break the brief, the plan and the sandbox "
                "lists, which name paths one per line"
            )
    return None


def json_document(data: Any, indent: int | None = 2) -> str:
    """`data` as one JSON document (indented, or on one line with `indent=None`) whose values
    are exactly `data`'s, with every character `escape_controls` escapes written as a JSON
    escape, so that the document is safe on a terminal and parses back to the same values (lone
    surrogates included)."""
    text = json.dumps(data, indent=indent, ensure_ascii=False)
    if text.isascii() and "\x7f" not in text:
        return text
    # json.dumps escapes the C0 controls inside strings itself (the newlines of its indentation
    # are ours); DEL and everything beyond ASCII can only lie inside a string.
    return "".join(
        _json_escape(c) if c >= "\x7f" and _category(c) in ESCAPED_CATEGORIES else c for c in text
    )


def _json_escape(char: str) -> str:
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # JSON writes a character beyond the BMP as its surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def digest_text(text: str) -> str:
    """`sha256:<hex>` of a generated file's text, as the run record keeps it."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def format_number(value: int | float | Decimal) -> str:
    """A stable decimal text: integers as integers, no exponent, no trailing zeros."""
    if isinstance(value, bool):
        raise ValueError(f"not a number: {value!r}")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"not a finite number: {value!r}")
        decimal = Decimal(repr(value))
    elif isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"not a finite number: {value!r}")
        decimal = value
    else:
        raise ValueError(f"not a number: {value!r}")
    text = format(decimal, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text
