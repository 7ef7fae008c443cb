"""A run request: the Inputs table of seed 000 as a value.

The grant stays the raw grant input the caller handed over: parsing it (and refusing it with
grant_unavailable / grant_malformed) is part of the run, so that a refused grant still gets its
run node and final record (seed 000, "Every run leaves a final record").
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from concorde_workers.domain.configuration.resources import ResourceLimits
from concorde_workers.domain.evidence.backends import BACKENDS as BACKENDS
from concorde_workers.domain.evidence.backends import DEFAULT_BACKEND
from concorde_workers.domain.evidence.backends import Backend as Backend


class Limits(BaseModel):
    """Per-run limits with the defaults of contract.workers.worker-configuration."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    timeout_seconds: float = Field(default=1800, ge=1)
    max_turns: int = Field(default=200, ge=1)
    max_budget_usd: float | None = Field(default=None, ge=0.01)
    rounds: int = Field(default=3, ge=0)
    retries: int = Field(default=5, ge=0)
    retry_delay_seconds: float = Field(default=15, ge=0)


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
