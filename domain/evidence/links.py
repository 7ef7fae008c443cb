"""The links of a failed run's error chain, built from the code tables of
`domain/evidence/codes.py`.

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
from typing import Any

from concorde_workers.domain.evidence.codes import (
    CLAUDE_ERROR_CODE,
    CLAUDE_LIMIT_CODE,
    CLAUDE_LIMIT_SUBTYPES,
    PI_ERROR_CODE,
    PI_LIMIT_CODE,
    VALIDATION_CODE_RULES,
    CausesRule,
    Reason,
    run_code_row,
)
from concorde_workers.domain.evidence.errors import ErrorLink, Evidence, Unhandled
from concorde_workers.domain.isolation.launch import format_number
from concorde_workers.domain.run.worker_result import WORKER_LEVEL, WorkerError

WORKERS_LEVEL = "workers"
COMPONENT_LEVEL = "component"
CLAUDE_PROCESS_ACTOR = "Claude Code process (claude -p)"
PI_PROCESS_ACTOR = "pi process (pi -p)"

LINK_TEXT_MAX_CHARS = 4_000
"""A process link quotes at most this much of the final text (its start) and of standard error
(its end); the round's stderr.log keeps the full 80,000-byte tail."""


def workers_actor(run_id: str, task_type: str) -> str:
    return f"Workers run {run_id} ({task_type} worker)"


def _reason_and_explanation(code: str, reason: Reason | None) -> tuple[Reason, str]:
    row = run_code_row(code)
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
    row = run_code_row(code)
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


def worker_link(result_error: WorkerError | Mapping[str, Any], run_id: str,
                session: str | None) -> ErrorLink:
    """The worker's link: the valid worker result's error copied unchanged, with the level
    worker, an actor naming the run and the latest session, and no causes."""
    if isinstance(result_error, WorkerError):
        return result_error.to_link(worker_actor(run_id, session))
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
