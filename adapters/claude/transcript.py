"""Claude Code's session as JSON Lines (issue 21 §3): `{"type": "assistant", "message":
{"content": [{"type": "tool_use", ...}]}}`, answered by a `user` line's `tool_result`; a `user`
line without one is a prompt. Claude Code's own answer to a call its permission rules deny
("denied by your permission settings", in a `<tool_use_error>`) is a refusal by the grant: the
host generated those rules from it (notes/claude-code.md)."""

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

__all__ = ["CLAUDE_TRANSCRIPT", "claude_events"]


def claude_events(line: Mapping[str, Any]) -> list[TranscriptEvent]:
    """What one line of Claude Code's session tells."""
    message = line.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    blocks = [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []
    if line.get("type") == "user":
        results = [b for b in blocks if b.get("type") == "tool_result"]
        if not results:
            return [Prompt()]
        return [Result(b.get("tool_use_id"), b.get("is_error"), b.get("content")) for b in results]
    if line.get("type") == "assistant":
        return [
            Call(b.get("id"), b.get("name", "?"), b.get("input"))
            for b in blocks
            if b.get("type") == "tool_use"
        ]
    return []


CLAUDE_TRANSCRIPT = TranscriptDialect(
    events=claude_events,
    grant_denials=("denied by your permission settings",),
    wrappers=("<tool_use_error>", "</tool_use_error>"),
)
