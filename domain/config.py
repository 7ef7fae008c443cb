"""The worker configuration and the model map: values, resolution and refusals.

Seed 002 "Worker configuration" and "Model map" (semantics); seed 000 "Refusals before a run".
Pure: the application hands in decoded JSON that meets the contract's schema (it checks the
schema with jsonschema, application/config.py), an environment mapping and an existence
predicate. Every outcome is a value: the resolved choice, or a `Refusal` whose code and reason
are those of `REFUSAL_REASONS` and whose message names the file it concerns, says what is wrong
and how to repair it.

Decisions where the spec is silent (docs/decisions.md "Configuration reader"):
- Order of checks: every config_invalid (schema, names, the caller's declarations, levels no
  backend knows, runtime) before model_not_enabled; the whole file is checked, not only the
  asked worker's entries. Then, per worker, model_unresolved and the effective level against
  the effective backend; then the model map; then the program (backend_missing).
- Non-integer limits above 1e15 are refused as too large.
- Runtime entries that name the workspace itself or a folder holding it are config_invalid:
  they would make the whole worktree readable beside the grant; so are entries with a `.git`
  segment or a character `domain.text` refuses in any given path. Entries that do not exist are
  dropped, as the Inputs table asks ("the worker configuration's runtime paths that exist"). The
  preparation judges the resolved paths like every runtime path (domain/beside.py).
- An empty CONCORDE_MODEL_MAP, CONCORDE_CLAUDE or CONCORDE_PI counts as unset. Without an
  absolute HOME (and no absolute XDG_CONFIG_HOME) the map cannot be found: model_map_missing.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.errors import Reason, Refusal
from concorde_workers.domain.paths import is_within
from concorde_workers.domain.request import Backend, Limits
from concorde_workers.domain.text import control_problem

BACKENDS: tuple[Backend, ...] = ("claude", "pi")
LEVELS: dict[Backend, tuple[str, ...]] = {
    "claude": ("low", "medium", "high", "xhigh", "max"),
    "pi": ("off", "minimal", "low", "medium", "high", "xhigh"),
}
KNOWN_LEVELS = frozenset(LEVELS["claude"] + LEVELS["pi"])
DEFAULT_BACKEND: Backend = "pi"
DEFAULT_BACKEND_SOURCE = "Concorde's default worker backend"
CONFIG_PATH = ".concorde/workers.json"
RETIRED_PATH = ".concorde/worker-models.json"
DEFAULT_RUNTIME = (".venv", "node_modules")
# backend -> (program name, environment variable that replaces it)
PROGRAMS: dict[Backend, tuple[str, str]] = {
    "claude": ("claude", "CONCORDE_CLAUDE"),
    "pi": ("pi", "CONCORDE_PI"),
}
# What the map's entry to add holds until the developer fills in the program's --model id.
LOCAL_ID_PLACEHOLDER: dict[Backend, str] = {"claude": "<model id>", "pi": "<provider/id>"}

# Seed 000 "Refusals before a run": code -> reason, row by row.
REFUSAL_REASONS: dict[str, Reason] = {
    "config_missing": Reason.INPUT,
    "config_invalid": Reason.INPUT,
    "model_not_enabled": Reason.INPUT,
    "model_unresolved": Reason.INPUT,
    "backend_missing": Reason.ENVIRONMENT,
    "model_map_missing": Reason.ENVIRONMENT,
    "model_map_invalid": Reason.ENVIRONMENT,
    "model_unmapped": Reason.ENVIRONMENT,
}

# The project model name of the semantics: letters, digits, '.', '_' and '-', starting with a
# letter or digit.
_PROJECT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
_NAME_RULE = "letters, digits, '.', '_' and '-', starting with a letter or digit"
# Limits of type integer in the contract; the others are numbers, refused above this bound (a
# timeout or delay that large overflows the clocks it is added to).
_INTEGER_LIMITS = frozenset(
    name for name, field in Limits.model_fields.items() if field.annotation is int
)
_LARGEST_LIMIT = 1e15


def refusal(code: str, message: str, file: str | None) -> Refusal:
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


class ModelMap(BaseModel):
    """A valid model map: project model name -> backend -> local id."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    file: str
    models: dict[str, dict[Backend, str]]


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
    return refusal("config_missing", message, file)


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
    return refusal("config_invalid", message, retired)


def config_invalid(file: str, problem: str, repair: str | None = None) -> Refusal:
    """config_invalid: the file, its first problem and how to repair it."""
    repair = repair or (
        f"Edit {file} so it follows contract.workers.worker-configuration "
        "(schema_version 2), then commit it."
    )
    return refusal(
        "config_invalid", f"The worker configuration {file} is invalid: {problem}. {repair}", file
    )


