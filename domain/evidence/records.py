"""The records of a worker run as pydantic models that serialize exactly to the contracts.

Seed 002: contract.workers.worker-result, worker-run-trace, worker-round-trace and
worker-run-record; seed 000 "Progress file" (status.json); our contract.tracing.node (design.md,
"Decisions where the spec is silent": Trace node). `Model.model_validate(value)` accepts what the
contract accepts (the fields typed here), and `model_dump(mode="json")` gives the contract's
object back, keys in the schema's order. Every model forbids unknown keys; no required contract
field has a default, so a missing key is refused as the schema refuses it. Scalars are strict:
a string is never read as a number, nor a boolean as an integer.

This module holds the returned run record; the trace nodes live in `trace_node.py`, the worker
result in `worker_result.py`, the progress file in `progress_file.py`, the shared field types in
`record_fields.py`; this module re-exports them, so every record is imported from here. The
JSON Schemas in `contracts/` stay the authority; the domain does no I/O and does not import
them. The tests check each model against its contract's example and schema.
"""

from __future__ import annotations

from typing import Annotated, Any, Self

from pydantic import (
    BaseModel,
    Field,
    SerializerFunctionWrapHandler,
    StrictInt,
    StrictStr,
    field_validator,
    model_serializer,
    model_validator,
)

from concorde_workers.domain.evidence.progress_file import (
    LAST_ACTION_TARGET_LIMIT,
    LastAction,
    ProgressFile,
    cut_target,
)
from concorde_workers.domain.evidence.trace_node import (
    WORKER_ROUND,
    WORKER_RUN,
    AuditRecord,
    NodeFile,
    RoundMetadata,
    RoundTraceContent,
    RunMetadata,
    RunTraceContent,
    TraceNode,
    Transient,
    Usage,
)
from concorde_workers.domain.ground.errors import ErrorLink
from concorde_workers.domain.ground.record_fields import (
    BACKENDS,
    RECORD,
    Amount,
    Backend,
    CodeText,
    Count,
    Digest,
    GitObjectId,
    JsonObject,
    NodeOutcome,
    NodeStatus,
    NonEmpty,
    Phase,
    ProgressStatus,
    Prompt,
    UtcTime,
    WorkerStatus,
)
from concorde_workers.domain.run.worker_result import (
    WorkerError,
    WorkerEvidence,
    WorkerResult,
    WorkerUnhandled,
    judge_result,
    result_problem,
)

__all__ = [
    "LAST_ACTION_TARGET_LIMIT",
    "WORKER_ROUND",
    "WORKER_RUN",
    "Amount",
    "AuditRecord",
    "Backend",
    "CodeText",
    "Count",
    "Digest",
    "GitObjectId",
    "JsonObject",
    "LastAction",
    "NodeFile",
    "NodeOutcome",
    "NodeStatus",
    "NonEmpty",
    "Phase",
    "ProgressFile",
    "ProgressStatus",
    "Prompt",
    "RoundMetadata",
    "RoundRecord",
    "RoundTraceContent",
    "RunMetadata",
    "RunRecord",
    "RunTraceContent",
    "TraceNode",
    "Transient",
    "Usage",
    "UtcTime",
    "WorkerError",
    "WorkerEvidence",
    "WorkerResult",
    "WorkerStatus",
    "WorkerUnhandled",
    "cut_target",
    "judge_result",
    "result_problem",
]


# --- contract.workers.worker-run-record -------------------------------------------------------

# Keys a round of the returned run record holds only when their step happened (seed 002,
# contract.workers.worker-run-record: "A key absent from a round means that step did not happen
# in it"); None in the model means absent. session, exit and duration may be null in the contract:
# they are written when set, even to null, and left out only when never given. The agent's report
# is under its backend's key, one of the contract's backends (`agent` in the model).
_STEP_KEYS = ("audit", "evidence", "validation", "transient")
_NULLABLE_KEYS = ("session", "exit", "duration")
_NOT_NULL = "leave the key out when the step did not happen; null is not allowed"


