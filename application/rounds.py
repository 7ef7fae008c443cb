"""The rounds of one run: each round launched, read, audited, validated, then the Rounds table's
next step (seed 000 "Rounds", "Retries").

Per round: the round's node is written when its worker launches; the worker's whole process group
is killed when the round ends, whatever ends it; stdout is read as it arrives (each tool use
updates the progress file; the lines the reader ignored and the overlong lines the runner dropped
are noted under the round content's `agent.stdout`, domain.run.stdout); stderr is kept (its last
80,000 bytes) in the round's node; the worktree is audited against the one snapshot; the round
validation is called only after a round whose worker ended ok with a clean audit; the round's
node is written again.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from concorde_workers.application.activity import ActivityFlusher, follow
from concorde_workers.application.cancellation import Cancellation
from concorde_workers.application.changes import ChangeKeeper
from concorde_workers.application.compiled_cache import CacheCompilation
from concorde_workers.application.confinement import confinement_launch_problem
from concorde_workers.application.events import EventEmitter
from concorde_workers.application.preparation import Prepared
from concorde_workers.application.program_identity import program_changed
from concorde_workers.application.resources import RunResources
from concorde_workers.application.run_state import RoundState, RunState
from concorde_workers.application.runtime_directory import copy_transcript
from concorde_workers.application.tracing.progress import ProgressWriter
from concorde_workers.application.tracing.writer import Moment, TraceWriter
from concorde_workers.application.validation import (
    RoundValidation,
    ValidationInput,
    ValidationOutcome,
    evidence_for_node,
    evidence_for_record,
)
from concorde_workers.application.worktree_state import WorktreeObserver
from concorde_workers.contracts import schema_validator
from concorde_workers.domain.boundary.paths import is_within
from concorde_workers.domain.evidence.layout import STDERR_TAIL_BYTES
from concorde_workers.domain.evidence.records import JsonObject, Transient, judge_result
from concorde_workers.domain.isolation.confinement import Mount
from concorde_workers.domain.isolation.launch import LaunchCommand
from concorde_workers.domain.run.agent_report import RoundReport
from concorde_workers.domain.run.audit import Snapshot, audit, worktree_unchanged
from concorde_workers.domain.run.brief import retry_prompt
from concorde_workers.domain.run.retries import retry_delay
from concorde_workers.domain.run.rounds import (
    End,
    Resume,
    Retry,
    RoundEnding,
    RoundFacts,
    Step,
    ValidationAnswer,
    WorkerStatus,
    next_step,
    should_validate,
)
from concorde_workers.domain.run.stdout import STDOUT_NOTE_KEY, stdout_note
from concorde_workers.ports.agent import RoundKind, StreamReader
from concorde_workers.ports.clock import Clock
from concorde_workers.ports.filesystem import EntryKind, FileSystem, FileSystemError
from concorde_workers.ports.git import GitCommandFailed
from concorde_workers.ports.process import ProcessHandle, ProcessRunner, ProcessStartFailed
from concorde_workers.ports.random import Random
from concorde_workers.ports.resources import ResourceGroup
from concorde_workers.ports.space import RuntimeSpace

# After stdout ends, how long the host waits for the leader to exit before it kills the group.
EXIT_GRACE_SECONDS = 10.0


@dataclass
class RoundContext:
    fs: FileSystem
    clock: Clock
    random: Random
    processes: ProcessRunner
    tracer: TraceWriter
    progress: ProgressWriter
    prepared: Prepared
    observer: WorktreeObserver
    snapshot: Snapshot
    validation: RoundValidation | None
    cancel: Cancellation
    state: RunState
    resources: RunResources = field(default_factory=RunResources.none)
    changes: ChangeKeeper | None = None  # each round's change kept (issue 21); None: none
    events: EventEmitter = field(default_factory=EventEmitter.none)  # told as it goes
    space: RuntimeSpace | None = None  # a confined run's writable space, entered by each round
    compilation: CacheCompilation | None = None  # the program's cache, compiled once (issue 32 §4)


@dataclass
class RoundsResult:
    """How the rounds ended: the last step and facts, or an interruption or a Git failure."""

    step: End
    facts: RoundFacts
    interrupted: bool = False
    git_failure: GitCommandFailed | None = None
    validation_outcome: ValidationOutcome | None = None
    validation_error: str | None = None


ANY_OBJECT: dict[str, Any] = {"type": "object"}
"""The result schema's `output` when the caller gave no output schema (seed 002)."""


