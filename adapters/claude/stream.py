"""Claude Code's stream-json output, read as it arrives (seed 000 "Launch"; notes §2).

`ClaudeStreamReader.feed` takes one stdout line: every `tool_use` block of an `assistant` line is
the worker's latest tool call (tool and target, for the progress file); every `session_id` seen is
remembered (a round cut short before its envelope still names its session); the `result` line is
the envelope. A line that is not a JSON object is ignored, never raised on: counted, and only the
last few kept (`IgnoredLines`), so the reader's memory does not follow what the program prints;
of the tool calls too only the last `ACTIONS_KEPT` are kept.

`finish` turns the envelope into the round's `RoundReport`, by the first row of `CLASSIFICATION`
that applies:

    the host killed the round at its timeout                 -> timeout
    no result envelope                                        -> agent process failed
    subtype error_max_turns / error_max_budget_usd            -> limit reached (limit = subtype)
    a failed envelope whose final text starting `API Error`
      or whose listed errors name a transient model-service
      error (domain.run.retries; never quota, billing, usage)     -> transient model-service error
    subtype success, is_error false, exit status 0            -> ok
    anything else                                             -> agent process failed

Every ending but ok carries the Claude Code process's link (`claude_process_link`). The worker
result is the envelope's `structured_output` (Claude Code validated it against the schema); an
envelope without one keeps its `result` text as the final text, and the host then finds the result
invalid. Usage: tokens summed over `modelUsage` (the top-level `usage` lags it by a call in some
error envelopes), else `usage`; cost `total_cost_usd`; turns `num_turns`. The agent report is
`{"claude": {subtype, is_error, num_turns, total_cost_usd, permission_denials, modelUsage,
duration_api_ms}}`, each null when the envelope gave none.
"""

from __future__ import annotations

import json
import math
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeGuard

from concorde_workers.adapters.claude.links import CLAUDE_LIMIT_SUBTYPES, claude_process_link
from concorde_workers.domain.evidence.records import LastAction
from concorde_workers.domain.ground import json_limits
from concorde_workers.domain.ground.errors import ErrorLink
from concorde_workers.domain.ground.record_fields import utc_text
from concorde_workers.domain.run.agent_report import RoundReport, RoundUsage
from concorde_workers.domain.run.retries import transient_cause_of
from concorde_workers.domain.run.rounds import RoundEnding
from concorde_workers.domain.run.stdout import IgnoredLines, WatchedOutput

__all__ = [
    "ACTIONS_KEPT",
    "AGENT_FIELDS",
    "CLASSIFICATION",
    "NO_ENVELOPE",
    "VERSION_FIELD",
    "ClaudeStreamReader",
    "Envelope",
    "Rule",
    "tool_target",
]

AGENT_FIELDS = (
    "subtype",
    "is_error",
    "num_turns",
    "total_cost_usd",
    "permission_denials",
    "modelUsage",
    "duration_api_ms",
)
"""contract.workers.worker-round-trace `agent.claude`: null when the envelope gave none."""

VERSION_FIELD = "claude_code_version"
"""`agent.claude`'s version of the Claude Code that ran the round, as its init event says (null
without one): the record tells which program ran, beside programs.json's prepared version
(docs/decisions.md "The program that runs is the one checked")."""

NO_ENVELOPE = "Claude Code printed no result envelope"
ACTIONS_KEPT = 100
"""How many of a round's latest tool calls the reader keeps (the host uses each as it comes)."""
API_ERROR_PREFIX = "API Error"

# The input fields that name a tool call's target, in order of preference.
_TARGET_FIELDS = (
    "file_path",
    "notebook_path",
    "path",
    "pattern",
    "command",
    "url",
    "query",
    "description",
)

_MODEL_USAGE_TOKENS = (
    ("tokens_in", "inputTokens"),
    ("tokens_out", "outputTokens"),
    ("tokens_cache_read", "cacheReadInputTokens"),
    ("tokens_cache_write", "cacheCreationInputTokens"),
)
_USAGE_TOKENS = (
    ("tokens_in", "input_tokens"),
    ("tokens_out", "output_tokens"),
    ("tokens_cache_read", "cache_read_input_tokens"),
    ("tokens_cache_write", "cache_creation_input_tokens"),
)


