"""The first way a value breaks a contract's schema, in words that say what to repair.

The contracts' schemas are the one authority on the configuration files' shape (seed 002
contract.workers.worker-configuration and contract.workers.model-map): jsonschema checks them
(`contracts.validator`), and this module only words the first of its errors as the configuration
reader's refusals tell it (docs/decisions.md "Configuration reader"):

- Which problem is first does not depend on jsonschema's order: an object's own problems (its
  type, an unknown field, a missing required field, an entry that sets nothing) come before its
  members'; the fields a contract lists come in the contract's order (schema_version first),
  names (a model, an Operation, a worker id) in the file's order, array entries in theirs. Two
  equal entries of an array count as a problem of the second one, after that entry's own.
- Each schema keyword has its words; one this module does not know (a contract that grew a new
  keyword) still gets jsonschema's own message with the place, never a traceback.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from concorde_workers.contracts import validator
from concorde_workers.domain.configuration.config import show

__all__ = ["KEYWORD_WORDS", "TEXT_RULE", "first_problem", "first_problem_of"]

TEXT_RULE = "a non-empty string without control characters or surrounding whitespace"
"""What the contracts' one string pattern (with minLength 1) asks for, in words."""

_ENTRY = "an object setting backend, model or reasoning"
# What a container at a place of either file must be, beyond "an object"; `*` is any name.
_CONTAINERS: dict[tuple[str, ...], str] = {
    ("default",): _ENTRY,
    ("operations", "*", "default"): _ENTRY,
    ("operations", "*", "workers", "*"): _ENTRY,
    ("models", "*"): "an object giving the model's claude and/or pi id",
    ("runtime",): "an array of paths",
}
# Among the problems of one place: its type, then an unknown field, a missing one, an empty
# entry, then the value's own rules, then a repeated array entry.
_RANK = ("type", "additionalProperties", "required", "anyOf")
_LAST = "uniqueItems"

Path = Sequence[str | int]


def first_problem(contract_id: str, value: object) -> str | None:
    """The first way `value` breaks the contract's schema, worded; None when it does not."""
    return first_problem_of(validator(contract_id), value)


def first_problem_of(checker: Any, value: object) -> str | None:
    """`first_problem` for any jsonschema validator (`contracts.schema_validator`)."""
    try:
        errors = list(checker.iter_errors(value))
        if not errors:
            return None
        first = min(errors, key=lambda error: _order(value, checker.schema, error))
        return _words(first)
    except RecursionError:
        # Comparing deeply nested array entries (uniqueItems) recurses once per level.
        return "it holds values nested too deeply to check"


def _order(root: object, schema: Mapping[str, Any], error: Any) -> tuple[tuple[int, ...], int]:
    """Where the error lies in reading order, then its rank among the place's problems."""
    positions: list[int] = []
    node: Any = root
    for step in error.absolute_path:
        position, schema = _member(node, schema, step)
        positions.append(position)
        node = node[step]
    keyword = error.validator
    if keyword == _LAST:
        positions.append(_repeat(error.instance))
        return tuple(positions), len(_RANK) + 1
    rank = _RANK.index(keyword) if keyword in _RANK else len(_RANK)
    return tuple(positions), rank


def _member(node: Any, schema: Mapping[str, Any], step: str | int) -> tuple[int, Any]:
    """A member's position among its siblings and its schema: fields the contract lists in the
    contract's order, then names (an object's other keys) in the file's order, entries of an
    array in theirs."""
    if isinstance(step, int):
        return step, _schema(schema.get("items"))
    listed = list(schema.get("properties", {}))
    if step in listed:
        return listed.index(step), _schema(schema["properties"][step])
    return len(listed) + list(node).index(step), _schema(schema.get("additionalProperties"))


def _schema(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _repeat(items: Sequence[Any]) -> int:
    """The index of the first entry equal to an earlier one (the end when none is)."""
    return next((i for i, item in enumerate(items) if item in items[:i]), len(items))


def _where(path: Path) -> str:
    """`limits.max_turns`, `runtime[1]`, `models.gpt-6-astra.pi`; '' for the whole file."""
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else step)
    return out


def _a(noun: str) -> str:
    return f"an {noun}" if noun[:1] in "aeiou" else f"a {noun}"


def _container(path: Path, kind: str) -> str:
    for pattern, words in _CONTAINERS.items():
        if len(pattern) == len(path) and all(
            part in ("*", step) for part, step in zip(pattern, path, strict=True)
        ):
            return words
    return _a(kind)


def _rule(schema: Mapping[str, Any]) -> str:
    """What a value with these rules must be."""
    kind = _a(str(schema.get("type", "value")))
    if "minimum" in schema:
        return f"{kind} of at least {schema['minimum']:g}"
    if "pattern" in schema:
        return TEXT_RULE
    return kind


def _type(error: Any, path: Path) -> str:
    expected = error.validator_value
    if expected in ("object", "array"):
        if not path:
            return f"it must hold a JSON {expected}"
        return f"{_where(path)} must be {_container(path, expected)}"
    return _value(error, path)


def _value(error: Any, path: Path) -> str:
    return f"{_where(path)} is {show(error.instance)}, but must be {_rule(error.schema)}"


def _unknown(error: Any, path: Path) -> str:
    fields = list(error.schema.get("properties", {}))
    key = next((key for key in error.instance if key not in fields), "")
    where = _where(path) or "the file"
    return f"{where} has the unknown field {show(key)}; its fields are {', '.join(fields)}"


def _required(error: Any, path: Path) -> str:
    missing = [key for key in error.validator_value if key not in error.instance]
    return f"{_where(path) or 'it'} lacks the required field {missing[0]}"


def _empty(error: Any, path: Path) -> str:
    """anyOf of `required` branches: an entry that sets none of the fields it may set."""
    fields = [field for branch in error.validator_value for field in branch.get("required", ())]
    return f"{_where(path)} is empty; it must set at least one of {', '.join(fields)}"


def _const(error: Any, path: Path) -> str:
    shown = show(error.instance)
    return f"{_where(path)} is {shown}; this reader reads {show(error.validator_value)}"


def _enum(error: Any, path: Path) -> str:
    allowed = " or ".join(show(value) for value in error.validator_value)
    return f"{_where(path)} is {show(error.instance)}, but must be {allowed}"


def _twice(error: Any, path: Path) -> str:
    items = error.instance
    index = _repeat(items)
    shown = show(items[index]) if index < len(items) else "an entry"
    return f"{_where(path)} lists {shown} twice"


KEYWORD_WORDS: dict[str, Callable[[Any, Path], str]] = {
    "type": _type,
    "additionalProperties": _unknown,
    "required": _required,
    "anyOf": _empty,
    "const": _const,
    "enum": _enum,
    "minLength": _value,
    "pattern": _value,
    "minimum": _value,
    "uniqueItems": _twice,
}
"""The words for each schema keyword the configuration contracts use; a test keeps this table
covering every keyword of both contracts."""


def _words(error: Any) -> str:
    path: Path = list(error.absolute_path)
    words = KEYWORD_WORDS.get(error.validator)
    if words is not None:
        return words(error, path)
    return f"{_where(path) or 'the file'} breaks the contract: {error.message}"
