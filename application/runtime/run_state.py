"""The state of one run while it runs, and the records built from it.

`RoundState` and `RunState` hold what the host observed; they build the round and run trace
nodes (contract.tracing.node with the worker round / run trace as content) and the returned run
record, so that every write of a node and the returned value come from one place.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from concorde_workers.application.preparation.prepared import Prepared
from concorde_workers.application.tracing.record import record_of_node
from concorde_workers.application.tracing.writer import Moment, TraceWriter
from concorde_workers.domain.boundary.grant import Grant, parse_grant
from concorde_workers.domain.configuration.request import RunRequest
from concorde_workers.domain.evidence.records import (
    WORKER_ROUND,
    WORKER_RUN,
    AuditRecord,
    NodeFile,
    NodeOutcome,
    NodeStatus,
    Phase,
    RoundMetadata,
    RoundRecord,
    RoundTraceContent,
    RunMetadata,
    RunRecord,
    RunTraceContent,
    TraceNode,
    Transient,
    Usage,
    WorkerResult,
)
from concorde_workers.domain.gitview.git_metadata import GitMetadata
from concorde_workers.domain.ground.errors import Code, ErrorLink, Refusal
from concorde_workers.domain.ground.layout import RunLayout
from concorde_workers.domain.ground.record_fields import utc_text
from concorde_workers.domain.run.agent_report import RoundReport, RoundUsage
from concorde_workers.domain.run.audit import Audit
from concorde_workers.domain.run.deletions import DeletionOutcome
from concorde_workers.domain.run.rounds import WorkerStatus
from concorde_workers.ports.agents.agent import RoundKind


@dataclass
class RoundState:
    """One round as the host observed it."""

    number: int
    kind: RoundKind
    started_at: datetime
    started_monotonic: float
    session: str | None = None
    exit: int | None = None
    report: RoundReport | None = None
    audit: Audit | None = None
    evidence_node: tuple[dict[str, Any], ...] = ()
    evidence_record: tuple[dict[str, Any], ...] = ()
    validation: str | None = None
    transient: Transient | None = None
    duration: float | None = None
    ended_at: datetime | None = None
    result: WorkerResult | None = None
    """The round's worker result, once judged valid."""
    result_problem: str | None = None
    stderr_tail: str = ""
    failure: str | None = None
    status: Literal["ok", "failed"] = "ok"
    git_metadata: tuple[GitMetadata, ...] = ()
    """The `.git` entries the round's audit found new or changed, as the host read them."""
    interrupted: bool = False
    files: tuple[NodeFile, ...] = ()
    tree: str | None = None
    """The change store's tree after this round's audit (issue 30 §4), None when none made."""

    @property
    def agent(self) -> dict[str, Any]:
        return dict(self.report.agent) if self.report is not None else {}

    @property
    def usage_reported(self) -> RoundUsage:
        return self.report.usage if self.report is not None else RoundUsage()

    def content(self) -> RoundTraceContent:
        return RoundTraceContent(
            round=self.number,
            prompt=self.kind.value,
            session=self.session,
            exit=self.exit,
            audit=None if self.audit is None else AuditRecord.model_validate(self.audit.to_json()),
            evidence=self.evidence_node,
            validation=self.validation,
            transient=self.transient,
            agent=self.agent,
        )

    def usage(self, running: bool = False) -> Usage:
        duration = None if self.duration is None or running else round(self.duration, 3)
        return Usage.of_report(self.usage_reported, duration)

    def node(self, run_id: str, running: bool = False) -> TraceNode:
        """The round's node: ended once its agent ended, or, with `running`, what is known of
        it so far while the round is still audited or validated (issue 30 §3: a host killed
        then leaves a node that says what the round did)."""
        ended = self.ended_at is not None and not running
        return TraceNode(
            kind=WORKER_ROUND,
            id=f"{run_id}/{self.number}",
            parent=run_id,
            started_at=utc_text(self.started_at),
            ended_at=utc_text(self.ended_at) if self.ended_at and ended else None,
            status=self.status if ended else "running",
            outcome=("interrupted" if self.interrupted else self.status) if ended else None,
            error=None,
            files=self.files,
            metadata=RoundMetadata(tree=self.tree),
            usage=self.usage(running=not ended),
            content=self.content(),
        )

    def record(self) -> RoundRecord:
        evidence = self.evidence_record if self.validation is not None else None
        return RoundRecord.of_round(self.content(), self.usage(), evidence)


