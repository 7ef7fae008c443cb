"""Workers' run codes as data, and the builders of the links of a failed run's error chain.

Seed 000 "Errors" and seed 001 "Errors": every code of a run that does not end ok, with its
reason (and the alternative reason `exhausted` of the process failure codes once the retries for
a transient model-service error are used up), what its detail names, its causes rule and the
explanation Workers gives in `unhandled.explanation`. The refusals of the configuration reader
("Refusals before a run") are not run codes and live with the configuration reader.

Links:

* Workers' link: level `workers`, actor `Workers run <run-id> (<task type> worker)`.
* The Claude Code process's link: level `component`, actor `Claude Code process (claude -p)`,
  code `claude_limit_reached` (reason exhausted) for the error_max_turns and
  error_max_budget_usd subtypes, else `claude_error` (reason environment).
* The pi process's link: level `component`, actor `pi process (pi -p)`, code
  `pi_limit_reached` (reason exhausted) when the permission extension stopped the run at a limit,
  else `pi_error` (reason environment).
* The worker's link: the worker result's error copied unchanged, level `worker`, an actor naming
  the run and the latest session, no causes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.errors import ErrorLink, Evidence, Reason, Unhandled
from concorde_workers.domain.launch import format_number

WORKERS_LEVEL = "workers"
COMPONENT_LEVEL = "component"
WORKER_LEVEL = "worker"
CLAUDE_PROCESS_ACTOR = "Claude Code process (claude -p)"
PI_PROCESS_ACTOR = "pi process (pi -p)"

CLAUDE_LIMIT_SUBTYPES: frozenset[str] = frozenset({"error_max_turns", "error_max_budget_usd"})
CLAUDE_LIMIT_CODE = "claude_limit_reached"
CLAUDE_ERROR_CODE = "claude_error"
PI_LIMIT_CODE = "pi_limit_reached"
PI_ERROR_CODE = "pi_error"

LINK_TEXT_MAX_CHARS = 4_000
"""A process link quotes at most this much of the final text (its start) and of standard error
(its end); the round's stderr.log keeps the full 80,000-byte tail."""

BACKENDS: frozenset[str] = frozenset({"claude", "pi"})


class CausesRule(StrEnum):
    """What a code's link has as its causes."""

    NONE = "none"
    PROCESS_LINK = "the agent process's link"
    WORKER_LINK = "the worker's link"
    VALIDATION_LINKS = "the links the round validation names"
    PREVIOUS_LINK = "the link the run would otherwise have ended with, if any"


class CodeSpec(BaseModel):
    """One row of an Errors table."""

    model_config = ConfigDict(frozen=True)

    code: str
    reason: Reason
    exhausted_when: str | None = None
    """When set, the alternative reason `exhausted` applies in this case."""
    detail: str
    """What the detail names (the table's column, verbatim)."""
    causes: str
    """The table's causes column, verbatim."""
    causes_rule: CausesRule
    explanation: str
    exhausted_explanation: str | None = None
    backends: frozenset[str] = BACKENDS
    source: str = "000 Errors"

    @property
    def alternative_reason(self) -> Reason | None:
        return Reason.EXHAUSTED if self.exhausted_when is not None else None

    @property
    def reasons(self) -> tuple[Reason, ...]:
        alternative = self.alternative_reason
        return (self.reason,) if alternative is None else (self.reason, alternative)

    def explanation_for(self, reason: Reason) -> str:
        if reason == self.reason:
            return self.explanation
        if reason == self.alternative_reason and self.exhausted_explanation is not None:
            return self.exhausted_explanation
        raise ValueError(f"{self.code} has no reason {reason.value}")


_RETRIES_USED_UP = "when the retries for a transient model-service error are used up"