class RoundRunner:
    """Runs the rounds of one run until the Rounds table ends it."""

    def __init__(self, context: RoundContext) -> None:
        self.context = context
        self._schema_root: dict[str, Any] = json.loads(context.prepared.result_schema)
        self._output_schema = self._schema_root["properties"]["output"]
        self._validator: Any = None  # made on first need: jsonschema costs 0.2 s to import
        self._unchanged = False  # the latest audit found the worktree as the snapshot holds it

    def run_all(self) -> RoundsResult:
        """The rounds until the Rounds table ends the run. An exception that escapes (the
        caller's signal handler, KeyboardInterrupt, SystemExit, ...) first closes the round it
        interrupted - its node says interrupted - and then goes on to the host."""
        try:
            return self._rounds()
        except BaseException:
            self.context.state.ended_in = self.context.progress.phase_now
            self._close_interrupted_round()
            raise

    def _rounds(self) -> RoundsResult:
        context = self.context
        kind, prompt, continues = RoundKind.INITIAL, context.prepared.brief, False
        resumes = retries = 0
        if context.changes is not None:
            context.changes.start(context.snapshot, context.observer.rules)
            context.state.start_tree = context.changes.start_tree
            context.state.head_commit = context.snapshot.head_commit
        while True:
            round_state = self._launch(kind, prompt, continues)
            if context.cancel.is_set():
                self._audit_quietly(round_state)
                return self._interrupted(round_state)
            try:
                self._audit(round_state)
            except GitCommandFailed as failed:
                # The walk ran before Git: what it found is told even when Git then failed.
                round_state.git_metadata = context.observer.git_metadata(context.snapshot)
                self._write(round_state, "update")
                return RoundsResult(step=_FAILED, facts=_NO_FACTS, git_failure=failed)
            facts = self._facts(round_state, resumes, retries)
            outcome, raised = None, None
            if should_validate(facts) and context.validation is not None:
                outcome, raised = self._validate(round_state)
                facts = self._with_answer(facts, outcome, raised)
            step = next_step(facts, context.prepared.backend.profile.failure_code)
            if context.cancel.is_set():
                # Ended from outside while the round was audited or validated: no further
                # round, no deletions (seed 000 "Proposed deletions": none when interrupted).
                self._record_transient(round_state, None)
                return self._interrupted(round_state)
            if isinstance(step, Retry):
                retries += 1
                delay = self._retry_delay(retries)
                self._record_transient(round_state, delay)
                self._write(round_state, "update")
                context.progress.phase("waiting", round_state.number)
                if not context.clock.sleep(delay, context.cancel):
                    # Interrupted while waiting: no retry round followed this round.
                    self._record_transient(round_state, None)
                    return self._interrupted(round_state)
                # Seed 000 "Retries": a retry round continues the session a round named, with
                # the retry prompt; only when no round named one does it start with the brief.
                kind, continues = RoundKind.RETRY, not step.with_brief
                prompt = _retry_prompt(context.prepared, step, round_state)
                continue
            self._record_transient(round_state, None)
            self._write(round_state, "update")
            if isinstance(step, Resume):
                resumes += 1
                kind, prompt, continues = RoundKind.REPAIR, step.repair, True
                continue
            assert isinstance(step, End)
            return RoundsResult(
                step=step, facts=facts, validation_outcome=outcome, validation_error=raised
            )

    # --- one round ---------------------------------------------------------------------------

    def _launch(self, kind: RoundKind, prompt: str, continues: bool) -> RoundState:
        context = self.context
        state = context.state
        number = len(state.rounds) + 1
        round_state = RoundState(
            number=number,
            kind=kind,
            started_at=context.clock.now_utc(),
            started_monotonic=context.clock.monotonic(),
            session=state.session,
        )
        state.rounds.append(round_state)
        context.progress.phase("worker", number)
        self._write(round_state, "start")
        state.write_node(context.tracer, "update")
        context.events.round_started(round_state)
        report = self._execute(round_state, kind, prompt, continues)
        self._start_compilation()
        round_state.report = report
        round_state.exit = report.exit
        if report.session:
            round_state.session = state.session = report.session
        round_state.duration = max(0.0, context.clock.monotonic() - round_state.started_monotonic)
        round_state.ended_at = context.clock.now_utc()
        self._judge_result(round_state, report)
        self._keep_transcript_so_far()
        self._write_known(round_state)
        return round_state

    def _keep_transcript_so_far(self) -> None:
        """The latest session's transcript copied into the run directory after every round
        (seed 000 moves it there when the run ends; that move replaces this copy): the agent's
        space dies with a host killed by SIGKILL (issue 30 §2), and the record a sweep then
        finishes names what the rounds so far said. Nothing here changes the run: the end
        keeps the transcript, or says why it could not."""
        context = self.context
        prepared, state = context.prepared, context.state
        if state.session is None:
            return
        try:
            source = prepared.backend.transcript(prepared.context, state.session)
            if source is not None and context.fs.lexists(source):
                copy_transcript(context.fs, source, state.layout.transcript)
        except Exception:  # the run's end keeps the transcript and tells any failure
            return

    def _execute(
        self, round_state: RoundState, kind: RoundKind, prompt: str, continues: bool
    ) -> RoundReport:
        context = self.context
        prepared = context.prepared
        session = context.state.session if continues else None
        reader = prepared.backend.reader(prepared.context)
        stale = (
            self._clear_scratch()
            or self._seed_cache(round_state.number)
            or self._unconfinable()
            or program_changed(context.fs, prepared.programs)
        )
        group = None
        if stale is None:  # each round in a control group of its own (issue 20)
            group, stale = context.resources.open(round_state.number)
        if stale is not None:
            round_state.failure = stale
            return RoundReport(ending=RoundEnding.NOT_STARTED, failure=stale)
        # The confinement shows the round its own group alone (issue 30 §2): built once the
        # group is made.
        command = prepared.round_command(
            kind,
            session,
            group.folders() if group else (),
            context.space.join() if context.space else (),
        )
        handle = _start(context, command, prompt, group)
        if isinstance(handle, str):
            round_state.failure = handle
            return RoundReport(ending=RoundEnding.NOT_STARTED, failure=handle)
        unregister = context.cancel.on_cancel(handle.kill_group)
        flusher = ActivityFlusher(context.progress)
        read_to_the_end = False
        try:
            follow(handle, reader, flusher, group, context.events, round_state.number)
            handle.wait(EXIT_GRACE_SECONDS)  # the leader's own exit, before the group is killed
            read_to_the_end = True
        finally:
            # No worker process outlives its round (seed 000): kill the whole group, always,
            # and wait until the group was killed and its leader reaped, also when an exception
            # ends the round and the run goes on to remove the runtime directory.
            handle.kill_group()
            unregister()
            flusher.stop()
            exit_status = handle.wait(None)  # confined: the waiter's exact report
            stderr = handle.stderr_tail(STDERR_TAIL_BYTES)
            space_used = context.space.used() if context.space else None
            used, reached = context.resources.close(group, stderr, space_used)
            context.tracer.write_stderr(context.state.layout, round_state.number, stderr)
            context.tracer.write_resources(context.state.layout, round_state.number, used)
            context.events.resources(round_state.number, used)
            round_state.files = context.tracer.round_files(context.state.layout, round_state.number)
            round_state.stderr_tail = stderr.decode("utf-8", "replace")
            if not read_to_the_end:
                # An exception ends the round: what the output said so far still names the
                # session whose transcript the run keeps (seed 000 "Run directory").
                self._keep_what_was_said(round_state, reader, exit_status, handle.timed_out)
        report = reader.finish(exit_status, handle.timed_out, round_state.stderr_tail)
        return _as_reported(report, reached, stdout_note(reader.ignored, handle.overlong))

    def _keep_what_was_said(
        self,
        round_state: RoundState,
        reader: StreamReader,
        exit_status: int | None,
        timed_out: bool,
    ) -> None:
        try:
            report = reader.finish(exit_status, timed_out, round_state.stderr_tail)
        except Exception:  # the exception that ends the round is the one to go on
            return
        round_state.report, round_state.exit = report, report.exit
        if report.session:
            round_state.session = self.context.state.session = report.session

    def _clear_scratch(self) -> str | None:
        """Remove what a worker could have planted for the agent program's own process before
        the round starts (notes/pi.md §9); a link is removed, never followed. The round does not
        start when that fails."""
        fs = self.context.fs
        prepared = self.context.prepared
        for path in prepared.backend.round_scratch(prepared.context):
            try:
                if not fs.lexists(path):
                    continue
                if fs.is_dir(path) and not fs.is_symlink(path):
                    fs.rmtree(path)
                else:
                    fs.remove(path)
            except FileSystemError as error:
                return f"the host could not clear {path} before the round: {error.os_error_text}"
        return None

    def _start_compilation(self) -> None:
        """Once round 1's program has ended: the compilation overlaps the audit, the checks and
        the validation, not the program's own start (issue 32 §4)."""
        compilation = self.context.compilation
        if compilation is not None and compilation.compiled is not None:
            compilation.start(posixpath.dirname(compilation.compiled.folder))

    def _seed_cache(self, number: int) -> str | None:
        """The cache the host compiles once a run (`CacheCompilation`), copied into the
        program's cache the scratch just cleared: the regular files of the host's folder only,
        written anew (issue 32 §4). Round 1 compiles for itself (the compilation starts when
        its program ends); a later round waits for the compilation's end. A compilation that
        failed: nothing, the program compiles for itself."""
        fs = self.context.fs
        compilation = self.context.compilation
        if compilation is None or compilation.compiled is None or number == 1:
            return None
        compiled = compilation.compiled
        if not compilation.done(wait=True):
            return None
        if not fs.is_dir(compiled.folder) or fs.is_symlink(compiled.folder):
            return None
        try:
            files = [e.name for e in fs.listdir(compiled.folder) if e.kind is EntryKind.FILE]
            if files:
                fs.makedirs(compiled.cache, 0o700)
            for name in files:
                data = fs.read_bytes(posixpath.join(compiled.folder, name))
                fs.write_atomic(posixpath.join(compiled.cache, name), data, 0o600)
        except FileSystemError as error:
            return (
                f"the host could not fill {compiled.cache} before the round: {error.os_error_text}"
            )
        return None

    def _unconfinable(self) -> str | None:
        """A confined round starts only when every mount still lands where it was planned, and
        only when its program exists: inside the confinement a missing program would be bwrap's
        error after the launch, not the launch failure it is."""
        prepared = self.context.prepared
        if prepared.confinement is None:
            return None
        if not prepared.program_found:
            return f"the command {prepared.program} could not be started: the program was not found"
        return confinement_launch_problem(self.context.fs, prepared.confinement)

    def _judge_result(self, round_state: RoundState, report: RoundReport) -> None:
        """Validate the worker's claim once: the result contract by its model, then `output` by
        the caller's output schema. A valid result is kept, as its model, as the run's
        worker_result whatever ends its round (seed 000 "Rounds")."""
        data = report.worker_result
        if data is None:
            return
        judged = judge_result(data)
        if isinstance(judged, str):
            round_state.result_problem = judged
            return
        round_state.result_problem = self._output_problem(judged.output)
        if round_state.result_problem is None:
            round_state.result = self.context.state.worker_result = judged

    def _output_problem(self, output: JsonObject) -> str | None:
        """The first problem the caller's output schema finds, by its place in the result (the
        same error first however the output's keys are ordered)."""
        if self._output_schema == ANY_OBJECT:
            return None  # no caller schema: the model already holds output to be an object
        if self._validator is None:
            # The result schema as the agent was given it: the caller's output schema resolves
            # its references against this root, as when the whole result was checked with it.
            self._validator = schema_validator(self._schema_root)
        errors = sorted(
            self._validator.descend(output, self._output_schema, path="output"),
            key=lambda e: ([str(p) for p in e.path], e.message),
        )
        if not errors:
            return None
        return f"{'/'.join(str(p) for p in errors[0].path)}: {errors[0].message}"

    def _audit(self, round_state: RoundState) -> None:
        context = self.context
        if round_state.report is not None and round_state.report.ending is RoundEnding.NOT_STARTED:
            self._unchanged = False  # not audited: no claim about the worktree
            return
        context.progress.phase("audit", round_state.number)
        observation = context.observer.observe(context.snapshot)
        round_state.audit = audit(context.prepared.grant, context.snapshot, observation)
        round_state.git_metadata = context.observer.git_metadata(
            context.snapshot, observation.files
        )
        self._unchanged = worktree_unchanged(context.snapshot, observation)
        self._write_known(round_state)
        if context.changes is not None:
            context.changes.keep(round_state.number, round_state.audit, observation)
            round_state.tree = context.changes.tree
            round_state.files = context.tracer.round_files(context.state.layout, round_state.number)
            self._write_known(round_state)

    def _audit_quietly(self, round_state: RoundState) -> None:
        try:
            self._audit(round_state)
        except GitCommandFailed:
            round_state.audit = None
            round_state.git_metadata = self.context.observer.git_metadata(self.context.snapshot)

    def _facts(self, round_state: RoundState, resumes: int, retries: int) -> RoundFacts:
        report = round_state.report
        assert report is not None
        result = round_state.result
        valid = result is not None
        status = WorkerStatus(result.status) if result is not None else None
        limits = self.context.state.request.limits
        session = self.context.state.session
        return RoundFacts(
            ending=report.ending,
            audit=round_state.audit.verdict if round_state.audit else None,
            result_valid=valid,
            result_status=status,
            validation_given=self.context.validation is not None,
            resume_rounds_left=max(0, limits.rounds - resumes),
            retries_left=max(0, limits.retries - retries),
            session_named=session is not None,
            worktree_unchanged=self._unchanged,
        )

    def _validate(self, round_state: RoundState) -> tuple[ValidationOutcome | None, str | None]:
        context = self.context
        assert context.validation is not None and context.state.worker_result is not None
        context.progress.phase("validation", round_state.number)
        round_dir = context.state.layout.round_dir(round_state.number)
        try:
            outcome = context.validation(
                ValidationInput(
                    worktree=context.prepared.placement.worktree,
                    round_dir=round_dir,
                    result=context.state.worker_result.model_dump(mode="json"),
                    round=round_state.number,
                    view=self._worktree_view(),
                )
            )
        except Exception as error:  # the caller's code: any exception is validation_unavailable
            said = f"raised {type(error).__name__}: {error}"
        else:
            # An answer the record cannot keep (evidence that is no JSON, a field of the wrong
            # type) is a round validation that could not validate, never a failed host.
            problem = (
                outcome.problem()
                if isinstance(outcome, ValidationOutcome)
                else (f"it returned {type(outcome).__name__}, not a ValidationOutcome")
            )
            said = "" if problem is None else f"gave a malformed answer: {problem}"
        if said:
            round_state.validation = f"the round validation {said}"
            return None, said
        assert isinstance(outcome, ValidationOutcome)
        round_state.evidence_node = evidence_for_node(outcome.evidence, round_dir)
        round_state.evidence_record = evidence_for_record(outcome.evidence)
        round_state.validation = _outcome_text(outcome)
        return outcome, None

    def _worktree_view(self) -> tuple[Mount, ...] | None:
        """The run's mount plan inside its worktree: what a check may see (None: unconfined)."""
        confinement = self.context.prepared.confinement
        if confinement is None:
            return None
        worktree = self.context.prepared.placement.worktree
        return tuple(m for m in confinement.mounts if is_within(m.path, worktree))

    @staticmethod
    def _with_answer(
        facts: RoundFacts, outcome: ValidationOutcome | None, raised: str | None
    ) -> RoundFacts:
        if outcome is None:
            return facts.model_copy(update={"validation": ValidationAnswer.RAISED})
        coded = outcome.coded()
        return facts.model_copy(
            update={
                "validation": outcome.answer(),
                "repair": outcome.repair,
                "validation_code": coded.code if coded else None,
            }
        )

    def _retry_delay(self, k: int) -> float:
        base = self.context.state.request.limits.retry_delay_seconds
        return retry_delay(base, k, self.context.random.uniform(0.5, 1.0))

    def _record_transient(self, round_state: RoundState, delay: float | None) -> None:
        report = round_state.report
        if report is None or report.ending is not RoundEnding.TRANSIENT_ERROR:
            return
        round_state.transient = Transient(
            error=report.transient_error or report.failure or "a transient model-service error",
            retried=delay is not None,
            delay_seconds=None if delay is None else round(delay, 3),
        )

    def _interrupted(self, round_state: RoundState) -> RoundsResult:
        """Something outside ended the run in this round: its node says so."""
        round_state.interrupted = True
        self._write(round_state, "update")
        return RoundsResult(step=_FAILED, facts=_NO_FACTS, interrupted=True)

    def _close_interrupted_round(self) -> None:
        """An exception is ending the run: the last round is closed as interrupted - ended now,
        audited when its worker started and no audit ran yet (a write outside rw is reported
        however the round ended), no retry round after it - and its node written. Only what
        cannot raise more than an Exception runs here; the exception itself goes on."""
        rounds = self.context.state.rounds
        if not rounds:
            return
        last = rounds[-1]
        if last.ended_at is None:
            last.duration = max(0.0, self.context.clock.monotonic() - last.started_monotonic)
            last.ended_at = self.context.clock.now_utc()
        if last.audit is None:  # _audit itself skips a round whose command never started
            try:
                self._audit_quietly(last)
            except Exception:  # the run is ending anyway; the audit stays null
                last.audit = None
        if last.transient is not None and last.transient.retried:
            self._record_transient(last, None)
        self._interrupted(last)

    def _write_known(self, round_state: RoundState) -> None:
        """The round's node, still running, with what is known of it so far (its agent's end,
        its audit, its files): a host killed before the round's end leaves a node that says
        what the round did (issue 30 §3), which a sweep then ends as interrupted."""
        self.context.tracer.write_round_node(
            self.context.state.layout,
            round_state.number,
            round_state.node(self.context.state.run_id, running=True),
            "update",
        )

    def _write(self, round_state: RoundState, moment: Moment) -> None:
        round_state.status = _round_status(round_state)
        self.context.tracer.write_round_node(
            self.context.state.layout,
            round_state.number,
            round_state.node(self.context.state.run_id),
            moment,
        )
        if moment == "update":
            # The run record is written again after every round, once its node is (seed 000
            # "Run record").
            self.context.state.write_node(self.context.tracer, "update")
            self.context.events.round_ended(round_state)


