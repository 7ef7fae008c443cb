"""The worker configuration: its values, the file read into them, and its refusals.

Seed 002 "Worker configuration" (semantics); seed 000 "Refusals before a run", its input rows.
Pure: the application hands in decoded JSON that meets the contract's schema (it checks the
schema with jsonschema, application/setup/config.py). Every outcome is a value: the file's
`WorkerConfiguration`, or a `Refusal` whose code and reason are those of `REFUSAL_REASONS` and
whose message names the file it concerns, says what is wrong and how to repair it. One worker's
choice from that value and the runtime paths that exist are worker_choice.py's; what the machine
adds (the model map's local id, the program) is `domain.configuration.machine`'s.

Decisions where the spec is silent (docs/decisions.md "Configuration reader"):
- Order of checks: every config_invalid (schema, names, the caller's declarations, levels no
  backend knows, runtime) before model_not_enabled; the whole file is checked, not only the
  asked worker's entries. Then, per worker, model_unresolved and the effective level against
  the effective backend; then the model map; then the program (backend_missing).
- Non-integer limits above 1e15 are refused as too large; a round's timeout past a day, more
  than 100 retries or a retry wait past a day are refused as what no run can honour
  (`domain.configuration.request.limits_problem`).
- Runtime entries that name the workspace itself or a folder holding it are config_invalid:
  they would make the whole worktree readable beside the grant; so are entries with a `.git`
  segment or a character `domain.ground.text` refuses in any given path. Entries that do not
  exist are dropped, as the Inputs table asks ("the worker configuration's runtime paths that
  exist"; worker_choice.py). The preparation judges the resolved paths like every runtime path
  (domain/boundary/beside.py).
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.configuration.request import Backend, Limits, limits_problem
from concorde_workers.domain.ground.codes import REFUSAL_REASONS, Code
from concorde_workers.domain.ground.errors import Refusal
from concorde_workers.domain.ground.text import control_problem

Levels = Mapping[str, Sequence[str]]
"""Each backend's reasoning levels by its name (its profile's, `profile.levels_of`)."""
DEFAULT_BACKEND_SOURCE = "Concorde's default worker backend"
RETIRED_PATH = ".concorde/worker-models.json"


# The project model name of the semantics: letters, digits, '.', '_' and '-', starting with a
# letter or digit.
PROJECT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
NAME_RULE = "letters, digits, '.', '_' and '-', starting with a letter or digit"
# Limits of type integer in the contract; the others are numbers, refused above this bound (a
# timeout or delay that large overflows the clocks it is added to).
_INTEGER_LIMITS = frozenset(
    name for name, field in Limits.model_fields.items() if field.annotation is int
)
_LARGEST_LIMIT = 1e15


def refusal(code: Code, message: str, file: str | None) -> Refusal:
    """A refusal of the configuration reader with the reason its code has in the table."""
    return Refusal(code=code, reason=REFUSAL_REASONS[code], message=message, file=file)


# ---------------------------------------------------------------- values


class Entry(BaseModel):
    """One entry that may set backend, model and reasoning, with its dotted name."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    backend: Backend | None = None
    model: str | None = None
    reasoning: str | None = None


