"""The run host: one worker run end to end (seed 000), in the spec's order.

`WorkerHost.run(request, validation=None, cancel=None) -> RunRecord`:
create the run node (recorded `running` before launch) and the private runtime directory; prepare
(grant, placement, Git administrative paths, prerequisites, policy; refusals end the run with a
final record and generate nothing); write the control files and credential copies; snapshot the
worktree; run rounds (each audited; validated when ok and clean; retried or resumed as the Rounds
table says); perform the proposed deletions after a clean last round with a valid result; keep the
transcript, remove the credential copies and the runtime directory; write the final record. The
decisions are the domain's (`domain.run.rounds`, `domain.run.audit`, `domain.run.deletions`); this
module does the I/O around them through the ports, in the spec's sequence, with one job a module
beside it: the rounds (application/rounds/rounds.py), the deletions
(application/run/deletions.py) and the run's end (application/run/run_end.py), each over the run
the steps share (application/run/host_run.py).
"""

from __future__ import annotations

import posixpath

from concorde_workers.application.evidence.attestation import Attestor
from concorde_workers.application.preparation.preparation import REQUEST_INVALID, Preparer
from concorde_workers.application.preparation.prepared import Prepared
from concorde_workers.application.rounds.changes import keeper_for, open_change_store
from concorde_workers.application.rounds.compiled_cache import CacheCompilation
from concorde_workers.application.rounds.round_context import RoundContext
from concorde_workers.application.rounds.rounds import RoundRunner
from concorde_workers.application.rounds.worktree_state import WorktreeObserver
from concorde_workers.application.run.deletions import Deletions
from concorde_workers.application.run.host_run import HostRun
from concorde_workers.application.run.planted_git import leave_git_metadata, move_git_metadata
from concorde_workers.application.run.run_end import RunEnd
from concorde_workers.application.runtime.cancellation import Cancellation
from concorde_workers.application.runtime.events import EventEmitter
from concorde_workers.application.runtime.outcomes import (
    LinkContext,
    end_link,
    ended_by,
    interrupted_link,
    snapshot_link,
)
from concorde_workers.application.runtime.run_state import RunState, grant_text
from concorde_workers.application.runtime.runtime_directory import (
    create_runtime_directory,
)
from concorde_workers.application.runtime.validation import RoundValidation
from concorde_workers.application.setup.machine_files import copies_problem, read_copies
from concorde_workers.application.setup.resources import RunResources
from concorde_workers.application.tracing.progress import ProgressWriter
from concorde_workers.application.tracing.writer import TraceWriter
from concorde_workers.domain.boundary.grant import Level
from concorde_workers.domain.configuration.machine_resources import MachineResources
from concorde_workers.domain.configuration.profile import Profiles
from concorde_workers.domain.configuration.program_versions import programs_text
from concorde_workers.domain.configuration.request import RunRequest
from concorde_workers.domain.configuration.resources import MIB
from concorde_workers.domain.evidence.records import RunRecord
from concorde_workers.domain.evidence.sweep import OwnerRecord
from concorde_workers.domain.gitview.git_metadata import found_before_refusal
from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.ground.errors import Reason, Refusal
from concorde_workers.domain.ground.layout import RunLayout
from concorde_workers.domain.ground.run_id import run_id as make_run_id
from concorde_workers.domain.ground.text import control_problem
from concorde_workers.domain.run.audit import Snapshot
from concorde_workers.domain.run.rounds import WorkerStatus, deletions_allowed
from concorde_workers.ports.agents.events import RunEvents
from concorde_workers.ports.machine.clock import Clock
from concorde_workers.ports.machine.filesystem import FileSystemError, RunFiles
from concorde_workers.ports.machine.random import Random
from concorde_workers.ports.processes.liveness import ProcessTable
from concorde_workers.ports.processes.process import ProcessRunner
from concorde_workers.ports.processes.resources import ResourceGroups
from concorde_workers.ports.repository.git import GitCommandFailed, GitReader
from concorde_workers.ports.sandboxes.space import RuntimeSpaces


