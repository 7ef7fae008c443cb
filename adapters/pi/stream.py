"""`PiStreamReader`: one pi round's JSON event stream (`pi -p --mode json`) as a `RoundReport`.

What pi 0.73.1 really prints (notes/pi.md §2, §8; captures in tests/fixtures/pi/):

* the first line is the `session` header; its `id` is pi's own UUID, the round's session;
* usage and cost come from assistant `message_end` only (`message_start` carries zeros and
  `turn_end` repeats the message): `input`, `output`, `cacheRead`, `cacheWrite`, `cost.total`;
* every `turn_end` adds a turn, except the pseudo-turn of an abort (stop reason `aborted`), which
  pi emits after the permission extension stopped the run;
* `tool_execution_start` is the worker's latest tool call (the progress file's last_action);
* the worker result is `result.details` of the last `tool_execution_end` of `concorde_result`
  that did not end in an error;
* pi exits 0 in json mode after model errors and aborts, and its own auto-retry prints several
  `agent_end`s: the round's end is judged from the LAST assistant message of the whole stream.

pi 0.73.1 prints no `entry_appended` record. The permission extension appends the
`{"type":"custom","customType":"concorde-limit","data":{limit,value,maximum}}` entry to the
session file and prints `[concorde-limit] {json}` on standard error: `finish` reads the entries
this round added to the session file and falls back to the stderr line.

A line that is no JSON object of a known event type is ignored: counted, and only the last few
kept (`IgnoredLines`); of the tool calls too only the last `ACTIONS_KEPT` are kept, so the
reader's memory does not follow what pi prints.

`finish` classifies the round by the first row of `CLASSIFICATION` that applies.
"""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from concorde_workers.adapters.pi.launch import PI_RESULT_TOOL
from concorde_workers.adapters.pi.links import pi_limit_detail, pi_process_link
from concorde_workers.domain.evidence.records import LastAction
from concorde_workers.domain.ground import json_limits
from concorde_workers.domain.ground.record_fields import utc_text
from concorde_workers.domain.run.agent_report import RoundReport, RoundUsage
from concorde_workers.domain.run.retries import transient_cause
from concorde_workers.domain.run.rounds import RoundEnding
from concorde_workers.domain.run.stdout import IgnoredLines, WatchedOutput
from concorde_workers.ports.machine.clock import Clock
from concorde_workers.ports.machine.filesystem import BoundedReading, FileSystemError

__all__ = [
    "ACTIONS_KEPT",
    "CLASSIFICATION",
    "LIMIT_ENTRY_TYPE",
    "Limit",
    "Observed",
    "PiStreamReader",
    "Rule",
    "classify",
    "limit_entries",
    "stderr_limit",
]

LIMIT_ENTRY_TYPE = "concorde-limit"
"""The custom session entry the permission extension appends when it stops the run."""

ACTIONS_KEPT = 100
"""How many of a round's latest tool calls the reader keeps (the host uses each as it comes)."""

STDERR_LIMIT_PREFIX = "[concorde-limit]"
"""The permission extension's stderr line: `[concorde-limit] {"limit":..,"value":..,..}`."""

# Which argument names a tool call's target, in order of preference (progress file).
_TARGET_ARGS = ("command", "pattern", "path", "file_path")


# --- small readers ------------------------------------------------------------------------------


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


@dataclass(frozen=True)
class Limit:
    """The limit the permission extension stopped the run at."""

    name: str
    value: int | float
    maximum: int | float

    @classmethod
    def of(cls, data: object) -> Limit | None:
        """From the entry's `data` (`maximum`, or the prototype's `max`); None when malformed."""
        if not isinstance(data, dict):
            return None
        name, value = _text(data.get("limit")), data.get("value")
        maximum = data.get("maximum", data.get("max"))
        if name is None or not _is_number(value) or not _is_number(maximum):
            return None
        assert isinstance(value, int | float) and isinstance(maximum, int | float)
        return cls(name=name, value=value, maximum=maximum)


