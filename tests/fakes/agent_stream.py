"""The test agents' line protocol and `TestStreamReader`, its StreamReader.

A test agent (a scripted FakeProcess or the standalone program tests/fakes/agent_programs/agent.py)
prints one JSON object per stdout line; `type` says what the line is:

    {"type": "session", "id": "s-1"}                       the session the round runs in
    {"type": "tool", "tool": "Write", "target": "/abs/p"}   a tool call (the progress file's last_action)
    {"type": "text", "text": "..."}                         assistant text; the last one is the final text
    {"type": "result", "result": {...}}                     the worker result, verbatim (the host validates)
    {"type": "error", "message": "API Error: 529 ..."}      an error the program reported
    {"type": "limit", "limit": "max_turns", "value": 5, "maximum": 5}
                                                            the program stopped at a limit (maximum
                                                            defaults to value)
    {"type": "usage", "tokens_in": 1, "tokens_out": 2, "tokens_cache_read": 0,
     "tokens_cache_write": 0, "cost_usd": 0.01, "turns": 1} usage; every usage line is summed
    {"type": "agent", "fields": {...}}                      overrides of the backend's own report
                                                            (`agent.pi` / `agent.claude`)

Anything else - invalid JSON, a JSON value that is no object, an unknown type, a known type with
fields of the wrong type - is ignored: counted in `TestStreamReader.ignored`, the last few kept,
as the real readers do; the reader never raises on a line.

`finish` classifies the round by the first row of `CLASSIFICATION` that applies.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from concorde_workers.adapters.claude.links import claude_process_link
from concorde_workers.adapters.pi.links import pi_limit_detail, pi_process_link
from concorde_workers.domain.evidence.records import LastAction
from concorde_workers.domain.ground.backends import BACKENDS as CONTRACT_BACKENDS
from concorde_workers.domain.ground.errors import ErrorLink
from concorde_workers.domain.ground.record_fields import utc_text
from concorde_workers.domain.run.agent_report import RoundReport, RoundUsage
from concorde_workers.domain.run.retries import transient_cause
from concorde_workers.domain.run.rounds import RoundEnding
from concorde_workers.domain.run.stdout import IgnoredLines, WatchedOutput
from concorde_workers.ports.machine.clock import Clock

__all__ = [
    "CLASSIFICATION",
    "CLAUDE_AGENT_FIELDS",
    "PI_AGENT_FIELDS",
    "Observed",
    "Rule",
    "TestStreamReader",
    "agent_line",
    "classify",
    "error_line",
    "limit_line",
    "result_line",
    "session_line",
    "text_line",
    "tool_line",
    "usage_line",
]

BACKENDS = tuple(sorted(CONTRACT_BACKENDS, reverse=True))
"""The backends a test reader stands in for: every one the contracts know (pi, claude, ...);
Claude Code's report shape for claude, pi's for every other."""
CLAUDE_AGENT_FIELDS = (
    "subtype",
    "is_error",
    "num_turns",
    "total_cost_usd",
    "permission_denials",
    "modelUsage",
    "duration_api_ms",
    "claude_code_version",
)
"""contract.workers.worker-round-trace `agent.claude`: null when the stream gave none (the
version from Claude Code's init event, which a test stream has none of)."""
PI_AGENT_FIELDS = ("stop_reason", "turns", "cost")
"""contract.workers.worker-round-trace `agent.pi`: the last stop reason, turn count and cost."""

_INT_USAGE = ("tokens_in", "tokens_out", "tokens_cache_read", "tokens_cache_write", "turns")


# --- line builders (what a scripted round prints) ------------------------------------------------


def _line(kind: str, **fields: Any) -> str:
    return json.dumps({"type": kind, **fields}, ensure_ascii=False)


def session_line(session_id: str) -> str:
    return _line("session", id=session_id)


def tool_line(tool: str, target: str) -> str:
    return _line("tool", tool=tool, target=target)


def text_line(text: str) -> str:
    return _line("text", text=text)


def result_line(result: Any) -> str:
    return _line("result", result=result)


def error_line(message: str) -> str:
    return _line("error", message=message)


def limit_line(limit: str, value: float, maximum: float | None = None) -> str:
    fields: dict[str, Any] = {"limit": limit, "value": value}
    if maximum is not None:
        fields["maximum"] = maximum
    return _line("limit", **fields)


def usage_line(**usage: float) -> str:
    return _line("usage", **usage)


def agent_line(**fields: Any) -> str:
    return _line("agent", fields=fields)


# --- what the reader saw -------------------------------------------------------------------------


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return _is_int(value) or (
        isinstance(value, float) and value == value and value not in (float("inf"), float("-inf"))
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


@dataclass(frozen=True)
class Limit:
    name: str
    value: int | float
    maximum: int | float


@dataclass(frozen=True)
class Observed:
    """A round's output as read, with how the process ended: what the classification decides on."""

    exit_status: int | None
    timed_out: bool
    stderr_tail: str
    session: str | None = None
    errors: tuple[str, ...] = ()
    limit: Limit | None = None
    has_result: bool = False
    result: Any = None
    final_text: str | None = None

    @property
    def last_error(self) -> str | None:
        return self.errors[-1] if self.errors else None

    @property
    def transient(self) -> bool:
        """The last error line names a transient model-service error (seed 000 "Retries")."""
        return self.last_error is not None and transient_cause(self.last_error) is not None


@dataclass(frozen=True)
class Rule:
    """One row of the classification: its text, when it applies, the ending it gives."""

    text: str
    applies: Callable[[Observed], bool]
    ending: RoundEnding


CLASSIFICATION: tuple[Rule, ...] = (
    Rule("the runner killed the round at its timeout", lambda o: o.timed_out, RoundEnding.TIMEOUT),
    Rule("a limit line", lambda o: o.limit is not None, RoundEnding.LIMIT_REACHED),
    Rule(
        "the last error line names a transient model-service error and no result line came",
        lambda o: o.transient and not o.has_result,
        RoundEnding.TRANSIENT_ERROR,
    ),
    Rule(
        "a non-zero (or no) exit status, or an error line",
        lambda o: o.exit_status != 0 or bool(o.errors),
        RoundEnding.PROCESS_FAILED,
    ),
    Rule("exit status 0 (with or without a result line)", lambda o: True, RoundEnding.OK),
)
"""Tried in order; the last row always applies."""


def classify(observed: Observed) -> Rule:
    return next(rule for rule in CLASSIFICATION if rule.applies(observed))


_CLAUDE_LIMIT_SUBTYPES = {"max_turns": "error_max_turns", "max_budget_usd": "error_max_budget_usd"}


def _claude_subtype(o: Observed, ending: RoundEnding) -> str | None:
    """The result envelope's subtype Claude Code would have printed; None: no envelope."""
    if o.limit is not None:
        name = o.limit.name
        return (
            name if name.startswith("error_") else _CLAUDE_LIMIT_SUBTYPES.get(name, f"error_{name}")
        )
    if ending is RoundEnding.TIMEOUT:
        return None
    if o.errors:
        return "error_during_execution"
    if o.has_result or (o.exit_status == 0 and o.final_text is not None):
        return "success"
    return None


def _pi_stop_reason(o: Observed) -> str | None:
    if o.limit is not None:
        return "aborted"
    if o.errors:
        return "error"
    if o.has_result or o.final_text is not None:
        return "stop"
    return None


# --- the reader ------------------------------------------------------------------------------------


@dataclass
class TestStreamReader(WatchedOutput):
    """StreamReader for the test agents' protocol, reporting as the backend it stands in for
    (`pi` or `claude`): its process link and its `agent` report take that backend's shape."""

    __test__ = False  # not a pytest test class

    backend: str = "pi"
    clock: Clock | None = None
    actions: list[LastAction] = field(default_factory=list)
    ignored: IgnoredLines = field(default_factory=IgnoredLines)
    _session: str | None = None
    _errors: list[str] = field(default_factory=list)
    _limit: Limit | None = None
    _has_result: bool = False
    _result: Any = None
    _final_text: str | None = None
    _usage: dict[str, int | float] = field(default_factory=dict)
    _agent: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ValueError(
                f"a test reader stands in for {' or '.join(BACKENDS)}, not {self.backend!r}"
            )

    # -- StreamReader --------------------------------------------------------------------------

    def feed(self, line: str) -> LastAction | None:
        try:
            parsed = json.loads(line)
        except (ValueError, RecursionError):
            parsed = None
        self._parsed(parsed)  # as the real readers do
        kind = parsed.get("type") if isinstance(parsed, dict) else None
        handler = _HANDLERS.get(kind) if isinstance(kind, str) else None
        if handler is None or not isinstance(parsed, dict):
            self.ignored.add(line)
            return None
        understood, action = handler(self, parsed)
        if not understood:
            self.ignored.add(line)
        return action

    def finish(self, exit_status: int | None, timed_out: bool, stderr_tail: str) -> RoundReport:
        observed = self.observed(exit_status, timed_out, stderr_tail)
        ending = classify(observed).ending
        worker_result = observed.result if isinstance(observed.result, dict) else None
        final_text = observed.final_text
        if observed.has_result and worker_result is None and final_text is None:
            final_text = json.dumps(observed.result, ensure_ascii=False)
        ok = ending is RoundEnding.OK
        return RoundReport(
            ending=ending,
            session=observed.session,
            exit=exit_status,
            worker_result=worker_result,
            final_text=final_text,
            transient_error=observed.last_error if ending is RoundEnding.TRANSIENT_ERROR else None,
            process_link=None if ok else self._process_link(observed, ending),
            limit=(
                self._limit_text(observed.limit)
                if observed.limit is not None and ending is RoundEnding.LIMIT_REACHED
                else None
            ),
            failure=None if ok else _failure(observed, ending),
            usage=self.usage(),
            agent={self.backend: self._agent_report(observed, ending)},
        )

    # -- what was read -------------------------------------------------------------------------

    def observed(self, exit_status: int | None, timed_out: bool, stderr_tail: str) -> Observed:
        return Observed(
            exit_status=exit_status,
            timed_out=timed_out,
            stderr_tail=stderr_tail,
            session=self._session,
            errors=tuple(self._errors),
            limit=self._limit,
            has_result=self._has_result,
            result=self._result,
            final_text=self._final_text,
        )

    def usage(self) -> RoundUsage:
        return RoundUsage.model_validate(self._usage)

    # -- line handlers: (understood, last action) ----------------------------------------------

    def _on_session(self, line: dict[str, Any]) -> tuple[bool, LastAction | None]:
        session = _text(line.get("id"))
        if session is None:
            return False, None
        self._session = session
        return True, None

    def _on_tool(self, line: dict[str, Any]) -> tuple[bool, LastAction | None]:
        tool, target = _text(line.get("tool")), line.get("target", "")
        if tool is None or not isinstance(target, str):
            return False, None
        action = LastAction.of(tool, target, self._now())
        self.actions.append(action)
        return True, action

    def _on_text(self, line: dict[str, Any]) -> tuple[bool, LastAction | None]:
        text = line.get("text")
        if not isinstance(text, str):
            return False, None
        self._final_text = text
        return True, None

    def _on_result(self, line: dict[str, Any]) -> tuple[bool, LastAction | None]:
        if "result" not in line:
            return False, None
        self._has_result, self._result = True, line["result"]
        return True, None

    def _on_error(self, line: dict[str, Any]) -> tuple[bool, LastAction | None]:
        message = _text(line.get("message"))
        if message is None:
            return False, None
        self._errors.append(message)
        return True, None

    def _on_limit(self, line: dict[str, Any]) -> tuple[bool, LastAction | None]:
        name, value = _text(line.get("limit")), line.get("value")
        maximum = line.get("maximum", value)
        if name is None or not _is_number(value) or not _is_number(maximum):
            return False, None
        assert isinstance(value, int | float) and isinstance(maximum, int | float)
        self._limit = Limit(name=name, value=value, maximum=maximum)
        return True, None

    def _on_usage(self, line: dict[str, Any]) -> tuple[bool, LastAction | None]:
        valid = {
            k: v
            for k, v in line.items()
            if (k in _INT_USAGE and _is_int(v) and v >= 0)
            or (k == "cost_usd" and _is_number(v) and v >= 0)
        }
        if not valid:
            return False, None
        for key, value in valid.items():
            self._usage[key] = self._usage.get(key, 0) + value
        return True, None

    def _on_agent(self, line: dict[str, Any]) -> tuple[bool, LastAction | None]:
        fields = line.get("fields")
        if not isinstance(fields, dict):
            return False, None
        self._agent.update(fields)
        return True, None

    # -- the report ----------------------------------------------------------------------------

    def _now(self) -> str:
        now = self.clock.now_utc() if self.clock is not None else datetime.now(UTC)
        return utc_text(now)

    def _limit_text(self, limit: Limit) -> str:
        """On Claude Code the turn or budget subtype; on pi the limit and the value reached."""
        if self.backend == "claude":
            return _CLAUDE_LIMIT_SUBTYPES.get(limit.name, limit.name)
        return pi_limit_detail(limit.name, limit.value, limit.maximum)

    def _agent_report(self, o: Observed, ending: RoundEnding) -> dict[str, Any]:
        usage = self.usage()
        if self.backend == "claude":
            report: dict[str, Any] = dict.fromkeys(CLAUDE_AGENT_FIELDS)
            subtype = _claude_subtype(o, ending)
            report.update(
                subtype=subtype,
                is_error=None if subtype is None else subtype != "success",
                num_turns=usage.turns,
                total_cost_usd=usage.cost_usd,
            )
        else:
            report = {
                "stop_reason": _pi_stop_reason(o),
                "turns": usage.turns,
                "cost": usage.cost_usd,
            }
        report.update(self._agent)
        return report

    def _process_link(self, o: Observed, ending: RoundEnding) -> ErrorLink:
        """The link of the backend stood in for, from the agent report (an `agent` line's
        override counts only where it has the type the link needs)."""
        agent = self._agent_report(o, ending)
        usage = self.usage()
        turns = _typed(
            agent.get("num_turns" if self.backend == "claude" else "turns"), _is_int, usage.turns
        )
        cost = _typed(agent.get("total_cost_usd"), _is_number, usage.cost_usd)
        if self.backend == "claude":
            subtype = _typed(
                agent.get("subtype"), lambda v: isinstance(v, str), _claude_subtype(o, ending)
            )
            is_error = _typed(
                agent.get("is_error"),
                lambda v: isinstance(v, bool),
                None if subtype is None else subtype != "success",
            )
            return claude_process_link(
                subtype=subtype,
                is_error=is_error,
                num_turns=turns,
                total_cost_usd=cost,
                exit_status=o.exit_status,
                final_text=o.final_text,
                errors=o.errors,
                stderr_tail=o.stderr_tail,
            )
        limit = o.limit
        return pi_process_link(
            exit_status=o.exit_status,
            stop_reason=_typed(
                agent.get("stop_reason"), lambda v: isinstance(v, str), _pi_stop_reason(o)
            ),
            error_message=o.last_error,
            turns=turns,
            stderr_tail=o.stderr_tail,
            limit=limit.name if limit else None,
            value=limit.value if limit else None,
            maximum=limit.maximum if limit else None,
        )


_Handler = Callable[[TestStreamReader, dict[str, Any]], tuple[bool, LastAction | None]]

_HANDLERS: dict[object, _Handler] = {
    "session": TestStreamReader._on_session,
    "tool": TestStreamReader._on_tool,
    "text": TestStreamReader._on_text,
    "result": TestStreamReader._on_result,
    "error": TestStreamReader._on_error,
    "limit": TestStreamReader._on_limit,
    "usage": TestStreamReader._on_usage,
    "agent": TestStreamReader._on_agent,
}


def _typed(value: Any, check: Callable[[Any], bool], fallback: Any) -> Any:
    return value if check(value) else fallback


def _failure(o: Observed, ending: RoundEnding) -> str:
    if ending is RoundEnding.TIMEOUT:
        return "the round timed out"
    if ending is RoundEnding.LIMIT_REACHED and o.limit is not None:
        return f"the agent program stopped at its {o.limit.name} limit"
    if o.last_error is not None:
        return o.last_error
    if o.exit_status is None:
        return "the agent program ended without an exit status"
    return f"the agent program exited with status {o.exit_status}"