def is_version_one(data: object) -> bool:
    """A file of schema_version 1, whose models were one program's local ids: it is refused
    with how to rewrite it (`version_one_refusal`), before its schema is checked."""
    version = data.get("schema_version") if isinstance(data, dict) else None
    return isinstance(version, int | float) and not isinstance(version, bool) and version == 1


def version_one_refusal(file: str, model_map: str) -> Refusal:
    repair = (
        "schema_version 1 named models by one program's local ids. Rewrite it as schema_version 2: "
        "give every model a project model name (" + _NAME_RULE + ") listed in enabled_models, "
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
        if not _PROJECT_NAME.match(name):
            shown = show(name)
            return f"enabled_models names {shown}, which is not a project model name ({_NAME_RULE})"
    return None


def _limits_problem(data: Mapping[str, Any]) -> str | None:
    for key, limit in data.get("limits", {}).items():
        if key not in _INTEGER_LIMITS and limit > _LARGEST_LIMIT:
            return f"limits.{key} is {show(limit)}, which is too large"
    return None


def _levels_problem(config: WorkerConfiguration) -> str | None:
    levels = [(e.name, e.reasoning) for e in config.entries()]
    levels += [(f"enabled_models.{m}", r) for m, r in config.enabled_models.items()]
    for where, level in levels:
        if level is not None and level not in KNOWN_LEVELS:
            return (
                f"{where}.reasoning is {show(level)}, which no backend knows; claude's levels are "
                f"{', '.join(LEVELS['claude'])} and pi's are {', '.join(LEVELS['pi'])}"
            )
    return None


def _entry_models_problem(config: WorkerConfiguration) -> str | None:
    for entry in config.entries():
        if entry.model is not None and not _PROJECT_NAME.match(entry.model):
            return (
                f"{entry.name}.model is {show(entry.model)}, which is not a project model name "
                f"({_NAME_RULE}); local ids belong in the model map"
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
            return refusal("model_not_enabled", message, config.file)
    return None


def parse_configuration(
    data: Mapping[str, Any], file: str, declared: Mapping[str, set[str]] | None = None
) -> WorkerConfiguration | Refusal:
    """`.concorde/workers.json` that meets its contract's schema -> its value, or the refusal
    of what the schema cannot say: config_invalid, then model_not_enabled.

    The caller has checked `data` against contract.workers.worker-configuration's schema
    (application/config.py, with jsonschema). Every config_invalid problem comes before a
    model_not_enabled. `declared` (Operation -> worker ids the caller may launch) checks the
    file's names; None skips that check.
    """
    if problem := _names_problem(data) or _limits_problem(data):
        return config_invalid(file, problem)
    config = _build(data, file)
    if declared is not None and (undeclared := check_declared(config, declared)):
        return undeclared
    problem = _entry_models_problem(config) or _levels_problem(config)
    if problem := problem or _runtime_entry_problem(config):
        return config_invalid(file, problem)
    return _not_enabled(config) or config


def check_declared(config: WorkerConfiguration, declared: Mapping[str, set[str]]) -> Refusal | None:
    """config_invalid for the first Operation or worker id the caller does not declare."""
    for name, op in config.operations.items():
        if name not in declared:
            known = ", ".join(sorted(declared)) or "none"
            problem = (
                f"operations.{name} names an Operation the caller does not declare "
                f"(declared: {known})"
            )
            return config_invalid(
                config.file, problem, f"Remove or rename operations.{name}, then commit the file."
            )
        for worker in op.workers:
            if worker not in declared[name]:
                known = ", ".join(sorted(declared[name])) or "none"
                where = f"operations.{name}.workers.{worker}"
                problem = (
                    f"{where} names a worker id Operation {name} does not declare "
                    f"(declared: {known})"
                )
                return config_invalid(
                    config.file, problem, f"Remove or rename {where}, then commit the file."
                )
    return None


# ---------------------------------------------------------------- one worker's choice


def _first(chain: Sequence[Entry], field: str) -> Entry | None:
    return next((entry for entry in chain if getattr(entry, field) is not None), None)


def _level(
    config: WorkerConfiguration, chain: Sequence[Entry], chose: int
) -> tuple[str | None, str | None]:
    """The entry that chose the model or a more specific one, else the model's own level,
    else one a less specific entry sets, else none (seed 002, worker configuration)."""
    if entry := _first(chain[: chose + 1], "reasoning"):
        return entry.reasoning, entry.name
    model = cast(str, chain[chose].model)
    if (own := config.enabled_models.get(model)) is not None:
        return own, f"enabled_models.{model}"
    if entry := _first(chain[chose + 1 :], "reasoning"):
        return entry.reasoning, entry.name
    return None, None


def _unresolved(config: WorkerConfiguration, operation: str, worker: str) -> Refusal:
    places = f"operations.{operation}.workers.{worker}, operations.{operation}.default and default"
    first = next(iter(config.enabled_models))
    message = (
        f"The worker configuration {config.file} settles no model for worker {worker} of Operation "
        f"{operation}: none of {places} sets model. Set model in one of them to a name of "
        f'enabled_models ({", ".join(config.enabled_models)}), e.g. "default": '
        f'{{"model": "{first}"}}, then commit the file.'
    )
    return refusal("model_unresolved", message, config.file)


def _wrong_level(config: WorkerConfiguration, choice: WorkerChoice) -> Refusal:
    levels = ", ".join(LEVELS[choice.backend])
    problem = (
        f"{choice.reasoning_source} sets reasoning {show(choice.reasoning)} for {choice.label()}, "
        f"whose backend {choice.backend} (from {choice.backend_source}) does not know it; "
        f"{choice.backend}'s levels are {levels}"
    )
    repair = (
        f"Set a level of {choice.backend} there or in a more specific entry, "
        "or choose the other backend; then commit the file."
    )
    return config_invalid(config.file, problem, repair)


def choose(config: WorkerConfiguration, operation: str, worker: str) -> WorkerChoice | Refusal:
    """Backend, model and level of one worker from the worker configuration alone."""
    chain = config.chain(operation, worker)
    chose = next((i for i, entry in enumerate(chain) if entry.model is not None), None)
    if chose is None:
        return _unresolved(config, operation, worker)
    backend_entry = _first(chain, "backend")
    reasoning, reasoning_source = _level(config, chain, chose)
    choice = WorkerChoice(
        operation=operation,
        worker=worker,
        backend=backend_entry.backend
        if backend_entry and backend_entry.backend
        else DEFAULT_BACKEND,
        backend_source=backend_entry.name if backend_entry else DEFAULT_BACKEND_SOURCE,
        model=cast(str, chain[chose].model),
        model_source=chain[chose].name,
        reasoning=reasoning,
        reasoning_source=reasoning_source,
    )
    if reasoning is not None and reasoning not in LEVELS[choice.backend]:
        return _wrong_level(config, choice)
    return choice


# ---------------------------------------------------------------- the model map


def _map_example(needs: Sequence[WorkerChoice]) -> str:
    models: dict[str, dict[str, str]] = {}
    for choice in needs:
        models.setdefault(choice.model, {})[choice.backend] = LOCAL_ID_PLACEHOLDER[choice.backend]
    models = models or {"<project model name>": {"pi": "<provider/id>", "claude": "<model id>"}}
    return json.dumps({"schema_version": 1, "models": models})


def model_map_missing(file: str, needs: Sequence[WorkerChoice], why: str = "") -> Refusal:
    message = (
        f"The model map {file} is missing{why}. It is the developer's own file, outside every "
        "repository and never committed; it maps each project model name to the id each program "
        f"takes with --model. Create it holding, with the real ids: {_map_example(needs)}"
    )
    return refusal("model_map_missing", message, file)


def model_map_location(environ: Mapping[str, str], needs: Sequence[WorkerChoice]) -> str | Refusal:
    """CONCORDE_MODEL_MAP (absolute), else concorde/models.json of $XDG_CONFIG_HOME when it is
    absolute, else of ~/.config. An empty variable counts as unset."""
    named = environ.get("CONCORDE_MODEL_MAP", "")
    if named and not named.startswith("/"):
        message = (
            f"CONCORDE_MODEL_MAP gives the relative path {show(named)}; it must name the model "
            "map by its absolute path. Set it to an absolute path, or unset it to use "
            "concorde/models.json of the XDG configuration directory."
        )
        return refusal("model_map_invalid", message, named)
    if named:
        return named
    for var, below in (
        ("XDG_CONFIG_HOME", "concorde/models.json"),
        ("HOME", ".config/concorde/models.json"),
    ):
        base = environ.get(var, "")
        if base.startswith("/"):
            return posixpath.join(base, below)
    why = " (HOME is not an absolute path, so ~/.config cannot be found; set CONCORDE_MODEL_MAP)"
    return model_map_missing("~/.config/concorde/models.json", needs, why)


def model_map_problem(data: Mapping[str, Any]) -> str | None:
    """The first way a map that meets contract.workers.model-map's schema breaks its semantics:
    a name that is not a project model name, a model without an id."""
    for name, ids in data["models"].items():
        if not _PROJECT_NAME.match(name):
            return f"models names {show(name)}, which is not a project model name ({_NAME_RULE})"
        if not ids:
            return f"models.{name} gives the model no id; give its claude id, its pi id or both"
    return None


def model_map_invalid(file: str, problem: str) -> Refusal:
    example = _map_example([])
    message = f"The model map {file} is invalid: {problem}. Repair it so it holds, e.g.: {example}"
    return refusal("model_map_invalid", message, file)


def parse_model_map(data: Mapping[str, Any], file: str) -> ModelMap | Refusal:
    """A map that meets its contract's schema (the caller checked it) -> its value, or
    model_map_invalid for its semantics."""
    if problem := model_map_problem(data):
        return model_map_invalid(file, problem)
    return ModelMap(file=file, models=data["models"])


def _entry_to_add(model: str, backends: Sequence[Backend], model_map: ModelMap) -> str:
    ids: dict[str, str] = {str(k): v for k, v in model_map.models.get(model, {}).items()}
    for backend in backends:
        ids[backend] = LOCAL_ID_PLACEHOLDER[backend]
    entry = f"{json.dumps(model)}: {json.dumps(ids)}"
    if model in model_map.models:
        return f"{entry}  (replacing its present entry models.{model})"
    return entry


def _unmapped(
    missing: dict[tuple[str, Backend], list[WorkerChoice]], model_map: ModelMap
) -> Refusal:
    lines = [f"The model map {model_map.file} gives no local id for these workers:"]
    for (model, backend), choices in missing.items():
        for c in choices:
            lines.append(
                f"- {c.label()}: model {model} (from {c.model_source}) on backend {backend} "
                f"(from {c.backend_source})"
            )
    by_model: dict[str, list[Backend]] = {}
    for model, backend in missing:
        by_model.setdefault(model, []).append(backend)
    lines.append(
        f'Add under "models" of {model_map.file}, with the id each program takes with --model '
        "(the project model name is never used as one):"
    )
    lines += [f"  {_entry_to_add(m, b, model_map)}" for m, b in by_model.items()]
    return refusal("model_unmapped", "\n".join(lines), model_map.file)


def place(choices: Sequence[WorkerChoice], model_map: ModelMap) -> tuple[str, ...] | Refusal:
    """Each worker's local model id on its backend, or one model_unmapped naming every missing
    model and backend pair with the workers that would take each."""
    missing: dict[tuple[str, Backend], list[WorkerChoice]] = {}
    for c in choices:
        if c.backend not in model_map.models.get(c.model, {}):
            missing.setdefault((c.model, c.backend), []).append(c)
    if missing:
        return _unmapped(missing, model_map)
    return tuple(model_map.models[c.model][c.backend] for c in choices)


# ---------------------------------------------------------------- runtime and program


def runtime_paths(
    config: WorkerConfiguration, workspace: str, exists: Callable[[str], bool]
) -> tuple[str, ...] | Refusal:
    """The configuration's runtime paths (default .venv and node_modules) that exist, relative
    ones resolved against the workspace, absolute ones kept; none may hold the workspace."""
    listed = config.runtime if config.runtime is not None else DEFAULT_RUNTIME
    out: list[str] = []
    for path in listed:
        full = posixpath.normpath(posixpath.join(workspace, path))
        if is_within(workspace, full):
            problem = f"runtime lists {show(path)}, which holds the workspace {workspace} itself"
            return config_invalid(config.file, problem)
        if full not in out and exists(full):
            out.append(full)
    return tuple(out)


def program_of(backend: Backend, environ: Mapping[str, str]) -> tuple[str, str]:
    """The worker's program (its variable's value when set and not empty) and that variable."""
    name, var = PROGRAMS[backend]
    return environ.get(var) or name, var


def program_source(backend: Backend, environ: Mapping[str, str]) -> str:
    """Where the worker's program comes from: `$<variable>` when it names it, else `PATH`."""
    _, var = PROGRAMS[backend]
    return f"${var}" if environ.get(var) else "PATH"


def backend_missing(choice: WorkerChoice, program: str, var: str, file: str) -> Refusal:
    other: Backend = "pi" if choice.backend == "claude" else "claude"
    where = choice.backend_source if choice.backend_source != DEFAULT_BACKEND_SOURCE else "default"
    message = (
        f"{choice.label()} runs on backend {choice.backend} (from {choice.backend_source}), "
        f"but its program {program} is not found. Install {PROGRAMS[choice.backend][0]} or set "
        f'{var} to its absolute path; or choose the other program by setting "backend": '
        f'"{other}" in {where} of {file} (the model map then needs the model\'s {other} id).'
    )
    return refusal("backend_missing", message, file)
