"""The field types the record models share (domain/evidence/records.py, worker_result.py,
progress_file.py): strict scalars, the contracts' patterns and literals, and the one reading of
a pydantic validation error."""

from __future__ import annotations

import posixpath
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    ConfigDict,
    Field,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
)

from concorde_workers.domain.ground.backends import BACKENDS as BACKENDS
from concorde_workers.domain.ground.backends import DEFAULT_BACKEND as DEFAULT_BACKEND
from concorde_workers.domain.ground.backends import Backend as Backend

NonEmpty = Annotated[StrictStr, Field(min_length=1)]
Count = Annotated[StrictInt, Field(ge=0)]
Amount = Annotated[StrictInt | StrictFloat, Field(ge=0)]
"""A JSON number ≥ 0; an integer stays an integer so the value dumps as it was read."""
CodeText = Annotated[StrictStr, Field(pattern=r"^[a-z][a-z0-9_]*$")]
"""A code another actor gives (the worker's own): the contract's pattern; Workers' own codes are
`domain.ground.codes.Code`."""
Digest = Annotated[StrictStr, Field(pattern=r"^sha256:[0-9a-f]{64}$")]
GitObjectId = Annotated[StrictStr, Field(pattern=r"^[0-9a-f]{40}([0-9a-f]{24})?$")]
"""A Git object's id as Git prints it: 40 hex digits (SHA-1), or 64 (a SHA-256 repository)."""
UtcTime = Annotated[
    StrictStr, Field(pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z$")
]
"""A UTC time as the trace node and the progress file write it: ISO 8601 with the suffix Z."""
JsonObject = dict[str, Any]

WorkerStatus = Literal["ok", "blocked", "failed"]
Prompt = Literal["initial", "repair", "retry"]
NodeStatus = Literal["ok", "blocked", "failed", "running"]
NodeOutcome = Literal["ok", "blocked", "failed", "interrupted"]
Phase = Literal["preparing", "worker", "audit", "validation", "waiting", "deletions", "finished"]
ProgressStatus = Literal["ok", "blocked", "failed", "interrupted"]

RECORD = ConfigDict(extra="forbid", frozen=True)
"""Every record model: unknown keys refused, values frozen."""


def is_project_path(value: str) -> bool:
    """Relative, non-empty, with no `..` segment (the contracts' `project-path` format)."""
    return bool(value) and not posixpath.isabs(value) and ".." not in value.split("/")


def describe_error(error: ValidationError) -> str:
    """The first problem of a validation error, as `<location>: <message>`."""
    first = error.errors(include_url=False)[0]
    location = ".".join(str(part) for part in first["loc"])
    message = str(first["msg"]).removeprefix("Value error, ")
    return f"{location}: {message}" if location else message


UTC_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
"""A time as the records, the progress file, the events and the tool calls' moments write it:
UTC, ISO 8601 with the suffix Z, whole seconds. Written here once."""


def utc_text(moment: datetime) -> str:
    """A time as the records write it (`UTC_FORMAT`); a naive time is refused, never guessed."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError("a record time needs an aware datetime")
    return moment.astimezone(UTC).strftime(UTC_FORMAT)
