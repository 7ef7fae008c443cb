"""What `concorde-workers init` writes for a project's first run (issue 19 §2), decided from
what the command found; application/starter.py reads and writes.

It never overwrites: a file that exists is kept and said, unless `--force` replaces it; an
entry already in the machine's model map is kept even with `--force`, which only adds the
starter's own entry where it is missing or replaces it. What it decides:

- `.concorde/workers.json`: one project model, `default`, for every worker, on the backend
  found installed that init can complete the model map for (docs/decisions.md "init").
- the model map entry of `default`: for Claude Code the model it runs without `--model`; for pi
  the `defaultProvider/defaultModel` of pi's own settings, when they say one.
- a starter grant, outside the repository beside the model map: `rw` over `src/` when there is
  one, `ro` over every other top-level entry but Git's, the worktrees and `.concorde/`.
- `.claude/worktrees/` in the repository's `.git/info/exclude`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from concorde_workers.domain.texts import json_limits

__all__ = [
    "CLAUDE_DEFAULT_ID", "EXCLUDE_LINE", "PROJECT_MODEL", "MapUpdate", "backend_for",
    "excluded", "grant_text", "model_ids", "model_map_update", "pi_default_id",
    "workers_text",
]

PROJECT_MODEL = "default"
CLAUDE_DEFAULT_ID = "claude-opus-4-8"
"""What Claude Code 2.1.332 runs without `--model` (../shared/notes/claude-code.md, [V-run])."""
EXCLUDE_LINE = ".claude/worktrees/"
_NOT_GRANTED = frozenset({".git", ".claude", ".concorde"})


def backend_for(found: Sequence[str], ids: Mapping[str, str]) -> str:
    """The starter's backend: one found installed whose model id init knows, pi first (the
    spec's default backend); else one found; else pi."""
    for backend in ("pi", "claude"):
        if backend in found and backend in ids:
            return backend
    return next((b for b in ("pi", "claude") if b in found), "pi")


def pi_default_id(settings_text: str | None) -> str | None:
    """`provider/model` from pi's settings.json `defaultProvider` and `defaultModel`, None when
    either is missing or the file is no JSON object."""
    if settings_text is None:
        return None
    try:
        data = json_limits.loads(settings_text)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    provider, model = data.get("defaultProvider"), data.get("defaultModel")
    if isinstance(provider, str) and isinstance(model, str) and provider and model:
        return f"{provider}/{model}"
    return None


def model_ids(found: Sequence[str], pi_settings: str | None) -> dict[str, str]:
    """The local id of the project model on each backend found, where init can know it."""
    ids: dict[str, str] = {}
    if "claude" in found:
        ids["claude"] = CLAUDE_DEFAULT_ID
    pi = pi_default_id(pi_settings)
    if "pi" in found and pi is not None:
        ids["pi"] = pi
    return ids


def workers_text(backend: str) -> str:
    """The starter worker configuration (contract.workers.worker-configuration)."""
    data = {"schema_version": 2, "enabled_models": {PROJECT_MODEL: {}},
            "default": {"backend": backend, "model": PROJECT_MODEL}}
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


def model_map_update(file: str, existing: str | None, ids: Mapping[str, str],
                     force: bool) -> MapUpdate:
    """The map with the starter's entry added where it is missing (with `force`, replaced);
    every other entry kept as it is. A map that is not a schema 1 object is left alone."""
    if not ids:
        return MapUpdate(None, f"{file}: nothing added (no backend whose model id init knows; "
                               f"add \"{PROJECT_MODEL}\": {{\"pi\": \"<provider>/<id>\"}})")
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
            return MapUpdate(None, f"{file}: kept, it already maps \"{PROJECT_MODEL}\"")
        models[PROJECT_MODEL] = {**entry, **added}
    else:
        models[PROJECT_MODEL] = dict(ids)
    text = json.dumps({**data, "models": models}, indent=2) + "\n"
    shown = ", ".join(f"{b}: {i}" for b, i in sorted(ids.items()))
    return MapUpdate(text, f"{file}: \"{PROJECT_MODEL}\" maps to {shown}")


def excluded(exclude_text: str) -> str | None:
    """The exclude file with `.claude/worktrees/` added, None when it already has it."""
    lines = exclude_text.splitlines()
    if any(line.strip() in (EXCLUDE_LINE, "/" + EXCLUDE_LINE) for line in lines):
        return None
    body = exclude_text if not exclude_text or exclude_text.endswith("\n") else exclude_text + "\n"
    return f"{body}{EXCLUDE_LINE}\n"
