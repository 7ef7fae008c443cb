"""The rounds of one run: each round launched, read, audited, validated, then the Rounds table's
next step (seed 000 "Rounds", "Retries").

Per round: the round's node is written when its worker launches; the worker's whole process group
is killed when the round ends, whatever ends it; stdout is read as it arrives (each tool use
updates the progress file; the lines the reader ignored and the overlong lines the runner dropped
are noted under the round content's `agent.stdout`, domain.stdout); stderr is kept (its last
80,000 bytes) in the round's node; the worktree is audited against the one snapshot; the round
validation is called only after a round whose worker ended ok with a clean audit; the round's
node is written again.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass

from concorde_workers.application.cancellation import Cancellation
from concorde_workers.application.preparation import Prepared
from concorde_workers.application.run_state import RoundState, RunState
from concorde_workers.application.tracing import (
    ACTIVITY_INTERVAL_SECONDS,
    Moment,
    ProgressWriter,
    TraceWriter,
)
from concorde_workers.application.validation import (
    RoundValidation,
    ValidationInput,
    ValidationOutcome,
    evidence_for_node,
    evidence_for_record,
)
from concorde_workers.application.worktree_state import WorktreeObserver
from concorde_workers.contracts import schema_validator
from concorde_workers.domain.agent_report import RoundReport
from concorde_workers.domain.audit import Snapshot, audit, worktree_unchanged
from concorde_workers.domain.brief import retry_prompt
from concorde_workers.domain.layout import STDERR_TAIL_BYTES
from concorde_workers.domain.records import LastAction, Transient, result_problem
from concorde_workers.domain.retries import retry_delay
from concorde_workers.domain.rounds import (
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
from concorde_workers.domain.stdout import STDOUT_NOTE_KEY, stdout_note
from concorde_workers.ports.agent import RoundKind
from concorde_workers.ports.clock import Clock
from concorde_workers.ports.filesystem import FileSystem, FileSystemError
from concorde_workers.ports.git import GitCommandFailed
from concorde_workers.ports.process import ProcessRunner, ProcessStartFailed
from concorde_workers.ports.random import Random

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


@dataclass
class RoundsResult:
    """How the rounds ended: the last step and facts, or an interruption or a Git failure."""

    step: End
    facts: RoundFacts
    interrupted: bool = False
    git_failure: GitCommandFailed | None = None
    validation_outcome: ValidationOutcome | None = None
    validation_error: str | None = None


class RoundRunner:
    """Runs the rounds of one run until the Rounds table ends it."""

    def __init__(self, context: RoundContext) -> None:
        self.c = context
        self._schema = schema_validator(json.loads(context.prepared.result_schema))
        self._unchanged = False  # the latest audit found the worktree as the snapshot holds it

    def run_all(self) -> RoundsResult:
        c = self.c
        kind, prompt = RoundKind.INITIAL, c.prepared.brief
        resumes = retries = 0
        while True:
            round_state = self._launch(kind, prompt)
            if c.cancel.is_set():
                self._audit_quietly(round_state)
                self._write(round_state, "update")
                return self._interrupted(round_state)
            try:
                self._audit(round_state)
            except GitCommandFailed as failed:
                self._write(round_state, "update")
                return RoundsResult(step=_FAILED, facts=_NO_FACTS, git_failure=failed)
            facts = self._facts(round_state, resumes, retries)
            outcome, raised = None, None
            if should_validate(facts) and c.validation is not None:
                outcome, raised = self._validate(round_state)
                facts = self._with_answer(facts, outcome, raised)
            step = next_step(facts, c.state.request.backend)
            if c.cancel.is_set():
                # Ended from outside while the round was audited or validated: no further
                # round, no deletions (seed 000 "Proposed deletions": none when interrupted).
                self._record_transient(round_state, None)
                self._write(round_state, "update")
                return self._interrupted(round_state)
            if isinstance(step, Retry):
                retries += 1
                delay = self._retry_delay(retries)
                self._record_transient(round_state, delay)
                self._write(round_state, "update")
                c.progress.phase("waiting", round_state.number)
                if not c.clock.sleep(delay, c.cancel):
                    # Interrupted while waiting: no retry round followed this round.
                    self._record_transient(round_state, None)
                    self._write(round_state, "update")
                    return self._interrupted(round_state)
                kind = RoundKind.RETRY
                prompt = (c.prepared.brief if step.with_brief else
                          retry_prompt(round_state.transient.error if round_state.transient
                                       else "a transient model-service error",
                                       c.state.request.backend))
                continue
            self._record_transient(round_state, None)
            self._write(round_state, "update")
            if isinstance(step, Resume):
                resumes += 1
                kind, prompt = RoundKind.REPAIR, step.repair
                continue
            assert isinstance(step, End)
            return RoundsResult(step=step, facts=facts, validation_outcome=outcome,
                                validation_error=raised)

    # --- one round ---------------------------------------------------------------------------

    def _launch(self, kind: RoundKind, prompt: str) -> RoundState:
        c = self.c
        state = c.state
        number = len(state.rounds) + 1
        round_state = RoundState(number=number, kind=kind, started_at=c.clock.now_utc(),
                                 started_monotonic=c.clock.monotonic(),
                                 session=state.session)
        state.rounds.append(round_state)
        c.progress.phase("worker", number)
        self._write(round_state, "start")
        state.write_node(c.tracer, "update")
        report = self._execute(round_state, kind, prompt)
        round_state.report = report
        round_state.exit = report.exit
        if report.session:
            round_state.session = state.session = report.session
        round_state.duration = max(0.0, c.clock.monotonic() - round_state.started_monotonic)
        round_state.ended_at = c.clock.now_utc()
        self._judge_result(round_state, report)
        return round_state

    def _execute(self, round_state: RoundState, kind: RoundKind, prompt: str) -> RoundReport:
        c = self.c
        prepared = c.prepared
        session = c.state.session if kind is not RoundKind.INITIAL else None
        if kind is RoundKind.RETRY and prompt == prepared.brief:
            session = None
        command = prepared.backend.command(prepared.context, kind, session)
        reader = prepared.backend.reader(prepared.context)
        stale = self._clear_scratch()
        if stale is not None:
            round_state.failure = stale
            return RoundReport(ending=RoundEnding.NOT_STARTED, failure=stale)
        try:
            handle = c.processes.start(command.argv, prepared.environment, command.cwd, prompt,
                                       timeout_seconds=c.state.request.limits.timeout_seconds)
        except ProcessStartFailed as failed:
            round_state.failure = (f"the command {command.argv[0]} could not be started: "
                                   f"{failed.os_error_text}")
            return RoundReport(ending=RoundEnding.NOT_STARTED, failure=round_state.failure)
        unregister = c.cancel.on_cancel(handle.kill_group)
        flusher = _ActivityFlusher(c.progress)
        try:
            for line in handle.lines():
                action = reader.feed(line)
                if action is not None:
                    flusher.activity(action)
            handle.wait(EXIT_GRACE_SECONDS)  # the leader's own exit, before the group is killed
        finally:
            # No worker process outlives its round (seed 000): kill the whole group, always,
            # and wait until the group was killed and its leader reaped, also when an exception
            # of ours ends the round and the run goes on to remove the runtime directory.
            handle.kill_group()
            unregister()
            flusher.stop()
            exit_status = handle.wait(None)
        stderr = handle.stderr_tail(STDERR_TAIL_BYTES)
        c.tracer.write_stderr(c.state.layout, round_state.number, stderr)
        round_state.stderr_tail = stderr.decode("utf-8", "replace")
        report = reader.finish(exit_status, handle.timed_out, round_state.stderr_tail)
        note = stdout_note(reader.ignored, handle.overlong)
        if note is None:
            return report
        return report.model_copy(update={"agent": {**report.agent, STDOUT_NOTE_KEY: note}})

    def _clear_scratch(self) -> str | None:
        """Remove what a worker could have planted for the agent program's own process before
        the round starts (notes/pi.md §9); a link is removed, never followed. The round does not
        start when that fails."""
        fs = self.c.fs
        prepared = self.c.prepared
        for path in prepared.backend.round_scratch(prepared.context):
            try:
                if not fs.lexists(path):
                    continue
                if fs.is_dir(path) and not fs.is_symlink(path):
                    fs.rmtree(path)
                else:
                    fs.remove(path)
            except FileSystemError as error:
                return (f"the host could not clear {path} before the round: "
                        f"{error.os_error_text}")
        return None

    def _judge_result(self, round_state: RoundState, report: RoundReport) -> None:
        """Validate the worker's claim: the result contract, then the schema with the caller's
        output schema embedded. A valid result is kept as the run's worker_result whatever
        ends its round (seed 000 "Rounds")."""
        data = report.worker_result
        if data is None:
            return
        round_state.result_problem = result_problem(data) or self._schema_problem(data)
        if round_state.result_problem is None:
            self.c.state.worker_result = data

    def _schema_problem(self, data: object) -> str | None:
        errors = sorted(self._schema.iter_errors(data), key=lambda e: [str(p) for p in e.path])
        if not errors:
            return None
        where = "/".join(str(p) for p in errors[0].path) or "(the result)"
        return f"{where}: {errors[0].message}"

    def _audit(self, round_state: RoundState) -> None:
        c = self.c
        if round_state.report is not None and round_state.report.ending is RoundEnding.NOT_STARTED:
            self._unchanged = False  # not audited: no claim about the worktree
            return
        c.progress.phase("audit", round_state.number)
        observation = c.observer.observe(c.snapshot)
        round_state.audit = audit(c.prepared.grant, c.snapshot, observation)
        self._unchanged = worktree_unchanged(c.snapshot, observation)

    def _audit_quietly(self, round_state: RoundState) -> None:
        try:
            self._audit(round_state)
        except GitCommandFailed:
            round_state.audit = None

    def _facts(self, round_state: RoundState, resumes: int, retries: int) -> RoundFacts:
        report = round_state.report
        assert report is not None
        valid = report.worker_result is not None and round_state.result_problem is None
        status = WorkerStatus(report.worker_result["status"]) if valid and report.worker_result \
            else None
        limits = self.c.state.request.limits
        session = self.c.state.session
        return RoundFacts(
            ending=report.ending, audit=round_state.audit.verdict if round_state.audit else None,
            result_valid=valid, result_status=status,
            validation_given=self.c.validation is not None,
            resume_rounds_left=max(0, limits.rounds - resumes),
            retries_left=max(0, limits.retries - retries),
            session_named=session is not None and self._usable(session),
            worktree_unchanged=self._unchanged,
        )

    def _usable(self, session: str) -> bool:
        prepared = self.c.prepared
        return prepared.backend.session_usable(prepared.context, session)

    def _validate(self, round_state: RoundState) -> tuple[ValidationOutcome | None, str | None]:
        c = self.c
        assert c.validation is not None and c.state.worker_result is not None
        c.progress.phase("validation", round_state.number)
        round_dir = c.state.layout.round_dir(round_state.number)
        try:
            outcome = c.validation(ValidationInput(
                worktree=c.prepared.placement.worktree, round_dir=round_dir,
                result=dict(c.state.worker_result), round=round_state.number))
            problem = outcome.problem() if isinstance(outcome, ValidationOutcome) else (
                f"it returned {type(outcome).__name__}, not a ValidationOutcome")
            if problem:
                raise ValueError(f"the round validation's answer is malformed: {problem}")
        except Exception as error:  # the caller's code: any exception is validation_unavailable
            round_state.validation = f"the round validation raised {type(error).__name__}: {error}"
            return None, f"{type(error).__name__}: {error}"
        round_state.evidence_node = evidence_for_node(outcome.evidence, round_dir)
        round_state.evidence_record = evidence_for_record(outcome.evidence)
        round_state.validation = _outcome_text(outcome)
        return outcome, None

    @staticmethod
    def _with_answer(facts: RoundFacts, outcome: ValidationOutcome | None,
                     raised: str | None) -> RoundFacts:
        if outcome is None:
            return facts.model_copy(update={"validation": ValidationAnswer.RAISED})
        coded = outcome.coded()
        return facts.model_copy(update={
            "validation": outcome.answer(), "repair": outcome.repair,
            "validation_code": coded.code if coded else None})

    def _retry_delay(self, k: int) -> float:
        base = self.c.state.request.limits.retry_delay_seconds
        return retry_delay(base, k, self.c.random.uniform(0.5, 1.0))

    def _record_transient(self, round_state: RoundState, delay: float | None) -> None:
        report = round_state.report
        if report is None or report.ending is not RoundEnding.TRANSIENT_ERROR:
            return
        round_state.transient = Transient(
            error=report.transient_error or report.failure or "a transient model-service error",
            retried=delay is not None, delay_seconds=None if delay is None else round(delay, 3))

    def _interrupted(self, round_state: RoundState) -> RoundsResult:
        return RoundsResult(step=_FAILED, facts=_NO_FACTS, interrupted=True)

    def _write(self, round_state: RoundState, moment: Moment) -> None:
        round_state.status = _round_status(round_state)
        self.c.tracer.write_round_node(self.c.state.layout, round_state.number,
                                       round_state.node(self.c.state.run_id), moment)
        if moment == "update":
            # The run record is written again after every round, once its node is (seed 000
            # "Run record").
            self.c.state.write_node(self.c.tracer, "update")


class _ActivityFlusher:
    """Worker activity for the progress file while a round runs: each tool call is kept and
    written at most once a second (ProgressWriter.activity); a call held back is written by a
    background thread once its second has passed, so a worker silent for minutes (one long
    Bash command) still shows its latest tool call (seed 000 "Progress file").

    The thread starts with the first held-back action and is stopped when the round ends; the
    progress writer is only touched under the lock while it runs."""

    def __init__(self, progress: ProgressWriter) -> None:
        self._progress = progress
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def activity(self, action: LastAction) -> None:
        with self._lock:
            self._progress.activity(action)
            held_back = self._progress.pending
        if held_back and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="progress-activity",
                                            daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while not self._stopped.wait(ACTIVITY_INTERVAL_SECONDS / 4):
            with self._lock:
                if self._stopped.is_set():
                    return
                self._progress.flush()

    def stop(self) -> None:
        self._stopped.set()
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            thread.join()


def _round_status(round_state: RoundState) -> str:
    report = round_state.report
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