class OperationEntries(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    default: Entry | None = None
    workers: dict[str, Entry] = {}


class WorkerConfiguration(BaseModel):
    """A valid `.concorde/workers.json`. Build it with `parse_configuration`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    file: str
    enabled_models: dict[str, str | None]
    default: Entry | None = None
    operations: dict[str, OperationEntries] = {}
    limits: Limits = Limits()
    runtime: tuple[str, ...] | None = None
    notice: str | None = None
    """What the reader says of the working copy (issue 18 §4): one that differs from the file
    committed at HEAD, which is the configuration (`domain.gitview.committed_config`)."""

    def chain(self, operation: str, worker: str) -> tuple[Entry, ...]:
        """The entries that apply to a worker, most specific first."""
        op = self.operations.get(operation, OperationEntries())
        found = (op.workers.get(worker), op.default, self.default)
        return tuple(entry for entry in found if entry is not None)

    def entries(self) -> tuple[Entry, ...]:
        """Every entry of the file, in the file's order."""
        out = [self.default] if self.default is not None else []
        for op in self.operations.values():
            out += [op.default] if op.default is not None else []
            out += list(op.workers.values())
        return tuple(out)


class WorkerChoice(BaseModel):
    """What the worker configuration alone settles for one worker, with where each came from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    operation: str
    worker: str
    backend: Backend
    backend_source: str
    model: str
    model_source: str
    reasoning: str | None
    reasoning_source: str | None

    def label(self) -> str:
        return f"worker {self.worker} of Operation {self.operation}"


class ResolvedWorker(BaseModel):
    """A worker ready to request: everything the configuration reader settled and checked."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    operation: str
    worker: str
    configuration: str
    backend: Backend
    backend_source: str
    model: str
    model_source: str
    reasoning: str | None
    reasoning_source: str | None
    local_model: str
    model_map: str
    limits: Limits
    runtime: tuple[str, ...]
    program: str
    program_source: str
    """Where the program came from: `$CONCORDE_PI` / `$CONCORDE_CLAUDE` when that variable named
    it, else `PATH`."""
    notice: str | None = None
    """The configuration's working copy differs from the committed file the run reads."""
    unnamed: str | None = None
    """The file has no entry of its own for the Operation or worker (`unnamed_notice`)."""


# ---------------------------------------------------------------- words


def show(value: object) -> str:
    """A value as the file holds it, in JSON, cut to 80 characters."""
    try:
        shown = json.dumps(value, ensure_ascii=True)
    except (RecursionError, ValueError):
        return "a value nested too deeply to show"
    return shown if len(shown) <= 80 else shown[:77] + "..."


# ---------------------------------------------------------------- the worker configuration


def config_missing(file: str) -> Refusal:
    message = (
        f"The worker configuration {file} is missing, so no worker runs in this worktree. "
        "Create .concorde/workers.json holding schema_version 2, the project model names in "
        "enabled_models and the model each worker takes, e.g. "
        '{"schema_version": 2, "enabled_models": {"<model>": {}}, "default": {"model": "<model>"}}'
        ", and commit it: the file is tracked by Git and reviewed like any change of the project."
    )
    return refusal(Code.CONFIG_MISSING, message, file)


def retired_refusal(retired: str, file: str, model_map: str) -> Refusal:
    """config_invalid for a worktree without the configuration that still has the retired
    untracked .concorde/worker-models.json."""
    message = (
        f"The worktree has no worker configuration {file} but still has the retired file "
        f"{retired}, which Workers no longer reads. Move it: put each model's local id per "
        f'program into the model map {model_map} under "models" (e.g. "gpt-6-astra": '
        '{"pi": "local-openai/gpt-6-astra"}), write .concorde/workers.json with schema_version 2 '
        "naming those models by project model names in enabled_models and in its entries, "
        f"commit it, and delete {retired}."
    )
    return refusal(Code.CONFIG_INVALID, message, retired)


def config_invalid(file: str, problem: str, repair: str | None = None) -> Refusal:
    """config_invalid: the file, its first problem and how to repair it."""
    repair = repair or (
        f"Edit {file} so it follows contract.workers.worker-configuration "
        "(schema_version 2), then commit it."
    )
    message = f"The worker configuration {file} is invalid: {problem}. {repair}"
    return refusal(Code.CONFIG_INVALID, message, file)


def is_version_one(data: object) -> bool:
    """A file of schema_version 1, whose models were one program's local ids: it is refused
    with how to rewrite it (`version_one_refusal`), before its schema is checked."""
    version = data.get("schema_version") if isinstance(data, dict) else None
    return isinstance(version, int | float) and not isinstance(version, bool) and version == 1


def version_one_refusal(file: str, model_map: str) -> Refusal:
    repair = (
        "schema_version 1 named models by one program's local ids. Rewrite it as schema_version 2: "
        "give every model a project model name (" + NAME_RULE + ") listed in enabled_models, "
        "have default, operations.<operation>.default and "
        "operations.<operation>.workers.<worker id> "
        "name those project model names, and move each local id into the model map "
        f'{model_map} under "models", e.g. "gpt-6-astra": {{"pi": "local-openai/gpt-6-astra"}}; '
        "then commit the rewritten file"
    )
    return config_invalid(file, "it has schema_version 1", repair + ".")


def _names_problem(data: Mapping[str, Any]) -> str | None:
    enabled: dict[str, Any] = data["enabled_models"]
    if not enabled:
        return "enabled_models is empty; it must name every model an entry may choose"
    for name in enabled:
        if not PROJECT_NAME.match(name):
            shown = show(name)
            return f"enabled_models names {shown}, which is not a project model name ({NAME_RULE})"
    return None


def _limits_problem(data: Mapping[str, Any]) -> str | None:
    raw = data.get("limits", {})
    for key, limit in raw.items():
        if key not in _INTEGER_LIMITS and limit > _LARGEST_LIMIT:
            return f"limits.{key} is {show(limit)}, which is too large"
    # Within the contract, but past what a run can honour (issue 31 §3): a round of 1e9 s.
    given = {**Limits().model_dump(), **raw}
    return limits_problem(
        float(given["timeout_seconds"]), int(given["retries"]), float(given["retry_delay_seconds"])
    )


def _every_level(levels: Levels) -> str:
    """`claude's levels are low, … and pi's are off, …`: each backend's, in the registry's
    order."""
    parts = [
        f"{name}'s {'levels ' if i == 0 else ''}are {', '.join(known)}"
        for i, (name, known) in enumerate(levels.items())
    ]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _levels_problem(config: WorkerConfiguration, levels: Levels) -> str | None:
    known = {level for per_backend in levels.values() for level in per_backend}
    given = [(e.name, e.reasoning) for e in config.entries()]
    given += [(f"enabled_models.{m}", r) for m, r in config.enabled_models.items()]
    for where, level in given:
        if level is not None and level not in known:
            return (
                f"{where}.reasoning is {show(level)}, which no backend knows; "
                f"{_every_level(levels)}"
            )
    return None


def _entry_models_problem(config: WorkerConfiguration) -> str | None:
    for entry in config.entries():
        if entry.model is not None and not PROJECT_NAME.match(entry.model):
            return (
                f"{entry.name}.model is {show(entry.model)}, which is not a project model name "
                f"({NAME_RULE}); local ids belong in the model map"
            )
    return None


def _runtime_entry_problem(config: WorkerConfiguration) -> str | None:
    for path in config.runtime or ():
        norm = posixpath.normpath(path)
        if problem := control_problem(path):
            return f"runtime lists {show(path)}, which {problem}"
        if ".git" in norm.split("/"):
            # Git metadata is hidden wherever it lies (seed 000 "Placement"); the preparation
            # refuses every other runtime path that would uncover something hidden.
            return f"runtime lists {show(path)}, which has a .git segment: Git metadata"
        if not path.startswith("/") and all(
            part == ".." for part in norm.split("/") if part != "."
        ):
            return f"runtime lists {show(path)}, the workspace itself or a folder above it"
    return None


def _entry(raw: Mapping[str, Any] | None, name: str) -> Entry | None:
    return None if raw is None else Entry(name=name, **raw)


def _operation(raw: Mapping[str, Any], name: str) -> OperationEntries:
    workers = {
        worker: Entry(name=f"operations.{name}.workers.{worker}", **entry)
        for worker, entry in raw.get("workers", {}).items()
    }
    return OperationEntries(
        default=_entry(raw.get("default"), f"operations.{name}.default"), workers=workers
    )


def _limits(raw: Mapping[str, Any]) -> Limits:
    values = {key: int(v) if key in _INTEGER_LIMITS else float(v) for key, v in raw.items()}
    return Limits(**values)


def _build(data: Mapping[str, Any], file: str) -> WorkerConfiguration:
    runtime = data.get("runtime")
    return WorkerConfiguration(
        file=file,
        enabled_models={name: m.get("reasoning") for name, m in data["enabled_models"].items()},
        default=_entry(data.get("default"), "default"),
        operations={name: _operation(op, name) for name, op in data.get("operations", {}).items()},
        limits=_limits(data.get("limits", {})),
        runtime=None if runtime is None else tuple(runtime),
    )


def _not_enabled(config: WorkerConfiguration) -> Refusal | None:
    for entry in config.entries():
        if entry.model is not None and entry.model not in config.enabled_models:
            enabled = ", ".join(config.enabled_models)
            message = (
                f"In the worker configuration {config.file}, {entry.name} chooses the model "
                f"{show(entry.model)}, which is not in enabled_models (enabled: {enabled}). "
                f"Repair {entry.name}: name one of the enabled models, or enable the model by "
                f'adding "{entry.model}": {{}} to enabled_models; then commit the file.'
            )
            return refusal(Code.MODEL_NOT_ENABLED, message, config.file)
    return None


def parse_configuration(
    data: Mapping[str, Any],
    file: str,
    declared: Mapping[str, set[str]] | None = None,
    *,
    levels: Levels,
) -> WorkerConfiguration | Refusal:
    """`.concorde/workers.json` that meets its contract's schema -> its value, or the refusal
    of what the schema cannot say: config_invalid, then model_not_enabled.

    The caller has checked `data` against contract.workers.worker-configuration's schema
    (application/setup/config.py, with jsonschema). Every config_invalid problem comes before a
    model_not_enabled. `declared` (Operation -> worker ids the caller may launch) checks the
    file's names; None skips that check. `levels` are the registered backends' reasoning
    levels.
    """
    if problem := _names_problem(data) or _limits_problem(data):
        return config_invalid(file, problem)
    config = _build(data, file)
    if declared is not None and (undeclared := check_declared(config, declared)):
        return undeclared
    problem = _entry_models_problem(config) or _levels_problem(config, levels)
    if problem := problem or _runtime_entry_problem(config):
        return config_invalid(file, problem)
    return _not_enabled(config) or config


def check_declared(config: WorkerConfiguration, declared: Mapping[str, set[str]]) -> Refusal | None:
    """config_invalid for the first Operation or worker id the caller does not declare."""
    for name, op in config.operations.items():
        where = f"operations.{name}"
        if name not in declared:
            return _undeclared(config.file, where, "an Operation the caller", declared)
        for worker in op.workers:
            if worker not in declared[name]:
                what = f"a worker id Operation {name}"
                return _undeclared(config.file, f"{where}.workers.{worker}", what, declared[name])
    return None


def _undeclared(file: str, where: str, what: str, known: Iterable[str]) -> Refusal:
    shown = ", ".join(sorted(known)) or "none"
    problem = f"{where} names {what} does not declare (declared: {shown})"
    return config_invalid(file, problem, f"Remove or rename {where}, then commit the file.")
