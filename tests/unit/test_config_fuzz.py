"""The configuration reader never raises on what the two files hold: every answer is a resolved
worker or a refusal with its table reason naming the file. And its schema check is the
contract's: it agrees with jsonschema on the contract files."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from concorde_workers.application.config import ConfigurationReader
from concorde_workers.contracts import validator
from concorde_workers.domain.config import (
    REFUSAL_REASONS,
    ResolvedWorker,
    configuration_schema_problem,
    model_map_problem,
)
from concorde_workers.domain.errors import Refusal
from concorde_workers.ports.filesystem import FileSystemError

WT = "/repo/.claude/worktrees/wt"
CONFIG = f"{WT}/.concorde/workers.json"
RETIRED = f"{WT}/.concorde/worker-models.json"
MAP = "/home/dev/.config/concorde/models.json"
DECLARED = {"spec_panel": {"reviewer1", "reviewer2", "chair"}, "implement": {"coder"}}
FILES_NAMED = {CONFIG, RETIRED, MAP, "rel/models.json", "~/.config/concorde/models.json"}


@dataclass
class FakeFiles:
    files: dict[str, bytes] = field(default_factory=dict)
    programs: set[str] = field(default_factory=set)

    def read_text(self, path: str) -> str:
        if path not in self.files:
            raise FileSystemError(path, "read_text", "No such file or directory", 2)
        return self.files[path].decode("utf-8")

    def exists(self, path: str) -> bool:
        return path in self.files or path.endswith("/.venv")

    def which(self, program: str, search_path: str) -> str | None:
        full = program if "/" in program else f"/usr/bin/{program}"
        return full if full in self.programs else None


MODELS = ["claude-sonnet-5", "gpt-6-astra", "claude-opus-5-5", "a.b_c-1", "-bad", "x/y"]
LEVELS = ["off", "minimal", "low", "medium", "high", "xhigh", "max", "ultra", " low"]
WORKERS = ["reviewer1", "reviewer2", "chair", "coder", "intern"]
LIMITS = ["timeout_seconds", "max_turns", "max_budget_usd", "rounds", "retries",
          "retry_delay_seconds", "turns"]
WORDS = MODELS + LEVELS + WORKERS + LIMITS + [
    "schema_version", "enabled_models", "default", "operations", "limits", "runtime", "backend",
    "model", "reasoning", "workers", "models", "claude", "pi", "spec_panel", "implement", "",
    ".venv", ".", "..", "/repo", "/opt/tools",
]

scalars = (
    st.none() | st.booleans() | st.integers(-3, 10**12)
    | st.floats(-1e12, 1e12, allow_nan=False) | st.sampled_from(WORDS) | st.text(max_size=6)
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.sampled_from(WORDS) | st.text(max_size=4), inner, max_size=4),
    max_leaves=25,
)


def some(values: list[Any]) -> st.SearchStrategy[Any]:
    """Mostly the given values, sometimes anything."""
    return st.sampled_from(values) | json_values


entries = st.dictionaries(
    st.sampled_from(["backend", "model", "reasoning", "effort"]),
    some(["claude", "pi", "codex", *MODELS, *LEVELS]),
    max_size=3,
)
configs = st.fixed_dictionaries(
    {"schema_version": some([2, 2, 2, 2.0, 1, 3, True])},
    optional={
        "enabled_models": st.dictionaries(
            st.sampled_from(MODELS), st.dictionaries(st.just("reasoning"), some(LEVELS),
                                                     max_size=1), max_size=4),
        "default": entries,
        "operations": st.dictionaries(
            st.sampled_from(["spec_panel", "implement", "deploy"]),
            st.fixed_dictionaries({}, optional={
                "default": entries,
                "workers": st.dictionaries(st.sampled_from(WORKERS), entries, max_size=3)}),
            max_size=2),
        "limits": st.dictionaries(st.sampled_from(LIMITS), some([0, 1, 2.5, 200, -1]),
                                  max_size=3),
        "runtime": st.lists(some([".venv", "node_modules", ".", "/repo", "/opt/tools", ""]),
                            max_size=3),
        "extra": json_values,
    },
)
model_maps = st.fixed_dictionaries(
    {"schema_version": some([1, 1, 1, 2]),
     "models": st.dictionaries(
         st.sampled_from(MODELS),
         st.dictionaries(st.sampled_from(["claude", "pi", "codex"]),
                         some(["local/m", "claude-opus-5-5", "", " x"]), max_size=2),
         max_size=4)},
    optional={"extra": json_values},
)


# Near-valid files, so that runs reach the model map, the placement and the program.
GOOD = ["claude-sonnet-5", "gpt-6-astra", "claude-opus-5-5"]
clean_entries = st.fixed_dictionaries({}, optional={
    "backend": st.sampled_from(["claude", "pi"]),
    "model": st.sampled_from([*GOOD, "gpt-6.1-sol"]),
    "reasoning": st.sampled_from(["low", "medium", "high", "off", "max"]),
}).filter(bool)
clean_configs = st.fixed_dictionaries(
    {"schema_version": st.just(2),
     "enabled_models": st.fixed_dictionaries({model: st.fixed_dictionaries({}, optional={
         "reasoning": st.sampled_from(["low", "high", "xhigh"])}) for model in GOOD}),
     "default": st.fixed_dictionaries({"model": st.sampled_from(GOOD)}, optional={
         "backend": st.sampled_from(["claude", "pi"])})},
    optional={
        "operations": st.fixed_dictionaries({}, optional={
            "spec_panel": st.fixed_dictionaries({}, optional={
                "default": clean_entries,
                "workers": st.dictionaries(st.sampled_from(sorted(DECLARED["spec_panel"])),
                                           clean_entries)}),
            "implement": st.fixed_dictionaries({}, optional={"default": clean_entries})}),
        "limits": st.fixed_dictionaries({}, optional={"rounds": st.integers(0, 5)}),
        "runtime": st.lists(st.sampled_from([".venv", "/opt/tools", "x"]), unique=True),
    },
)
clean_maps = st.fixed_dictionaries(
    {"schema_version": st.just(1),
     "models": st.dictionaries(
         st.sampled_from(GOOD),
         st.dictionaries(st.sampled_from(["claude", "pi"]), st.sampled_from(["p/m", "m"]),
                         min_size=1))},
)


def mostly(common: st.SearchStrategy[Any], rare: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.integers(0, 3).flatmap(lambda pick: rare if pick == 0 else common)


def as_file(shaped: st.SearchStrategy[Any]) -> st.SearchStrategy[bytes | None]:
    """A file's bytes: a shaped value, any JSON value, any text or any bytes; or no file."""
    texts = st.one_of(shaped.map(json.dumps), json_values.map(json.dumps), st.text(max_size=40))
    files = st.one_of(st.none(), texts.map(str.encode), st.binary(max_size=40))
    return mostly(shaped.map(json.dumps).map(str.encode), files)


