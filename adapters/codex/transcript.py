"""Codex's rollout as JSON Lines (issue 33 §1): `{"type": "response_item", "payload": {...}}`,
a payload being a `message` (role `user`: a prompt), a `function_call` or `custom_tool_call`
(apply_patch) with its `call_id`, answered by a `function_call_output` or
`custom_tool_call_output`. The rollout is the run's transcript; its other lines (event_msg,
turn_context, session_meta) repeat or frame what these hold."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from concorde_workers.domain.evidence.transcript import (
    Call,
    Prompt,
    Result,
    TranscriptDialect,
    TranscriptEvent,
)
from concorde_workers.domain.ground import json_limits

__all__ = ["CODEX_TRANSCRIPT", "codex_events"]

_OUTPUT_FAILED = ("Process exited with code 0", "Exit code: 0")


def codex_events(line: Mapping[str, Any]) -> list[TranscriptEvent]:
    """What one line of Codex's rollout tells."""
    payload = line.get("payload") if line.get("type") == "response_item" else None
    if not isinstance(payload, Mapping):
        return []
    kind = payload.get("type")
    if kind == "message" and payload.get("role") == "user" and not _framing(payload):
        return [Prompt()]
    if kind == "function_call":
        arguments = _decoded(payload.get("arguments"))
        return [Call(payload.get("call_id"), payload.get("name", "?"), arguments)]
    if kind == "custom_tool_call":
        return [
            Call(payload.get("call_id"), payload.get("name", "?"), _patched(payload.get("input")))
        ]
    if kind in ("function_call_output", "custom_tool_call_output"):
        output = payload.get("output")
        failed = isinstance(output, str) and not any(ok in output for ok in _OUTPUT_FAILED)
        return [Result(payload.get("call_id"), failed, output)]
    return []


def _decoded(arguments: object) -> object:
    """A function call's arguments, which Codex keeps as JSON text (`{"cmd": ...}`), as the
    object they hold, so that the call's target shows; as given when they hold none."""
    if not isinstance(arguments, str):
        return arguments
    try:
        return json_limits.loads(arguments)
    except ValueError:
        return arguments


_PATCH_HEADS = ("*** Add File: ", "*** Update File: ", "*** Delete File: ")


def _patched(patch: object) -> object:
    """An apply_patch call's target: the first file its patch names (`{"path": ...}`), else the
    patch text as given."""
    if isinstance(patch, str):
        for line in patch.splitlines():
            head = next((h for h in _PATCH_HEADS if line.startswith(h)), None)
            if head is not None:
                return {"path": line[len(head) :].strip()}
    return patch


def _framing(payload: Mapping[str, Any]) -> bool:
    """Codex's own `<environment_context>` message, sent as a user message before the prompt."""
    content = payload.get("content")
    first = content[0] if isinstance(content, list) and content else None
    text = first.get("text") if isinstance(first, Mapping) else None
    return isinstance(text, str) and text.startswith("<environment_context>")


CODEX_TRANSCRIPT = TranscriptDialect(
    events=codex_events,
    skipped=(),
    in_output=False,
)
