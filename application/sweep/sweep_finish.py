"""What a sweep writes to finish a dead host's record (seed 000 "Nothing but the trace outlives a
worker"; docs/decisions.md "The end of a run, in an order a kill cannot break"): the rounds left
running ended interrupted, a retry never begun said as not retried, status.json moved to finished
with interrupted, the deletions its journal names, and the run node ended interrupted with the
detail of how the host died and what the sweep removed."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from datetime import datetime

from concorde_workers.application.runtime.outcomes import LinkContext, cleanup_link
from concorde_workers.application.runtime.runtime_directory import (
    CleanupOutcome,
)
from concorde_workers.application.sweep.sweep_report import (
    RecordFinish,
)
from concorde_workers.application.tracing.journal import read_deletions
from concorde_workers.application.tracing.writer import TraceWriter
from concorde_workers.domain.evidence.links import trace_evidence, transcript_evidence
from concorde_workers.domain.evidence.records import (
    ProgressFile,
    RunTraceContent,
    TraceNode,
)
from concorde_workers.domain.evidence.sweep import (
    Judgement,
    OwnerRecord,
    ProcessIdentity,
)
from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.ground.errors import ErrorLink, Refusal
from concorde_workers.domain.ground.layout import RunLayout
from concorde_workers.domain.ground.paths import EntryKind
from concorde_workers.domain.ground.record_fields import utc_text
from concorde_workers.domain.run.deletions import DeletionOutcome, describe_interruption
from concorde_workers.ports.machine.clock import Clock
from concorde_workers.ports.machine.filesystem import FileKeeping, FileSystemError

__all__ = ["RecordFinisher", "StaleRun"]


@dataclass
class StaleRun:
    """A stale directory's run, once its node was found and checked."""

    layout: RunLayout
    node: TraceNode
    rounds: list[TraceNode] = field(default_factory=list)

    @property
    def session(self) -> str | None:
        for node in reversed(self.rounds):
            session = node.round_content().session
            if session:
                return session
        return None


class RecordFinisher:
    """Finishes the records of runs whose host died, over the filesystem and the clock."""

    def __init__(self, fs: FileKeeping, clock: Clock) -> None:
        self._fs = fs
        self._clock = clock

    def _finish_progress(
        self, progress: ProgressFile | Refusal, status: str, now: datetime
    ) -> list[str]:
        """status.json moved to finished with interrupted; what could not be written. A
        progress file that cannot be read is an observation aid only: nothing to update."""
        if isinstance(progress, Refusal):
            return [progress.message]
        moved = progress.model_copy(
            update={"phase": "finished", "status": "interrupted", "updated_at": utc_text(now)}
        )
        try:
            self._fs.write_atomic(status, moved.model_dump_json(indent=2) + "\n")
        except FileSystemError as failed:
            return [f"{status}: {failed.os_error_text}"]
        return []

    def finish(
        self,
        run: StaleRun,
        owner: OwnerRecord,
        found: tuple[str, Judgement],
        cleaned: CleanupOutcome,
        sweeping: tuple[ProcessIdentity, datetime],
        progress: ProgressFile | Refusal,
    ) -> RecordFinish:
        """Finish the dead host's record: its rounds, its progress file `progress` (as the host
        left it), its node; `found` is the runtime directory and why it is stale, `sweeping`
        this sweep's process and time."""
        (runtime_dir, judged), (own, now) = found, sweeping
        layout, node = run.layout, run.node
        seen = progress if isinstance(progress, ProgressFile) else None
        ended = _latest(
            node.started_at, *(r.started_at for r in run.rounds), seen.updated_at if seen else None
        ) or utc_text(now)
        kept = cleaned.transcript_kept or (
            cleaned.transcript_error is None and self._is_file(layout.transcript)
        )
        deletions, deletions_said = self._deletions(layout, seen)
        detail = _host_died(owner, runtime_dir, judged, own, now, seen, len(run.rounds))
        error = _interrupted_link(run, owner, detail + deletions_said, kept, cleaned)
        tracer = TraceWriter(self._fs, self._clock)
        _end_rounds(tracer, run, ended)
        problems = [*tracer.failures, *self._finish_progress(progress, layout.status, now)]
        content = _finished_content(node, kept, len(run.rounds), deletions)
        finished = node.model_copy(
            update={
                "status": "failed",
                "outcome": "interrupted",
                "ended_at": ended,
                "error": error,
                "content": content,
                "files": tracer.run_files(layout),
            }
        )
        failure = tracer.write_run_node(
            layout, TraceNode.model_validate(finished.model_dump(mode="json")), "end"
        )
        if failure is not None:
            return RecordFinish(
                owner.run_id,
                layout.run_dir,
                "failed",
                "; ".join([*problems, failure]),
                transcript_kept=kept,
            )
        note = f"ended interrupted: {detail}"
        if problems:
            note += "; not written: " + "; ".join(problems)
        return RecordFinish(owner.run_id, layout.run_dir, "finished", note, transcript_kept=kept)

    def _deletions(
        self, layout: RunLayout, seen: ProgressFile | None
    ) -> tuple[DeletionOutcome | None, str]:
        """What the dead host had deleted, by its journal (docs/decisions.md "The journal of
        deletions"), and what the error's detail adds: the deletions the interruption left. The
        one in flight at the kill is deleted when its path no longer exists (a link never
        followed). None when it began no deletions (said when it died in their phase, before
        its plan was written: it unlinks nothing before); a journal that cannot be read claims
        nothing, and says so."""
        journal = read_deletions(self._fs, layout)
        if journal is None:
            if seen is not None and seen.phase == "deletions":
                return None, "; it had performed none of the proposed deletions"
            return None, ""
        if isinstance(journal, str):
            return None, (
                f"; its journal of deletions could not be read ({journal}): what it deleted is "
                "not known, and the record names no deletion"
            )
        flying = journal.in_flight
        gone = flying is not None and not self._fs.lexists(posixpath.join(journal.worktree, flying))
        settled = journal.settle(in_flight_gone=gone)
        said = describe_interruption(settled)
        return settled, f"; {said}" if said else ""

    def _is_file(self, path: str) -> bool:
        try:
            return self._fs.stat(path).kind is EntryKind.FILE
        except FileSystemError:
            return False


