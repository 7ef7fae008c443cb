"""The records of a worker run as pydantic models that serialize exactly to the contracts.

Seed 002: contract.workers.worker-result, worker-run-trace, worker-round-trace and
worker-run-record; seed 000 "Progress file" (status.json); our contract.tracing.node (design.md,
"Decisions where the spec is silent": Trace node). `Model.model_validate(value)` accepts what the
contract accepts (the fields typed here), and `model_dump(mode="json")` gives the contract's
object back, keys in the schema's order. Every model forbids unknown keys; no required contract
field has a default, so a missing key is refused as the schema refuses it. Scalars are strict:
a string is never read as a number, nor a boolean as an integer.

The worker result lives in `worker_result.py`, the progress file in `progress_file.py`, the
shared field types in `record_fields.py`; this module re-exports them, so every record is
imported from here. The JSON Schemas in `contracts/` stay the authority; the domain does no I/O
and does not import them. The tests check each model against its contract's example and schema.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self

from pydantic import (
    BaseModel,
    Field,
    SerializerFunctionWrapHandler,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
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
    describe_error,
    is_project_path,
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


# --- contract.workers.worker-round-trace ------------------------------------------------------


class AuditRecord(BaseModel):
    """The host's audit of a round as recorded: verdict, every changed path, every violation."""

    model_config = RECORD

    verdict: Literal["clean", "violation"]
    changed: tuple[NonEmpty, ...]
    violations: tuple[NonEmpty, ...]


class Transient(BaseModel):
    """The transient model-service error that ended a round, whether a retry round followed and
    how long the host waited before it (null when none followed)."""

    model_config = RECORD

    error: NonEmpty
    retried: StrictBool
    delay_seconds: Amount | None


class RoundTraceContent(BaseModel):
    """The content of a worker round's trace node (contract.workers.worker-round-trace)."""

    model_config = RECORD

    round: Annotated[StrictInt, Field(ge=1)]
    prompt: Prompt
    session: NonEmpty | None
    exit: StrictInt | None
    audit: AuditRecord | None
    evidence: tuple[JsonObject, ...]
    validation: StrictStr | None
    transient: Transient | None
    agent: JsonObject


# --- contract.workers.worker-run-trace --------------------------------------------------------


class RunTraceContent(BaseModel):
    """The content of a worker run's trace node, its run record (contract.workers.worker-run-trace).

    `worker_result` is kept verbatim as the worker gave it (parse it with `WorkerResult`).
    """

    model_config = RECORD

    task_type: NonEmpty
    backend_source: NonEmpty | None
    local_model: NonEmpty | None
    model_map: NonEmpty | None
    tools: tuple[NonEmpty, ...] | None
    transcript: NonEmpty | None
    worker_result: JsonObject | None
    deleted: tuple[NonEmpty, ...]
    deletions_refused: tuple[NonEmpty, ...]
    deletions_absent: tuple[NonEmpty, ...]
    deletions_failed: tuple[NonEmpty, ...]
    trace_failures: tuple[NonEmpty, ...]
    rounds: Count

    @field_validator("transcript")
    @classmethod
    def _transcript_in_node(cls, value: str | None) -> str | None:
        # relative to the node's folder (format project-path)
        if value is not None and not is_project_path(value):
            raise ValueError("transcript must be a path relative to the node's folder")
        return value


# --- contract.tracing.node ------------------------------------------------------------------


class Usage(BaseModel):
    """A round node's usage: what the agent program reported (null when it reported none) and
    the round's duration in seconds (null until it ended). Seed 000 "Run record"."""

    model_config = RECORD

    tokens_in: Count | None
    tokens_out: Count | None
    tokens_cache_read: Count | None
    tokens_cache_write: Count | None
    cost_usd: Amount | None
    turns: Count | None
    duration_seconds: Amount | None


class RunMetadata(BaseModel):
    """A worker run node's metadata: what it was launched for and the digests of what it was
    given, each null until made; model and reasoning only when the configuration named them."""

    model_config = RECORD

    operation: NonEmpty | None
    worker: NonEmpty | None
    modules: tuple[NonEmpty, ...]
    task_type: NonEmpty
    backend: Backend | None
    model: NonEmpty | None
    reasoning: NonEmpty | None
    context_identity: NonEmpty | None
    grant_digest: Digest | None
    settings_digest: Digest | None
    brief_digest: Digest | None
    head_commit: GitObjectId | None = None
    """The commit HEAD named at the snapshot (issue 30 §4): what the starting state builds on;
    written only when known, so a node of an earlier version reads as it was."""
    start_tree: GitObjectId | None = None
    """The tree of the worktree's `rw` state at the snapshot, as the host's change store hashed
    it (HEAD's tree with the snapshot's changed `rw` paths): the first round's patch applies
    onto it. Written only when a store made it."""

    @model_serializer(mode="wrap")
    def _known_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        for key in ("head_commit", "start_tree"):
            if dumped.get(key) is None:
                dumped.pop(key, None)
        return dumped


