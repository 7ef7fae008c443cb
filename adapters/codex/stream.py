"""`CodexStreamReader`: one Codex round's `--json` events as a `RoundReport` (issue 33 §1, §3;
../shared/notes/codex.md §2, §5; verified again on 0.171.0, docs/decisions.md 72).

What `codex exec --json` prints, one JSON object a line:

* `thread.started` {thread_id}: the round's session (a resume round prints the same id);
* `item.started` / `item.completed` {item: {type, ...}}: `command_execution` (command),
  `file_change` (changes), `mcp_tool_call`, `web_search` are the worker's tool calls;
  `agent_message` (text) is an answer, the last one the final answer; `reasoning` and `error`
  items (a warning) tell nothing the host decides on. Codex 0.171.0 does not always print the
  items of a command that ended quickly (seen in 1 of 6 plain runs and most confined ones): the
  count of tool calls is taken again from the thread's rollout when the round ends;
* `turn.completed` {usage}: tokens, cumulative over the whole thread across resumed processes:
  the round's own are the difference to the previous round's total (`previous`);
* `turn.failed` {error: {message}} after a top-level `error` line: the round failed; with the
  host owning retries (config.toml) the message is the model call's one error, classified by the
  retry table;
* a kill by the host (timeout, a limit) prints nothing more.

Limits: the turn limit counts tool calls (Codex has no turn limit of its own), the budget prices
the tokens with the machine's prices (adapters/codex/endpoint.py); the reader says when one is
passed (`limit_reached`) and the host then ends the round (application/rounds/activity.py).
The final answer is the last agent message: JSON of the wire schema, whose `output` is JSON
text; the reader decodes it and returns the worker result the host validates."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from concorde_workers.domain.evidence.links import (
    COMPONENT_LEVEL,
    exit_text,
    number_text,
    quote_head,
    quote_tail,
)
from concorde_workers.domain.evidence.records import LastAction
from concorde_workers.domain.ground import json_limits
from concorde_workers.domain.ground.codes import CODEX_ERROR_CODE, CODEX_LIMIT_CODE, Reason
from concorde_workers.domain.ground.errors import ErrorLink, Unhandled
from concorde_workers.domain.ground.record_fields import utc_text
from concorde_workers.domain.run.agent_report import RoundReport, RoundUsage
from concorde_workers.domain.run.retries import transient_cause
from concorde_workers.domain.run.rounds import RoundEnding
from concorde_workers.domain.run.stdout import IgnoredLines, WatchedOutput

__all__ = [
    "CALL_ITEMS",
    "CODEX_PROCESS_ACTOR",
    "USAGE_KEYS",
    "CodexStreamReader",
    "Prices",
    "decode_result",
    "rollout_calls",
]

CODEX_PROCESS_ACTOR = "Codex CLI process (codex exec)"
CALL_ITEMS = ("command_execution", "file_change", "mcp_tool_call", "web_search")
"""The item types that are a tool call of the worker."""
USAGE_KEYS = (
    "input_tokens",
    "cached_input_tokens",
    "cache_write_input_tokens",
    "output_tokens",
    "reasoning_output_tokens",
)
ACTIONS_KEPT = 100
CALLS_KEY = "tool_calls"
"""The thread's tool calls in its rollout, kept with its token totals between rounds."""
_ROLLOUT_CALLS = ('"type":"function_call"', '"type":"custom_tool_call"')

Totals = MutableMapping[str, dict[str, int]]
"""A thread's cumulative usage as its last round reported it, by thread id (kept by the
backend for the run's rounds)."""


@dataclass(frozen=True)
class Prices:
    """US dollars per million tokens (the machine's codex.json); None: a budget is not priced."""

    input: float
    output: float
    cached_input: float | None = None

    def cost(self, tokens: dict[str, int]) -> float:
        cached = tokens.get("cached_input_tokens", 0)
        fresh = max(0, tokens.get("input_tokens", 0) - cached)
        cached_price = self.input if self.cached_input is None else self.cached_input
        total = (
            fresh * self.input
            + cached * cached_price
            + tokens.get("output_tokens", 0) * self.output
        )
        return round(total / 1_000_000, 10)


def rollout_calls(text: str) -> int:
    """The tool calls of a rollout's text (one `response_item` a call, each on its line)."""
    return sum(1 for line in text.splitlines() if '"response_item"' in line and _is_call_line(line))


def _is_call_line(line: str) -> bool:
    compact = line.replace(": ", ":")
    return any(marker in compact for marker in _ROLLOUT_CALLS)


