"""The tool calls of a run, from its transcript, each with the decision it got (issue 21 §3).

Each program keeps its session as JSON Lines in its own dialect, which its backend's profile
holds (`domain.evidence.transcript.TranscriptDialect`: Claude Code's `tool_use` blocks answered
by `tool_result`s, pi's `toolCall`s answered by `toolResult` messages). A call's decision:

- `allowed`: its result is no error;
- `refused by the grant`: an error that is the host's own denial (`Concorde grant: …`, the one
  text every generated hook and the pi extension give, domain/boundary/rules.py), or the
  program's own answer to a call the permission rules generated from the grant deny (its
  dialect's `grant_denials`);
- `refused by the sandbox`: a call of the backend's shell whose output holds what the sandbox's
  walls give (a read-only file system, an operation not permitted, a refused connection,
  permission denied), whether or not the command failed as a whole (`curl …; echo done` exits 0);
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

from concorde_workers.domain.configuration.profile import BackendProfile
from concorde_workers.domain.evidence.transcript import Call, Prompt, Result, TranscriptDialect
from concorde_workers.domain.ground import json_limits

__all__ = ["MAX_CALLS", "CallTracker", "ToolCall", "tool_calls"]

MAX_CALLS = 20_000
TEXT_LIMIT = 600
GRANT_DENIAL = "Concorde grant: "
SANDBOX_WALLS = (
    "Read-only file system",
    "Operation not permitted",
    "Permission denied",
    "Connection refused",
    "Couldn't connect",
    "Network is unreachable",
    "Could not resolve host",
    "Temporary failure in name resolution",
)


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
    for key in ("file_path", "path", "command", "cmd", "pattern", "notebook_path", "url"):
        if isinstance(arguments.get(key), str):
            return _short(arguments[key])
    return _short(dict(arguments))


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", ""))
            for b in content
            if isinstance(b, Mapping) and b.get("type") == "text"
        )
    return ""


def _wall(text: str) -> str | None:
    """The first line of a Bash call's output that one of the sandbox's walls gave."""
    for line in text.splitlines():
        if any(wall in line for wall in SANDBOX_WALLS):
            return line.strip()
    return None


def _unwrapped(text: str, dialect: TranscriptDialect) -> str:
    for wrapper in dialect.wrappers:
        text = text.replace(wrapper, "")
    return text.strip()


class CallTracker:
    """The calls of one session as its lines arrive, read in the backend's dialect:
    `feed_line` gives the calls each line completes (its result arrived). A transcript's lines
    and the agent's live output alike (pi's output carries each whole message in a
    `message_end` event)."""

    def __init__(self, profile: BackendProfile) -> None:
        self._dialect = profile.transcript
        self._shell = frozenset((*profile.tools.shell, *profile.tools.commands))
        self.round = 0
        self.calls: dict[str, ToolCall] = {}
        self._done: list[ToolCall] = []

    def feed_line(self, text: str) -> list[ToolCall]:
        """The calls a line of text completes (a transcript's): parsed here, bounded."""
        if text.startswith(self._dialect.skipped):  # a delta of what a later line holds whole
            return []
        try:
            line = json_limits.loads(text)
        except ValueError:
            return []
        return self.feed(line) if isinstance(line, Mapping) else []

    def feed(self, line: Mapping[str, Any]) -> list[ToolCall]:
        """The calls a line completes, parsed already (the agent's output, as its backend's
        reader parsed it: issue 34 §5, one parse a line)."""
        for told in self._dialect.events(line):
            if isinstance(told, Prompt):
                self.round += 1
            elif isinstance(told, Call):
                self._call(told)
            else:
                self._result(told)
        done, self._done = self._done, []
        return done

    def _call(self, told: Call) -> None:
        if len(self.calls) >= MAX_CALLS or not isinstance(told.id, str):
            return
        if told.id in self.calls:  # pi's output tells a call in more than one event
            return
        self.calls[told.id] = ToolCall(
            round=max(self.round, 1),
            id=told.id,
            tool=str(told.name),
            target=_target(told.arguments),
        )

    def _result(self, told: Result) -> None:
        call = self.calls.get(told.call_id) if isinstance(told.call_id, str) else None
        if call is not None and call.decision == "no result":
            self._decide(call, told.is_error is True, _text(told.content))
            self._done.append(call)

    def _decide(self, call: ToolCall, is_error: bool, text: str) -> None:
        wall = _wall(text) if call.tool in self._shell else None
        if is_error and GRANT_DENIAL in text:
            call.decision, call.reason = (
                "refused by the grant",
                _short(text[text.index(GRANT_DENIAL) + len(GRANT_DENIAL) :].strip()),
            )
        elif is_error and any(denial in text for denial in self._dialect.grant_denials):
            call.decision = "refused by the grant"
            call.reason = _short(_unwrapped(text, self._dialect))
        elif wall is not None:  # the command ran, and the sandbox refused it something
            call.decision, call.reason = "refused by the sandbox", _short(wall)
        elif is_error:
            call.decision, call.reason = "failed", _short(text.strip())
        else:
            call.decision = "allowed"


def tool_calls(lines: Iterable[str], profile: BackendProfile) -> list[ToolCall]:
    """Every tool call the transcript holds, in order, with its round and decision."""
    tracker = CallTracker(profile)
    for text in lines:
        tracker.feed_line(text)
    return list(tracker.calls.values())
