"""The configuration reader never raises on what the two files hold: every answer is a resolved
worker or a refusal with its table reason naming the file, and every schema problem is worded
(none falls back to jsonschema's own message)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from concorde_workers.application.setup.config import ConfigurationReader
from concorde_workers.container import PROFILES
from concorde_workers.domain.configuration.config import ResolvedWorker
from concorde_workers.domain.ground.codes import REFUSAL_REASONS
from concorde_workers.domain.ground.errors import Refusal
from concorde_workers.ports.machine.filesystem import EntryKind, FileStat, FileSystemError

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

    def realpath(self, path: str) -> str:
        return path

    def stat(self, path: str) -> FileStat:
        if path not in self.files:
            raise FileSystemError(path, "stat", "No such file or directory", 2)
        return FileStat(kind=EntryKind.FILE, mode=0o644, size=len(self.files[path]), uid=0, mtime=0)

    def which(self, program: str, search_path: str) -> str | None:
        full = program if "/" in program else f"/usr/bin/{program}"
        return full if full in self.programs else None


GOOD = ["claude-sonnet-5", "gpt-6-astra", "claude-opus-5-5"]
WORDS = [
    *GOOD,
    "a.b_c-1",
    "-bad",
    "x/y",
    "off",
    "low",
    "max",
    "ultra",
    " low",
    "reviewer1",
    "chair",
    "coder",
    "intern",
    "timeout_seconds",
    "rounds",
    "turns",
    "schema_version",
    "enabled_models",
    "default",
    "operations",
    "limits",
    "runtime",
    "backend",
    "model",
    "reasoning",
    "workers",
    "models",
    "claude",
    "pi",
    "spec_panel",
    "implement",
    "",
    ".venv",
    ".",
    "..",
    "/repo",
]
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-3, 10**12)
    | st.floats(-1e12, 1e12, allow_nan=False)
    | st.sampled_from(WORDS)
    | st.text(max_size=6)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(WORDS) | st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=25,
)


def some(values: list[Any]) -> st.SearchStrategy[Any]:
    """Mostly the given values, sometimes anything."""
    return st.sampled_from(values) | json_values


names = st.sampled_from([*GOOD, "-bad", "x/y"]) | st.text(max_size=4)
entries = st.dictionaries(
    st.sampled_from(["backend", "model", "reasoning", "effort"]),
    some(["claude", "pi", "codex", *WORDS]),
    max_size=3,
)
configs = st.fixed_dictionaries(
    {
        "schema_version": some([2, 2, 2, 2.0, 1, 3, True]),
        "enabled_models": st.dictionaries(
            names,
            st.dictionaries(st.just("reasoning"), some(["low", "max", "ultra"]), max_size=1),
            max_size=3,
        ),
    },
    optional={
        "default": entries,
        "operations": st.dictionaries(
            st.sampled_from(["spec_panel", "implement", "deploy"]),
            st.fixed_dictionaries(
                {},
                optional={
                    "default": entries,
                    "workers": st.dictionaries(
                        st.sampled_from(["chair", "coder", "intern"]), entries, max_size=2
                    ),
                },
            ),
            max_size=2,
        ),
        "limits": st.dictionaries(
            st.sampled_from(["timeout_seconds", "rounds", "turns"]),
            some([0, 1, 2.5, -1, 10**400, 1e300]),
            max_size=2,
        ),
        "runtime": st.lists(some([".venv", ".", "/repo", "/opt/tools", ""]), max_size=3),
        "extra": json_values,
    },
)
model_maps = st.fixed_dictionaries(
    {
        "schema_version": some([1, 1, 2]),
        "models": st.dictionaries(
            names,
            st.dictionaries(
                st.sampled_from(["claude", "pi", "codex"]), some(["local/m", "", " x"]), max_size=2
            ),
            max_size=3,
        ),
    },
)


# Near-valid files, so that runs reach the model map, the placement and the program.
clean_entries = st.fixed_dictionaries(
    {},
    optional={
        "backend": st.sampled_from(["claude", "pi"]),
        "model": st.sampled_from([*GOOD, "gpt-6.1-sol"]),
        "reasoning": st.sampled_from(["low", "medium", "off", "max"]),
    },
).filter(bool)
clean_configs = st.fixed_dictionaries(
    {
        "schema_version": st.just(2),
        "enabled_models": st.fixed_dictionaries(
            {
                model: st.fixed_dictionaries(
                    {}, optional={"reasoning": st.sampled_from(["low", "xhigh"])}
                )
                for model in GOOD
            }
        ),
        "default": st.fixed_dictionaries(
            {"model": st.sampled_from(GOOD)},
            optional={"backend": st.sampled_from(["claude", "pi"])},
        ),
    },
    optional={
        "operations": st.fixed_dictionaries(
            {},
            optional={
                "spec_panel": st.fixed_dictionaries(
                    {},
                    optional={
                        "default": clean_entries,
                        "workers": st.dictionaries(
                            st.sampled_from(sorted(DECLARED["spec_panel"])), clean_entries
                        ),
                    },
                ),
                "implement": st.fixed_dictionaries({}, optional={"default": clean_entries}),
            },
        )
    },
)
clean_maps = st.fixed_dictionaries(
    {
        "schema_version": st.just(1),
        "models": st.dictionaries(
            st.sampled_from(GOOD),
            st.dictionaries(
                st.sampled_from(["claude", "pi"]), st.sampled_from(["p/m", "m"]), min_size=1
            ),
        ),
    },
)


def mostly(common: st.SearchStrategy[Any], rare: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.integers(0, 3).flatmap(lambda pick: rare if pick == 0 else common)


def as_file(
    clean: st.SearchStrategy[Any], shaped: st.SearchStrategy[Any]
) -> st.SearchStrategy[bytes | None]:
    """A file's bytes: mostly a near-valid value, else a shaped one, any JSON value, text or
    bytes; or no file."""
    rare = st.one_of(
        st.none(),
        shaped.map(json.dumps).map(str.encode),
        json_values.map(json.dumps).map(str.encode),
        st.text(max_size=40).map(str.encode),
        st.binary(max_size=40),
    )
    return mostly(clean.map(json.dumps).map(str.encode), rare)


environs = st.fixed_dictionaries(
    {"HOME": st.sampled_from(["/home/dev", "/home/dev", "", "dev"]), "PATH": st.just("/usr/bin")},
    optional={
        "CONCORDE_MODEL_MAP": st.sampled_from(["", MAP, "rel/models.json"]),
        "CONCORDE_PI": st.sampled_from(["", "/opt/pi"]),
    },
)


def check(result: object, map_data: bytes | None) -> None:
    if isinstance(result, Refusal):
        assert result.reason is REFUSAL_REASONS[result.code]
        assert result.file in FILES_NAMED, result
        assert result.file in result.message
        assert "breaks the contract" not in result.message, result.message
        return
    assert isinstance(result, ResolvedWorker), result
    assert map_data is not None
    assert result.local_model == json.loads(map_data)["models"][result.model][result.backend]


@given(
    config=as_file(clean_configs, configs),
    model_map=as_file(clean_maps, model_maps),
    retired=st.booleans(),
    environ=environs,
    programs=st.sets(st.sampled_from(["/usr/bin/claude", "/usr/bin/pi", "/opt/pi"])),
    operation=st.sampled_from(sorted(DECLARED)),
)
def test_the_reader_never_raises(
    config: bytes | None,
    model_map: bytes | None,
    retired: bool,
    environ: Mapping[str, str],
    programs: set[str],
    operation: str,
) -> None:
    files: dict[str, bytes] = {RETIRED: b"{}"} if retired else {}
    files |= {path: body for path, body in ((CONFIG, config), (MAP, model_map)) if body is not None}
    workers = sorted(DECLARED[operation])
    many = ConfigurationReader(
        FakeFiles(files, programs), environ, profiles=PROFILES
    ).check_operation(WT, operation, workers, DECLARED)
    for result in many if isinstance(many, list) else [many]:
        check(result, model_map)


@pytest.mark.parametrize("number", ["1e308", str(10**400), "-1e308", str(2**64)])
def test_huge_numbers_are_answered(number: str) -> None:
    config = (
        '{"schema_version": 2, "enabled_models": {"m": {}}, "default": {"model": "m"}, '
        f'"limits": {{"timeout_seconds": {number}, "max_turns": {number}}}}}'
    )
    fs = FakeFiles({CONFIG: config.encode()}, {"/usr/bin/pi"})
    result = ConfigurationReader(fs, {"HOME": "/home/dev"}, profiles=PROFILES).resolve_worker(
        WT, "implement", "coder", DECLARED
    )
    check(result, None)