def limit_entries(text: str) -> list[Limit | None]:
    """Every concorde-limit custom entry of a session file's text, in order (None for one whose
    data is malformed); lines that are no JSON object are skipped."""
    found: list[Limit | None] = []
    for line in text.splitlines():
        if LIMIT_ENTRY_TYPE not in line:
            continue
        try:
            entry = json_limits.loads(line)
        except (ValueError, RecursionError):
            continue
        if (
            isinstance(entry, dict)
            and entry.get("type") == "custom"
            and entry.get("customType") == LIMIT_ENTRY_TYPE
        ):
            found.append(Limit.of(entry.get("data")))
    return found


_STDERR_LIMIT = re.compile(r"^\[concorde-limit\]\s*(\{.*\})\s*$", re.MULTILINE)


def stderr_limit(stderr_tail: str) -> Limit | None:
    """The last well-formed `[concorde-limit] {json}` line of standard error."""
    for match in reversed(list(_STDERR_LIMIT.finditer(stderr_tail))):
        try:
            data = json_limits.loads(match.group(1))
        except (ValueError, RecursionError):
            continue
        limit = Limit.of(data)
        if limit is not None:
            return limit
    return None


# --- what the reader saw ------------------------------------------------------------------------


@dataclass(frozen=True)
class Observed:
    """A round's stream as read, with how the process ended: what the classification decides on."""

    exit_status: int | None
    timed_out: bool
    stderr_tail: str
    session: str | None = None
    stop_reason: str | None = None
    error_message: str | None = None
    limit: Limit | None = None
    has_result: bool = False

    @property
    def transient(self) -> bool:
        """The last assistant message ended in error naming a transient model-service error
        (seed 000 "Retries"; never a quota, billing or usage limit)."""
        return (
            self.stop_reason == "error"
            and self.error_message is not None
            and transient_cause(self.error_message) is not None
        )


@dataclass(frozen=True)
class Rule:
    """One row of the classification: its text, when it applies, the ending it gives."""

    text: str
    applies: Callable[[Observed], bool]
    ending: RoundEnding


CLASSIFICATION: tuple[Rule, ...] = (
    Rule("the runner killed the round at its timeout", lambda o: o.timed_out, RoundEnding.TIMEOUT),
    Rule(
        "the permission extension recorded a concorde-limit entry this round",
        lambda o: o.limit is not None,
        RoundEnding.LIMIT_REACHED,
    ),
    Rule(
        "no session record (pi failed before its session started)",
        lambda o: o.session is None,
        RoundEnding.PROCESS_FAILED,
    ),
    Rule(
        "the last assistant message's stop reason is error and its error message names a "
        "transient model-service error",
        lambda o: o.transient,
        RoundEnding.TRANSIENT_ERROR,
    ),
    Rule(
        "the last assistant message's stop reason is error or aborted",
        lambda o: o.stop_reason in ("error", "aborted"),
        RoundEnding.PROCESS_FAILED,
    ),
    Rule(
        "no worker result and a non-zero (or no) exit status",
        lambda o: not o.has_result and o.exit_status != 0,
        RoundEnding.PROCESS_FAILED,
    ),
    Rule("a normal end (with or without a worker result)", lambda o: True, RoundEnding.OK),
)
"""Tried in order; the last row always applies."""


def classify(observed: Observed) -> Rule:
    return next(rule for rule in CLASSIFICATION if rule.applies(observed))


# --- the reader ---------------------------------------------------------------------------------


