"""What an agent program reported about one round, as its backend's stream reader reads it.

The backend adapters (Claude Code's stream-json, pi's JSON events, the test backend's fake
programs) each turn a round's output into this one value; the host decides with it. Everything
here is the agent program's report, never host evidence: `worker_result` is the worker's claim,
validated by the host before it counts.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.ground.errors import ErrorLink
from concorde_workers.domain.ground.record_fields import Amount, Count
from concorde_workers.domain.run.rounds import RoundEnding


class RoundUsage(BaseModel):
    """Tokens, cache reads and writes, cost and turns the agent program reported; None where it
    reported nothing.

    The one declaration of these figures (issue 34 §5): a round node's `Usage`
    (domain/evidence/trace_node.py) is this model with the round's duration, strict as every
    record is (a count an integer ≥ 0, an amount a number ≥ 0)."""

    model_config = ConfigDict(frozen=True)

    tokens_in: Count | None = None
    tokens_out: Count | None = None
    tokens_cache_read: Count | None = None
    tokens_cache_write: Count | None = None
    cost_usd: Amount | None = None
    turns: Count | None = None


class RoundReport(BaseModel):
    """One round as the agent program reported it.

    `ending` classifies how the process ended the round (ok, a transient model-service error,
    a timeout, a limit, another failure); `transient_error` is the error text when it was
    transient; `process_link` the agent process's error link (Claude Code's or pi's) when the
    round did not end ok; `limit` names the limit and value for worker_limit_reached;
    `agent` is the backend's own report under its key (`{"claude": {...}}`, `{"pi": {...}}`).
    """

    model_config = ConfigDict(frozen=True)

    ending: RoundEnding
    session: str | None = None
    exit: int | None = None
    worker_result: dict[str, Any] | None = None
    final_text: str | None = None
    transient_error: str | None = None
    process_link: ErrorLink | None = None
    limit: str | None = None
    host_limits: tuple[str, ...] = ()
    """The limits of the run's own the host enforced and the round reached (its control
    group's), each with its value and the peak: then the host's link is the cause, whatever
    the backend (docs/decisions.md "A limit the host enforces is told as one")."""
    failure: str | None = None
    usage: RoundUsage = RoundUsage()
    agent: dict[str, Any] = {}
