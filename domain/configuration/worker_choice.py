"""One worker's choice from the worker configuration: the entries that apply to it, most
specific first, settle its backend, model and reasoning level, each with where it came from; and
the runtime paths the configuration lists that exist.

Seed 002 "Worker configuration" (semantics); the refusals are those of config.py (model_unresolved,
config_invalid for a level the effective backend does not know or a runtime path holding the
workspace). Pure: the file comes in as the value `parse_configuration` made and the existence of
a path as a predicate. What the machine adds (the model map's local id, the program) is
`domain.configuration.machine`'s.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence
from typing import cast

from concorde_workers.domain.configuration.config import (
    DEFAULT_BACKEND_SOURCE,
    Entry,
    Levels,
    WorkerChoice,
    WorkerConfiguration,
    config_invalid,
    refusal,
    show,
)
from concorde_workers.domain.ground.backends import DEFAULT_BACKEND
from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.ground.errors import Refusal
from concorde_workers.domain.ground.paths import is_within

__all__ = ["choose", "runtime_paths", "unnamed_notice"]

DEFAULT_RUNTIME = (".venv", "node_modules")
"""The runtime paths of a configuration that lists none."""


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
    return refusal(Code.MODEL_UNRESOLVED, message, config.file)


def _wrong_level(
    config: WorkerConfiguration, choice: WorkerChoice, known: Sequence[str]
) -> Refusal:
    levels = ", ".join(known)
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


def unnamed_notice(config: WorkerConfiguration, operation: str, worker: str) -> str | None:
    """What to say when the file has no entry of its own for the Operation or the worker asked
    for (issue 19 §2): the caller declared it, so the chain's less specific entries apply as the
    rules say, but a mistyped id must not pass for a configured one in silence."""
    entries = config.operations.get(operation)
    if entries is None:
        named = ", ".join(sorted(config.operations)) or "none"
        return (
            f"{config.file} has no entry for Operation {operation} (its Operations: "
            f"{named}): worker {worker} takes the file's default entry"
        )
    if worker in entries.workers:
        return None
    named = ", ".join(sorted(entries.workers)) or "none"
    fallback = (
        f"operations.{operation}.default"
        if entries.default is not None
        else "the file's default entry"
    )
    return (
        f"{config.file} has no entry for worker {worker} of Operation {operation} (its "
        f"workers: {named}): it takes {fallback}"
    )


def choose(
    config: WorkerConfiguration, operation: str, worker: str, levels: Levels
) -> WorkerChoice | Refusal:
    """Backend, model and level of one worker from the worker configuration alone; `levels`
    are the registered backends' reasoning levels."""
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
    known = levels.get(choice.backend, ())
    if reasoning is not None and reasoning not in known:
        return _wrong_level(config, choice, known)
    return choice


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