_ROWS: tuple[CodeSpec, ...] = (
    CodeSpec(
        code="grant_unavailable",
        reason=Reason.INPUT,
        detail="which of the task type, grant, context identity or entries is missing",
        causes="none",
        causes_rule=CausesRule.NONE,
        explanation=(
            "Workers takes a worker's grant only from its request and never computes, widens or "
            "completes one; the request must give the task type, grant, context identity and "
            "entries"
        ),
    ),
    CodeSpec(
        code="grant_malformed",
        reason=Reason.INPUT,
        detail=(
            "the first grant entry that is not an object with a worktree-relative path and a "
            "level of rw, ro or names, and what is wrong with it"
        ),
        causes="none",
        causes_rule=CausesRule.NONE,
        explanation=(
            "Workers generates nothing from a malformed grant and never repairs one; only its "
            "caller can correct the entry"
        ),
    ),
    CodeSpec(
        code="worktree_misplaced",
        reason=Reason.ENVIRONMENT,
        detail=(
            "the worktree, the primary worktree's .claude/worktrees/ where it must lie directly, "
            "or what Git said when it found no primary worktree"
        ),
        causes="none",
        causes_rule=CausesRule.NONE,
        explanation=(
            "Workers runs a worker only in a worktree lying directly in .claude/worktrees/ of "
            "its repository's primary worktree"
        ),
    ),
    CodeSpec(
        code="run_directory_denied",
        reason=Reason.ENVIRONMENT,
        detail=(
            "the deny rule that would cover the worker's own directories of the runtime directory"
        ),
        causes="none",
        causes_rule=CausesRule.NONE,
        explanation=(
            "A generated deny rule would disable the worker's own work/, home/ or tmp/; Workers "
            "never drops a rule the grant implies to make room"
        ),
        backends=frozenset({"claude"}),
    ),
    CodeSpec(
        code="snapshot_failed",
        reason=Reason.ENVIRONMENT,
        detail="the Git command that failed and its output",
        causes="none",
        causes_rule=CausesRule.NONE,
        explanation=(
            "Without a snapshot of the worktree Workers cannot audit a worker, so it launches none"
        ),
    ),
    CodeSpec(
        code="launch_failed",
        reason=Reason.ENVIRONMENT,
        detail="the command that could not be started and the operating system's error",
        causes="none",
        causes_rule=CausesRule.NONE,
        explanation="The agent program could not be started on this host",
    ),
    CodeSpec(
        code="worker_timeout",
        reason=Reason.EXHAUSTED,
        detail="the round and the timeout",
        causes="none",
        causes_rule=CausesRule.NONE,
        explanation="The round used up its time limit; Workers never retries a timed-out round",
    ),
    CodeSpec(
        code="worker_limit_reached",
        reason=Reason.EXHAUSTED,
        detail=(
            "the round and the limit the agent program reported: on Claude Code its turn or "
            "budget subtype, on pi the limit and the value the permission extension names"
        ),
        causes=(
            "the agent process's link: the Claude Code process's link, or the pi process's link "
            "with that limit and value"
        ),
        causes_rule=CausesRule.PROCESS_LINK,
        explanation=(
            "The worker reached the turn or budget limit of its worker configuration; Workers "
            "never raises a limit or retries a round that reached one"
        ),
    ),
    CodeSpec(
        code="claude_failed",
        reason=Reason.ENVIRONMENT,
        exhausted_when=_RETRIES_USED_UP,
        detail=(
            "the round and the error Claude Code reported, or that it printed no envelope "
            "(Claude Code backend); attempts lists every retry"
        ),
        causes="the Claude Code process's link",
        causes_rule=CausesRule.PROCESS_LINK,
        explanation=(
            "Claude Code failed with an error that is not a transient model-service error, which "
            "Workers does not retry"
        ),
        exhausted_explanation=(
            "Claude Code kept failing with a transient model-service error and the run's retry "
            "rounds are used up"
        ),
        backends=frozenset({"claude"}),
    ),
    CodeSpec(
        code="pi_runtime_missing",
        reason=Reason.ENVIRONMENT,
        detail="every missing program or package and how to provide it",
        causes="none",
        causes_rule=CausesRule.NONE,
        explanation=(
            "The pi backend cannot enforce the grant without pi, rg, fd, the sandbox-runtime "
            "package and, on Linux, bwrap and socat, so Workers launches nothing"
        ),
        backends=frozenset({"pi"}),
        source="001 Errors",
    ),
    CodeSpec(
        code="pi_failed",
        reason=Reason.ENVIRONMENT,
        exhausted_when=_RETRIES_USED_UP,
        detail=(
            "the round and the error pi reported: it ended without a worker result and with a "
            "non-zero exit status, without a session record, or with the stop reason error or "
            "aborted; attempts lists every retry"
        ),
        causes="the pi process's link",
        causes_rule=CausesRule.PROCESS_LINK,
        explanation=(
            "pi failed with an error that is not a transient model-service error, which Workers "
            "does not retry"
        ),
        exhausted_explanation=(
            "pi kept failing with a transient model-service error and the run's retry rounds are "
            "used up"
        ),
        backends=frozenset({"pi"}),
        source="001 Errors",
    ),
    CodeSpec(
        code="worker_result_invalid",
        reason=Reason.CAPABILITY,
        detail=(
            "the schema violation, or the worker's final text when it gave no structured result"
        ),
        causes="none",
        causes_rule=CausesRule.NONE,
        explanation=(
            "Workers accepts only a worker result valid against the worker result schema and "
            "never repairs a worker's answer"
        ),
    ),
    CodeSpec(
        code="audit_violation",
        reason=Reason.PERMISSION,
        detail=(
            "every violating path and the worker's own reported status, or that its result was "
            "invalid"
        ),
        causes=(
            "the worker's link, when its result was valid and carries an error; none for a valid "
            "ok result, whose error is null, or an invalid one"
        ),
        causes_rule=CausesRule.WORKER_LINK,
        explanation="Workers never accepts a write outside the grant and never widens it",
    ),
    CodeSpec(
        code="worker_blocked",
        reason=Reason.CAPABILITY,
        detail="the worker's code and detail",
        causes="the worker's link",
        causes_rule=CausesRule.WORKER_LINK,
        explanation=(
            "The worker cannot continue without a decision above it; Workers takes no such decision"
        ),
    ),
    CodeSpec(
        code="worker_failed",
        reason=Reason.CAPABILITY,
        detail="the worker's code and detail",
        causes="the worker's link",
        causes_rule=CausesRule.WORKER_LINK,
        explanation="The worker tried and could not finish its task; Workers does not redo it",
    ),
    CodeSpec(
        code="validation_unavailable",
        reason=Reason.CAPABILITY,
        detail="the round and the error the round validation raised instead of answering",
        causes="none",
        causes_rule=CausesRule.NONE,
        explanation=(
            "The caller's round validation raised instead of answering, or answered what the run "
            "record cannot keep; whether a round needs repair is the caller's judgement, which "
            "Workers never makes itself"
        ),
    ),
    CodeSpec(
        code="deletion_failed",
        reason=Reason.ENVIRONMENT,
        detail=(
            "every proposed deletion the host performed, every one that failed with the operating "
            "system's error, and those it refused or found already absent"
        ),
        causes="the link the run would otherwise have ended with, if any",
        causes_rule=CausesRule.PREVIOUS_LINK,
        explanation=(
            "The operating system refused a proposed deletion; Workers leaves the file in place "
            "and restores nothing it deleted"
        ),
    ),
    CodeSpec(
        code="cleanup_failed",
        reason=Reason.ENVIRONMENT,
        detail=(
            "the transcript the host could not keep and the runtime directory it could not "
            "remove, each with the operating system's error"
        ),
        causes="the link the run would otherwise have ended with, if any",
        causes_rule=CausesRule.PREVIOUS_LINK,
        explanation=(
            "The operating system refused to keep the transcript or remove the runtime directory; "
            "credentials and transcripts must never outlive a run unnoticed"
        ),
    ),
    CodeSpec(
        code="interrupted",
        reason=Reason.ENVIRONMENT,
        detail=(
            "what ended the run from outside before it finished, such as a signal or the "
            "cancellation of the run that launched it"
        ),
        causes="none",
        causes_rule=CausesRule.NONE,
        explanation=(
            "Something outside ended the run before it finished; Workers does not restart it and "
            "leaves the worktree as the interruption found it"
        ),
    ),
)

