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
   to act; status.json moves to finished with interrupted (application/sweep/sweep_finish.py). A run
   directory that is missing or is not that run's node is reported and never written.

Nothing is read from the worker's own directories (work/, home/, tmp/); the owner record lies in
control/, which no tool of the worker may read or write. Every operation goes through the ports.
"""

from __future__ import annotations

import posixpath
from dataclasses import replace
from datetime import datetime

from concorde_workers.application.runtime.runtime_directory import (
    CleanupOutcome,
    cleanup_runtime_directory,
    release_runtime_directory,
)
from concorde_workers.application.setup.resources import sweep_groups
from concorde_workers.application.sweep.copy_sweep import sweep_copies
from concorde_workers.application.sweep.sweep_finish import RecordFinisher, StaleRun
from concorde_workers.application.sweep.sweep_report import (
    LeftDirectory,
    RecordFinish,
    StaleDirectory,
    SweepReport,
    sweep_account,
)
from concorde_workers.application.tracing.reader import read_node, read_progress
from concorde_workers.domain.configuration.profile import Profiles, copies_of, entries_of
from concorde_workers.domain.evidence.records import (
    WORKER_ROUND,
    WORKER_RUN,
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
from concorde_workers.domain.ground.errors import Refusal
from concorde_workers.domain.ground.layout import CONTROL_DIR, RunLayout, RuntimeLayout
from concorde_workers.domain.ground.paths import DirEntry, EntryKind
from concorde_workers.ports.machine.clock import Clock
from concorde_workers.ports.machine.filesystem import FileSystemError, RunFiles
from concorde_workers.ports.processes.liveness import ProcessTable
from concorde_workers.ports.processes.resources import ResourceGroups

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


class Sweeper:
    """Finds and removes the stale runtime directories below `runtime_parent`; wired by the
    container over the filesystem, the process table and the clock."""

    def __init__(
        self,
        *,
        fs: RunFiles,
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
        self._finisher = RecordFinisher(fs, clock)

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
        run: StaleRun | str | None = None if owner is None else self._run(owner)
        finishing = isinstance(run, StaleRun) and run.node.status == "running"
        transcript = None
        if finishing and isinstance(run, StaleRun) and owner is not None:
            transcript = self._transcript(runtime, run, owner)
        # Everything but the owner record first, the record finished next, the owner record
        # and the root last: a sweep killed on the way leaves the next one the same directory
        # to find, as the host's own end does (docs/decisions.md "The end of a run").
        cleaned = cleanup_runtime_directory(
            self._fs,
            runtime,
            [runtime.copy_of(name) for name in self._copies],
            transcript,
            run.layout.transcript if isinstance(run, StaleRun) and transcript else None,
            keep_owner=finishing,
        )

        # As the dead host left it: a second finish (below) must not read the first one's.
        progress = (
            read_progress(self._fs, run.layout.status)
            if finishing and isinstance(run, StaleRun)
            else None
        )

        def finish(done: CleanupOutcome) -> RecordFinish:
            assert isinstance(run, StaleRun) and owner is not None and progress is not None
            return self._finisher.finish(
                run, owner, (candidate.path, judged), done, (own, now), progress
            )

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

    def _run(self, owner: OwnerRecord) -> StaleRun | str:
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
        run = StaleRun(layout=layout, node=node)
        # Every round node there is, one after the other: a host killed between a round's
        # first write and the run node's next one left a round the run node does not count yet.
        for n in range(1, ROUNDS_READ + 1):
            round_node = read_node(self._fs, layout.round_trace(n), WORKER_ROUND)
            if not (isinstance(round_node, TraceNode) and round_node.parent == node.id):
                break
            run.rounds.append(round_node)
        return run

    def _transcript(self, runtime: RuntimeLayout, run: StaleRun, owner: OwnerRecord) -> str | None:
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


def _not_finished(owner: OwnerRecord | None, run: StaleRun | str | None) -> RecordFinish | None:
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