def _count(value: object) -> TypeGuard[int]:
    """A non-negative integer (a JSON `true` is none)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _amount(value: object) -> float | None:
    """A finite non-negative number as a float, else None (a JSON `true` is none, and an
    integer too large for a float is no amount either)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) and number >= 0 else None


def tool_target(tool_input: object) -> str:
    """A tool call's target as the progress file shows it: its file path, path, pattern or
    command (the first line is cut by `LastAction.of`); empty when the input names none."""
    if not isinstance(tool_input, Mapping):
        return ""
    for name in _TARGET_FIELDS:
        value = tool_input.get(name)
        if isinstance(value, str) and value:
            return value
    return ""


@dataclass(frozen=True)
class Envelope:
    """The final `result` line, as far as its fields have the types the envelope gives them."""

    raw: Mapping[str, Any]

    @property
    def subtype(self) -> str | None:
        value = self.raw.get("subtype")
        return value if isinstance(value, str) and value else None

    @property
    def is_error(self) -> bool | None:
        value = self.raw.get("is_error")
        return value if isinstance(value, bool) else None

    @property
    def num_turns(self) -> int | None:
        value = self.raw.get("num_turns")
        return value if _count(value) else None

    @property
    def total_cost_usd(self) -> float | None:
        return _amount(self.raw.get("total_cost_usd"))

    @property
    def result(self) -> str | None:
        value = self.raw.get("result")
        return value if isinstance(value, str) else None

    @property
    def errors(self) -> tuple[str, ...]:
        errors = self.raw.get("errors")
        if not isinstance(errors, list):
            return ()
        return tuple(e if isinstance(e, str) else json.dumps(e, ensure_ascii=False) for e in errors)

    @property
    def structured_output(self) -> dict[str, Any] | None:
        value = self.raw.get("structured_output")
        return dict(value) if isinstance(value, dict) else None

    @property
    def failed(self) -> bool:
        """A failed envelope: the error flag set, or a subtype other than success."""
        return self.is_error is True or self.subtype != "success"

    def transient_texts(self) -> tuple[str, ...]:
        """What the host reads for a transient model-service error (seed 000 "Retries"): the
        final text of a failed envelope when it starts with `API Error`, and the listed errors."""
        if not self.failed:
            return ()
        text = self.result
        head = (
            (text.strip(),)
            if text is not None and text.lstrip().startswith(API_ERROR_PREFIX)
            else ()
        )
        return head + self.errors

    def usage(self) -> RoundUsage:
        tokens: dict[str, int] = {}
        model_usage = self.raw.get("modelUsage")
        if isinstance(model_usage, Mapping) and model_usage:
            for per_model in model_usage.values():
                if not isinstance(per_model, Mapping):
                    continue
                for ours, theirs in _MODEL_USAGE_TOKENS:
                    value = per_model.get(theirs)
                    if _count(value):
                        tokens[ours] = tokens.get(ours, 0) + value
        else:
            usage = self.raw.get("usage")
            if isinstance(usage, Mapping):
                for ours, theirs in _USAGE_TOKENS:
                    value = usage.get(theirs)
                    if _count(value):
                        tokens[ours] = value
        return RoundUsage(**tokens, cost_usd=self.total_cost_usd, turns=self.num_turns)

    def agent(self) -> dict[str, Any]:
        """The envelope's fields the round trace keeps, each as given (null when absent)."""
        return {name: self.raw.get(name) for name in AGENT_FIELDS}


@dataclass(frozen=True)
class Observed:
    """A round's output as read, with how the process ended."""

    exit_status: int | None
    timed_out: bool
    envelope: Envelope | None

    @property
    def transient(self) -> bool:
        return (
            self.envelope is not None
            and transient_cause_of(self.envelope.transient_texts()) is not None
        )


