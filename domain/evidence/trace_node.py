"""The trace nodes of a worker run as pydantic models that serialize exactly to the contracts.

Seed 002: contract.workers.worker-round-trace and worker-run-trace (a node's content); our
contract.tracing.node (design.md, "Decisions where the spec is silent": Trace node) with the
worker run's and round's metadata and usage. The rules of every record model are those of
`records.py`, which re-exports these names: every record is imported from there.
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

from concorde_workers.domain.ground.errors import ErrorLink
from concorde_workers.domain.ground.record_fields import (
    RECORD,
    Amount,
    Backend,
    Count,
    Digest,
    GitObjectId,
    JsonObject,
    NodeOutcome,
    NodeStatus,
    NonEmpty,
    Prompt,
    UtcTime,
    describe_error,
    is_project_path,
)
from concorde_workers.domain.run.agent_report import RoundUsage

__all__ = [
    "WORKER_ROUND",
    "WORKER_RUN",
    "AuditRecord",
    "NodeFile",
    "RoundMetadata",
    "RoundTraceContent",
    "RunMetadata",
    "RunTraceContent",
    "TraceNode",
    "Transient",
    "Usage",
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


class Usage(RoundUsage):
    """A round node's usage: what the agent program reported (`RoundUsage`'s fields, null when
    it reported none) and the round's duration in seconds (null until it ended). Seed 000 "Run
    record". Every field is given, as the contract's node has every key: `of_report` builds it
    from the report, so no figure is copied by hand."""

    model_config = RECORD

    duration_seconds: Amount | None

    @model_validator(mode="before")
    @classmethod
    def _every_field(cls, data: Any) -> Any:
        # RoundUsage's defaults serve the readers; a recorded usage names every figure.
        if isinstance(data, dict):
            missing = [name for name in cls.model_fields if name not in data]
            if missing:
                raise ValueError(f"missing {', '.join(missing)} (null when none was reported)")
        return data

    @classmethod
    def of_report(cls, reported: RoundUsage, duration_seconds: float | None) -> Usage:
        """The usage of a round from what its agent program reported and its duration."""
        return cls.model_validate({**dict(reported), "duration_seconds": duration_seconds})


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
