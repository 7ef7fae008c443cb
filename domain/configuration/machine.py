"""What the machine gives a worker: the model map's local id and the worker's program.

Seed 002 "Model map" (semantics) and contract.workers.model-map; seed 000 "Refusals before a run",
its environment rows (model_map_missing, model_map_invalid, model_unmapped, backend_missing).
Pure like `domain.configuration.config`: the application hands in a decoded map that meets the
contract's
schema (it checks the schema with jsonschema, application/setup/config.py) and the environment as a
mapping. Every refusal names the map, or the worker configuration for a missing program.

Each backend's words come from its profile: the placeholder of its id in a map's example
(`Placeholders`, `domain.configuration.profile.placeholders_of`) and its program.

Decisions where the spec is silent (docs/decisions.md "Configuration reader"): an empty
CONCORDE_MODEL_MAP, CONCORDE_CLAUDE or CONCORDE_PI counts as unset; without an absolute HOME (and
no absolute XDG_CONFIG_HOME) the map cannot be found: model_map_missing.

The machine's other files lie beside the model map unless a variable names one
(`MachineFileSpec`: resources.json, the signing key, a backend's own such as Claude Code's
endpoints.json); one rule says where each is (`machine_file_location`, docs/decisions.md 67): a
variable that names a file is honoured or refused, never ignored — a relative path or a file
that does not exist is a problem, where the file beside the model map may simply be absent.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.configuration.config import (
    DEFAULT_BACKEND_SOURCE,
    NAME_RULE,
    PROJECT_NAME,
    WorkerChoice,
    refusal,
    show,
)
from concorde_workers.domain.configuration.program_versions import (
    INSTALL_AGENTS,
    ProgramSpec,
    pinned,
)
from concorde_workers.domain.configuration.request import Backend
from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.ground.errors import Refusal

Placeholders = Mapping[str, str]
"""Each backend's name -> what the map's entry to add holds until the developer fills in the
program's --model id, the default backend first."""