@dataclass(frozen=True)
class Rule:
    """One row of the classification: its text, when it applies, the ending it gives."""

    text: str
    applies: Callable[[Observed], bool]
    ending: RoundEnding


def _ok(o: Observed) -> bool:
    e = o.envelope
    return e is not None and e.subtype == "success" and e.is_error is False and o.exit_status == 0


CLASSIFICATION: tuple[Rule, ...] = (
    Rule("the host killed the round at its timeout", lambda o: o.timed_out, RoundEnding.TIMEOUT),
    Rule("no result envelope", lambda o: o.envelope is None, RoundEnding.PROCESS_FAILED),
    Rule(
        "the subtype error_max_turns or error_max_budget_usd",
        lambda o: o.envelope is not None and o.envelope.subtype in CLAUDE_LIMIT_SUBTYPES,
        RoundEnding.LIMIT_REACHED,
    ),
    Rule(
        "a failed envelope whose API Error text or errors name a transient model-service error",
        lambda o: o.transient,
        RoundEnding.TRANSIENT_ERROR,
    ),
    Rule("subtype success, is_error false, exit status 0", _ok, RoundEnding.OK),
    Rule("anything else", lambda o: True, RoundEnding.PROCESS_FAILED),
)
"""Tried in order; the last row always applies."""


def classify(observed: Observed) -> Rule:
    return next(rule for rule in CLASSIFICATION if rule.applies(observed))


def _utc_now() -> datetime:
    return datetime.now(UTC)


class ClaudeStreamReader(WatchedOutput):
    """StreamReader of one Claude Code round's stream-json output."""

    def __init__(self, now: Callable[[], datetime] = _utc_now) -> None:
        self._now = now
        self.actions: deque[LastAction] = deque(maxlen=ACTIONS_KEPT)
        self.ignored = IgnoredLines()
        self._session: str | None = None
        self._envelope: Envelope | None = None
        self._last_text: str | None = None
        self._version: str | None = None

    # -- StreamReader ------------------------------------------------------------------------

    def feed(self, line: str) -> LastAction | None:
        try:
            parsed = json_limits.loads(line)
        except (ValueError, RecursionError):
            parsed = None
        if not isinstance(parsed, dict):
            if line.strip():
                self.ignored.add(line)
            return None
        self._parsed(parsed)  # the events' tool calls, from this one parse
        session = parsed.get("session_id")
        if isinstance(session, str) and session:
            self._session = session
        kind = parsed.get("type")
        if kind == "system" and parsed.get("subtype") == "init":
            version = parsed.get("claude_code_version")
            self._version = version if isinstance(version, str) else None
            return None
        if kind == "result":
            self._envelope = Envelope(parsed)
            return None
        if kind == "assistant":
            return self._assistant(parsed)
        return None

    def finish(self, exit_status: int | None, timed_out: bool, stderr_tail: str) -> RoundReport:
        envelope = self._envelope
        observed = Observed(exit_status=exit_status, timed_out=timed_out, envelope=envelope)
        ending = classify(observed).ending
        final_text = envelope.result if envelope is not None else self._last_text
        ok = ending is RoundEnding.OK
        return RoundReport(
            ending=ending,
            session=self._session,
            exit=exit_status,
            worker_result=envelope.structured_output if envelope is not None else None,
            final_text=final_text,
            transient_error=(
                _transient_text(envelope)
                if envelope is not None and ending is RoundEnding.TRANSIENT_ERROR
                else None
            ),
            process_link=None if ok else self._link(envelope, exit_status, final_text, stderr_tail),
            limit=(
                envelope.subtype
                if envelope is not None and ending is RoundEnding.LIMIT_REACHED
                else None
            ),
            failure=None if ok else _failure(ending, envelope, exit_status),
            usage=envelope.usage() if envelope is not None else RoundUsage(),
            agent={
                "claude": {
                    **(envelope.agent() if envelope is not None else dict.fromkeys(AGENT_FIELDS)),
                    VERSION_FIELD: self._version,
                }
            },
        )

    # -- lines -------------------------------------------------------------------------------

    def _assistant(self, line: Mapping[str, Any]) -> LastAction | None:
        message = line.get("message")
        content = message.get("content") if isinstance(message, Mapping) else None
        if not isinstance(content, list):
            return None
        action = None
        for block in content:
            if not isinstance(block, Mapping):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                self._last_text = block["text"]
            name = block.get("name")
            if block.get("type") == "tool_use" and isinstance(name, str) and name:
                action = LastAction.of(name, tool_target(block.get("input")), self._stamp())
                self.actions.append(action)
        return action

    def _stamp(self) -> str:
        return utc_text(self._now())

    @staticmethod
    def _link(
        envelope: Envelope | None, exit_status: int | None, final_text: str | None, stderr_tail: str
    ) -> ErrorLink:
        if envelope is None:
            return claude_process_link(
                subtype=None,
                is_error=None,
                num_turns=None,
                total_cost_usd=None,
                exit_status=exit_status,
                final_text=final_text,
                errors=(),
                stderr_tail=stderr_tail,
            )
        return claude_process_link(
            subtype=envelope.subtype or "(none)",
            is_error=envelope.is_error,
            num_turns=envelope.num_turns,
            total_cost_usd=envelope.total_cost_usd,
            exit_status=exit_status,
            final_text=final_text,
            errors=envelope.errors,
            stderr_tail=stderr_tail,
        )


