"""What a request says that its author likely did not mean (issue 31 §3): its grant, read
against the worktree's facts (`domain.boundary.grant.grant_notes`), and a model id that names no
provider where the program's ids do (`domain.configuration.profile.model_id_note`). `plan`
lists them among its notes, `run` says them before the run and in its account, `show` says
what it can without the worktree. Warnings only: the run takes the request as it reads.
"""

from __future__ import annotations

import posixpath
from typing import Any

from concorde_workers.domain.boundary.grant import Grant, grant_notes, parse_grant
from concorde_workers.domain.configuration.profile import BackendProfile, model_id_note
from concorde_workers.domain.configuration.request import RunRequest
from concorde_workers.domain.ground import json_limits
from concorde_workers.domain.ground.layout import GRANT_FILE
from concorde_workers.domain.ground.paths import EntryKind
from concorde_workers.ports.machine.filesystem import (
    BoundedReading,
    FileSystemError,
    Walking,
    read_regular_text,
)

__all__ = ["notes_for_grant", "notes_for_request", "notes_for_run", "read_grant"]


def notes_for_grant(fs: Walking, worktree: str, grant: Grant) -> tuple[str, ...]:
    """The grant's notes against the worktree as it is now: what is at each entry's path (its
    final link not followed) and the names beside it, for a guess at what was meant."""

    def kind_of(rel: str) -> EntryKind | None:
        try:
            return fs.stat(posixpath.join(worktree, rel)).kind
        except FileSystemError:
            return None

    def names_in(rel: str) -> list[str]:
        try:
            return [e.name for e in fs.listdir(posixpath.join(worktree, rel))]
        except FileSystemError:
            return []

    return grant_notes(grant, kind_of, names_in)


def notes_for_request(
    fs: Walking, request: RunRequest, profile: BackendProfile | None
) -> tuple[str, ...]:
    """The notes of a request: its grant's (none for a grant the run refuses: its refusal says
    it), then its model id's on `profile`, the request's backend."""
    grant = parse_grant(request.grant, request.task_type)
    notes = notes_for_grant(fs, request.worktree, grant) if isinstance(grant, Grant) else ()
    model = model_id_note(profile, request.local_model, request.model_map) if profile else None
    return (*notes, *([model] if model is not None else []))


def notes_for_run(fs: BoundedReading, run_dir: str) -> tuple[str, ...]:
    """The notes of a run's grant.json that need no worktree (`show` has none)."""
    grant = parse_grant(read_grant(fs, run_dir, []))
    return grant_notes(grant) if isinstance(grant, Grant) else ()


def read_grant(fs: BoundedReading, run_dir: str, problems: list[str]) -> dict[str, Any] | None:
    """The run's grant.json (4 MiB, a regular file), or None with the problem said."""
    path = posixpath.join(run_dir, GRANT_FILE)
    try:
        data = json_limits.loads(read_regular_text(fs, path, 4 * 1024 * 1024))
    except (FileSystemError, ValueError) as error:
        problems.append(f"{path} cannot be read: {error}")
        return None
    return data if isinstance(data, dict) else None
