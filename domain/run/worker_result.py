"""The worker result (seed 002, contract.workers.worker-result) as its model, and its judgement.

The contract's fields are judged here, once; the caller's schema of `output` is judged outside
the domain, which does no schema I/O (application/rounds/result_judge.py).
"""

from __future__ import annotations

from typing import Literal, Self

from pydantic import BaseModel, StrictStr, ValidationError, model_validator

from concorde_workers.domain.ground.errors import ErrorLink, Reason
from concorde_workers.domain.ground.record_fields import (
    RECORD,
    CodeText,
    JsonObject,
    NonEmpty,
    WorkerStatus,
    describe_error,
)

WORKER_LEVEL = "worker"
"""The level of the worker's link in the error chain (seed 000 "Errors")."""

__all__ = [
    "WORKER_LEVEL",
    "WorkerError",
    "WorkerEvidence",
    "WorkerResult",
    "WorkerUnhandled",
    "judge_result",
    "result_problem",
]


class WorkerEvidence(BaseModel):
    """One evidence item of the worker's error: a file, command, output or Spec, by its ref."""

    model_config = RECORD

    kind: Literal["file", "command", "output", "spec"]
    ref: NonEmpty
    detail: StrictStr


class WorkerUnhandled(BaseModel):
    """Why the worker could not handle the error: the reason and its specific explanation."""

    model_config = RECORD

    reason: Reason
    explanation: NonEmpty


class WorkerError(BaseModel):
    """The worker's own link of the error chain: contract.tracing.error without level, actor
    and causes (seed 002, contract.workers.worker-result)."""

    model_config = RECORD

    code: CodeText
    detail: NonEmpty
    evidence: tuple[WorkerEvidence, ...]
    attempts: tuple[NonEmpty, ...]
    unhandled: WorkerUnhandled
    options: tuple[NonEmpty, ...]
    recommendation: StrictStr

    def to_link(self, actor: str) -> ErrorLink:
        """The worker's link as Workers puts it in the chain: level worker, `actor` (the run and
        the latest session, seed 000 "Errors") and no causes; the rest copied unchanged."""
        return ErrorLink.model_validate(
            {"level": WORKER_LEVEL, "actor": actor, **self.model_dump(mode="json"), "causes": []}
        )


class WorkerResult(BaseModel):
    """The structured result a worker ends every round with (contract.workers.worker-result).

    error is null exactly when status is ok: a result whose error does not match its status is
    invalid. `output` is the caller's job-specific object; its own schema is checked outside
    the domain (see `result_problem`).
    """

    model_config = RECORD

    status: WorkerStatus
    summary: NonEmpty
    error: WorkerError | None
    proposed_deletions: tuple[NonEmpty, ...]
    output: JsonObject

    @model_validator(mode="after")
    def _error_matches_status(self) -> Self:
        if self.status == "ok" and self.error is not None:
            raise ValueError("error must be null when status is ok")
        if self.status != "ok" and self.error is None:
            raise ValueError(f"error must be an object when status is {self.status}")
        return self


def judge_result(data: object) -> WorkerResult | str:
    """The worker result `data` as its model, or why it is none: the schema violation that
    worker_result_invalid names (seed 000 "Errors"). The caller's schema of `output` is checked
    outside the domain, which does no schema I/O (application/rounds/result_judge.py)."""
    if not isinstance(data, dict):
        return f"the worker result must be a JSON object, not {type(data).__name__}"
    try:
        return WorkerResult.model_validate(data)
    except ValidationError as error:
        return describe_error(error)


def result_problem(data: object, output_schema_problem: str | None = None) -> str | None:
    """Why `data` is not a valid worker result, or None when it is one.

    `output_schema_problem` is what the caller's output schema found wrong with `data["output"]`
    (checked with the contracts' validator outside the domain, which does no schema I/O); it is
    reported once the rest of the result is valid. The text is the schema violation that
    worker_result_invalid names (seed 000 "Errors").
    """
    judged = judge_result(data)
    if isinstance(judged, str):
        return judged
    if output_schema_problem is not None:
        return f"output: {output_schema_problem}"
    return None