RUN_CODES: Mapping[str, CodeSpec] = {row.code: row for row in _ROWS}
"""Every code of seed 000 "Errors" and seed 001 "Errors", in the tables' order."""

PROCESS_FAILURE_CODES: Mapping[str, str] = {"claude": "claude_failed", "pi": "pi_failed"}


class ValidationAnswer(StrEnum):
    """The round validation's answers that end a run with a code the round validation names."""

    VIOLATION = "violation"
    UNAVAILABLE = "unavailable"
    REPAIR_FAILED = "repair_failed"


class ValidationCodeRule(BaseModel):
    """A row of the Errors table whose code the round validation names."""

    model_config = ConfigDict(frozen=True)

    answer: ValidationAnswer
    reason: Reason
    concorde_code: str
    detail: str
    causes: str
    explanation: str


VALIDATION_CODE_RULES: Mapping[ValidationAnswer, ValidationCodeRule] = {
    ValidationAnswer.VIOLATION: ValidationCodeRule(
        answer=ValidationAnswer.VIOLATION,
        reason=Reason.PERMISSION,
        concorde_code="audit_violation",
        detail="every violating entry the round validation names",
        causes="the links the round validation names, none in Concorde",
        explanation=(
            "The caller does not allow what the round did at all; Workers ends such a run at "
            "once, with no further round"
        ),
    ),
    ValidationAnswer.UNAVAILABLE: ValidationCodeRule(
        answer=ValidationAnswer.UNAVAILABLE,
        reason=Reason.ENVIRONMENT,
        concorde_code="checks_unavailable",
        detail="the round and what the round validation reported",
        causes="the links the round validation names, in Concorde Check execution's",
        explanation=(
            "The caller's round validation could not validate the round, and Workers judges no "
            "round itself"
        ),
    ),
    ValidationAnswer.REPAIR_FAILED: ValidationCodeRule(
        answer=ValidationAnswer.REPAIR_FAILED,
        reason=Reason.EXHAUSTED,
        concorde_code="checks_failed",
        detail="what still needs repair and the rounds used; attempts lists each round's repair",
        causes=(
            "the links the round validation names, in Concorde one per failing check, from Check "
            "execution"
        ),
        explanation=(
            "The round validation still asks for a repair and the run's resume rounds are used up"
        ),
    ),
}


