"""What `concorde-workers init` writes for a project's first run (issue 19 §2), decided from
what the command found; application/setup/starter.py reads and writes.

It never overwrites: a file that exists is kept and said, unless `--force` replaces it; an
entry already in the machine's model map is kept even with `--force`, which only adds the
starter's own entry where it is missing or replaces it. What it decides:

- `.concorde/workers.json`: one project model, `default`, for every worker, on the backend
  found installed that init can complete the model map for (docs/decisions.md "init"), the
  default backend first.
- the model map entry of `default`: what each backend's profile says its program runs without
  `--model` (`DefaultModel`): for Claude Code a fixed id; for pi the `defaultProvider/
  defaultModel` of pi's own settings, when they say one.
- a starter grant, outside the repository beside the model map: `rw` over `src/` when there is
  one, `ro` over every other top-level entry but Git's, the worktrees and `.concorde/`.
- `.claude/worktrees/` in the repository's `.git/info/exclude`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.ground import json_limits

__all__ = [
    "EXCLUDE_LINE",
    "PROJECT_MODEL",
    "DefaultModel",
    "MapUpdate",
    "backend_for",
    "default_id",
    "excluded",
    "grant_text",
    "model_ids",
    "model_map_update",
    "workers_text",
]

PROJECT_MODEL = "default"
EXCLUDE_LINE = ".claude/worktrees/"
_NOT_GRANTED = frozenset({".git", ".claude", ".concorde"})


class DefaultModel(BaseModel):
    """How init knows the id a backend's program runs without `--model` (its profile's): a
    fixed id, or the values of `keys` in `settings_file` of its configuration directory joined
    by `/`; neither: init cannot know it."""

    model_config = ConfigDict(frozen=True)

    fixed: str | None = None
    settings_file: str | None = None
    keys: tuple[str, ...] = ()


def backend_for(found: Sequence[str], ids: Mapping[str, str], order: Sequence[str]) -> str:
    """The starter's backend: one found installed whose model id init knows, in `order` (the
    spec's default backend first); else one found; else the first of `order`."""
    for backend in order:
        if backend in found and backend in ids:
            return backend
    return next((b for b in order if b in found), order[0])


def default_id(model: DefaultModel, settings_text: str | None) -> str | None:
    """The id the program runs without `--model`: the fixed one, else the settings' values of
    the keys joined by `/`; None when one is missing or empty or the file is no JSON object."""
    if model.fixed is not None:
        return model.fixed
    if settings_text is None or not model.keys:
        return None
    try:
        data = json_limits.loads(settings_text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    values = [data.get(key) for key in model.keys]
    if all(isinstance(value, str) and value for value in values):
        return "/".join(str(value) for value in values)
    return None


def model_ids(
    found: Mapping[str, DefaultModel], settings: Mapping[str, str | None]
) -> dict[str, str]:
    """The local id of the project model on each backend found (its `DefaultModel`), where
    init can know it; `settings` holds each backend's settings file's text, when read."""
    ids: dict[str, str] = {}
    for backend, model in found.items():
        found_id = default_id(model, settings.get(backend))
        if found_id is not None:
            ids[backend] = found_id
    return ids


def workers_text(backend: str) -> str:
    """The starter worker configuration (contract.workers.worker-configuration)."""
    data = {
        "schema_version": 2,
        "enabled_models": {PROJECT_MODEL: {}},
        "default": {"backend": backend, "model": PROJECT_MODEL},
    }
    return json.dumps(data, indent=2) + "\n"


def grant_text(top_level: Sequence[tuple[str, bool]], task: str) -> str:
    """The starter grant over the primary's top-level entries (name, is a directory)."""
    entries = []
    for name, is_dir in sorted(top_level):
        if name in _NOT_GRANTED:
            continue
        level = "rw" if (name, is_dir) == ("src", True) else "ro"
        entries.append({"path": name + ("/" if is_dir else ""), "level": level})
    identity = hashlib.sha256(f"concorde-workers init {task}".encode()).hexdigest()
    data = {"task_type": "implement", "entries": entries, "context_identity": f"sha256:{identity}"}
    return json.dumps(data, indent=2) + "\n"


@dataclass(frozen=True)
class MapUpdate:
    """The model map's new text (None: leave the file as it is) and what to say of it."""

    text: str | None
    said: str


def model_map_update(
    file: str,
    existing: str | None,
    ids: Mapping[str, str],
    force: bool,
    example: tuple[str, str] = ("<backend>", "<model id>"),
) -> MapUpdate:
    """The map with the starter's entry added where it is missing (with `force`, replaced);
    every other entry kept as it is. A map that is not a schema 1 object is left alone.
    `example` is the backend and placeholder the refusal to add anything names."""
    if not ids:
        backend, placeholder = example
        return MapUpdate(
            None,
            f"{file}: nothing added (no backend whose model id init knows; "
            f'add "{PROJECT_MODEL}": {{"{backend}": "{placeholder}"}})',
        )
    data: dict[str, object] = {"schema_version": 1, "models": {}}
    if existing is not None:
        try:
            data = json_limits.loads(existing)
        except ValueError:
            return MapUpdate(None, f"{file}: kept, it is not JSON; repair it by hand")
        if not isinstance(data, dict) or not isinstance(data.get("models"), dict):
            return MapUpdate(None, f"{file}: kept, it is not a model map; repair it by hand")
    models = dict(data["models"])  # type: ignore[call-overload]
    entry = models.get(PROJECT_MODEL)
    if isinstance(entry, dict) and not force:
        added = {b: i for b, i in ids.items() if b not in entry}
        if not added:
            return MapUpdate(None, f'{file}: kept, it already maps "{PROJECT_MODEL}"')
        models[PROJECT_MODEL] = {**entry, **added}
    else:
        models[PROJECT_MODEL] = dict(ids)
    text = json.dumps({**data, "models": models}, indent=2) + "\n"
    shown = ", ".join(f"{b}: {i}" for b, i in sorted(ids.items()))
    return MapUpdate(text, f'{file}: "{PROJECT_MODEL}" maps to {shown}')


def excluded(exclude_text: str) -> str | None:
    """The exclude file with `.claude/worktrees/` added, None when it already has it."""
    lines = exclude_text.splitlines()
    if any(line.strip() in (EXCLUDE_LINE, "/" + EXCLUDE_LINE) for line in lines):
        return None
    body = exclude_text if not exclude_text or exclude_text.endswith("\n") else exclude_text + "\n"
    return f"{body}{EXCLUDE_LINE}\n"
