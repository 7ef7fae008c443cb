"""The words for jsonschema's errors on the configuration files (application/setup/contract_problems.py):
every keyword of the two contracts has its words, the first problem is the first in reading
order whatever order jsonschema yields, and nothing raises."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from concorde_workers.application.setup.contract_problems import (
    KEYWORD_WORDS,
    TEXT_RULE,
    first_problem,
    first_problem_of,
)
from concorde_workers.application.setup.json_text import decode_json
from concorde_workers.contracts import load, schema_validator, validator

CONFIG = "contract.workers.worker-configuration"
MAP = "contract.workers.model-map"
CONTRACTS = (CONFIG, MAP)
EXAMPLE: dict[str, Any] = load(CONFIG).example
TEXT = f"but must be {TEXT_RULE}"
# Words of JSON Schema that are not assertions: nothing to word.
ANNOTATIONS = {"properties", "items"}


def _keywords(schema: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """Every (keyword, value) of a schema and of each schema nested in it."""
    for keyword, value in schema.items():
        yield keyword, value
        if keyword == "properties":
            for member in value.values():
                yield from _keywords(member)
        elif keyword == "anyOf":
            for branch in value:
                yield from _keywords(branch)
        elif isinstance(value, Mapping):
            yield from _keywords(value)


@pytest.mark.parametrize("contract_id", CONTRACTS)
def test_every_keyword_of_the_contracts_has_its_words(contract_id: str) -> None:
    keywords = {keyword for keyword, _ in _keywords(load(contract_id).schema)}
    assert keywords - ANNOTATIONS <= set(KEYWORD_WORDS)


@pytest.mark.parametrize("contract_id", CONTRACTS)
def test_the_words_fit_the_contracts_rules(contract_id: str) -> None:
    """What the words assume: one string pattern (the text rule, always with minLength 1), and
    anyOf only as 'sets at least one of these fields'."""
    found = list(_keywords(load(contract_id).schema))
    patterns = {value for keyword, value in found if keyword == "pattern"}
    assert len(patterns) == 1
    assert all(
        branch.keys() == {"required"}
        for keyword, value in found
        if keyword == "anyOf"
        for branch in value
    )
    for keyword, value in found:
        if isinstance(value, Mapping) and "pattern" in value:
            assert value.get("minLength") == 1 and value.get("type") == "string", keyword


def config(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(EXAMPLE)
    data.update(changes)
    return data


ENTRY = "must be an object setting backend, model or reasoning"
WORDS = [
    # (contract, value, the exact problem), keyword by keyword
    (CONFIG, [], "it must hold a JSON object"),
    (
        CONFIG,
        config(extra=1),
        'the file has the unknown field "extra"; its fields are '
        "schema_version, enabled_models, default, operations, limits, runtime",
    ),
    (CONFIG, {"schema_version": 2}, "it lacks the required field enabled_models"),
    (CONFIG, config(schema_version=True), "schema_version is true; this reader reads 2"),
    (CONFIG, config(enabled_models=[]), "enabled_models must be an object"),
    (CONFIG, config(enabled_models={"a": 1}), "enabled_models.a must be an object"),
    (
        CONFIG,
        config(enabled_models={"a": {"effort": "x"}}),
        'enabled_models.a has the unknown field "effort"; its fields are reasoning',
    ),
    (
        CONFIG,
        config(enabled_models={"a": {"reasoning": ""}}),
        f'enabled_models.a.reasoning is "", {TEXT}',
    ),
    (CONFIG, config(default="m"), f"default {ENTRY}"),
    (
        CONFIG,
        config(default={}),
        "default is empty; it must set at least one of backend, model, reasoning",
    ),
    (
        CONFIG,
        config(default={"backend": "codex"}),
        'default.backend is "codex", but must be "claude" or "pi"',
    ),
    (CONFIG, config(default={"model": " a"}), f'default.model is " a", {TEXT}'),
    (CONFIG, config(default={"model": 7}), f"default.model is 7, {TEXT}"),
    (CONFIG, config(default={"model": "a\x1bb"}), f'default.model is "a\\u001bb", {TEXT}'),
    (CONFIG, config(operations={"x": []}), "operations.x must be an object"),
    (
        CONFIG,
        config(operations={"x": {"chair": {}}}),
        'operations.x has the unknown field "chair"; its fields are default, workers',
    ),
    (CONFIG, config(operations={"x": {"default": []}}), f"operations.x.default {ENTRY}"),
    (CONFIG, config(operations={"x": {"workers": []}}), "operations.x.workers must be an object"),
    (CONFIG, config(operations={"x": {"workers": {"w": None}}}), f"operations.x.workers.w {ENTRY}"),
    (
        CONFIG,
        config(operations={"x": {"workers": {"w": {}}}}),
        "operations.x.workers.w is empty; it must set at least one of backend, model, reasoning",
    ),
    (
        CONFIG,
        config(limits={"max_turns": 0}),
        "limits.max_turns is 0, but must be an integer of at least 1",
    ),
    (
        CONFIG,
        config(limits={"rounds": 1.5}),
        "limits.rounds is 1.5, but must be an integer of at least 0",
    ),
    (
        CONFIG,
        config(limits={"rounds": True}),
        "limits.rounds is true, but must be an integer of at least 0",
    ),
    (
        CONFIG,
        config(limits={"timeout_seconds": "60"}),
        'limits.timeout_seconds is "60", but must be a number of at least 1',
    ),
    (
        CONFIG,
        config(limits={"max_budget_usd": 0}),
        "limits.max_budget_usd is 0, but must be a number of at least 0.01",
    ),
    (
        CONFIG,
        config(limits={"turns": 3}),
        'limits has the unknown field "turns"; its fields are '
        "timeout_seconds, max_turns, max_budget_usd, rounds, retries, retry_delay_seconds",
    ),
    (CONFIG, config(runtime="node_modules"), "runtime must be an array of paths"),
    (CONFIG, config(runtime=["a", None]), f"runtime[1] is null, {TEXT}"),
    (CONFIG, config(runtime=[".venv", "a", ".venv"]), 'runtime lists ".venv" twice'),
    (MAP, None, "it must hold a JSON object"),
    (
        MAP,
        {"schema_version": 1, "models": {}, "extra": {}},
        'the file has the unknown field "extra"; its fields are schema_version, models',
    ),
    (MAP, {"schema_version": 1}, "it lacks the required field models"),
    (MAP, {"schema_version": 2, "models": {}}, "schema_version is 2; this reader reads 1"),
    (MAP, {"schema_version": 1, "models": []}, "models must be an object"),
    (
        MAP,
        {"schema_version": 1, "models": {"m": []}},
        "models.m must be an object giving the model's claude and/or pi id",
    ),
    (
        MAP,
        {"schema_version": 1, "models": {"m": {"codex": "x"}}},
        'models.m has the unknown field "codex"; its fields are claude, pi',
    ),
    (MAP, {"schema_version": 1, "models": {"m": {"pi": ""}}}, f'models.m.pi is "", {TEXT}'),
]


@pytest.mark.parametrize(("contract_id", "value", "problem"), WORDS)
def test_each_error_has_its_words(contract_id: str, value: Any, problem: str) -> None:
    assert first_problem(contract_id, value) == problem


@pytest.mark.parametrize("contract_id", CONTRACTS)
def test_the_contract_s_example_has_no_problem(contract_id: str) -> None:
    assert first_problem(contract_id, load(contract_id).example) is None


def test_every_keyword_in_the_table_is_reached() -> None:
    """No dead words: each entry of the table words some row above."""
    reached = set()
    for contract_id, value, _ in WORDS:
        reached |= {error.validator for error in validator(contract_id).iter_errors(value)}
    assert set(KEYWORD_WORDS) <= reached


FIRST = [
    # An object's own problems before its members'.
    ({"schema_version": 3, "enabled_models": 1, "x": 1}, 'the file has the unknown field "x"'),
    ({"schema_version": 3}, "it lacks the required field enabled_models"),
    (config(default={"effort": 1}), 'default has the unknown field "effort"'),
    (config(runtime=[".venv", 1, ".venv"]), "runtime[1] is 1"),
    # The contract's order of fields, whatever the file's: schema_version first ...
    ({"runtime": 1, "enabled_models": 1, "schema_version": 3}, "schema_version is 3"),
    # ... then enabled_models before runtime, backend before model ...
    ({"runtime": 1, "schema_version": 2, "enabled_models": 1}, "enabled_models must be"),
    (config(default={"model": " a", "backend": "x"}), 'default.backend is "x"'),
    # ... names in the file's order.
    (config(operations={"b": [], "a": []}), "operations.b must be an object"),
    (config(operations={"a": [], "b": []}), "operations.a must be an object"),
    (config(enabled_models={"z": {"reasoning": ""}, "a": 1}), "enabled_models.z.reasoning"),
    # A repeated entry counts where it repeats, after that entry's own problem.
    (config(runtime=["a", "a", ""]), 'runtime lists "a" twice'),
    (config(runtime=["", "a", "a"]), 'runtime[0] is ""'),
]


@pytest.mark.parametrize(("value", "problem"), FIRST)
def test_the_first_problem_is_the_first_in_reading_order(value: Any, problem: str) -> None:
    found = first_problem(CONFIG, value)
    assert found is not None and found.startswith(problem), found


@pytest.mark.parametrize(
    "names", [[f"op{i}" for i in range(12)], [f"op{i}" for i in reversed(range(12))]]
)
def test_the_first_problem_does_not_follow_jsonschema_s_order(names: list[str]) -> None:
    """jsonschema yields the errors of additionalProperties in the order of a set of names,
    which changes with Python's string hashing; the first problem is the file's first name."""
    value = config(operations={name: [] for name in names})
    assert first_problem(CONFIG, value) == f"operations.{names[0]} must be an object"


def test_a_keyword_without_words_still_gets_jsonschema_s_message_and_the_place() -> None:
    checker = schema_validator({"type": "object", "properties": {"a": {"maxLength": 1}}})
    problem = first_problem_of(checker, {"a": "long"})
    assert problem == "a breaks the contract: 'long' is too long"


def test_entries_nested_too_deeply_to_compare_are_a_problem_not_a_crash() -> None:
    deep = "[" * 600 + "]" * 600
    decoded = decode_json(
        f'{{"schema_version": 2, "enabled_models": {{"a": {{}}}}, "runtime": [{deep}, {deep}]}}'
    )
    # The reader refuses such a file first (issue 19 §4); a value made otherwise still meets
    # the comparison's own guard.
    assert decoded.problem is not None and "nested more than 128 levels" in decoded.problem
    value: list[object] = []
    for _ in range(599):
        value = [value]
    problem = first_problem(
        CONFIG, {"schema_version": 2, "enabled_models": {"a": {}}, "runtime": [value, value]}
    )
    # Where Python's recursion limit allows the comparison, the entry's own problem is told.
    assert problem == "it holds values nested too deeply to check" or (
        problem is not None and problem.startswith("runtime[0] is [[[")
    ), problem
