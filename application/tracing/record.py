"""The returned run record of a worker-run node (seed 000 "Run record"; seed 002,
contract.workers.worker-run-record): the host's returned record and `read_record`'s both come
from `record_of_node`.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

from concorde_workers.domain.evidence.records import RoundRecord, RunRecord, TraceNode

__all__ = ["record_of_node"]


def record_of_node(
    node: TraceNode,
    *,
    worktree: str,
    backend: str,
    run_directory: str,
    runtime_directory: str,
    stderr_tail: str,
    rounds: Sequence[RoundRecord],
    final_failures: Sequence[str] = (),
) -> RunRecord:
    """The returned run record of a worker-run node (seed 000 "Run record"): the node's identity,
    status, error, times, metadata and content, with tools as the comma-separated list, the
    transcript absolute in `run_directory` and the rounds' records in place of their number;
    `final_failures` completes trace_failures with any failure of the final write itself. The
    host's returned record and `read_record` both come from here."""
    metadata = node.run_metadata()
    content = node.run_content()
    return RunRecord(
        run_id=node.id,
        status=node.status,
        error=node.error,
        started_at=node.started_at,
        ended_at=node.ended_at,
        task_type=content.task_type,
        operation=metadata.operation,
        worker=metadata.worker,
        backend=backend,
        backend_source=content.backend_source,
        model=metadata.model,
        local_model=content.local_model,
        model_map=content.model_map,
        reasoning=metadata.reasoning,
        worktree=worktree,
        context_identity=metadata.context_identity,
        grant_digest=metadata.grant_digest,
        settings_digest=metadata.settings_digest,
        brief_digest=metadata.brief_digest,
        tools=",".join(content.tools) if content.tools else None,
        transcript=(
            None
            if content.transcript is None
            else posixpath.join(run_directory, content.transcript)
        ),
        stderr_tail=stderr_tail,
        worker_result=content.worker_result,
        deleted=content.deleted,
        deletions_refused=content.deletions_refused,
        deletions_absent=content.deletions_absent,
        deletions_failed=content.deletions_failed,
        trace_failures=(*content.trace_failures, *final_failures),
        run_directory=run_directory,
        runtime_directory=runtime_directory,
        rounds=tuple(rounds),
    )