def _interrupted_link(
    run: StaleRun, owner: OwnerRecord, detail: str, kept: bool, cleaned: CleanupOutcome
) -> ErrorLink:
    """The dead host's run's error: interrupted, with its trace (and its transcript when kept)
    as evidence, and the cleanup's failure around it when the directory did not all go."""
    layout, node = run.layout, run.node
    links = LinkContext(
        run_id=node.id,
        task_type=node.run_content().task_type,
        layout=layout,
        backend=node.run_metadata().backend or owner.backend,
    )
    evidence = [trace_evidence(node.id, layout.run_dir)]
    if kept:
        evidence.append(transcript_evidence(layout.transcript, run.session))
    error: ErrorLink = links.link(Code.INTERRUPTED, detail, evidence)
    return error if cleaned.ok else cleanup_link(links, cleaned, error)


def _finished_content(
    node: TraceNode, kept: bool, rounds: int, deletions: DeletionOutcome | None
) -> RunTraceContent:
    """The run content a sweep finishes: the transcript it kept, every round there is a node
    of, and the deletions the journal names (when the host began any)."""
    update: dict[str, object] = {
        "transcript": "transcript.jsonl" if kept else None,
        "rounds": rounds,
    }
    if deletions is not None:
        update.update(
            deleted=deletions.deleted,
            deletions_refused=deletions.refused,
            deletions_absent=deletions.absent,
            deletions_failed=deletions.failed,
        )
    return node.run_content().model_copy(update=update)


def _end_rounds(tracer: TraceWriter, run: StaleRun, ended: str) -> None:
    """Every round node still running ends interrupted (failed) when the run's record did, its
    files those the host wrote into its folder (stderr.log, resources.json, changes.patch) with
    their digests; a last round that announced a retry the host never began says it was not
    retried (as the host says of a run interrupted while it waited)."""
    for index, round_node in enumerate(run.rounds):
        n = round_node.round_content().round
        content = round_node.round_content()
        transient = content.transient
        last = index == len(run.rounds) - 1
        if last and transient is not None and transient.retried:
            transient = transient.model_copy(update={"retried": False, "delay_seconds": None})
        if round_node.status != "running" and transient == content.transient:
            continue
        update: dict[str, object] = {"content": content.model_copy(update={"transient": transient})}
        if round_node.status == "running":
            update.update(
                status="failed",
                outcome="interrupted",
                ended_at=_latest(ended, round_node.started_at),
                files=tracer.round_files(run.layout, n),
            )
        tracer.write_round_node(run.layout, n, round_node.model_copy(update=update), "end")


def _latest(*times: str | None) -> str | None:
    """The latest of UTC record times (ISO 8601 with Z), None when none is given."""
    parsed = [(datetime.fromisoformat(t.replace("Z", "+00:00")), t) for t in times if t]
    return max(parsed)[1] if parsed else None


def _host_died(
    owner: OwnerRecord,
    runtime_dir: str,
    judged: Judgement,
    own: ProcessIdentity,
    now: datetime,
    seen: ProgressFile | None,
    rounds: int,
) -> str:
    """The interrupted link's detail: who died, how it was found, what was removed."""
    where = f" in round {rounds}" if rounds else " before its first round"
    if seen is not None and seen.phase == "finished":
        # The host says how the run ended before its cleanup and final record (decisions.md
        # "The end of a run"): it died after the run had ended, before the record said so.
        after = f" after round {rounds}" if rounds else ""
        where = (
            f" ending{after}: the run had ended {seen.status} (phase finished, last written "
            f"{seen.updated_at}) and the host was cleaning up before its final record"
        )
    elif seen is not None:
        where += f" (phase {seen.phase}, last written {seen.updated_at})"
    return (
        f"the host process (pid {owner.host.pid}) died without a chance to act, as by "
        f"SIGKILL or the out-of-memory killer, while the run was{where}: {judged.reason}; "
        f"a sweep (pid {own.pid}) found its runtime directory {runtime_dir} at "
        f"{utc_text(now)} and removed it, credential copies first"
    )
