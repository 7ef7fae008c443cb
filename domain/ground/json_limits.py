"""How deep any JSON the program reads may nest (issue 19 §4): one bound for every reader —
trace nodes, progress and status files, records, transcripts and the agent programs' stream
lines, programs.json, check results, the owner records of copies and runtime directories, the
configuration, request and grant files.

Python's decoder recurses once per level and raises RecursionError (no ValueError) near its
recursion limit, and what reads the value afterwards (validation, an account) recurses again:
`show` on a trace nested 100,000 deep ended in an internal error. `loads` turns both into a
ValueError naming the bound, which every reader already turns into its own refusal. The sizes
each reader takes are in docs/decisions.md "Every reader bounded".
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["MAX_DEPTH", "MAX_TRANSCRIPT_BYTES", "TOO_DEEP", "depth_exceeds", "loads"]

MAX_DEPTH = 128
"""The deepest nesting of arrays and objects any reader accepts; what this program writes
nests fewer than 20 levels, a caller's output schema a few more."""
TOO_DEEP = f"it is nested more than {MAX_DEPTH} levels deep"


def depth_exceeds(value: object, limit: int = MAX_DEPTH) -> bool:
    """Whether `value` nests arrays and objects more than `limit` levels deep; iterative, so a
    value of any depth is measured without recursion."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def loads(text: str | bytes, **hooks: Any) -> Any:
    """`json.loads`, with a nesting past MAX_DEPTH a ValueError (never a RecursionError)."""
    try:
        value = json.loads(text, **hooks)
    except RecursionError:
        raise ValueError(TOO_DEEP) from None
    if depth_exceeds(value):
        raise ValueError(TOO_DEEP)
    return value


MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024
"""The largest transcript the host reads (the copy it keeps in the run directory, the events, a
report); past it a report says so and shows no tool call."""
