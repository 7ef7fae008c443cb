"""The links of a failed run's error chain, built from the code tables of
`domain/ground/codes.py`.

* Workers' link: level `workers`, actor `Workers run <run-id> (<task type> worker)`.
* The agent program's process link: level `component`, built by its backend's stream reader
  from what the program reported (adapters/claude/links.py, adapters/pi/links.py) with the
  quoting here (`quote_head`, `quote_tail`, `number_text`, `exit_text`).
* The worker's link: the worker result's error copied unchanged, level `worker`, an actor naming
  the run and the latest session, no causes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from concorde_workers.domain.ground.codes import (
    VALIDATION_CODE_RULES,
    CausesRule,
    Code,
    Reason,
    run_code_row,
)
from concorde_workers.domain.ground.errors import ErrorLink, Evidence, Unhandled
from concorde_workers.domain.ground.text import format_number
from concorde_workers.domain.run.worker_result import WORKER_LEVEL, WorkerError

WORKERS_LEVEL = "workers"
COMPONENT_LEVEL = "component"

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


def number_text(value: int | float | Decimal | None) -> str:
    """A count or amount as a link states it; `none` when the program did not say."""
    return "none" if value is None else format_number(value)


def quote_head(text: str) -> str:
    """A text quoted as JSON, at most its first `LINK_TEXT_MAX_CHARS` characters."""
    if len(text) > LINK_TEXT_MAX_CHARS:
        cut = len(text) - LINK_TEXT_MAX_CHARS
        text = f"{text[:LINK_TEXT_MAX_CHARS]}…({cut} more characters)"
    return json.dumps(text, ensure_ascii=False)


def quote_tail(text: str) -> str:
    """A text quoted as JSON, at most its last `LINK_TEXT_MAX_CHARS` characters."""
    if len(text) > LINK_TEXT_MAX_CHARS:
        cut = len(text) - LINK_TEXT_MAX_CHARS
        text = f"({cut} earlier characters)…{text[-LINK_TEXT_MAX_CHARS:]}"
    return json.dumps(text, ensure_ascii=False)


def exit_text(exit_status: int | None) -> str:
    """An exit status as a link states it; `none` when the process gave none."""
    return "none" if exit_status is None else str(exit_status)


HOST_LIMIT_ACTOR = "Workers host (the round's control group)"


def host_limit_link(reached: Sequence[str]) -> ErrorLink:
    """The host's own link of the limits of the run's resources a round reached (level
    component, reason exhausted): each names the limit, its value and the peak the group
    measured. worker_limit_reached's one cause on every backend, whatever the agent program
    said as it was stopped (its standard error stays in the round's stderr.log)."""
    if not reached:
        raise ValueError("a host limit link names at least one limit reached")
    return ErrorLink(
        level=COMPONENT_LEVEL,
        actor=HOST_LIMIT_ACTOR,
        code=Code.HOST_LIMIT_REACHED,
        detail="; ".join(reached),
        evidence=(),
        attempts=(),
        unhandled=Unhandled(
            reason=Reason.EXHAUSTED,
            explanation="the host ended the round at a limit of the run's resources it enforces",
        ),
        options=(),
        recommendation="",
        causes=(),
    )


def worker_actor(run_id: str, session: str | None) -> str:
    shown = session if session else "none"
    return f"worker of Workers run {run_id} (session {shown})"


def worker_link(
    result_error: WorkerError | Mapping[str, Any], run_id: str, session: str | None
) -> ErrorLink:
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