def _round_status(round_state: RoundState) -> Literal["ok", "failed"]:
    report = round_state.report
    if round_state.interrupted:  # ended from outside: it did not finish (outcome interrupted)
        return "failed"
    if report is None:
        return "ok"
    clean = round_state.audit is not None and round_state.audit.clean
    return "ok" if report.ending is RoundEnding.OK and clean else "failed"


def _outcome_text(outcome: ValidationOutcome) -> str:
    """The round trace's `validation`: clean, the text to repair, or why it could not validate."""
    if outcome.unavailable is not None:
        return f"unavailable ({outcome.unavailable.code}): {outcome.unavailable.detail}".rstrip()
    if outcome.violation is not None:
        return f"violation ({outcome.violation.code}): {outcome.violation.detail}".rstrip()
    if outcome.repair is not None:
        return outcome.repair
    return "clean"


_FAILED = End(status=WorkerStatus.FAILED)
_NO_FACTS = RoundFacts(ending=RoundEnding.NOT_STARTED, audit=None, result_valid=False)

__all__ = ["RoundContext", "RoundRunner", "RoundsResult", "Step"]


def _retry_prompt(prepared: Prepared, step: Retry, round_state: RoundState) -> str:
    """A retry round's prompt: the brief when no round named a session, else the retry prompt
    in the backend profile's words with the transient error."""
    if step.with_brief:
        return prepared.brief
    error = (
        round_state.transient.error if round_state.transient else "a transient model-service error"
    )
    return retry_prompt(error, prepared.backend.profile.brief)


def _start(
    context: RoundContext, command: LaunchCommand, prompt: str, group: ResourceGroup | None
) -> ProcessHandle | str:
    """The round's process, started in its group; why it could not be started (its group
    closed) when the system refused it."""
    try:
        return context.processes.start(
            command.argv,
            context.prepared.environment,
            command.cwd,
            prompt,
            timeout_seconds=context.state.request.limits.timeout_seconds,
            prefix=group.prefix() if group else (),
        )
    except ProcessStartFailed as failed:
        context.resources.close(group)
        return f"the command {command.argv[0]} could not be started: {failed.os_error_text}"


def _as_reported(
    report: RoundReport, reached: Sequence[str], note: dict[str, Any] | None
) -> RoundReport:
    """The reader's report with the limits the round's group reached and the note of the
    output lines the reader could not use."""
    if reached:
        report = report.model_copy(
            update={
                "ending": RoundEnding.LIMIT_REACHED,
                "limit": "; ".join(reached),
                "host_limits": tuple(reached),
            }
        )
    if note is None:
        return report
    return report.model_copy(update={"agent": {**report.agent, STDOUT_NOTE_KEY: note}})