class ModelMap(BaseModel):
    """A valid model map: project model name -> backend -> local id."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    file: str
    models: dict[str, dict[Backend, str]]


# ---------------------------------------------------------------- the model map


def _map_example(needs: Sequence[WorkerChoice], placeholders: Placeholders) -> str:
    models: dict[str, dict[str, str]] = {}
    for choice in needs:
        models.setdefault(choice.model, {})[choice.backend] = placeholders[choice.backend]
    models = models or {"<project model name>": dict(placeholders)}
    return json.dumps({"schema_version": 1, "models": models})


def model_map_missing(
    file: str, needs: Sequence[WorkerChoice], placeholders: Placeholders, why: str = ""
) -> Refusal:
    message = (
        f"The model map {file} is missing{why}. It is the developer's own file, outside every "
        "repository and never committed; it maps each project model name to the id each program "
        f"takes with --model. Create it holding, with the real ids: "
        f"{_map_example(needs, placeholders)}"
    )
    return refusal(Code.MODEL_MAP_MISSING, message, file)


def model_map_location(
    environ: Mapping[str, str], needs: Sequence[WorkerChoice], placeholders: Placeholders
) -> str | Refusal:
    """CONCORDE_MODEL_MAP (absolute), else concorde/models.json of $XDG_CONFIG_HOME when it is
    absolute, else of ~/.config. An empty variable counts as unset. A caller that only takes the
    path gives no `placeholders`: the refusal's example then names no backend's id."""
    named = environ.get("CONCORDE_MODEL_MAP", "")
    if named and not named.startswith("/"):
        message = (
            f"CONCORDE_MODEL_MAP gives the relative path {show(named)}; it must name the model "
            "map by its absolute path. Set it to an absolute path, or unset it to use "
            "concorde/models.json of the XDG configuration directory."
        )
        return refusal(Code.MODEL_MAP_INVALID, message, named)
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
    return model_map_missing("~/.config/concorde/models.json", needs, placeholders, why)


def _each_id(names: Sequence[str]) -> str:
    """`its claude id, its pi id or both` for the backends there are."""
    ids = [f"its {name} id" for name in sorted(names)]
    if len(ids) < 2:
        return "".join(ids)
    return ", ".join(ids) + (" or both" if len(ids) == 2 else " or several")


def model_map_problem(data: Mapping[str, Any], placeholders: Placeholders) -> str | None:
    """The first way a map that meets contract.workers.model-map's schema breaks its semantics:
    a name that is not a project model name, a model without an id."""
    for name, ids in data["models"].items():
        if not PROJECT_NAME.match(name):
            return f"models names {show(name)}, which is not a project model name ({NAME_RULE})"
        if not ids:
            return f"models.{name} gives the model no id; give {_each_id(list(placeholders))}"
    return None


def model_map_invalid(file: str, problem: str, placeholders: Placeholders) -> Refusal:
    example = _map_example([], placeholders)
    message = f"The model map {file} is invalid: {problem}. Repair it so it holds, e.g.: {example}"
    return refusal(Code.MODEL_MAP_INVALID, message, file)


def parse_model_map(
    data: Mapping[str, Any], file: str, placeholders: Placeholders
) -> ModelMap | Refusal:
    """A map that meets its contract's schema (the caller checked it) -> its value, or
    model_map_invalid for its semantics."""
    if problem := model_map_problem(data, placeholders):
        return model_map_invalid(file, problem, placeholders)
    return ModelMap(file=file, models=data["models"])


def _entry_to_add(
    model: str, backends: Sequence[Backend], model_map: ModelMap, placeholders: Placeholders
) -> str:
    ids: dict[str, str] = {str(k): v for k, v in model_map.models.get(model, {}).items()}
    for backend in backends:
        ids[backend] = placeholders[backend]
    entry = f"{json.dumps(model)}: {json.dumps(ids)}"
    if model in model_map.models:
        return f"{entry}  (replacing its present entry models.{model})"
    return entry


def _unmapped(
    missing: dict[tuple[str, Backend], list[WorkerChoice]],
    model_map: ModelMap,
    placeholders: Placeholders,
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
    lines += [f"  {_entry_to_add(m, b, model_map, placeholders)}" for m, b in by_model.items()]
    return refusal(Code.MODEL_UNMAPPED, "\n".join(lines), model_map.file)


def place(
    choices: Sequence[WorkerChoice], model_map: ModelMap, placeholders: Placeholders
) -> tuple[str, ...] | Refusal:
    """Each worker's local model id on its backend, or one model_unmapped naming every missing
    model and backend pair with the workers that would take each."""
    missing: dict[tuple[str, Backend], list[WorkerChoice]] = {}
    for c in choices:
        if c.backend not in model_map.models.get(c.model, {}):
            missing.setdefault((c.model, c.backend), []).append(c)
    if missing:
        return _unmapped(missing, model_map, placeholders)
    return tuple(model_map.models[c.model][c.backend] for c in choices)


def model_ids(model_map: ModelMap, backend: str) -> list[str]:
    """Every id the map gives `backend`, once each, in the map's order (doctor judges each
    against the program's own files as a run's `--model`)."""
    return list(dict.fromkeys(ids[backend] for ids in model_map.models.values() if backend in ids))


# ---------------------------------------------------------------- the program


def program_of(spec: ProgramSpec, environ: Mapping[str, str]) -> tuple[str, str]:
    """The worker's program (its variable's value when set and not empty) and that variable."""
    return environ.get(spec.variable) or spec.program, spec.variable


def program_source(spec: ProgramSpec, environ: Mapping[str, str]) -> str:
    """Where the worker's program comes from: `$<variable>` when it names it, else `PATH`."""
    return f"${spec.variable}" if environ.get(spec.variable) else "PATH"


def _other(backend: str, backends: Sequence[str]) -> str:
    """The backend a refusal suggests instead: another backend there is (with more, the first
    of them; never one named by exclusion of a third)."""
    others = [b for b in backends if b != backend]
    return others[0] if others else backend


def backend_unusable(
    choice: WorkerChoice, problem: str, file: str, backends: Sequence[str]
) -> Refusal:
    """backend_missing for a program that is found but cannot run the policy (too old, or its
    version unreadable: domain/configuration/program_versions.py `version_problem`)."""
    other = _other(choice.backend, backends)
    where = choice.backend_source if choice.backend_source != DEFAULT_BACKEND_SOURCE else "default"
    message = (
        f"{choice.label()} runs on backend {choice.backend} (from {choice.backend_source}), "
        f'but {problem}; or choose the other program by setting "backend": "{other}" in '
        f"{where} of {file} (the model map then needs the model's {other} id)."
    )
    return refusal(Code.BACKEND_MISSING, message, file)


