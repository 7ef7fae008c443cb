"""A run request: the Inputs table of seed 000 as a value.

The grant stays the raw grant input the caller handed over: parsing it (and refusing it with
grant_unavailable / grant_malformed) is part of the run, so that a refused grant still gets its
run node and final record (seed 000, "Every run leaves a final record").
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

from concorde_workers.domain.configuration.resources import ResourceLimits
from concorde_workers.domain.ground.backends import BACKENDS as BACKENDS
from concorde_workers.domain.ground.backends import DEFAULT_BACKEND
from concorde_workers.domain.ground.backends import Backend as Backend

MAX_WAIT_SECONDS = 86_400.0
"""The longest a round may run, and the longest wait before a retry round: a day (issue 31 §3:
`timeout_seconds: 1e9` was taken as 31 years, and past 9.2e9 the round's timer failed, so the
round ran with no timeout at all; a check's timeout has the same bound)."""
MAX_RETRIES = 100
"""The most retry rounds a run may start (each wait doubles: past ~1,000 the doubling itself
overflows, even from a delay of 0)."""


def limits_problem(timeout_seconds: float, retries: int, retry_delay_seconds: float) -> str | None:
    """Why these limits cannot be honoured as written, naming the field and the repair; None
    when they can. The contract bounds them from below only (decisions.md "Inputs the user
    writes")."""
    if timeout_seconds > MAX_WAIT_SECONDS:
        return (
            f"limits.timeout_seconds is {timeout_seconds:g} ({_span(timeout_seconds)}): a "
            f"round's timeout is at most {MAX_WAIT_SECONDS:,.0f} seconds (a day); give at most "
            f"{MAX_WAIT_SECONDS:.0f}"
        )
    if retries > MAX_RETRIES:
        return (
            f"limits.retries is {retries}: a run starts at most {MAX_RETRIES} retry rounds; "
            f"give at most {MAX_RETRIES}"
        )
    longest = retry_delay_seconds * 2.0 ** max(retries - 1, 0) if retries else 0.0
    if longest > MAX_WAIT_SECONDS:
        return (
            f"limits.retries {retries} with retry_delay_seconds {retry_delay_seconds:g} would "
            f"wait up to {retry_delay_seconds:g} × 2^{retries - 1} seconds "
            f"({_span(longest)}) before the last retry, past a day; lower either"
        )
    return None


def _span(seconds: float) -> str:
    """A duration as a person reads it: days up to a year, then years."""
    days = seconds / 86_400
    return f"{days:,.0f} days" if days < 365 else f"{days / 365.25:,.0f} years"


class Limits(BaseModel):
    """Per-run limits with the defaults of contract.workers.worker-configuration, within what
    the host can honour (`limits_problem`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    timeout_seconds: float = Field(default=1800, ge=1)
    max_turns: int = Field(default=200, ge=1)
    max_budget_usd: float | None = Field(default=None, ge=0.01)
    rounds: int = Field(default=3, ge=0)
    retries: int = Field(default=5, ge=0)
    retry_delay_seconds: float = Field(default=15, ge=0)

    @model_validator(mode="after")
    def _honoured(self) -> Limits:
        problem = limits_problem(self.timeout_seconds, self.retries, self.retry_delay_seconds)
        if problem is not None:
            raise ValueError(problem)
        return self


class RunRequest(BaseModel):
    """What a caller asks the host to run (seed 000, Inputs)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    backend: Backend = DEFAULT_BACKEND
    backend_source: str | None = None
    worktree: str
    parent: str | None = None
    task_type: str
    grant: JsonValue = None
    """The grant as the caller gave it, any JSON value: the run parses it, and refuses it
    (grant_unavailable, grant_malformed) with a record."""
    instructions: str = ""
    runtime_paths: tuple[str, ...] = ()
    project_interpreter: str | None = None
    limits: Limits = Limits()
    resources: ResourceLimits | None = None
    """The run's processes, memory and CPU (issue 20); None: the defaults, which a machine that
    cannot enforce them runs without (said), where limits asked for are refused."""
    model: str | None = None
    local_model: str | None = None
    model_map: str | None = None
    reasoning: str | None = None
    operation: str | None = None
    worker: str | None = None
    modules: tuple[str, ...] = ()
    operation_run_id: str | None = None
    output_schema: dict[str, Any] | None = Field(
        default=None,
        description="the caller's schema of the result's `output`, embedded at that key",
    )