def codes_for_backend(backend: str) -> tuple[str, ...]:
    """The run codes a run of `backend` may end with (seed 001: pi uses the run mechanics' codes
    except claude_failed and run_directory_denied, and adds pi_runtime_missing and pi_failed)."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}: expected claude or pi")
    return tuple(code for code, row in RUN_CODES.items() if backend in row.backends)


def code_spec(code: str) -> CodeSpec:
    try:
        return RUN_CODES[code]
    except KeyError:
        raise ValueError(f"{code!r} is not one of Workers' run codes") from None


def workers_actor(run_id: str, task_type: str) -> str:
    return f"Workers run {run_id} ({task_type} worker)"


def _reason_and_explanation(code: str, reason: Reason | None) -> tuple[Reason, str]:
    row = RUN_CODES.get(code)
    if row is not None:
        chosen = row.reason if reason is None else Reason(reason)
        if chosen not in row.reasons:
            allowed = ", ".join(r.value for r in row.reasons)
            raise ValueError(f"{code} has the reason {allowed}, not {chosen.value}")
        return chosen, row.explanation_for(chosen)
    if reason is None:
        raise ValueError(
            f"{code!r} is not a Workers run code: a code the round validation names needs its "
            "reason (permission, environment or exhausted)"
        )
    for rule in VALIDATION_CODE_RULES.values():
        if rule.reason == reason:
            return rule.reason, rule.explanation
    raise ValueError(
        f"a code the round validation names has the reason permission, environment or exhausted, "
        f"not {Reason(reason).value}"
    )


def workers_link(
    run_id: str,
    task_type: str,
    code: str,
    detail: str,
    evidence: Iterable[Evidence],
    attempts: Iterable[str] = (),
    causes: Iterable[ErrorLink] = (),
    reason: Reason | None = None,
    *,
    explanation: str | None = None,
    options: Iterable[str] = (),
    recommendation: str = "",
) -> ErrorLink:
    """Workers' top link of a run that does not end ok.

    A code of the Errors tables takes its table reason, or `reason` when it is one the table
    allows (exhausted for claude_failed and pi_failed once the retries are used up); a code the
    round validation names (not in the tables) needs `reason`. A code whose causes rule is none
    takes no causes.
    """
    if not detail:
        raise ValueError("a link's detail names the round, paths, commands and messages")
    chosen, default_explanation = _reason_and_explanation(code, reason)
    cause_links = tuple(causes)
    row = RUN_CODES.get(code)
    if row is not None and row.causes_rule is CausesRule.NONE and cause_links:
        raise ValueError(f"{code} has no causes")
    return ErrorLink(
        level=WORKERS_LEVEL,
        actor=workers_actor(run_id, str(task_type)),
        code=code,
        detail=detail,
        evidence=tuple(evidence),
        attempts=tuple(attempts),
        unhandled=Unhandled(reason=chosen, explanation=explanation or default_explanation),
        options=tuple(options),
        recommendation=recommendation,
        causes=cause_links,
    )


def _number(value: int | float | Decimal | None) -> str:
    return "none" if value is None else format_number(value)


def _quote_head(text: str) -> str:
    if len(text) > LINK_TEXT_MAX_CHARS:
        cut = len(text) - LINK_TEXT_MAX_CHARS
        text = f"{text[:LINK_TEXT_MAX_CHARS]}…({cut} more characters)"
    return json.dumps(text, ensure_ascii=False)


def _quote_tail(text: str) -> str:
    if len(text) > LINK_TEXT_MAX_CHARS:
        cut = len(text) - LINK_TEXT_MAX_CHARS
        text = f"({cut} earlier characters)…{text[-LINK_TEXT_MAX_CHARS:]}"
    return json.dumps(text, ensure_ascii=False)


def _exit(exit_status: int | None) -> str:
    return "none" if exit_status is None else str(exit_status)


def claude_process_link(
    subtype: str | None,
    is_error: bool | None,
    num_turns: int | None,
    total_cost_usd: int | float | Decimal | None,
    exit_status: int | None,
    final_text: str | None,
    errors: Sequence[str],
    stderr_tail: str,
) -> ErrorLink:
    """The Claude Code process's link (level component): the envelope's subtype, error flag,
    turn count and cost, the exit status, the final text, the reported errors and the tail of
    standard error. `subtype` None means Claude Code printed no result envelope."""
    limit = subtype in CLAUDE_LIMIT_SUBTYPES
    head = (
        "Claude Code printed no result envelope"
        if subtype is None
        else f"Claude Code ended with the result subtype {subtype}"
    )
    flag = "none" if is_error is None else json.dumps(is_error)
    parts = [
        f"{head} (is_error {flag}, {_number(num_turns)} turn(s), cost "
        f"{_number(total_cost_usd)} USD, exit status {_exit(exit_status)})",
        f"errors: {json.dumps(list(errors), ensure_ascii=False)}",
        f"final text: {'none' if final_text is None else _quote_head(final_text)}",
        f"stderr tail: {_quote_tail(stderr_tail)}",
    ]
    reason = Reason.EXHAUSTED if limit else Reason.ENVIRONMENT
    explanation = (
        "Claude Code stopped the run at the turn or budget limit it was given"
        if limit
        else "Claude Code could not complete the round"
    )
    return ErrorLink(
        level=COMPONENT_LEVEL,
        actor=CLAUDE_PROCESS_ACTOR,
        code=CLAUDE_LIMIT_CODE if limit else CLAUDE_ERROR_CODE,
        detail="; ".join(parts),
        unhandled=Unhandled(reason=reason, explanation=explanation),
    )


def pi_limit_detail(
    limit: str, value: int | float | Decimal, maximum: int | float | Decimal
) -> str:
    """`the permission extension stopped the run at its <limit> limit (<value> reached, at most
    <maximum> allowed)`."""
    return (
        f"the permission extension stopped the run at its {limit} limit "
        f"({format_number(value)} reached, at most {format_number(maximum)} allowed)"
    )


def pi_process_link(
    exit_status: int | None,
    stop_reason: str | None,
    error_message: str | None,
    turns: int | None,
    stderr_tail: str,
    limit: str | None = None,
    value: int | float | Decimal | None = None,
    maximum: int | float | Decimal | None = None,
) -> ErrorLink:
    """The pi process's link (level component): pi_limit_reached (reason exhausted) with the
    limit, the value reached and the maximum allowed when the permission extension stopped the
    run at a limit, else pi_error (reason environment); both state the exit status, the last
    assistant message's stop reason and error message, the turns and the tail of standard
    error."""
    at_limit = limit is not None
    if at_limit and (value is None or maximum is None):
        raise ValueError("a pi limit names the value reached and the maximum allowed")
    if not at_limit and (value is not None or maximum is not None):
        raise ValueError("a value reached and a maximum allowed belong to a named limit")
    facts = (
        f"exit status {_exit(exit_status)}, last stop reason "
        f"{stop_reason if stop_reason is not None else 'none (no assistant message)'}, "
        f"error message {'none' if error_message is None else _quote_head(error_message)}, "
        f"{_number(turns)} turn(s)"
    )
    parts = (
        [pi_limit_detail(limit, value, maximum)]
        if limit is not None and value is not None and maximum is not None
        else ["pi did not complete the round"]
    )
    parts += [facts, f"stderr tail: {_quote_tail(stderr_tail)}"]
    return ErrorLink(
        level=COMPONENT_LEVEL,
        actor=PI_PROCESS_ACTOR,
        code=PI_LIMIT_CODE if at_limit else PI_ERROR_CODE,
        detail="; ".join(parts),
        unhandled=Unhandled(
            reason=Reason.EXHAUSTED if at_limit else Reason.ENVIRONMENT,
            explanation=(
                "the permission extension aborts a pi run that exceeds its turn or budget limit"
                if at_limit
                else "pi could not complete the round"
            ),
        ),
    )


def worker_actor(run_id: str, session: str | None) -> str:
    shown = session if session else "none"
    return f"worker of Workers run {run_id} (session {shown})"


def worker_link(result_error: Mapping[str, Any], run_id: str, session: str | None) -> ErrorLink:
    """The worker's link: the valid worker result's error copied unchanged, with the level
    worker, an actor naming the run and the latest session, and no causes."""
    fields = dict(result_error)
    for key in ("level", "actor", "causes"):
        if key in fields:
            raise ValueError(f"a worker result's error has no {key}")
    return ErrorLink.model_validate(
        {**fields, "level": WORKER_LEVEL, "actor": worker_actor(run_id, session), "causes": []}
    )


def trace_evidence(run_id: str, run_dir: str) -> Evidence:
    """The worker run's node as trace evidence: its identity, its folder in the detail."""
    return Evidence(kind="trace", ref=run_id, detail=run_dir)


def transcript_evidence(transcript: str, session: str | None = None) -> Evidence:
    """The transcript of the latest session, by its path in the run directory."""
    detail = "the latest session's transcript" + (f" (session {session})" if session else "")
    return Evidence(kind="transcript", ref=transcript, detail=detail)


def audit_evidence(round_number: int, violation: str) -> Evidence:
    """One audit violation of a round: `violation: <path>`."""
    return Evidence(kind="audit", ref=str(round_number), detail=f"violation: {violation}")


def trace_write_evidence(file: str, moment: str, error: str) -> Evidence:
    """A refused write of a trace.json: the file, the moment (start, update or end), the error."""
    return Evidence(kind="trace-write", ref=file, detail=f"{moment}: {error}")


def audit_violation_detail(
    round_number: int, violations: Sequence[str], worker_status: str | None
) -> str:
    """The audit_violation detail: every violating path and the worker's own reported status,
    or that its result was invalid (`worker_status` None)."""
    reported = (
        "the worker's result was invalid"
        if worker_status is None
        else f"the worker itself reported status {worker_status}"
    )
    return (
        f"round {round_number}: the worker changed {len(violations)} path(s) outside the grant's "
        f"writable paths: {', '.join(violations)}; {reported}"
    )