def backend_missing(
    choice: WorkerChoice,
    spec: ProgramSpec,
    environ: Mapping[str, str],
    file: str,
    backends: Sequence[str],
) -> Refusal:
    """backend_missing for a program that is not found: how to install it or name it."""
    program, var = program_of(spec, environ)
    other = _other(choice.backend, backends)
    where = choice.backend_source if choice.backend_source != DEFAULT_BACKEND_SOURCE else "default"
    install = (
        f"Run {INSTALL_AGENTS} (it installs the pinned {pinned(spec)}; ./scripts/setup in a "
        f"checkout), install {spec.program} or set "
        if spec.package
        else f"Install {spec.program} on PATH or set "  # a program this copy does not pin
    )
    message = (
        f"{choice.label()} runs on backend {choice.backend} (from {choice.backend_source}), "
        f"but its program {program} is not found. {install}"
        f'{var} to its absolute path; or choose the other program by setting "backend": '
        f'"{other}" in {where} of {file} (the model map then needs the model\'s {other} id).'
    )
    return refusal(Code.BACKEND_MISSING, message, file)


# ---------------------------------------------------------------- the machine's other files


@dataclass(frozen=True)
class MachineFileSpec:
    """A file of the machine's own (never in a worktree): `name` beside the model map, or the
    absolute path its `variable` names; read as a regular file of at most `max_bytes`."""

    variable: str
    name: str
    max_bytes: int
    shape: str
    """Where its shape is told, for a repair (a README section or a module)."""


@dataclass(frozen=True)
class MachineFileLocation:
    """Where a machine file is looked for (None: nowhere, the model map's folder unknown),
    whether its variable named it (a missing file is then a problem, not an absence), or why
    the variable cannot be taken."""

    file: str | None
    named: bool = False
    problem: str | None = None


def machine_file_location(environ: Mapping[str, str], spec: MachineFileSpec) -> MachineFileLocation:
    """`$<variable>` when set (it must be absolute), else `<name>` beside the model map. An
    empty variable counts as unset."""
    named = environ.get(spec.variable, "")
    if named and not named.startswith("/"):
        return MachineFileLocation(
            file=None,
            named=True,
            problem=f"{spec.variable} gives the relative path {named!r}{tilde_note(named)}; "
            f"name {spec.name} by its absolute path, or unset {spec.variable} to use the "
            f"{spec.name} beside the model map",
        )
    if named:
        return MachineFileLocation(file=posixpath.normpath(named), named=True)
    location = model_map_location(environ, [], {})  # only its folder
    if not isinstance(location, str):
        return MachineFileLocation(file=None)
    return MachineFileLocation(file=posixpath.join(posixpath.dirname(location), spec.name))


def tilde_note(named: str) -> str:
    """What a relative path that begins with `~` needs said: no program expands it, only a
    shell, and only unquoted."""
    return " (a leading ~ is expanded by the shell only when unquoted)" if named[:1] == "~" else ""


def named_file_missing(spec: MachineFileSpec, file: str) -> str:
    """The problem of a variable that names a file that is not there: never taken for "no
    file", which would drop the setting the user named."""
    return (
        f"{spec.variable} names {file}, which does not exist: create it there ({spec.shape}), "
        f"or unset {spec.variable} (the {spec.name} beside the model map is then read, if there "
        "is one)"
    )


@dataclass(frozen=True)
class MachineFileAnswer:
    """What a backend's own machine file (Claude Code's endpoints.json) gives its rounds, as its
    profile's judge reads it: the variables it adds to each round's environment (their values
    may be secrets: never shown), the host variables it takes a credential from (by name), what
    it configures as a person reads it, or what is wrong with it, naming the file and the
    repair."""

    adds: Mapping[str, str] = field(default_factory=dict)
    credentials: tuple[str, ...] = ()
    credentials_origin: str = ""
    """What names `credentials`, as a person reads it (the Codex CLI: codex.json's key_env, or
    its default without the file); empty: the file does (`<file> names`)."""
    said: str = ""
    problem: str | None = None
    file: str | None = None
    settings: Mapping[str, str] = field(default_factory=dict)
    """What it configures that the backend writes into its generated settings (Codex: the
    endpoint's base URL, its key variable's name, the prices of a token): never a secret."""
