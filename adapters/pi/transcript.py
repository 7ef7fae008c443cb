"""pi's session as JSON Lines (issue 21 §3): `{"type": "message", "message": {"role":
"assistant", "content": [{"type": "toolCall", ...}]}}`, answered by a `toolResult` message; a
`user` message is a prompt. Its live output carries each whole message in a `message_end` event
too; the streaming deltas (`message_update`, `tool_execution_update`: most of its output) only
repeat what that holds, and are skipped before parsing."""

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

__all__ = ["PI_TRANSCRIPT", "pi_events"]


def pi_events(line: Mapping[str, Any]) -> list[TranscriptEvent]:
    """What one line of pi's session (or live output) tells."""
    message = line.get("message") if line.get("type") in ("message", "message_end") else None
    if not isinstance(message, Mapping):
        return []
    role, content = message.get("role"), message.get("content")
    if role == "user":
        return [Prompt()]
    if role == "assistant" and isinstance(content, list):
        return [
            Call(b.get("id"), b.get("name", "?"), b.get("arguments"))
            for b in content
            if isinstance(b, Mapping) and b.get("type") == "toolCall"
        ]
    if role == "toolResult":
        return [Result(message.get("toolCallId"), message.get("isError"), content)]
    return []


PI_TRANSCRIPT = TranscriptDialect(
    events=pi_events,
    skipped=('{"type":"message_update"', '{"type":"tool_execution_update"'),
)