@dataclass
class PiStreamReader(WatchedOutput):
    """StreamReader for one pi round.

    `session_file` is the run's fixed session file (`<rt>/config/sessions/<run-id>.jsonl`) and
    `fs` what reads it (bounded): the concorde-limit entries it holds when the reader is
    made are earlier rounds'; only those added during the round count. Without them the reader
    relies on the stderr line alone.
    """

    session_file: str | None = None
    fs: BoundedReading | None = None
    clock: Clock | None = None
    actions: deque[LastAction] = field(default_factory=lambda: deque(maxlen=ACTIONS_KEPT))
    ignored: IgnoredLines = field(default_factory=IgnoredLines)
    _session: str | None = None
    _turns: int = 0
    _tokens: dict[str, int] = field(default_factory=dict)
    _cost: float = 0.0
    _assistant_messages: int = 0
    _stop_reason: str | None = None
    _error_message: str | None = None
    _final_text: str | None = None
    _result: dict[str, Any] | None = None
    _has_result: bool = False
    _limits_before: int = 0

    def __post_init__(self) -> None:
        self._limits_before = len(self._session_limits())

    # -- StreamReader --------------------------------------------------------------------------

    def feed(self, line: str) -> LastAction | None:
        try:
            event = json_limits.loads(line)
        except (ValueError, RecursionError):
            event = None
        self._parsed(event)  # the events' tool calls, from this one parse
        kind = event.get("type") if isinstance(event, dict) else None
        handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is None or not isinstance(event, dict):
            self.ignored.add(line)
            return None
        return handler(self, event)

    def finish(self, exit_status: int | None, timed_out: bool, stderr_tail: str) -> RoundReport:
        observed = self.observed(exit_status, timed_out, stderr_tail)
        ending = classify(observed).ending
        ok = ending is RoundEnding.OK
        limit = observed.limit if ending is RoundEnding.LIMIT_REACHED else None
        return RoundReport(
            ending=ending,
            session=observed.session,
            exit=exit_status,
            worker_result=self._result,
            final_text=self._final_text,
            transient_error=(
                observed.error_message if ending is RoundEnding.TRANSIENT_ERROR else None
            ),
            process_link=None
            if ok
            else pi_process_link(
                exit_status=exit_status,
                stop_reason=observed.stop_reason,
                error_message=observed.error_message,
                turns=self._turns,
                stderr_tail=stderr_tail,
                limit=limit.name if limit else None,
                value=limit.value if limit else None,
                maximum=limit.maximum if limit else None,
            ),
            limit=pi_limit_detail(limit.name, limit.value, limit.maximum) if limit else None,
            failure=None if ok else _failure(observed, ending),
            usage=self.usage(),
            agent={
                "pi": {
                    "stop_reason": observed.stop_reason,
                    "turns": self._turns,
                    "cost": self._cost_or_none(),
                }
            },
        )

    # -- what was read -------------------------------------------------------------------------

    def observed(self, exit_status: int | None, timed_out: bool, stderr_tail: str) -> Observed:
        return Observed(
            exit_status=exit_status,
            timed_out=timed_out,
            stderr_tail=stderr_tail,
            session=self._session,
            stop_reason=self._stop_reason,
            error_message=self._error_message,
            limit=self._limit(stderr_tail),
            has_result=self._has_result,
        )

    def usage(self) -> RoundUsage:
        if not self._assistant_messages:
            return RoundUsage(turns=self._turns if self._session else None)
        return RoundUsage(
            tokens_in=self._tokens.get("input", 0),
            tokens_out=self._tokens.get("output", 0),
            tokens_cache_read=self._tokens.get("cacheRead", 0),
            tokens_cache_write=self._tokens.get("cacheWrite", 0),
            cost_usd=self._cost_or_none(),
            turns=self._turns,
        )

    def _cost_or_none(self) -> float | None:
        return round(self._cost, 10) if self._assistant_messages else None

    def _limit(self, stderr_tail: str) -> Limit | None:
        """The limit this round's concorde-limit entry names (session file), else the stderr
        line's."""
        new = self._session_limits()[self._limits_before :]
        named = [limit for limit in new if limit is not None]
        if named:
            return named[-1]
        return stderr_limit(stderr_tail)

    def _session_limits(self) -> list[Limit | None]:
        if self.session_file is None or self.fs is None:
            return []
        try:
            if not self.fs.is_file(self.session_file):
                return []
            return limit_entries(self.fs.read_text(self.session_file))
        except (FileSystemError, UnicodeDecodeError):
            return []

    # -- event handlers -------------------------------------------------------------------------

    def _on_session(self, event: dict[str, Any]) -> LastAction | None:
        session = _text(event.get("id"))
        if session is not None and self._session is None:
            self._session = session
        return None

    def _on_message_end(self, event: dict[str, Any]) -> LastAction | None:
        message = event.get("message")
        if not isinstance(message, dict) or message.get("role") != "assistant":
            return None
        self._assistant_messages += 1
        usage = message.get("usage")
        if isinstance(usage, dict):
            for key in ("input", "output", "cacheRead", "cacheWrite"):
                self._tokens[key] = self._tokens.get(key, 0) + _int(usage.get(key))
            cost = usage.get("cost")
            total = cost.get("total") if isinstance(cost, dict) else None
            if _is_number(total) and isinstance(total, int | float) and total > 0:
                self._cost += float(total)
        stop = message.get("stopReason")
        self._stop_reason = stop if isinstance(stop, str) else None
        self._error_message = _text(message.get("errorMessage"))
        text = _message_text(message)
        if text is not None:
            self._final_text = text
        return None

    def _on_turn_end(self, event: dict[str, Any]) -> LastAction | None:
        message = event.get("message")
        if isinstance(message, dict) and message.get("stopReason") == "aborted":
            return None  # the pseudo-turn pi emits after an abort
        self._turns += 1
        return None

    def _on_tool_start(self, event: dict[str, Any]) -> LastAction | None:
        tool = _text(event.get("toolName"))
        if tool is None:
            return None
        action = LastAction.of(tool, _target(event.get("args")), self._now())
        self.actions.append(action)
        return action

    def _on_tool_end(self, event: dict[str, Any]) -> LastAction | None:
        if event.get("toolName") != PI_RESULT_TOOL or event.get("isError") is not False:
            return None
        result = event.get("result")
        details = result.get("details") if isinstance(result, dict) else None
        if isinstance(details, dict):
            self._result, self._has_result = details, True
        return None

    def _on_other(self, event: dict[str, Any]) -> LastAction | None:
        return None

    def _now(self) -> str:
        now = self.clock.now_utc() if self.clock is not None else datetime.now(UTC)
        return utc_text(now)


