"""Strict JSON text: what the configuration files, the request file and the grant file hold.

Duplicate keys, NaN/Infinity and numbers too large for a float are problems, not values
(docs/decisions.md "Configuration reader"): Python's `json` would keep the last duplicate and
read `NaN`, which no JSON Schema validator judges the way the file's author meant.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from concorde_workers.domain.ground import json_limits

__all__ = ["Decoded", "decode_json"]


@dataclass(frozen=True)
class Decoded:
    """Decoded JSON text: the value, or the problem that kept it from being one."""

    value: object = None
    problem: str | None = None


class _Unacceptable(Exception):
    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Unacceptable(f"it has the duplicate key {json.dumps(key)}")
        out[key] = value
    return out


def _no_constant(name: str) -> float:
    raise _Unacceptable(f"it holds {name}, which is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Unacceptable(f"it holds the number {text}, which is too large")
    return value


def decode_json(text: str) -> Decoded:
    """Strict JSON: duplicate keys, NaN and infinite numbers are problems, not values."""
    hooks: dict[str, Any] = {
        "object_pairs_hook": _no_duplicates,
        "parse_constant": _no_constant,
        "parse_float": _finite,
    }
    try:
        return Decoded(value=json_limits.loads(text, **hooks))
    except _Unacceptable as exc:
        return Decoded(problem=exc.problem)
    except json.JSONDecodeError as exc:
        return Decoded(
            problem=f"it is not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}"
        )
    except RecursionError:
        return Decoded(problem="it is not JSON this reader accepts: it is nested too deeply")
    except ValueError as exc:
        return Decoded(problem=f"it is not JSON this reader accepts: {exc}")