class RoundRecord(BaseModel):
    """One round of the returned run record: its node's content and usage, the agent's report
    under its backend's key, and only the steps that happened (see `to_json`)."""

    model_config = RECORD

    round: Annotated[StrictInt, Field(ge=1)]
    prompt: Prompt
    session: NonEmpty | None = None
    exit: StrictInt | None = None
    duration: Amount | None = None
    usage: Usage
    agent: dict[Backend, JsonObject] = {}
    """The agent program's report, under its backend's key in the contract's object."""
    audit: AuditRecord | None = None
    evidence: tuple[JsonObject, ...] | None = None
    validation: StrictStr | None = None
    transient: Transient | None = None

    @model_validator(mode="before")
    @classmethod
    def _backend_keys(cls, data: Any) -> Any:
        """The contract's backend keys (`claude`, `pi`) into `agent`; none may be null, and
        `agent` is no key of the contract's round: given as one, it is refused."""
        if not isinstance(data, dict):
            return data
        if "agent" in data:
            raise ValueError("agent: the agent's report is given under its backend's key")
        data = dict(data)
        agent: dict[str, Any] = {}
        for key in BACKENDS:
            if key in data:
                if data[key] is None:
                    raise ValueError(f"{key}: {_NOT_NULL}")
                agent[key] = data.pop(key)
        return {**data, "agent": agent}

    @field_validator(*_STEP_KEYS, mode="before")
    @classmethod
    def _present_not_null(cls, value: Any) -> Any:
        # The contract has no null for these keys: a step that did not happen has no key.
        if value is None:
            raise ValueError(_NOT_NULL)
        return value

    @model_serializer(mode="wrap")
    def _drop_absent(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        agent = dumped.pop("agent", {})
        for key in _STEP_KEYS:
            if getattr(self, key) is None:
                dumped.pop(key, None)
        for key in _NULLABLE_KEYS:
            if key not in self.model_fields_set:
                dumped.pop(key, None)
        at = list(dumped).index("usage") + 1
        items = list(dumped.items())
        return dict([*items[:at], *agent.items(), *items[at:]])

    @classmethod
    def of_round(
        cls,
        content: RoundTraceContent,
        usage: Usage,
        evidence: tuple[JsonObject, ...] | None = None,
    ) -> RoundRecord:
        """The record of a round from its node's content and usage.

        `evidence` replaces the content's evidence with each artifact path made absolute (the
        caller's shape, so the caller's code does it); evidence and validation appear only when
        the round validation ran (validation not null), audit only once the round was audited,
        transient only when a transient model-service error ended the round.
        """
        fields: dict[str, Any] = {
            "round": content.round,
            "prompt": content.prompt,
            "session": content.session,
            "exit": content.exit,
            "duration": usage.duration_seconds,
            "usage": usage,
        }
        fields.update(
            {
                backend: content.agent[backend]
                for backend in BACKENDS
                if isinstance(content.agent.get(backend), dict)
            }
        )
        if content.audit is not None:
            fields["audit"] = content.audit
        if content.validation is not None:
            fields["evidence"] = content.evidence if evidence is None else evidence
            fields["validation"] = content.validation
        if content.transient is not None:
            fields["transient"] = content.transient
        return cls(**fields)

    def to_json(self) -> dict[str, Any]:
        """The round as the contract's object, without the keys of steps that did not happen."""
        return self.model_dump(mode="json")


class RunRecord(BaseModel):
    """The value returned to the caller when a worker run ends (contract.workers.worker-run-record).

    Never stored: the trace nodes are the record kept. error is null exactly when status is ok
    (seed 000 "Errors": every run that does not end ok has an error).
    """

    model_config = RECORD

    run_id: NonEmpty
    status: WorkerStatus
    error: ErrorLink | None
    started_at: NonEmpty
    ended_at: NonEmpty | None
    task_type: NonEmpty
    operation: NonEmpty | None
    worker: NonEmpty | None
    backend: NonEmpty
    backend_source: NonEmpty | None
    model: NonEmpty | None
    local_model: NonEmpty | None
    model_map: NonEmpty | None
    reasoning: NonEmpty | None
    worktree: NonEmpty
    context_identity: NonEmpty | None
    grant_digest: NonEmpty | None
    settings_digest: NonEmpty | None
    brief_digest: NonEmpty | None
    tools: NonEmpty | None
    transcript: NonEmpty | None
    stderr_tail: StrictStr
    worker_result: JsonObject | None
    deleted: tuple[NonEmpty, ...]
    deletions_refused: tuple[NonEmpty, ...]
    deletions_absent: tuple[NonEmpty, ...]
    deletions_failed: tuple[NonEmpty, ...]
    trace_failures: tuple[NonEmpty, ...]
    run_directory: NonEmpty
    runtime_directory: NonEmpty
    rounds: tuple[RoundRecord, ...]

    @model_validator(mode="after")
    def _error_matches_status(self) -> Self:
        if (self.status == "ok") != (self.error is None):
            raise ValueError("error is null exactly when status is ok")
        return self

    @property
    def result(self) -> WorkerResult | None:
        """The run's worker result as its model (contract.workers.worker-result, issue 34 §5:
        the caller's typed face of what the contract keeps as a plain object, `worker_result`,
        unchanged); None when the run kept none. The host keeps only a valid one; a record read
        back whose object is no valid worker result raises ValueError naming the violation."""
        if self.worker_result is None:
            return None
        judged = judge_result(self.worker_result)
        if isinstance(judged, str):
            raise ValueError(f"the record's worker_result is not valid: {judged}")
        return judged

    def to_json(self) -> dict[str, Any]:
        """The record as the contract's object (rounds without the keys of steps not taken)."""
        return self.model_dump(mode="json")
