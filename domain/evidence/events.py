"""The live event stream of a run (issue 21 §5): `run … --events` prints one JSON object per
line while the run goes, for callers that watch (Concorde's main session, CI logs) instead of
polling status.json.

Every event holds `schema` ("concorde-workers.event"), `version` (`EVENT_VERSION`), `event` (one
of `EventKind`), `run_id`, `at` (UTC, seconds) and the fields of its kind (`EVENT_SCHEMA`, a JSON
Schema, which the tests hold every emitted event to). Texts a worker gave (a tool call's target,
a refusal's reason, a path) are bounded (`TEXT_LIMIT`) and kept as they are: JSON escapes every
control character, so the stream can steer no terminal.

The resource limits in force and their peaks are told as the record keeps them (issue 31 §5):
`run_started` carries the limits in force, and after each round whose control group was made a
`resources` event carries what its `rounds/<n>/resources.json` says of them — the limits, whether
the kernel enforced them, the memory and process peaks, the CPU time, the kills and refused
forks, and the limits reached. New kinds and fields are additions a reader that takes the kinds
it knows can ignore: the version stays 1.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from concorde_workers.domain.ground.backends import BACKENDS

__all__ = [
    "EVENT_SCHEMA",
    "EVENT_VERSION",
    "SCHEMA_NAME",
    "TEXT_LIMIT",
    "EventKind",
    "bounded",
    "event",
]

SCHEMA_NAME = "concorde-workers.event"
EVENT_VERSION = 1
TEXT_LIMIT = 2000
LISTED = 50
"""At most this many paths an audit event lists (its counts are whole)."""


class EventKind(StrEnum):
    RUN_STARTED = "run_started"
    ROUND_STARTED = "round_started"
    RESOURCES = "resources"
    TOOL_CALL = "tool_call"
    AUDIT = "audit"
    CHECK = "check"
    RETRY = "retry"
    DELETION = "deletion"
    RUN_ENDED = "run_ended"


def bounded(text: object) -> str:
    value = "" if text is None else str(text)
    return value if len(value) <= TEXT_LIMIT else value[:TEXT_LIMIT] + " …"


def event(kind: EventKind, run_id: str, at: str, **fields: Any) -> dict[str, Any]:
    """One event, its envelope first."""
    return {
        "schema": SCHEMA_NAME,
        "version": EVENT_VERSION,
        "event": kind.value,
        "run_id": run_id,
        "at": at,
        **fields,
    }


_TEXT = {"type": "string", "maxLength": TEXT_LIMIT + 2}
_NULLABLE_TEXT = {"anyOf": [{"type": "null"}, _TEXT]}
_ROUND = {"type": "integer", "minimum": 1}
_PATHS = {"type": "array", "maxItems": LISTED, "items": _TEXT}
_COUNT = {"type": ["integer", "null"], "minimum": 0}
_LIMITS = {
    "type": "object",
    "required": ["processes", "memory_mib", "cpu_weight", "space_mib"],
    "properties": {
        name: {"type": "integer", "minimum": 1}
        for name in ("processes", "memory_mib", "cpu_weight", "space_mib")
    },
}
"""The limits in force (ResourceLimits), as a round's resources.json and run_started say them."""


def _kind(name: EventKind, required: list[str], properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "if": {"properties": {"event": {"const": name.value}}},
        "then": {"required": required, "properties": properties},
    }


EVENT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "A concorde-workers run event (run --events)",
    "type": "object",
    "required": ["schema", "version", "event", "run_id", "at"],
    "properties": {
        "schema": {"const": SCHEMA_NAME},
        "version": {"const": EVENT_VERSION},
        "event": {"enum": [k.value for k in EventKind]},
        "run_id": {"type": "string", "minLength": 1},
        "at": {"type": "string", "pattern": r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$"},
    },
    "allOf": [
        _kind(
            EventKind.RUN_STARTED,
            ["backend", "task_type", "worktree", "run_directory"],
            {
                "backend": {"enum": list(BACKENDS)},
                "task_type": _TEXT,
                "worktree": _TEXT,
                "run_directory": _TEXT,
                "limits": {"anyOf": [{"type": "null"}, _LIMITS]},
            },
        ),
        _kind(
            EventKind.RESOURCES,
            ["round", "limits", "enforced"],
            {
                "round": _ROUND,
                "limits": _LIMITS,
                "enforced": {"type": "boolean"},
                "memory_peak_bytes": _COUNT,
                "processes_peak": _COUNT,
                "cpu_seconds": {"type": ["number", "null"], "minimum": 0},
                "oom_kills": _COUNT,
                "forks_refused": _COUNT,
                "limits_reached": {"type": "array", "maxItems": LISTED, "items": _TEXT},
            },
        ),
        _kind(
            EventKind.ROUND_STARTED,
            ["round", "prompt"],
            {"round": _ROUND, "prompt": {"enum": ["initial", "repair", "retry"]}},
        ),
        _kind(
            EventKind.TOOL_CALL,
            ["round", "tool", "target", "decision", "reason"],
            {
                "round": _ROUND,
                "tool": _TEXT,
                "target": _TEXT,
                "reason": _TEXT,
                "decision": {
                    "enum": ["allowed", "refused by the grant", "refused by the sandbox", "failed"]
                },
            },
        ),
        _kind(
            EventKind.AUDIT,
            ["round", "verdict", "changed", "changed_count", "violations"],
            {
                "round": _ROUND,
                "verdict": {"enum": ["clean", "violation"]},
                "changed": _PATHS,
                "changed_count": {"type": "integer", "minimum": 0},
                "violations": _PATHS,
            },
        ),
        _kind(
            EventKind.CHECK,
            ["round", "check", "judgement", "exit_code"],
            {
                "round": _ROUND,
                "check": _TEXT,
                "judgement": _NULLABLE_TEXT,
                "exit_code": {"type": ["integer", "null"]},
            },
        ),
        _kind(
            EventKind.RETRY,
            ["round", "error", "retried", "delay_seconds"],
            {
                "round": _ROUND,
                "error": _TEXT,
                "retried": {"type": "boolean"},
                "delay_seconds": {"type": ["number", "null"], "minimum": 0},
            },
        ),
        _kind(
            EventKind.DELETION,
            ["path", "outcome"],
            {"path": _TEXT, "outcome": {"enum": ["deleted", "refused", "absent", "failed"]}},
        ),
        _kind(
            EventKind.RUN_ENDED,
            ["status", "code", "detail", "rounds"],
            {
                "status": {"enum": ["ok", "blocked", "failed", "interrupted"]},
                "code": _NULLABLE_TEXT,
                "detail": _NULLABLE_TEXT,
                "rounds": {"type": "integer", "minimum": 0},
            },
        ),
    ],
}
"""The schema of every event, by kind (draft 2020-12)."""