environs = st.fixed_dictionaries(
    {"HOME": st.sampled_from(["/home/dev", "/home/dev", "", "dev"]), "PATH": st.just("/usr/bin")},
    optional={
        "CONCORDE_MODEL_MAP": st.sampled_from(["", MAP, "rel/models.json"]),
        "XDG_CONFIG_HOME": st.sampled_from(["", "x", "/home/dev/.config"]),
        "CONCORDE_PI": st.sampled_from(["", "/opt/pi", "pi"]),
    },
)


def check(result: object, map_data: bytes | None) -> None:
    if isinstance(result, Refusal):
        assert result.reason is REFUSAL_REASONS[result.code]
        assert result.file in FILES_NAMED, result
        assert result.file in result.message
        return
    assert isinstance(result, ResolvedWorker), result
    assert map_data is not None
    ids = json.loads(map_data)["models"][result.model]
    assert result.local_model == ids[result.backend]


@given(
    config=as_file(mostly(clean_configs, configs)),
    model_map=as_file(mostly(clean_maps, model_maps)), retired=st.booleans(),
    environ=environs, programs=st.sets(st.sampled_from(["/usr/bin/claude", "/usr/bin/pi",
                                                          "/opt/pi"])),
    operation=st.sampled_from(sorted(DECLARED)), data=st.data(),
)
def test_the_reader_never_raises(
    config: bytes | None, model_map: bytes | None, retired: bool, environ: Mapping[str, str],
    programs: set[str], operation: str, data: st.DataObject,
) -> None:
    files: dict[str, bytes] = {RETIRED: b"{}"} if retired else {}
    files |= {path: body for path, body in ((CONFIG, config), (MAP, model_map)) if body is not None}
    reader = ConfigurationReader(FakeFiles(files, programs), environ)
    workers = sorted(DECLARED[operation])
    worker = data.draw(st.sampled_from(workers))
    check(reader.resolve_worker(WT, operation, worker, DECLARED), model_map)
    many = reader.check_operation(WT, operation, workers, DECLARED)
    for result in many if isinstance(many, list) else [many]:
        check(result, model_map)


CONFIG_VALIDATOR = validator("contract.workers.worker-configuration")
MAP_VALIDATOR = validator("contract.workers.model-map")


@given(st.one_of(configs, json_values))
def test_the_configuration_schema_check_is_the_contract_s(data: Any) -> None:
    assert (configuration_schema_problem(data) is None) == CONFIG_VALIDATOR.is_valid(data)


@given(st.one_of(model_maps, json_values))
def test_the_model_map_check_is_at_least_the_contract_s(data: Any) -> None:
    problem = model_map_problem(data)
    if problem is None:
        assert MAP_VALIDATOR.is_valid(data)
    elif MAP_VALIDATOR.is_valid(data):
        assert "project model name" in problem or "gives the model no id" in problem


@pytest.mark.parametrize("number", ["1e308", str(10**400), "-1e308", str(2**64)])
def test_huge_numbers_are_answered(number: str) -> None:
    config = (
        '{"schema_version": 2, "enabled_models": {"m": {}}, "default": {"model": "m"}, '
        f'"limits": {{"timeout_seconds": {number}, "max_turns": {number}}}}}'
    )
    fs = FakeFiles({CONFIG: config.encode()}, {"/usr/bin/pi"})
    result = ConfigurationReader(fs, {"HOME": "/home/dev"}).resolve_worker(
        WT, "implement", "coder", DECLARED)
    check(result, None)