@dataclass
class RunState:
    """One run as the host observed it, from its request to its end."""

    request: RunRequest
    run_id: str
    started_at: datetime
    layout: RunLayout
    runtime_dir: str
    prepared: Prepared | None = None
    rounds: list[RoundState] = field(default_factory=list)
    worker_result: WorkerResult | None = None
    """The latest valid worker result, whatever ended its round (seed 000 "Rounds")."""
    session: str | None = None
    deletions: DeletionOutcome = field(default_factory=DeletionOutcome)
    transcript_kept: bool = False
    status: NodeStatus = "running"
    outcome: NodeOutcome | None = None
    error: ErrorLink | None = None
    ended_at: datetime | None = None
    trace_failures: list[str] = field(default_factory=list)
    files: tuple[NodeFile, ...] = ()
    ended_in: Phase | None = None
    """The phase an exception from outside ended the run in (before its round was closed)."""
    head_commit: str | None = None
    """HEAD's commit at the snapshot, recorded once the change store started (issue 30 §4)."""
    start_tree: str | None = None
    """The change store's tree of the `rw` state at the snapshot (issue 30 §4)."""
    _grant: Grant | Refusal | None = field(default=None, init=False, repr=False, compare=False)
    """The request's grant parsed once, while no preparation holds it (`context_identity`)."""

    @property
    def running(self) -> bool:
        """No end was recorded yet."""
        return self.status == "running"

    @property
    def interrupted(self) -> bool:
        return self.outcome == "interrupted"

    def end(self, link: ErrorLink | None, status: WorkerStatus = WorkerStatus.FAILED) -> None:
        """The run's end: ok without a link; otherwise the status the Rounds table gave
        (blocked or failed), failed for every other ending; interrupted as its outcome when
        something outside ended it (its link's code)."""
        self.error = link
        self.status = (
            "ok" if link is None else ("blocked" if status is WorkerStatus.BLOCKED else "failed")
        )
        self.outcome = (
            "interrupted" if link is not None and link.code == Code.INTERRUPTED else self.status
        )

    def fail(self, link: ErrorLink) -> None:
        """A step of the end failed after the run ended (the cleanup): failed, with `link`, and
        still interrupted when something outside had ended it."""
        outcome: NodeOutcome = "interrupted" if self.interrupted else "failed"
        self.error, self.status, self.outcome = link, "failed", outcome

    @property
    def grant_digest(self) -> str | None:
        return self.prepared.grant_digest if self.prepared else None

    @property
    def context_identity(self) -> str | None:
        """The grant's context identity as the parsed grant holds it (the preparation's, else
        the request's grant parsed once as the preparation parses it); None for a grant the
        run refuses as malformed or unavailable: what a refused grant says is not read."""
        if self.prepared is not None:
            grant: Grant | Refusal = self.prepared.grant
        else:
            if self._grant is None:
                self._grant = parse_grant(self.request.grant, self.request.task_type)
            grant = self._grant
        return (grant.context_identity or None) if isinstance(grant, Grant) else None

    def metadata(self) -> RunMetadata:
        request, prepared = self.request, self.prepared
        return RunMetadata(
            operation=request.operation,
            worker=request.worker,
            modules=request.modules,
            task_type=request.task_type,
            backend=request.backend,
            model=request.model,
            reasoning=request.reasoning,
            context_identity=self.context_identity,
            grant_digest=self.grant_digest,
            settings_digest=prepared.settings_digest if prepared else None,
            brief_digest=prepared.brief_digest if prepared else None,
            head_commit=self.head_commit if self.start_tree else None,
            start_tree=self.start_tree,
        )

    def content(self) -> RunTraceContent:
        prepared = self.prepared
        return RunTraceContent(
            task_type=self.request.task_type,
            backend_source=self.request.backend_source,
            local_model=self.request.local_model,
            model_map=self.request.model_map,
            tools=prepared.tools if prepared else None,
            transcript="transcript.jsonl" if self.transcript_kept else None,
            worker_result=(
                None if self.worker_result is None else self.worker_result.model_dump(mode="json")
            ),
            deleted=self.deletions.deleted,
            deletions_refused=self.deletions.refused,
            deletions_absent=self.deletions.absent,
            deletions_failed=self.deletions.failed,
            trace_failures=tuple(self.trace_failures),
            rounds=len(self.rounds),
        )

    def node(self) -> TraceNode:
        return TraceNode(
            kind=WORKER_RUN,
            id=self.run_id,
            parent=self.request.parent,
            started_at=utc_text(self.started_at),
            ended_at=utc_text(self.ended_at) if self.ended_at else None,
            status=self.status,
            outcome=self.outcome,
            error=self.error,
            files=self.files,
            metadata=self.metadata(),
            usage={},
            content=self.content(),
        )

    def write_node(self, tracer: TraceWriter, moment: Moment) -> str | None:
        """Write the run's trace.json at `moment`, its trace_failures those refused so far."""
        self.trace_failures = tracer.failures
        return tracer.write_run_node(self.layout, self.node(), moment)

    def record(self, final_failures: list[str]) -> RunRecord:
        """The returned run record; `final_failures` completes trace_failures with any failure
        of the final write itself."""
        node = self.node()
        if node.status == "running":  # never returned as running: the run ended somehow
            node = node.model_copy(update={"status": "failed"})
        return record_of_node(
            node,
            worktree=self.request.worktree,
            backend=self.request.backend,
            run_directory=self.layout.run_dir,
            runtime_directory=self.runtime_dir,
            stderr_tail=self.rounds[-1].stderr_tail if self.rounds else "",
            rounds=[r.record() for r in self.rounds],
            final_failures=final_failures,
        )


def grant_text(grant: Any) -> str:
    """grant.json of a run: the grant input as the request gave it (its repr when it is no
    JSON value, as a refused request's may be)."""
    try:
        return json.dumps(grant, indent=2, ensure_ascii=False) + "\n"
    except (TypeError, ValueError):
        return json.dumps(repr(grant)) + "\n"