class RoundMetadata(BaseModel):
    """A worker round node's metadata (contract.tracing.node version 3): the tree of the
    worktree's `rw` state the host's change store hashed after the round's audit, whose patch
    from the tree before is the round's changes.patch; empty when no store made one."""

    model_config = RECORD

    tree: GitObjectId | None = None

    @model_serializer(mode="wrap")
    def _known_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        return {k: v for k, v in dumped.items() if v is not None}


class NodeFile(BaseModel):
    """A file a node keeps: its path relative to the node's folder and the sha256 of its bytes."""

    model_config = RECORD

    path: NonEmpty
    digest: Digest

    @field_validator("path")
    @classmethod
    def _relative(cls, value: str) -> str:
        if not is_project_path(value):
            raise ValueError("a node's file path must be relative to its folder")
        return value


WORKER_RUN = "worker-run"
WORKER_ROUND = "worker-round"


class TraceNode(BaseModel):
    """A node's trace.json (contract.tracing.node): Tracing's uniform fields around the content.

    For kind worker-run, metadata is `RunMetadata`, usage is empty and content is
    `RunTraceContent`; for worker-round, metadata is `RoundMetadata` (its tree, or empty), usage
    is `Usage` and content is `RoundTraceContent`. Other kinds keep plain objects. The accessors
    `run_metadata`, `run_content`, `round_metadata`, `round_usage` and `round_content` give the
    typed parts.
    """

    model_config = RECORD

    kind: Annotated[StrictStr, Field(pattern=r"^[a-z][a-z0-9-]*$")]
    id: NonEmpty
    parent: NonEmpty | None
    started_at: UtcTime
    ended_at: UtcTime | None
    status: NodeStatus
    outcome: NodeOutcome | None
    error: ErrorLink | None
    files: tuple[NodeFile, ...]
    metadata: RunMetadata | RoundMetadata | JsonObject
    usage: Usage | JsonObject
    content: RunTraceContent | RoundTraceContent | JsonObject

    @model_validator(mode="before")
    @classmethod
    def _typed_by_kind(cls, data: Any) -> Any:
        # The kind decides the shape: validate those parts against their model so that a
        # malformed worker-run or worker-round node is refused, not kept as a plain object.
        if not isinstance(data, dict):
            return data
        parts: dict[str, tuple[type[BaseModel] | None, type[BaseModel] | None, type[BaseModel]]]
        parts = {
            WORKER_RUN: (RunMetadata, None, RunTraceContent),
            WORKER_ROUND: (RoundMetadata, Usage, RoundTraceContent),
        }
        if data.get("kind") not in parts:
            return data
        metadata, usage, content = parts[data["kind"]]
        typed = dict(data)
        for key, model in (("metadata", metadata), ("usage", usage), ("content", content)):
            if key not in typed:
                continue
            value = typed[key]
            if model is None:
                if value != {}:
                    raise ValueError(f"{key} of a {data['kind']} node must be empty")
                continue
            try:
                typed[key] = model.model_validate(value)
            except ValidationError as error:
                problem = describe_error(error)
                raise ValueError(f"{key} of a {data['kind']} node: {problem}") from None
        return typed

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.status == "running":
            if self.ended_at is not None or self.outcome is not None or self.error is not None:
                raise ValueError("a running node has no ended_at, outcome or error")
        else:
            if self.ended_at is None or self.outcome is None:
                raise ValueError("an ended node has ended_at and outcome")
            if self.outcome not in (self.status, "interrupted"):
                raise ValueError("outcome is the status or interrupted")
        if self.status == "ok" and self.error is not None:
            raise ValueError("a node that ended ok has no error")
        if self.kind == WORKER_RUN and self.status in ("blocked", "failed") and self.error is None:
            raise ValueError("a worker run that did not end ok has an error")
        if self.kind == WORKER_ROUND and self.parent is None:
            raise ValueError("a worker round's parent is its worker run")
        return self

    def run_metadata(self) -> RunMetadata:
        """The metadata of a worker-run node."""
        if not isinstance(self.metadata, RunMetadata):
            raise TypeError(f"a {self.kind} node has no worker run metadata")
        return self.metadata

    def run_content(self) -> RunTraceContent:
        """The content of a worker-run node."""
        if not isinstance(self.content, RunTraceContent):
            raise TypeError(f"a {self.kind} node has no worker run trace")
        return self.content

    def round_usage(self) -> Usage:
        """The usage of a worker-round node."""
        if not isinstance(self.usage, Usage):
            raise TypeError(f"a {self.kind} node has no round usage")
        return self.usage

    def round_metadata(self) -> RoundMetadata:
        """The metadata of a worker-round node (empty for a node of contract version 1)."""
        if not isinstance(self.metadata, RoundMetadata):
            raise TypeError(f"a {self.kind} node has no worker round metadata")
        return self.metadata

    def round_content(self) -> RoundTraceContent:
        """The content of a worker-round node."""
        if not isinstance(self.content, RoundTraceContent):
            raise TypeError(f"a {self.kind} node has no worker round trace")
        return self.content


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

    def to_json(self) -> dict[str, Any]:
        """The record as the contract's object (rounds without the keys of steps not taken)."""
        return self.model_dump(mode="json")
