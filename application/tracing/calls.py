"""The tool calls of a run, from its transcript, each with the decision it got (issue 21 §3).

Both programs keep their session as JSON Lines: Claude Code's (`{"type": "assistant",
"message": {"content": [{"type": "tool_use", ...}]}}`, answered by a `user` line's
`tool_result`), pi's (`{"type": "message", "message": {"role": "assistant", "content":
[{"type": "toolCall", ...}]}}`, answered by a `toolResult` message). A call's decision:

- `allowed`: its result is no error;
- `refused by the grant`: an error that is the host's own denial (`Concorde grant: …`, the one
  text every generated hook and the pi extension give, domain/boundary/rules.py), or Claude Code's
  answer to a call the permission rules generated from the grant deny;
- `refused by the sandbox`: a Bash call whose output holds what the sandbox's walls give (a
  read-only file system, an operation not permitted, a refused connection, permission denied),
  whether or not the command failed as a whole (`curl …; echo done` exits 0);
- `failed`: any other error; `no result`: the session ended before its result.

A call belongs to the round whose prompt (a user message that is no tool result) came last.
Read bounded: at most `MAX_CALLS` calls, each line through the JSON depth guard; a line that is
no JSON is skipped. What this returns is worker text: a printer escapes it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from concorde_workers.domain.texts import json_limits

__all__ = ["MAX_CALLS", "CallTracker", "ToolCall", "tool_calls"]

MAX_CALLS = 20_000
TEXT_LIMIT = 600
GRANT_DENIAL = "Concorde grant: "
SETTINGS_DENIAL = "denied by your permission settings"
"""Claude Code's own answer to a call its permission rules deny: the rules the host generates
from the grant (notes/claude-code.md), so a refusal by the grant too."""
SANDBOX_WALLS = ("Read-only file system", "Operation not permitted", "Permission denied",
                 "Connection refused", "Couldn't connect", "Network is unreachable",
                 "Could not resolve host", "Temporary failure in name resolution")
BASH_TOOLS = frozenset({"Bash", "bash"})


@dataclass
class ToolCall:
    round: int
    id: str
    tool: str
    target: str
    decision: str = "no result"
    reason: str = ""


def _short(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= TEXT_LIMIT else text[:TEXT_LIMIT] + " …"


def _target(arguments: object) -> str:
    if not isinstance(arguments, Mapping):
        return ""
    for key in ("file_path", "path", "command", "pattern", "notebook_path", "url"):
        if isinstance(arguments.get(key), str):
            return _short(arguments[key])
    return _short(dict(arguments))


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content
                         if isinstance(b, Mapping) and b.get("type") == "text")
    return ""


def _wall(text: str) -> str | None:
    """The first line of a Bash call's output that one of the sandbox's walls gave."""
    for line in text.splitlines():
        if any(wall in line for wall in SANDBOX_WALLS):
            return line.strip()
    return None


def _decision(call: ToolCall, is_error: bool, text: str) -> None:
    wall = _wall(text) if call.tool in BASH_TOOLS else None
    if is_error and GRANT_DENIAL in text:
        call.decision, call.reason = "refused by the grant", _short(
            text[text.index(GRANT_DENIAL) + len(GRANT_DENIAL):].strip())
    elif is_error and SETTINGS_DENIAL in text:
        call.decision, call.reason = "refused by the grant", _short(
            text.replace("<tool_use_error>", "").replace("</tool_use_error>", "").strip())
    elif wall is not None:  # the command ran, and the sandbox refused it something
        call.decision, call.reason = "refused by the sandbox", _short(wall)
    elif is_error:
        call.decision, call.reason = "failed", _short(text.strip())
    else:
        call.decision = "allowed"


_PI_STREAMING = ('{"type":"message_update"', '{"type":"tool_execution_update"')
"""pi's output lines that only stream what a later `message_end` holds whole: skipped before
parsing, since the live reader sees every line of a round."""


class CallTracker:
    """The calls of one session as its lines arrive: `feed_line` gives the calls each line
    completes (its result arrived). A transcript's lines and the agent's live output alike:
    pi's output carries each whole message in a `message_end` event."""

    def __init__(self, backend: str) -> None:
        self._backend = backend
        self.round = 0
        self.calls: dict[str, ToolCall] = {}
        self._done: list[ToolCall] = []

    def feed_line(self, text: str) -> list[ToolCall]:
        if text.startswith(_PI_STREAMING):  # most of pi's output: the deltas of one message
            return []
        try:
            line = json_limits.loads(text)
        except ValueError:
            return []
        if isinstance(line, Mapping):
            (self._claude if self._backend == "claude" else self._pi)(line)
        done, self._done = self._done, []
        return done

    def _prompt(self) -> None:
        self.round += 1

    def _call(self, block: Mapping[str, Any], arguments_key: str) -> None:
        if len(self.calls) >= MAX_CALLS or not isinstance(block.get("id"), str):
            return
        if block["id"] in self.calls:  # pi's output tells a call in more than one event
            return
        self.calls[block["id"]] = ToolCall(round=max(self.round, 1), id=block["id"],
                                           tool=str(block.get("name", "?")),
                                           target=_target(block.get(arguments_key)))

    def _result(self, call_id: object, is_error: object, content: object) -> None:
        call = self.calls.get(call_id) if isinstance(call_id, str) else None
        if call is not None and call.decision == "no result":
            _decision(call, is_error is True, _text(content))
            self._done.append(call)

    def _claude(self, line: Mapping[str, Any]) -> None:
        message = line.get("message")
        content = message.get("content") if isinstance(message, Mapping) else None
        blocks = [b for b in content if isinstance(b, Mapping)] if isinstance(content,
                                                                               list) else []
        if line.get("type") == "user":
            results = [b for b in blocks if b.get("type") == "tool_result"]
            if not results:
                self._prompt()
            for b in results:
                self._result(b.get("tool_use_id"), b.get("is_error"), b.get("content"))
        elif line.get("type") == "assistant":
            for b in blocks:
                if b.get("type") == "tool_use":
                    self._call(b, "input")

    def _pi(self, line: Mapping[str, Any]) -> None:
        message = line.get("message") if line.get("type") in ("message", "message_end") else None
        if not isinstance(message, Mapping):
            return
        role, content = message.get("role"), message.get("content")
        if role == "user":
            self._prompt()
        elif role == "assistant" and isinstance(content, list):
            for b in content:
                if isinstance(b, Mapping) and b.get("type") == "toolCall":
                    self._call(b, "arguments")
        elif role == "toolResult":
            self._result(message.get("toolCallId"), message.get("isError"), content)


def tool_calls(lines: Iterable[str], backend: str) -> list[ToolCall]:
    """Every tool call the transcript holds, in order, with its round and decision."""
    tracker = CallTracker(backend)
    for text in lines:
        tracker.feed_line(text)
    return list(tracker.calls.values())