_Handler = Callable[[PiStreamReader, dict[str, Any]], LastAction | None]

_HANDLERS: dict[str, _Handler] = {
    "session": PiStreamReader._on_session,
    "message_end": PiStreamReader._on_message_end,
    "turn_end": PiStreamReader._on_turn_end,
    "tool_execution_start": PiStreamReader._on_tool_start,
    "tool_execution_end": PiStreamReader._on_tool_end,
    **{
        kind: PiStreamReader._on_other
        for kind in (
            "agent_start",
            "agent_end",
            "turn_start",
            "message_start",
            "message_update",
            "tool_execution_update",
            "auto_retry_start",
            "auto_retry_end",
            "queue_update",
            "compaction_start",
            "compaction_end",
        )
    },
}


def _message_text(message: dict[str, Any]) -> str | None:
    content = message.get("content")
    if not isinstance(content, list):
        return None
    texts = [
        part["text"]
        for part in content
        if isinstance(part, dict)
        and part.get("type") == "text"
        and isinstance(part.get("text"), str)
        and part["text"]
    ]
    return "\n".join(texts) if texts else None


def _target(args: object) -> str:
    """A tool call's target: its path, pattern or command (first line cut by LastAction.of)."""
    if not isinstance(args, dict):
        return ""
    for key in _TARGET_ARGS:
        value = args.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def _failure(o: Observed, ending: RoundEnding) -> str:
    if ending is RoundEnding.TIMEOUT:
        return "the round timed out"
    if ending is RoundEnding.LIMIT_REACHED and o.limit is not None:
        return f"the permission extension stopped the run at its {o.limit.name} limit"
    if o.session is None:
        return (
            "pi printed no session record "
            f"(exit status {'none' if o.exit_status is None else o.exit_status})"
        )
    if o.stop_reason in ("error", "aborted"):
        return (
            f"pi ended with the stop reason {o.stop_reason}: "
            f"{o.error_message or 'no error message'}"
        )
    return (
        f"pi exited with status {'none' if o.exit_status is None else o.exit_status} "
        "without a worker result"
    )
