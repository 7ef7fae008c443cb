"""The configuration reader: seed 002 "Worker configuration" and "Model map", seed 000 "Refusals
before a run" and its requirements on models."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from fakes.program_versions import FakeProgramVersions

from concorde_workers.application.setup.config import ConfigurationReader
from concorde_workers.container import PROFILES
from concorde_workers.contracts import load
from concorde_workers.domain.configuration import config as domain
from concorde_workers.domain.configuration.config import (
    DEFAULT_BACKEND_SOURCE,
    Limits,
    ResolvedWorker,
    WorkerConfiguration,
    parse_configuration,
)
from concorde_workers.domain.configuration.profile import levels_of, programs_of
from concorde_workers.domain.configuration.program_versions import ProgramLocation
from concorde_workers.domain.configuration.worker_choice import choose
from concorde_workers.domain.ground.codes import REFUSAL_REASONS
from concorde_workers.domain.ground.errors import Reason, Refusal
from concorde_workers.ports.machine.filesystem import EntryKind, FileStat, FileSystemError

PROGRAMS = programs_of(PROFILES)
LEVELS = levels_of(PROFILES)

WT = "/repo/.claude/worktrees/wt"
CONFIG = f"{WT}/.concorde/workers.json"
RETIRED = f"{WT}/.concorde/worker-models.json"
HOME = "/home/dev"
MAP = f"{HOME}/.config/concorde/models.json"
ENV = {"HOME": HOME, "PATH": "/usr/bin:/bin"}
DECLARED = {"spec_panel": {"reviewer1", "reviewer2", "chair"}, "implement": {"coder", "reviewer"}}
EXAMPLE_CONFIG: dict[str, Any] = load("contract.workers.worker-configuration").example
EXAMPLE_MAP: dict[str, Any] = load("contract.workers.model-map").example


@dataclass
class FakeFiles:
    """The port methods the reader needs, over an in-memory tree of files (no links: a path is
    its own real path)."""

    files: dict[str, str | bytes] = field(default_factory=dict)
    programs: set[str] = field(default_factory=lambda: {"/usr/bin/claude", "/usr/bin/pi"})
    unreadable: set[str] = field(default_factory=set)
    reads: list[str] = field(default_factory=list)

    def read_text(self, path: str) -> str:
        self.reads.append(path)
        if path in self.unreadable:
            raise FileSystemError(path, "read_text", "Permission denied", 13)
        if path not in self.files:
            raise FileSystemError(path, "read_text", "No such file or directory", 2)
        data = self.files[path]
        return data.decode("utf-8") if isinstance(data, bytes) else data

    def exists(self, path: str) -> bool:
        return path in self.files or any(f.startswith(path + "/") for f in self.files)

    def realpath(self, path: str) -> str:
        return path

    def stat(self, path: str) -> FileStat:
        if path in self.files:
            data = self.files[path]
            size = len(data if isinstance(data, bytes) else data.encode())
            return FileStat(kind=EntryKind.FILE, mode=0o644, size=size, uid=0, mtime=0.0)
        if self.exists(path):
            return FileStat(kind=EntryKind.DIRECTORY, mode=0o755, size=0, uid=0, mtime=0.0)
        raise FileSystemError(path, "stat", "No such file or directory", 2)

    def which(self, program: str, search_path: str) -> str | None:
        if "/" in program:
            return program if program in self.programs else None
        found = (f"{d}/{program}" for d in search_path.split(":") if d)
        return next((p for p in found if p in self.programs), None)


def files(config: Any = EXAMPLE_CONFIG, model_map: Any = None, **more: str | bytes) -> FakeFiles:
    """A worktree holding `config` and a machine holding `model_map` (None: no file)."""
    out: dict[str, str | bytes] = dict(more)
    if config is not None:
        out[CONFIG] = config if isinstance(config, str | bytes) else json.dumps(config)
    if model_map is not None:
        out[MAP] = model_map if isinstance(model_map, str | bytes) else json.dumps(model_map)
    return FakeFiles(out)


def full_map() -> dict[str, Any]:
    """The contract's example map, plus the example configuration's default model on pi."""
    data = copy.deepcopy(EXAMPLE_MAP)
    data["models"]["claude-sonnet-5"] = {"pi": "anthropic/claude-sonnet-5"}
    return data


def resolve(
    fs: FakeFiles,
    operation: str = "spec_panel",
    worker: str = "reviewer2",
    environ: Mapping[str, str] = ENV,
) -> ResolvedWorker | Refusal:
    return ConfigurationReader(fs, environ, profiles=PROFILES).resolve_worker(
        WT, operation, worker, DECLARED
    )


def refused(result: object, code: str, file: str) -> Refusal:
    """`result` is a refusal with `code`, its table reason, naming `file` in field and message."""
    assert isinstance(result, Refusal), result
    assert result.code == code, result.message
    assert result.reason is REFUSAL_REASONS[code]
    assert result.file == file
    assert file in result.message
    return result


def with_(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(EXAMPLE_CONFIG)
    data.update(changes)
    return data


# ------------------------------------------------------------------ the table, row by row

SPEC_TABLE = [
    ("config_missing", "input"),
    ("config_invalid", "input"),
    ("model_not_enabled", "input"),
    ("model_unresolved", "input"),
    ("backend_missing", "environment"),
    ("model_map_missing", "environment"),
    ("model_map_invalid", "environment"),
    ("model_unmapped", "environment"),
]


@pytest.mark.req("Every refusal before a run has its fixed reason")
@pytest.mark.parametrize(("code", "reason"), SPEC_TABLE)
def test_each_code_has_the_reason_of_the_table(code: str, reason: str) -> None:
    assert REFUSAL_REASONS[code] is Reason(reason)
    assert domain.refusal(code, "m", "/f").reason is Reason(reason)


def test_the_table_has_exactly_the_spec_rows() -> None:
    assert list(REFUSAL_REASONS) == [code for code, _ in SPEC_TABLE]


# ------------------------------------------------------------------ the contract's example


@pytest.mark.req("A worker's model comes from its worker configuration alone")
@pytest.mark.parametrize(
    ("worker", "expected"),
    [
        (
            "reviewer1",
            (
                "pi",
                DEFAULT_BACKEND_SOURCE,
                "claude-sonnet-5",
                "default",
                "medium",
                "enabled_models.claude-sonnet-5",
                "anthropic/claude-sonnet-5",
                "/usr/bin/pi",
            ),
        ),
        (
            "reviewer2",
            (
                "pi",
                DEFAULT_BACKEND_SOURCE,
                "gpt-6-astra",
                "operations.spec_panel.workers.reviewer2",
                "high",
                "operations.spec_panel.workers.reviewer2",
                "local-openai/gpt-6-astra",
                "/usr/bin/pi",
            ),
        ),
        (
            "chair",
            (
                "claude",
                "operations.spec_panel.workers.chair",
                "claude-opus-5-5",
                "operations.spec_panel.workers.chair",
                None,
                None,
                "claude-opus-5-5",
                "/usr/bin/claude",
            ),
        ),
    ],
)
def test_the_contract_example_resolves(worker: str, expected: tuple[Any, ...]) -> None:
    result = resolve(files(model_map=full_map()), worker=worker)
    assert isinstance(result, ResolvedWorker), result
    got = (
        result.backend,
        result.backend_source,
        result.model,
        result.model_source,
        result.reasoning,
        result.reasoning_source,
        result.local_model,
        result.program,
    )
    assert got == expected
    assert (result.configuration, result.model_map) == (CONFIG, MAP)
    assert (result.operation, result.worker) == ("spec_panel", worker)


def test_limits_of_the_example_and_their_defaults() -> None:
    result = resolve(files(model_map=full_map()))
    assert isinstance(result, ResolvedWorker)
    assert result.limits == Limits(
        timeout_seconds=1800,
        max_turns=200,
        max_budget_usd=None,
        rounds=3,
        retries=5,
        retry_delay_seconds=15,
    )


def test_limits_given_are_kept_and_integral_numbers_become_integers() -> None:
    limits = {
        "timeout_seconds": 60.5,
        "max_turns": 7.0,
        "max_budget_usd": 2,
        "rounds": 0,
        "retries": 1,
        "retry_delay_seconds": 0,
    }
    result = resolve(files(with_(limits=limits), full_map()))
    assert isinstance(result, ResolvedWorker)
    assert result.limits.model_dump() == {**limits, "max_turns": 7}
    assert isinstance(result.limits.max_turns, int)


@pytest.mark.req("A worker's model comes from its worker configuration alone")
def test_nothing_of_the_developer_s_agent_settings_is_read() -> None:
    fs = files(
        model_map=full_map(),
        **{
            f"{HOME}/.claude/settings.json": json.dumps({"model": "opus"}),
            f"{HOME}/.pi/agent/settings.json": json.dumps({"defaultModel": "x/y"}),
        },
    )
    env = {**ENV, "ANTHROPIC_MODEL": "opus", "PI_MODEL": "x/y", "CLAUDE_CODE_EFFORT_LEVEL": "max"}
    result = resolve(fs, worker="chair", environ=env)
    assert isinstance(result, ResolvedWorker)
    assert (result.model, result.local_model, result.reasoning) == (
        "claude-opus-5-5",
        "claude-opus-5-5",
        None,
    )
    assert fs.reads == [CONFIG, MAP]


# ------------------------------------------------------------------ precedence, table-driven

M = {"a": {}, "b": {"reasoning": "medium"}, "c": {}}
PRECEDENCE = [
    # (default, operation default, worker entry) -> backend, its source, model, its source,
    # level, its source
    ({"model": "a"}, None, None, ("pi", DEFAULT_BACKEND_SOURCE, "a", "default", None, None)),
    (
        {"model": "a", "backend": "claude"},
        {"model": "c"},
        {"reasoning": "high"},
        (
            "claude",
            "default",
            "c",
            "operations.implement.default",
            "high",
            "operations.implement.workers.coder",
        ),
    ),
    (
        {"backend": "claude"},
        {"backend": "pi"},
        {"model": "a"},
        (
            "pi",
            "operations.implement.default",
            "a",
            "operations.implement.workers.coder",
            None,
            None,
        ),
    ),
    (
        {"backend": "pi"},
        {"backend": "pi"},
        {"backend": "claude", "model": "a"},
        (
            "claude",
            "operations.implement.workers.coder",
            "a",
            "operations.implement.workers.coder",
            None,
            None,
        ),
    ),
    # the level: the entry that chose the model ...
    (
        {"reasoning": "low"},
        None,
        {"model": "b", "reasoning": "high"},
        (
            "pi",
            DEFAULT_BACKEND_SOURCE,
            "b",
            "operations.implement.workers.coder",
            "high",
            "operations.implement.workers.coder",
        ),
    ),
    # ... or a more specific one ...
    (
        {"model": "b", "reasoning": "low"},
        None,
        {"reasoning": "xhigh"},
        (
            "pi",
            DEFAULT_BACKEND_SOURCE,
            "b",
            "default",
            "xhigh",
            "operations.implement.workers.coder",
        ),
    ),
    (
        {"model": "a"},
        {"reasoning": "minimal"},
        {"reasoning": "off"},
        ("pi", DEFAULT_BACKEND_SOURCE, "a", "default", "off", "operations.implement.workers.coder"),
    ),
    # ... else the model's own, before a less specific entry's ...
    (
        {"reasoning": "low"},
        {"model": "b"},
        None,
        (
            "pi",
            DEFAULT_BACKEND_SOURCE,
            "b",
            "operations.implement.default",
            "medium",
            "enabled_models.b",
        ),
    ),
    # ... else one a less specific entry sets ...
    (
        {"reasoning": "low"},
        {"reasoning": "high"},
        {"model": "a"},
        (
            "pi",
            DEFAULT_BACKEND_SOURCE,
            "a",
            "operations.implement.workers.coder",
            "high",
            "operations.implement.default",
        ),
    ),
    (
        {"reasoning": "low"},
        None,
        {"model": "c"},
        ("pi", DEFAULT_BACKEND_SOURCE, "c", "operations.implement.workers.coder", "low", "default"),
    ),
    # ... else none
    (
        {"backend": "claude"},
        {"model": "c"},
        {"backend": "claude"},
        (
            "claude",
            "operations.implement.workers.coder",
            "c",
            "operations.implement.default",
            None,
            None,
        ),
    ),
]


def _config(default: Any, op_default: Any, worker: Any) -> WorkerConfiguration:
    data: dict[str, Any] = {"schema_version": 2, "enabled_models": M}
    if default is not None:
        data["default"] = default
    op: dict[str, Any] = {}
    if op_default is not None:
        op["default"] = op_default
    if worker is not None:
        op["workers"] = {"coder": worker}
    data["operations"] = {"implement": op, "spec_panel": {"default": {"model": "c"}}}
    config = parse_configuration(data, CONFIG, levels=LEVELS)
    assert isinstance(config, WorkerConfiguration), config
    return config


@pytest.mark.req("A worker's model comes from its worker configuration alone")
@pytest.mark.parametrize(("default", "op_default", "worker", "expected"), PRECEDENCE)
def test_the_most_specific_entry_wins_and_the_level_rules_hold(
    default: Any, op_default: Any, worker: Any, expected: tuple[Any, ...]
) -> None:
    choice = choose(_config(default, op_default, worker), "implement", "coder", LEVELS)
    assert not isinstance(choice, Refusal), choice
    assert (
        choice.backend,
        choice.backend_source,
        choice.model,
        choice.model_source,
        choice.reasoning,
        choice.reasoning_source,
    ) == expected


def test_another_operation_s_entries_do_not_apply() -> None:
    choice = choose(_config({"model": "a"}, {"model": "b"}, None), "spec_panel", "chair", LEVELS)
    assert not isinstance(choice, Refusal)
    assert (choice.model, choice.model_source) == ("c", "operations.spec_panel.default")


# ------------------------------------------------------------------ refusals of the configuration


@pytest.mark.req("A worker without a settled model is refused")
def test_a_worktree_without_the_configuration_is_refused() -> None:
    result = refused(resolve(files(config=None, model_map=full_map())), "config_missing", CONFIG)
    assert "commit" in result.message and "enabled_models" in result.message


def test_the_retired_file_is_refused_with_how_to_move_it() -> None:
    fs = files(config=None, model_map=full_map(), **{RETIRED: "{}"})
    result = refused(resolve(fs), "config_invalid", RETIRED)
    assert MAP in result.message and "enabled_models" in result.message
    assert "delete" in result.message


def test_the_retired_file_beside_a_configuration_is_ignored() -> None:
    fs = files(model_map=full_map(), **{RETIRED: "{}"})
    assert isinstance(resolve(fs), ResolvedWorker)


def test_schema_version_1_is_refused_with_how_to_rewrite_it() -> None:
    v1 = {"schema_version": 1, "default": {"model": "anthropic/claude-opus-5-5"}}
    result = refused(resolve(files(v1, full_map())), "config_invalid", CONFIG)
    for words in ("schema_version 1", "local id", "enabled_models", MAP, "schema_version 2"):
        assert words in result.message


INVALID = [
    (
        '{"schema_version": 2, "schema_version": 2, "enabled_models": {"a": {}}}',
        'duplicate key "schema_version"',
    ),
    ('{"schema_version": 2,\n "enabled_models": {]}', "line 2, column 21"),
    ('{"schema_version": 2, "enabled_models": {"a": {}}, "x": NaN}', "NaN"),
    (b'{"schema_version": 2, "enabled_models": {"\xff": {}}}', "unreadable"),
    ("[]", "JSON object"),
    (with_(extra=1), 'unknown field "extra"'),
    (with_(schema_version=3), "schema_version is 3"),
    (with_(schema_version=True), "schema_version is true"),
    ({"schema_version": 2}, "required field enabled_models"),
    (with_(enabled_models={}), "enabled_models is empty"),
    (with_(enabled_models={"-a": {}}), '"-a", which is not a project model name'),
    (with_(enabled_models={"a": {"effort": "x"}}), "enabled_models.a has the unknown field"),
    (with_(default={}), "default is empty"),
    (
        with_(default={"model": "claude-sonnet-5", "effort": "high"}),
        "default has the unknown field",
    ),
    (with_(default={"backend": "gemini"}), 'default.backend is "gemini"'),
    (with_(default={"model": " a"}), "default.model"),
    (with_(default={"model": "anthropic/claude-opus-5-5"}), "not a project model name"),
    (
        with_(default={"model": "claude-sonnet-5", "reasoning": "ultra"}),
        '"ultra", which no backend',
    ),
    (
        with_(operations={"spec_panel": {"chair": {}}}),
        "operations.spec_panel has the unknown field",
    ),
    (
        with_(operations={"deploy": {"default": {"model": "not-enabled"}}}),
        "operations.deploy names an Operation the caller does not declare",
    ),
    (
        with_(operations={"spec_panel": {"workers": {"intern": {"model": "gpt-6-astra"}}}}),
        "operations.spec_panel.workers.intern names a worker id",
    ),
    (with_(limits={"max_turns": 0}), "limits.max_turns is 0"),
    (with_(limits={"rounds": 1.5}), "limits.rounds is 1.5"),
    (with_(limits={"timeout_seconds": "60"}), "limits.timeout_seconds"),
    (with_(limits={"max_budget_usd": 0}), "limits.max_budget_usd"),
    (with_(limits={"turns": 3}), 'limits has the unknown field "turns"'),
    (with_(runtime=[".venv", ".venv"]), 'runtime lists ".venv" twice'),
    (with_(runtime="node_modules"), "runtime must be an array"),
    (with_(runtime=["."]), "the workspace itself or a folder above it"),
    (with_(runtime=["a/../.."]), "the workspace itself or a folder above it"),
    (with_(runtime=["/repo"]), "holds the workspace"),
]


@pytest.mark.req("Every refusal before a run has its fixed reason")
@pytest.mark.parametrize(("config", "words"), INVALID)
def test_an_invalid_configuration_is_refused_with_its_first_problem(
    config: Any, words: str
) -> None:
    result = refused(resolve(files(config, full_map())), "config_invalid", CONFIG)
    assert words in result.message


def test_an_unreadable_configuration_is_refused() -> None:
    fs = files(model_map=full_map())
    fs.unreadable.add(CONFIG)
    result = refused(resolve(fs), "config_invalid", CONFIG)
    assert "Permission denied" in result.message


@pytest.mark.parametrize(
    ("worker", "level", "backend"),
    [("chair", "off", "claude"), ("chair", "minimal", "claude"), ("reviewer2", "max", "pi")],
)
def test_a_level_the_effective_backend_does_not_know_is_refused(
    worker: str, level: str, backend: str
) -> None:
    data = copy.deepcopy(EXAMPLE_CONFIG)
    data["operations"]["spec_panel"]["workers"][worker]["reasoning"] = level
    result = refused(resolve(files(data, full_map()), worker=worker), "config_invalid", CONFIG)
    assert f'"{level}"' in result.message and f"backend {backend}" in result.message


@pytest.mark.parametrize(
    ("backend", "levels"), [("claude", LEVELS["claude"]), ("pi", LEVELS["pi"])]
)
def test_every_level_of_a_backend_is_accepted(backend: str, levels: tuple[str, ...]) -> None:
    assert (
        levels
        == {
            "claude": ("low", "medium", "high", "xhigh", "max"),
            "pi": ("off", "minimal", "low", "medium", "high", "xhigh"),
        }[backend]
    )
    for level in levels:
        data = with_(
            default={"model": "claude-opus-5-5", "backend": backend, "reasoning": level},
            operations={},
        )
        result = resolve(files(data, full_map()), worker="reviewer1")
        assert isinstance(result, ResolvedWorker), result
        assert result.reasoning == level


@pytest.mark.req("A worker without a settled model is refused")
def test_a_model_outside_enabled_models_is_refused() -> None:
    data = copy.deepcopy(EXAMPLE_CONFIG)
    data["operations"]["spec_panel"]["workers"]["chair"]["model"] = "gpt-6.1-sol"
    result = refused(resolve(files(data, full_map())), "model_not_enabled", CONFIG)
    for words in (
        "operations.spec_panel.workers.chair",
        '"gpt-6.1-sol"',
        "claude-sonnet-5, gpt-6-astra, claude-opus-5-5",
        '"gpt-6.1-sol": {} to enabled_models',
    ):
        assert words in result.message


@pytest.mark.req("A worker without a settled model is refused")
def test_a_worker_whose_entries_set_no_model_is_refused() -> None:
    data = with_(default={"backend": "claude"})
    result = refused(
        resolve(files(data, full_map()), worker="reviewer1"), "model_unresolved", CONFIG
    )
    for words in (
        "worker reviewer1 of Operation spec_panel",
        "operations.spec_panel.workers.reviewer1, operations.spec_panel.default and default",
        '"model":',
    ):
        assert words in result.message


def test_an_undeclared_worker_asked_for_is_the_caller_s_bug() -> None:
    with pytest.raises(ValueError, match="intern"):
        resolve(files(model_map=full_map()), worker="intern")


# ------------------------------------------------------------------ the program


@pytest.mark.parametrize(
    ("worker", "env", "program", "source", "other"),
    [
        ("chair", {}, "claude", "operations.spec_panel.workers.chair", '"backend": "pi"'),
        ("reviewer2", {}, "pi", DEFAULT_BACKEND_SOURCE, '"backend": "claude" in default'),
        (
            "reviewer2",
            {"CONCORDE_PI": "/opt/pi/bin/pi"},
            "/opt/pi/bin/pi",
            DEFAULT_BACKEND_SOURCE,
            "CONCORDE_PI",
        ),
        (
            "chair",
            {"CONCORDE_CLAUDE": "/opt/claude"},
            "/opt/claude",
            "operations.spec_panel.workers.chair",
            "CONCORDE_CLAUDE",
        ),
    ],
)
def test_a_missing_program_is_refused(
    worker: str, env: dict[str, str], program: str, source: str, other: str
) -> None:
    fs = files(model_map=full_map())
    fs.programs = {"/usr/bin/claude", "/usr/bin/pi"} - {f"/usr/bin/{program}"}
    result = refused(resolve(fs, worker=worker, environ={**ENV, **env}), "backend_missing", CONFIG)
    for words in (f"worker {worker}", f"program {program}", f"from {source}", other):
        assert words in result.message


@pytest.mark.parametrize(
    ("worker", "program", "older", "other"),
    [
        ("chair", "claude", "2.1.197", '"backend": "pi"'),
        ("reviewer2", "pi", "0.70.0", '"backend": "claude" in default'),
    ],
)
def test_a_program_older_than_the_policy_relies_on_is_refused(
    worker: str, program: str, older: str, other: str
) -> None:
    """Issue 11: the reader asks the program's version (the ProgramVersions port) and refuses
    an older one with the same code as a missing one, naming the version, the minimum and the
    upgrade; a new enough one resolves."""
    fs = files(model_map=full_map())
    versions = FakeProgramVersions(versions={program: older})
    result = refused(
        ConfigurationReader(fs, ENV, versions, profiles=PROFILES).resolve_worker(
            WT, "spec_panel", worker, DECLARED
        ),
        "backend_missing",
        CONFIG,
    )
    row = PROGRAMS[program]
    for words in (
        f"worker {worker}",
        f"/usr/bin/{program} is version {older}",
        f"older than {row.minimum}",
        row.upgrade,
        other,
    ):
        assert words in result.message
    fresh = FakeProgramVersions(versions={program: row.minimum})
    resolved = ConfigurationReader(fs, ENV, fresh, profiles=PROFILES).resolve_worker(
        WT, "spec_panel", worker, DECLARED
    )
    assert isinstance(resolved, ResolvedWorker) and resolved.program == f"/usr/bin/{program}"
    assert fresh.asked == [ProgramLocation(spec=PROGRAMS[program], path=f"/usr/bin/{program}")]


def test_the_program_variables_choose_the_program() -> None:
    fs = files(model_map=full_map())
    fs.programs = {"/opt/pi", "/opt/claude"}
    env = {**ENV, "CONCORDE_PI": "/opt/pi", "CONCORDE_CLAUDE": "/opt/claude"}
    result = ConfigurationReader(fs, env, profiles=PROFILES).check_operation(
        WT, "spec_panel", ["reviewer2", "chair"], DECLARED
    )
    assert isinstance(result, list)
    assert [r.program for r in result] == ["/opt/pi", "/opt/claude"]


# ------------------------------------------------------------------ the model map


@pytest.mark.req("A worker's local model id comes from the model map alone")
def test_the_local_id_is_the_map_s_never_the_project_name() -> None:
    data = copy.deepcopy(full_map())
    data["models"]["claude-opus-5-5"]["claude"] = "claude-opus-5-5-20991231"
    result = resolve(files(model_map=data), worker="chair")
    assert isinstance(result, ResolvedWorker)
    assert (result.model, result.local_model) == ("claude-opus-5-5", "claude-opus-5-5-20991231")


@pytest.mark.parametrize(
    ("env", "path"),
    [
        ({"CONCORDE_MODEL_MAP": "/etc/m.json"}, "/etc/m.json"),
        ({"CONCORDE_MODEL_MAP": "", "XDG_CONFIG_HOME": "/x"}, "/x/concorde/models.json"),
        ({"XDG_CONFIG_HOME": "/x"}, "/x/concorde/models.json"),
        ({"XDG_CONFIG_HOME": "x"}, MAP),
        ({"XDG_CONFIG_HOME": ""}, MAP),
        ({}, MAP),
    ],
)
def test_the_map_is_found_where_the_contract_says(env: dict[str, str], path: str) -> None:
    fs = files(**{path: json.dumps(full_map())})
    result = resolve(fs, environ={**ENV, **env})
    assert isinstance(result, ResolvedWorker), result
    assert result.model_map == path


@pytest.mark.req("A worker the model map cannot place is refused")
@pytest.mark.req("A refusal of the model map names the map")
def test_a_missing_map_is_refused_showing_what_it_holds() -> None:
    result = refused(resolve(files(), worker="chair"), "model_map_missing", MAP)
    assert '{"schema_version": 1, "models": {"claude-opus-5-5": {"claude": "<model id>"}}}' in (
        result.message
    )


@pytest.mark.req("A worker the model map cannot place is refused")
@pytest.mark.req("A refusal of the model map names the map")
def test_a_map_that_cannot_be_located_is_refused() -> None:
    result = resolve(files(model_map=full_map()), environ={"PATH": "/usr/bin"})
    refused(result, "model_map_missing", "~/.config/concorde/models.json")
    assert isinstance(result, Refusal) and "CONCORDE_MODEL_MAP" in result.message


@pytest.mark.req("A worker the model map cannot place is refused")
@pytest.mark.req("A refusal of the model map names the map")
def test_a_relative_concorde_model_map_is_refused_naming_it() -> None:
    result = resolve(files(model_map=full_map()), environ={**ENV, "CONCORDE_MODEL_MAP": "m.json"})
    refused(result, "model_map_invalid", "m.json")


MAP_INVALID = [
    ('{"schema_version": 1, "models": {"a": {"pi": "x"}, "a": {"pi": "y"}}}', 'duplicate key "a"'),
    ('{"schema_version": 1,\n  "models": {,}}', "line 2, column 14"),
    (b"\xfe\xff", "unreadable"),
    ({"schema_version": 1, "models": {}, "extra": {}}, 'unknown field "extra"'),
    ({"schema_version": 1, "models": {"a": {"gemini": "x"}}}, "models.a has the unknown field"),
    ({"schema_version": 1, "models": {"gpt-6-astra": {}}}, "gives the model no id"),
    ({"schema_version": 1, "models": {"gpt 6": {"pi": "x"}}}, "not a project model name"),
    ({"schema_version": 1, "models": {"gpt-6-astra": {"pi": ""}}}, "models.gpt-6-astra.pi"),
    ({"schema_version": 2, "models": {}}, "schema_version is 2"),
    ({"schema_version": 1}, "required field models"),
    ({"schema_version": 1, "models": []}, "models must be an object"),
    ("null", "JSON object"),
]


@pytest.mark.req("A worker the model map cannot place is refused")
@pytest.mark.req("A refusal of the model map names the map")
@pytest.mark.parametrize(("model_map", "words"), MAP_INVALID)
def test_a_malformed_map_is_refused(model_map: Any, words: str) -> None:
    result = refused(resolve(files(model_map=model_map)), "model_map_invalid", MAP)
    assert words in result.message


@pytest.mark.req("A refusal of the model map names the map")
def test_an_unreadable_map_is_refused() -> None:
    fs = files(model_map=full_map())
    fs.unreadable.add(MAP)
    assert "Permission denied" in refused(resolve(fs), "model_map_invalid", MAP).message


@pytest.mark.req("A worker the model map cannot place is refused")
@pytest.mark.req("An unmapped model's refusal names the entry to add")
def test_an_unmapped_model_names_the_exact_entry_to_add() -> None:
    result = refused(
        resolve(files(model_map=EXAMPLE_MAP), worker="reviewer1"), "model_unmapped", MAP
    )
    for words in (
        '"claude-sonnet-5": {"pi": "<provider/id>"}',
        'under "models"',
        "worker reviewer1 of Operation spec_panel",
        "(from default)",
        f"(from {DEFAULT_BACKEND_SOURCE})",
    ):
        assert words in result.message


@pytest.mark.req("An unmapped model's refusal names the entry to add")
def test_a_model_mapped_on_the_other_backend_names_the_whole_entry() -> None:
    data = copy.deepcopy(full_map())
    data["models"]["claude-opus-5-5"] = {"pi": "anthropic/claude-opus-5-5"}
    result = refused(resolve(files(model_map=data), worker="chair"), "model_unmapped", MAP)
    assert (
        '"claude-opus-5-5": {"pi": "anthropic/claude-opus-5-5", "claude": "<model id>"}'
        in result.message
    )


@pytest.mark.req("An Operation's workers are checked against the map at once")
@pytest.mark.req("An unmapped model's refusal names the entry to add")
def test_an_operation_s_workers_are_checked_at_once() -> None:
    data = with_(
        operations={
            "spec_panel": {
                "default": {"model": "gpt-6-astra"},
                "workers": {
                    "chair": {"backend": "claude"},
                    "reviewer2": {"backend": "claude"},
                    "reviewer1": {"model": "claude-sonnet-5"},
                },
            }
        }
    )
    model_map = {"schema_version": 1, "models": {"gpt-6-astra": {"pi": "local/gpt-6-astra"}}}
    result = ConfigurationReader(files(data, model_map), ENV, profiles=PROFILES).check_operation(
        WT, "spec_panel", ["reviewer1", "reviewer2", "chair"], DECLARED
    )
    refusal = refused(result, "model_unmapped", MAP)
    message = refusal.message
    for words in (
        "worker reviewer1 of Operation spec_panel: model claude-sonnet-5 (from operations."
        "spec_panel.workers.reviewer1) on backend pi",
        "worker reviewer2 of Operation spec_panel: model gpt-6-astra (from operations."
        "spec_panel.default) on backend claude (from operations.spec_panel.workers.reviewer2)",
        "worker chair of Operation spec_panel: model gpt-6-astra",
        '"claude-sonnet-5": {"pi": "<provider/id>"}',
        '"gpt-6-astra": {"pi": "local/gpt-6-astra", "claude": "<model id>"}',
    ):
        assert words in message
    assert message.count('"gpt-6-astra":') == 1


def test_an_operation_s_workers_resolve_in_the_order_asked() -> None:
    result = ConfigurationReader(
        files(model_map=full_map()), ENV, profiles=PROFILES
    ).check_operation(WT, "spec_panel", ["chair", "reviewer1"], DECLARED)
    assert isinstance(result, list)
    assert [(r.worker, r.local_model) for r in result] == [
        ("chair", "claude-opus-5-5"),
        ("reviewer1", "anthropic/claude-sonnet-5"),
    ]


# ------------------------------------------------------------------ runtime paths


@pytest.mark.parametrize(
    ("runtime", "present", "expected"),
    [
        (None, [".venv/bin/python"], [f"{WT}/.venv"]),
        (None, [".venv/x", "node_modules/y"], [f"{WT}/.venv", f"{WT}/node_modules"]),
        (None, [], []),
        (
            ["docsite/node_modules", "/opt/tools", "gone"],
            ["docsite/node_modules/a"],
            [f"{WT}/docsite/node_modules", "/opt/tools"],
        ),
        ([".venv", f"{WT}/.venv", "./.venv/"], [".venv/x"], [f"{WT}/.venv"]),
        ([], [".venv/x"], []),
    ],
)
def test_runtime_paths_that_exist(
    runtime: list[str] | None, present: list[str], expected: list[str]
) -> None:
    data = copy.deepcopy(EXAMPLE_CONFIG)
    del data["runtime"]
    if runtime is not None:
        data["runtime"] = runtime
    fs = files(data, full_map(), **{f"{WT}/{p}": "" for p in present}, **{"/opt/tools/t": ""})
    result = resolve(fs)
    assert isinstance(result, ResolvedWorker), result
    assert list(result.runtime) == expected


def test_the_worktree_must_be_absolute_and_is_normalized() -> None:
    reader = ConfigurationReader(files(model_map=full_map()), ENV, profiles=PROFILES)
    with pytest.raises(ValueError, match="absolute"):
        reader.resolve_worker("repo/wt", "spec_panel", "chair", DECLARED)
    result = reader.resolve_worker(f"{WT}/", "spec_panel", "chair", DECLARED)
    assert isinstance(result, ResolvedWorker) and result.configuration == CONFIG
