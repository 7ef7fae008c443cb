"""The sweep of stale runtime directories: what a host killed without a chance to act left.

A host killed by SIGKILL or the out-of-memory killer leaves its runtime directory, with the
credential copies, and its run's record `running` (seed 000 "Nothing but the trace outlives a
worker" excepts that case). `Sweeper.sweep()` lists the runtime parent (where the container puts
runtime directories), judges every entry named like a runtime directory
(`domain.evidence.sweep.judge`:
its kind, owning user, age, owner record, and what the process table says of the owner's pid),
and for each stale one:

1. reads its run's node from the run directory its owner record names, and uses it only when it
   really is that run's node (a worker-run node with that run id);
2. removes the directory as the host's own cleanup does (`cleanup_runtime_directory`): the
   transcript kept in the run directory first, the credential copies next, every directory the
   worker left closed opened up (links never followed), the rest, then checked gone;
3. finishes the run's record when it is still `running`: the round left running and the run
   end `interrupted` (status failed), the error's detail saying the host died without a chance
   to act; status.json moves to finished with interrupted. A run directory that is missing or
   is not that run's node is reported and never written.

Nothing is read from the worker's own directories (work/, home/, tmp/); the owner record lies in
control/, which no tool of the worker may read or write. Every operation goes through the ports.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field, replace
from datetime import datetime

from concorde_workers.application.copy_sweep import sweep_copies
from concorde_workers.application.outcomes import LinkContext, cleanup_link
from concorde_workers.application.resources import sweep_groups
from concorde_workers.application.runtime_directory import (
    CleanupOutcome,
    cleanup_runtime_directory,
    release_runtime_directory,
)
from concorde_workers.application.sweep_report import (
    LeftDirectory,
    RecordFinish,
    StaleDirectory,
    SweepReport,
    sweep_account,
)
from concorde_workers.application.tracing.journal import read_deletions
from concorde_workers.application.tracing.reader import read_node, read_progress
from concorde_workers.application.tracing.writer import TraceWriter
from concorde_workers.domain.configuration.profile import Profiles, copies_of, entries_of
from concorde_workers.domain.evidence.links import trace_evidence, transcript_evidence
from concorde_workers.domain.evidence.records import (
    WORKER_ROUND,
    WORKER_RUN,
    ProgressFile,
    RunTraceContent,
    TraceNode,
)
from concorde_workers.domain.evidence.sweep import (
    OWNER_FILE,
    Candidate,
    Judgement,
    OwnerRecord,
    ProcessIdentity,
    Verdict,
    judge,
    parse_owner_record,
    runtime_directory_hex,
    session_file,
)
from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.ground.errors import ErrorLink, Refusal
from concorde_workers.domain.ground.layout import CONTROL_DIR, RunLayout, RuntimeLayout
from concorde_workers.domain.ground.paths import DirEntry, EntryKind
from concorde_workers.domain.ground.record_fields import utc_text
from concorde_workers.domain.run.deletions import DeletionOutcome, describe_interruption
from concorde_workers.ports.clock import Clock
from concorde_workers.ports.filesystem import FileSystem, FileSystemError
from concorde_workers.ports.liveness import ProcessTable
from concorde_workers.ports.resources import ResourceGroups

__all__ = [
    "LeftDirectory",
    "RecordFinish",
    "StaleDirectory",
    "SweepReport",
    "Sweeper",
    "sweep_account",
]


ROUNDS_READ = 10_000
"""The most round nodes a sweep reads of one run (a reader's bound: far more than any run's
limits let it begin)."""


@dataclass
class _Run:
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


class Sweeper:
    """Finds and removes the stale runtime directories below `runtime_parent`; wired by the
    container over the filesystem, the process table and the clock."""

    def __init__(
        self,
        *,
        fs: FileSystem,
        table: ProcessTable,
        clock: Clock,
        runtime_parent: str,
        profiles: Profiles,
        groups: ResourceGroups | None = None,
    ) -> None:
        self._groups = groups
        self._copies = copies_of(profiles)
        self._transcripts = entries_of(profiles).transcripts
        self._fs = fs
        self._table = table
        self._clock = clock
        self._parent = posixpath.normpath(runtime_parent)

    def sweep(self) -> SweepReport:
        """Judge every runtime directory below the runtime parent; remove the stale ones and
        finish their runs' records. Never raises for what the operating system refuses: it is
        in the report."""
        try:
            entries = self._fs.listdir(self._parent)
        except FileSystemError as error:
            return SweepReport(
                runtime_parent=self._parent,
                problem=f"the runtime parent {self._parent} cannot be listed: "
                f"{error.os_error_text}",
            )
        own, uid = self._table.own(), self._table.own_uid()
        now = self._clock.now_utc()
        stale: list[StaleDirectory] = []
        left: list[LeftDirectory] = []
        for entry in entries:
            if runtime_directory_hex(entry.name) is None:
                continue
            candidate = self._candidate(entry.name, entry.kind, uid)
            owner = candidate.owner
            observation = (
                self._table.observe(owner.host.pid) if isinstance(owner, OwnerRecord) else None
            )
            judged = judge(
                candidate, own_uid=uid, own=own, observation=observation, now=now.timestamp()
            )
            if judged is None:
                continue
            if judged.verdict is Verdict.STALE:
                stale.append(self._remove(candidate, judged, own, now))
            else:
                left.append(
                    LeftDirectory(
                        runtime_directory=candidate.path,
                        verdict="live" if judged.verdict is Verdict.LIVE else "left",
                        reason=judged.reason,
                    )
                )
        copies = sweep_copies(
            self._fs, self._table, self._parent, entries, own=own, uid=uid, now=now.timestamp()
        )
        groups, groups_failed = sweep_groups(self._groups)
        return SweepReport(
            runtime_parent=self._parent,
            stale=tuple(stale),
            left=tuple(left),
            copies=copies,
            groups=groups,
            groups_failed=groups_failed,
        )

    # --- what a directory is ----------------------------------------------------------------

    def _candidate(self, name: str, kind: EntryKind, uid: int) -> Candidate:
        path = posixpath.join(self._parent, name)
        if kind is not EntryKind.DIRECTORY:
            return Candidate(path=path, name=name, kind=kind)
        try:
            found = self._fs.stat(path)  # the final link never followed
        except FileSystemError:
            return Candidate(path=path, name=name, kind=kind)
        if found.kind is not EntryKind.DIRECTORY or found.uid != uid:
            return Candidate(
                path=path, name=name, kind=found.kind, uid=found.uid, mtime=found.mtime
            )
        return Candidate(
            path=path,
            name=name,
            kind=found.kind,
            uid=found.uid,
            mtime=found.mtime,
            owner=self._owner(path, uid),
        )

    def _owner(self, root: str, uid: int) -> OwnerRecord | str:
        """The owner record of the directory `root`, or why there is none to use: control/ and
        control/owner.json must be what the host made (a directory and a regular file of this
        user, no link), the file writable by its owner only."""
        control = posixpath.join(root, CONTROL_DIR)
        path = posixpath.join(control, OWNER_FILE)
        try:
            folder = self._fs.stat(control)
            if folder.kind is not EntryKind.DIRECTORY:
                return f"{control} is a {folder.kind.value}, not a directory"
            found = self._fs.stat(path)
            if found.kind is not EntryKind.FILE:
                return f"{path} is a {found.kind.value}, not a regular file"
            if found.uid != uid or found.mode & 0o022:
                return f"{path} is not the host's (owner {found.uid}, mode {oct(found.mode)})"
            return parse_owner_record(self._fs.read_text(path))
        except FileSystemError as error:
            if error.not_found:
                return f"{error.path} is missing"
            return f"{error.path} cannot be read: {error.os_error_text}"

    # --- removing a stale directory ---------------------------------------------------------

    def _remove(
        self, candidate: Candidate, judged: Judgement, own: ProcessIdentity, now: datetime
    ) -> StaleDirectory:
        owner = candidate.owner if isinstance(candidate.owner, OwnerRecord) else None
        runtime = RuntimeLayout(root=candidate.path)
        run: _Run | str | None = None if owner is None else self._run(owner)
        finishing = isinstance(run, _Run) and run.node.status == "running"
        transcript = None
        if finishing and isinstance(run, _Run) and owner is not None:
            transcript = self._transcript(runtime, run, owner)
        # Everything but the owner record first, the record finished next, the owner record
        # and the root last: a sweep killed on the way leaves the next one the same directory
        # to find, as the host's own end does (docs/decisions.md "The end of a run").
        cleaned = cleanup_runtime_directory(
            self._fs,
            runtime,
            [runtime.copy_of(name) for name in self._copies],
            transcript,
            run.layout.transcript if isinstance(run, _Run) and transcript else None,
            keep_owner=finishing,
        )

        # As the dead host left it: a second finish (below) must not read the first one's.
        progress = (
            read_progress(self._fs, run.layout.status)
            if finishing and isinstance(run, _Run)
            else None
        )

        def finish(done: CleanupOutcome) -> RecordFinish:
            assert isinstance(run, _Run) and owner is not None and progress is not None
            return self._finish(run, owner, (candidate.path, judged), done, (own, now), progress)

        record = finish(cleaned) if finishing else _not_finished(owner, run)
        if finishing:
            released = release_runtime_directory(self._fs, runtime)
            cleaned = replace(
                released,
                transcript_kept=cleaned.transcript_kept,
                transcript_error=cleaned.transcript_error,
                errors=(*cleaned.errors, *released.errors),
            )
            if not released.ok:  # what remains is the record's to say too
                record = finish(cleaned)
        return StaleDirectory(
            runtime_directory=candidate.path,
            reason=judged.reason,
            run_id=owner.run_id if owner else None,
            host_pid=owner.host.pid if owner else None,
            removed=not cleaned.remains,
            remains=cleaned.remains,
            transcript_error=cleaned.transcript_error,
            record=record,
        )

    def _run(self, owner: OwnerRecord) -> _Run | str:
        """The run's node in the run directory the owner record names, with its rounds' nodes,
        or why that directory is not the run's: missing, not a directory (a link is never
        followed), its trace.json unreadable, or the node of another run."""
        layout = RunLayout(run_dir=owner.run_directory)
        try:
            found = self._fs.stat(layout.run_dir)
        except FileSystemError as error:
            what = "is missing" if error.not_found else f"cannot be read: {error.os_error_text}"
            return f"the run directory {layout.run_dir} {what}: nothing was written"
        if found.kind is not EntryKind.DIRECTORY:
            return (
                f"the run directory {layout.run_dir} is a {found.kind.value}, not a "
                "directory: nothing was written"
            )
        node = read_node(self._fs, layout.trace, WORKER_RUN)
        if isinstance(node, Refusal):
            return f"{node.message}: nothing was written"
        if node.id != owner.run_id:
            return (
                f"{layout.trace} is the node of run {node.id}, not of run {owner.run_id}: "
                "nothing was written"
            )
        run = _Run(layout=layout, node=node)
        # Every round node there is, one after the other: a host killed between a round's
        # first write and the run node's next one left a round the run node does not count yet.
        for n in range(1, ROUNDS_READ + 1):
            round_node = read_node(self._fs, layout.round_trace(n), WORKER_ROUND)
            if not (isinstance(round_node, TraceNode) and round_node.parent == node.id):
                break
            run.rounds.append(round_node)
        return run

    def _transcript(self, runtime: RuntimeLayout, run: _Run, owner: OwnerRecord) -> str | None:
        """The latest session's transcript in the runtime directory, wherever a registered
        backend keeps it (its profile's `RuntimeEntries.transcripts`: config/projects/*/ for
        Claude Code, config/sessions/ for pi): `<session>.jsonl` for the session the rounds named
        last, or pi's fixed `<run-id>.jsonl`; without either, the only transcript there is. Only
        a regular file, never a link; the worker's own directories are never looked at."""
        folders = [f for pattern in self._transcripts for f in self._folders(runtime, pattern)]
        names = [
            n
            for n in (
                session_file(run.session) if run.session else None,
                session_file(owner.run_id),
            )
            if n
        ]
        for name in names:
            for folder in folders:
                path = posixpath.join(folder, name)
                if self._is_file(path):
                    return path
        found = [
            posixpath.join(folder, e.name)
            for folder in folders
            for e in self._entries(folder)
            if e.kind is EntryKind.FILE and session_file(e.name[:-6]) == e.name
        ]
        return found[0] if len(found) == 1 else None

    def _folders(self, runtime: RuntimeLayout, pattern: str) -> list[str]:
        """The folders `pattern` names below the runtime directory (`*`: each folder there),
        each a directory itself below ones that are: a link anywhere on the way would lead the
        copy out of the runtime directory."""
        found = [runtime.root]
        for part in pattern.split("/"):
            below: list[str] = []
            for folder in found:
                kinds = {e.name: e.kind for e in self._entries(folder)}
                names = (
                    [n for n, k in kinds.items() if k is EntryKind.DIRECTORY]
                    if part == "*"
                    else [part]
                    if kinds.get(part) is EntryKind.DIRECTORY
                    else []
                )
                below += [posixpath.join(folder, name) for name in names]
            found = below
        return found

    def _entries(self, folder: str) -> list[DirEntry]:
        """The entries of `folder` when it is a directory itself (listing a link would follow
        it out of the runtime directory)."""
        try:
            if self._fs.stat(folder).kind is not EntryKind.DIRECTORY:
                return []
            return self._fs.listdir(folder)
        except FileSystemError:
            return []

    def _is_file(self, path: str) -> bool:
        try:
            return self._fs.stat(path).kind is EntryKind.FILE
        except FileSystemError:
            return False

    # --- finishing the record ---------------------------------------------------------------

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

    def _finish(
        self,
        run: _Run,
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


def _not_finished(owner: OwnerRecord | None, run: _Run | str | None) -> RecordFinish | None:
    """Why a stale directory's record is not finished: its run directory is not the run's, or
    its record already ended; None when it has no owner record."""
    if owner is None or run is None:
        return None
    if isinstance(run, str):
        return RecordFinish(owner.run_id, owner.run_directory, "not_found", run)
    return RecordFinish(
        owner.run_id,
        owner.run_directory,
        "already_ended",
        f"its record already ended {run.node.status}",
    )


def _interrupted_link(
    run: _Run, owner: OwnerRecord, detail: str, kept: bool, cleaned: CleanupOutcome
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


def _end_rounds(tracer: TraceWriter, run: _Run, ended: str) -> None:
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