def _transient_text(envelope: Envelope) -> str:
    return "; ".join(envelope.transient_texts())


def _exit(exit_status: int | None) -> str:
    return "none" if exit_status is None else str(exit_status)


def _failure(ending: RoundEnding, envelope: Envelope | None, exit_status: int | None) -> str:
    """What the run's claude_failed detail names: the error Claude Code reported, or that it
    printed no envelope."""
    if ending is RoundEnding.TIMEOUT:
        return "the round timed out"
    if envelope is None:
        return f"{NO_ENVELOPE} (exit status {_exit(exit_status)})"
    if ending is RoundEnding.TRANSIENT_ERROR:
        return _transient_text(envelope)
    said = "; ".join(envelope.errors) or (envelope.result or "").strip()
    head = (
        f"Claude Code ended with the result subtype {envelope.subtype or '(none)'} "
        f"(is_error {json.dumps(envelope.is_error)}, exit status {_exit(exit_status)})"
    )
    return f"{head}: {said[:2000]}" if said else head


# --- the session's transcript (notes/claude-code.md §5) --------------------------------------

SLUG_MAX = 200
"""Claude Code cuts a project slug longer than this and appends a hash of the directory."""


def _java_hash(text: str) -> int:
    """Claude Code's `jCe`: the 32-bit Java string hash over UTF-16 code units."""
    value = 0
    data = text.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(data), 2):
        value = (value * 31 + int.from_bytes(data[i : i + 2], "little")) & 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def _base36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        number, rest = divmod(number, 36)
        out = digits[rest] + out
        if number == 0:
            return out


def project_slug(directory: str) -> str:
    """The folder below `<config>/projects/` that holds the transcripts of sessions started in
    `directory` (Claude Code's `$E`): every UTF-16 code unit outside [a-zA-Z0-9] becomes `-`;
    past 200 characters the slug is cut and `-<base-36 hash>` appended."""
    data = directory.encode("utf-16-le", "surrogatepass")
    units = [int.from_bytes(data[i : i + 2], "little") for i in range(0, len(data), 2)]
    slug = "".join(chr(u) if chr(u).isascii() and chr(u).isalnum() else "-" for u in units)
    if len(slug) <= SLUG_MAX:
        return slug
    return f"{slug[:SLUG_MAX]}-{_base36(abs(_java_hash(directory)))}"


def session_file_name(session: str) -> str | None:
    """`<session>.jsonl`, None when the session is no plain file name."""
    if not session or "/" in session or "\0" in session or session.startswith("."):
        return None
    return f"{session}.jsonl"