def decode_result(text: str | None) -> dict[str, Any] | None:
    """The worker result of a final answer: its JSON object with `output` decoded from the JSON
    text the wire schema carries it as (a text that is no JSON object stays as it is, for the
    host's validation to name); None when the answer is no JSON object."""
    if text is None:
        return None
    try:
        data = json_limits.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    output = data.get("output")
    if isinstance(output, str):
        try:
            decoded = json_limits.loads(output)
        except (ValueError, RecursionError):
            decoded = None
        if isinstance(decoded, dict):
            data["output"] = decoded
    return data


@dataclass
class CodexStreamReader(WatchedOutput):
    """StreamReader of one Codex round; `rollout` reads the thread's rollout text when the round
    ends (None: not there), `totals` the thread totals the run's earlier rounds left."""

    max_turns: int | None = None
    max_budget_usd: float | None = None
    prices: Prices | None = None
    totals: Totals = field(default_factory=dict)
    rollout: Callable[[str], str | None] | None = None
    actions: deque[LastAction] = field(default_factory=lambda: deque(maxlen=ACTIONS_KEPT))
    ignored: IgnoredLines = field(default_factory=IgnoredLines)
    _thread: str | None = None
    _calls: int = 0
    _final_text: str | None = None
    _failed: str | None = None
    _notice: str | None = None
    _cumulative: dict[str, int] | None = None
    _limit: tuple[str, Decimal, Decimal] | None = None
    _started: set[object] = field(default_factory=set)

    # -- StreamReader --------------------------------------------------------------------------

    def feed(self, line: str) -> LastAction | None:
        try:
            event = json_limits.loads(line)
        except (ValueError, RecursionError):
            event = None
        self._parsed(event)  # the events' tool calls, from this one parse
        kind = event.get("type") if isinstance(event, dict) else None
        if not isinstance(event, dict) or kind not in _HANDLED:
            self.ignored.add(line)
            return None
        return self._on(kind, event)

    @property
    def limit_reached(self) -> str | None:
        """The limit this round passed (the host ends the round), None while within them."""
        if self._limit is None:
            return None
        name, value, maximum = self._limit
        return _limit_detail(name, value, maximum)

    def finish(self, exit_status: int | None, timed_out: bool, stderr_tail: str) -> RoundReport:
        in_rollout = self._rollout_calls()
        before = self.totals.get(self._thread or "", {}).get(CALLS_KEY, 0)
        turns = self._calls if in_rollout is None else max(self._calls, in_rollout - before)
        usage = self._usage(turns)
        result = decode_result(self._final_text)
        ending, failure = self._ending(exit_status, timed_out, result)
        if self._thread is not None:
            kept = self.totals.get(self._thread, {})
            if self._cumulative is not None:
                kept = {**kept, **self._cumulative}
            if in_rollout is not None:
                kept = {**kept, CALLS_KEY: in_rollout}
            self.totals[self._thread] = kept
        ok = ending is RoundEnding.OK
        return RoundReport(
            ending=ending,
            session=self._thread,
            exit=exit_status,
            worker_result=result,
            final_text=self._final_text,
            transient_error=self._failed if ending is RoundEnding.TRANSIENT_ERROR else None,
            process_link=None if ok else self._link(exit_status, turns, stderr_tail),
            limit=self.limit_reached if ending is RoundEnding.LIMIT_REACHED else None,
            failure=failure,
            usage=usage,
            agent={"codex": {"thread_id": self._thread, "tool_calls": turns}},
        )

    # -- what was read -------------------------------------------------------------------------

    def _ending(
        self, exit_status: int | None, timed_out: bool, result: dict[str, Any] | None
    ) -> tuple[RoundEnding, str | None]:
        if timed_out:
            return RoundEnding.TIMEOUT, "the round timed out"
        if self._limit is not None:
            return RoundEnding.LIMIT_REACHED, self.limit_reached
        if self._thread is None:
            return (
                RoundEnding.PROCESS_FAILED,
                f"the Codex CLI printed no thread (exit status {exit_text(exit_status)})",
            )
        if self._failed is not None:
            if transient_cause(self._failed) is not None:
                return RoundEnding.TRANSIENT_ERROR, f"the model call failed: {self._failed}"
            return RoundEnding.PROCESS_FAILED, f"the Codex CLI's turn failed: {self._failed}"
        if exit_status != 0 and result is None:
            return (
                RoundEnding.PROCESS_FAILED,
                f"the Codex CLI exited with status {exit_text(exit_status)} without a final answer",
            )
        return RoundEnding.OK, None

    def _rollout_calls(self) -> int | None:
        """The thread's tool calls in its rollout so far (the printed items may miss some: the
        round's own are the difference to the previous round's count), None when unread."""
        if self.rollout is None or self._thread is None:
            return None
        text = self.rollout(self._thread)
        return None if text is None else rollout_calls(text)

    def _usage(self, turns: int) -> RoundUsage:
        own = self._own_tokens()
        if own is None:
            return RoundUsage(turns=turns if self._thread else None)
        return RoundUsage(
            tokens_in=own.get("input_tokens", 0),
            tokens_out=own.get("output_tokens", 0),
            tokens_cache_read=own.get("cached_input_tokens", 0),
            tokens_cache_write=own.get("cache_write_input_tokens", 0),
            cost_usd=self.prices.cost(own) if self.prices else None,
            turns=turns,
        )

    def _own_tokens(self) -> dict[str, int] | None:
        """This round's tokens: the thread's cumulative figure less the previous round's."""
        if self._cumulative is None:
            return None
        before = self.totals.get(self._thread or "", {})
        return {k: max(0, self._cumulative.get(k, 0) - before.get(k, 0)) for k in USAGE_KEYS}

    def _link(self, exit_status: int | None, turns: int, stderr_tail: str) -> ErrorLink:
        at_limit = self._limit is not None
        facts = (
            f"exit status {exit_text(exit_status)}, thread {self._thread or 'none'}, "
            f"turn error {'none' if self._failed is None else quote_head(self._failed)}, "
            f"last notice {'none' if self._notice is None else quote_head(self._notice)}, "
            f"{number_text(turns)} tool call(s)"
        )
        first = self.limit_reached if at_limit else "the Codex CLI did not complete the round"
        return ErrorLink(
            level=COMPONENT_LEVEL,
            actor=CODEX_PROCESS_ACTOR,
            code=CODEX_LIMIT_CODE if at_limit else CODEX_ERROR_CODE,
            detail=f"{first}; {facts}; stderr tail: {quote_tail(stderr_tail)}",
            unhandled=Unhandled(
                reason=Reason.EXHAUSTED if at_limit else Reason.ENVIRONMENT,
                explanation=(
                    "the host ends a Codex round that passes its turn or budget limit"
                    if at_limit
                    else "the Codex CLI could not complete the round"
                ),
            ),
        )

    # -- event handlers -------------------------------------------------------------------------

    def _on(self, kind: str, event: dict[str, Any]) -> LastAction | None:
        if kind == "thread.started":
            thread = event.get("thread_id")
            if isinstance(thread, str) and thread and self._thread is None:
                self._thread = thread
        elif kind == "item.started":
            return self._on_item(event.get("item"))
        elif kind == "item.completed":
            item = event.get("item")
            if isinstance(item, dict) and item.get("type") == "agent_message":
                text = item.get("text")
                if isinstance(text, str) and text:
                    self._final_text = text
            elif isinstance(item, dict) and item.get("id") not in self._started:
                return self._on_item(item)
        elif kind == "turn.completed":
            self._on_usage(event.get("usage"))
        elif kind == "turn.failed":
            error = event.get("error")
            message = error.get("message") if isinstance(error, dict) else None
            self._failed = message if isinstance(message, str) and message else "no message"
        elif kind == "error":
            message = event.get("message")
            self._notice = message if isinstance(message, str) else None
        return None

    def _on_item(self, item: object) -> LastAction | None:
        if not isinstance(item, dict) or item.get("type") not in CALL_ITEMS:
            return None
        self._started.add(item.get("id"))
        self._calls += 1
        if self.max_turns is not None and self._calls > self.max_turns and self._limit is None:
            self._limit = ("max_turns", Decimal(self._calls), Decimal(self.max_turns))
        action = LastAction.of(str(item["type"]), _target(item), _now())
        self.actions.append(action)
        return action

    def _on_usage(self, usage: object) -> None:
        if not isinstance(usage, dict):
            return
        self._cumulative = {k: _count(usage.get(k)) for k in USAGE_KEYS}
        own = self._own_tokens()
        if self.max_budget_usd is None or self.prices is None or own is None:
            return
        cost = self.prices.cost(own)
        if cost > self.max_budget_usd and self._limit is None:
            self._limit = (
                "max_budget_usd",
                Decimal(str(cost)),
                Decimal(str(self.max_budget_usd)),
            )


_HANDLED = frozenset(
    {
        "thread.started",
        "turn.started",
        "item.started",
        "item.updated",
        "item.completed",
        "turn.completed",
        "turn.failed",
        "error",
    }
)


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _target(item: dict[str, Any]) -> str:
    command = item.get("command")
    if isinstance(command, str):
        return command
    changes = item.get("changes")
    if isinstance(changes, list):
        return " ".join(
            str(c.get("path")) for c in changes if isinstance(c, dict) and c.get("path")
        )
    return str(item.get("query") or item.get("tool") or "")


def _limit_detail(name: str, value: Decimal, maximum: Decimal) -> str:
    return (
        f"the host stopped the Codex round at its {name} limit ({number_text(value)} reached, at "
        f"most {number_text(maximum)} allowed)"
    )


def _now() -> str:
    return utc_text(datetime.now(UTC))