class RequestRefused(ValueError):
    """A request no run is made for: its runtime paths or project interpreter are refused
    (`WorkerHost.refusal_before_run`). Like a missing parent, it is the caller's to check first:
    no run directory, progress file or record exists for it."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(f"{refusal.code}: {refusal.message}")
        self.refusal = refusal


class WorkerHost:
    """Runs one worker run at a time over the ports; wired by the container."""

    def __init__(
        self,
        *,
        git: GitReader,
        fs: RunFiles,
        clock: Clock,
        random: Random,
        processes: ProcessRunner,
        preparer: Preparer,
        temp_root: str,
        host_pid: int,
        process_table: ProcessTable,
        profiles: Profiles,
        groups: ResourceGroups | None = None,
        machine: MachineResources | None = None,
        attestor: Attestor | None = None,
        spaces: RuntimeSpaces | None = None,
    ) -> None:
        self._git = git
        self._profiles = profiles
        self._fs = fs
        self._clock = clock
        self._random = random
        self._processes = processes
        self._preparer = preparer
        self._temp_root = temp_root
        self._host_pid = host_pid
        self._process_table = process_table
        self._groups = groups  # each round's control group (issue 20); None: none made
        self._machine = machine or MachineResources()  # the machine's resources.json
        self._spaces = spaces  # a confined run's writable space (issue 30 §2)
        self._attestor = attestor  # each run's statement after its record (issue 30 §4)
        self._deletions = Deletions(fs)
        self._end = RunEnd(fs, clock, attestor)

    def run(
        self,
        request: RunRequest,
        validation: RoundValidation | None = None,
        cancel: Cancellation | None = None,
        events: RunEvents | None = None,
    ) -> RunRecord:
        """Run the worker the request asks for and return the run record, however it ends;
        `events` is told what the run does as it goes (issue 21 §5)."""
        if not request.parent:
            raise ValueError("a run needs the parent trace node folder (request.parent)")
        refused = self.refusal_before_run(request)
        if refused is not None:
            raise RequestRefused(refused)
        run = self._begin(request, request.parent, validation, cancel or Cancellation())
        run.events = EventEmitter(
            events, self._clock, run.state.run_id, self._profiles[request.backend]
        )
        state = run.state
        # Everything after the runtime directory exists runs under the finally, so an
        # exception escaping from our own code still removes it and its credential copies.
        try:
            # The node first, right after the owner record: a host killed from here on leaves a
            # record a sweep finds and finishes (docs/decisions.md "Every instant of a run").
            state.write_node(run.tracer, "start")
            run.progress.phase("preparing", 1)
            run.tracer.write_text(state.layout.grant, grant_text(request.grant))
            run.events.run_started(state.request, state.layout.run_dir)  # the limits in force
            if isinstance(run.runtime, FileSystemError):
                run.refuse(
                    Refusal(
                        code=Code.LAUNCH_FAILED,
                        reason=Reason.ENVIRONMENT,
                        message=f"the runtime directory could not be created in {self._temp_root}: "
                        f"{run.runtime.os_error_text}",
                    )
                )
            else:
                self._run(run)
        except BaseException as ended:
            # Whatever escaped - KeyboardInterrupt, SystemExit, an exception of the caller's
            # own signal handler or round validation - ended the run from outside: it ends
            # interrupted with what ended it (seed 000 "Errors"), its final record is written
            # and its runtime directory removed below, and the exception goes on to the caller.
            if state.running:
                state.end(
                    interrupted_link(
                        run.links, ended_by(ended, state.ended_in or run.progress.phase_now), state
                    )
                )
            raise
        finally:
            record = self._end.finish(run)
            run.events.run_ended(record)
        return record

    def _begin(
        self,
        request: RunRequest,
        parent: str,
        validation: RoundValidation | None,
        cancel: Cancellation,
    ) -> HostRun:
        """The run's identity, node folder, runtime directory (with its owner record) and the
        writers of its trace and progress file."""
        started = self._clock.now_utc()
        run_id = make_run_id(started, self._random.hex_token(6))
        tracer = TraceWriter(self._fs, self._clock)
        created = tracer.create_run(parent, run_id)
        layout = created if isinstance(created, RunLayout) else RunLayout.below(parent, run_id)
        owner = OwnerRecord.of(run_id, layout.run_dir, request.backend, self._process_table.own())
        runtime = create_runtime_directory(
            self._fs, self._temp_root, run_id, self._random, owner=owner
        )
        runtime_dir = (
            runtime.root
            if not isinstance(runtime, FileSystemError)
            else (posixpath.join(self._temp_root, f"concorde-{run_id[-6:]}-(not created)"))
        )
        resources = RunResources(self._groups, request.resources, runtime_dir, self._machine)
        request = request.model_copy(update={"resources": resources.limits})  # in force
        progress = ProgressWriter(
            self._fs,
            self._clock,
            layout.status,
            run_id=run_id,
            task_type=request.task_type,
            backend=request.backend,
            worktree=request.worktree,
            operation_run_id=request.operation_run_id,
            host_pid=self._host_pid,
            started_at=started,
        )
        return HostRun(
            state=RunState(
                request=request,
                run_id=run_id,
                started_at=started,
                layout=layout,
                runtime_dir=runtime_dir,
            ),
            tracer=tracer,
            progress=progress,
            links=LinkContext(
                run_id=run_id, task_type=request.task_type, layout=layout, backend=request.backend
            ),
            validation=validation,
            cancel=cancel,
            runtime=runtime,
            resources=resources,
        )

    def refusal_before_run(self, request: RunRequest) -> Refusal | None:
        """The refusal of a request no run is made for, or None: a parent with a control
        character or not absolute (as the command line refuses it); a runtime path or project
        interpreter that is empty, relative, missing or would uncover what the Harness hides
        (seed 000 "Reading beside the grant"; domain/boundary/beside.py), judged exactly as the
        preparation judges it. Ask it before `run`, as the configuration reader's refusals are
        asked for: no run is made for it (request_invalid is none of a run's codes). A refusal
        of a run's own code (a malformed grant, a misplaced worktree, an agent program missing
        or older than the policy relies on) is the run's, with its final record."""
        parent = request.parent or ""
        problem = control_problem(parent) or (
            None if posixpath.isabs(parent) else "is not an absolute path"
        )
        if problem is not None:
            # As the command line refuses it (application/preparation/requests.py): the run
            # directory would be made below it, and its name written into the brief and the plan.
            return Refusal(
                code=REQUEST_INVALID,
                reason=Reason.INPUT,
                message=f"the request's parent {parent!r} {problem}; give the "
                "absolute path of the trace node folder without it",
            )
        key = self._attestor.key.refusal() if self._attestor is not None else None
        return key or self._preparer.refusal_before_run(request, self._temp_root)

    def git_dir(self, request: RunRequest) -> str | None:
        """The worktree's own Git directory as this host's placement finds it (None: no
        worktree a run can be made in), for a caller's lock beside it (the command line's:
        application/preparation/worktree_lock.py); asked of Git once with the run's own
        questions."""
        return self._preparer.git_dir(request)

    # --- the run ---------------------------------------------------------------------------

    def _run(self, run: HostRun) -> None:
        state = run.state
        request = state.request
        prepared = self._preparer.prepare(request, state.run_id, state.runtime_dir)
        if isinstance(prepared, Refusal):
            run.refuse(prepared)
            return
        state.prepared = prepared
        # No lock of the host's own (seed 000 "Audit": "The host takes no lock of its own for
        # this"): the caller keeps other writers away; the command line takes one for its
        # shell user (application/preparation/worktree_lock.py).
        self._run_held(run, prepared)

    def _run_held(self, run: HostRun, prepared: Prepared) -> None:
        state = run.state
        started = self._snapshot(run, prepared)
        if started is None:
            return
        observer, snapshot = started
        refused = self._open_space(run, prepared) or self._control(run, prepared)
        if refused is not None:
            run.refuse(refused)
            return
        run.tracer.write_text(state.layout.brief, prepared.brief)
        if prepared.programs:  # what a test backend runs has no version the policy relies on
            run.tracer.write_text(state.layout.programs, programs_text(prepared.programs))
        state.write_node(run.tracer, "update")
        if run.cancel.is_set():
            state.end(interrupted_link(run.links, run.cancel.reason))
            return
        self._rounds(run, prepared, observer, snapshot)

    def _snapshot(
        self, run: HostRun, prepared: Prepared
    ) -> tuple[WorktreeObserver, Snapshot] | None:
        """The observer and the snapshot, before anything is generated: a run whose snapshot
        failed launches nothing, so it gets no control files and no credential copies (None:
        the run has ended). The change store comes first: the audit compares content there
        (issue 30 §1)."""
        state = run.state
        try:
            store = open_change_store(self._git, prepared, state)
        except GitCommandFailed as failed:
            state.end(snapshot_link(run.links, failed))
            return None
        observer = WorktreeObserver(
            self._git,
            self._fs,
            prepared.repository,
            writable=[
                e.path for e in prepared.grant.entries if e.level is Level.RW and e.is_directory
            ],
            runtime_paths=state.request.runtime_paths,
            git_entries=prepared.git_entries,
            store=store,
        )
        try:
            snapshot = observer.snapshot()
        except GitCommandFailed as failed:
            state.end(snapshot_link(run.links, failed))
            return None
        # Git metadata a worker could have planted before this run (an interrupted run leaves
        # it in place): this run's record could not tell of it had the run ended ok, so the
        # run is refused before anything is generated (docs/decisions.md).
        planted = observer.found_before(snapshot)
        if planted:
            run.refuse(
                Refusal(
                    code=Code.LAUNCH_FAILED,
                    reason=Reason.ENVIRONMENT,
                    message=found_before_refusal(planted, prepared.placement.worktree),
                )
            )
            return None
        return observer, snapshot

    def _control(self, run: HostRun, prepared: Prepared) -> Refusal | None:
        """The control files and credential copies written, or the refusal naming what could
        not be."""
        try:
            problem = self._write_control(prepared, run.tracer, run.credential_copies)
        except FileSystemError as failed:
            problem = (
                f"the host could not write {failed.path} into the runtime directory: "
                f"{failed.os_error_text}"
            )
        if problem is None:
            return None
        return Refusal(code=Code.LAUNCH_FAILED, reason=Reason.ENVIRONMENT, message=problem)

    def _open_space(self, run: HostRun, prepared: Prepared) -> Refusal | None:
        """A confined run's writable space (domain/isolation/runtime_space.py), made before the
        host writes anything there (the credential copies, its settings): the refusal when it
        cannot be made, for a run that would otherwise write on the host's disk unbounded."""
        confinement = prepared.confinement
        if confinement is None or isinstance(run.runtime, FileSystemError):
            return None
        size = run.resources.limits.space_mib
        tools = confinement.tools.space()
        opened = (
            "this host was wired without a way to make it"
            if self._spaces is None or tools is None
            else self._spaces.open(run.runtime, size * MIB, tools)
        )
        if isinstance(opened, str):
            return Refusal(
                code=Code.LAUNCH_FAILED,
                reason=Reason.ENVIRONMENT,
                message=f"the runtime directory's writable space ({size} MiB, one tmpfs of the "
                f"run's own) could not be made: {opened}",
            )
        run.space = opened
        return None

    def _rounds(
        self, run: HostRun, prepared: Prepared, observer: WorktreeObserver, snapshot: Snapshot
    ) -> None:
        state = run.state
        compilation = CacheCompilation(
            self._processes, prepared.backend.compiled_cache(prepared.context)
        )
        runner = RoundRunner(
            RoundContext(
                fs=self._fs,
                clock=self._clock,
                random=self._random,
                processes=self._processes,
                tracer=run.tracer,
                progress=run.progress,
                prepared=prepared,
                observer=observer,
                snapshot=snapshot,
                validation=run.validation,
                cancel=run.cancel,
                state=state,
                resources=run.resources,
                changes=keeper_for(self._git, self._fs, prepared, run.tracer, state),
                events=run.events,
                space=run.space,
                compilation=compilation,
            )
        )
        try:
            result = runner.run_all()
        finally:
            compilation.stop()
        if result.interrupted or run.cancel.is_set():
            leave_git_metadata(
                state,
                "the run was interrupted, and an interruption leaves the worktree as it found it",
            )
            state.end(interrupted_link(run.links, run.cancel.reason, state))
            return
        move_git_metadata(self._fs, state, prepared)
        if result.git_failure is not None:
            state.end(snapshot_link(run.links, result.git_failure, state))
            return
        link = end_link(
            run.links,
            state,
            result.step,
            result.facts,
            result.validation_outcome,
            result.validation_error,
        )
        status = result.step.status
        if deletions_allowed(result.facts, interrupted=False) and state.worker_result is not None:
            deleted = self._deletions.perform(run, prepared, link)
            if deleted is not link:
                link, status = deleted, WorkerStatus.FAILED
        state.end(link, status)

    # --- files -------------------------------------------------------------------------------

    def _write_control(
        self, prepared: Prepared, tracer: TraceWriter, credential_copies: list[str]
    ) -> str | None:
        """The control files, then the credential copies: exactly what the one reader of the
        files a run copies read, judged as the preparation judged them (application/
        machine_files.py); what it cannot take is the refusal's text."""
        for path, text in prepared.control_files.items():
            self._fs.makedirs(posixpath.dirname(path), 0o700)
            self._fs.write_atomic(path, text, 0o600)
        backend, context = prepared.backend, prepared.context
        copies = read_copies(
            self._fs,
            backend.credential_copies(context),
            backend.profile.credentials,
            context.environ,
        )
        problem = copies_problem(
            backend.profile, copies, context.request.local_model, context.environ
        )
        if problem is not None:
            return problem[1]
        for copied in copies.files:
            credential_copies.append(copied.copy)
            if copied.data is None:
                continue
            self._fs.makedirs(posixpath.dirname(copied.copy), 0o700)
            self._fs.write_atomic(copied.copy, copied.data, 0o600)
        return None
