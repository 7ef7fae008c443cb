"""The rounds of one run: each round launched, read, audited, validated, then the Rounds table's
next step (seed 000 "Rounds", "Retries").

Per round: the round's node is written when its worker launches; the agent process runs
(application/rounds/agent_process.py: the whole process group killed when the round ends,
whatever ends it; stdout read as it arrives; stderr kept in the round's node); the worker's
claim is judged once; the worktree is audited against the one snapshot; the round validation
is called only after a round whose worker ended ok with a clean audit; the round's node is
written again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from concorde_workers.application.preparation.prepared import Prepared
from concorde_workers.application.rounds.agent_process import AgentProcess
from concorde_workers.application.rounds.result_judge import ResultJudge
from concorde_workers.application.rounds.round_context import RoundContext
from concorde_workers.application.rounds.validation_call import validate, with_answer
from concorde_workers.application.runtime.run_state import RoundState
from concorde_workers.application.runtime.runtime_directory import copy_transcript
from concorde_workers.application.runtime.validation import (
    ValidationOutcome,
)
from concorde_workers.application.tracing.writer import Moment
from concorde_workers.domain.evidence.records import Transient
from concorde_workers.domain.run.agent_report import RoundReport
from concorde_workers.domain.run.audit import audit, worktree_unchanged
from concorde_workers.domain.run.brief import retry_prompt
from concorde_workers.domain.run.retries import retry_delay
from concorde_workers.domain.run.rounds import (
    End,
    Resume,
    Retry,
    RoundEnding,
    RoundFacts,
    Step,
    WorkerStatus,
    next_step,
    should_validate,
)
from concorde_workers.ports.agents.agent import RoundKind
from concorde_workers.ports.repository.git import GitCommandFailed


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
        self.context = context
        self._process = AgentProcess(context)
        self._judge = ResultJudge(context.prepared.result_schema)
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
                outcome, raised = validate(context, round_state)
                facts = with_answer(facts, outcome, raised)
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
        report = self._process.run(round_state, kind, prompt, continues)
        self._process.tell_calls_of_transcript(number, report.session)
        self._process.start_compilation()
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

    def _judge_result(self, round_state: RoundState, report: RoundReport) -> None:
        """Validate the worker's claim once (application/rounds/result_judge.py). A valid result is
        kept, as its model, as the run's worker_result whatever ends its round (seed 000
        "Rounds")."""
        if report.worker_result is None:
            return
        judged = self._judge.judge(report.worker_result)
        if isinstance(judged, str):
            round_state.result_problem = judged
            return
        round_state.result_problem = None
        round_state.result = self.context.state.worker_result = judged

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


_FAILED = End(status=WorkerStatus.FAILED)
_NO_FACTS = RoundFacts(ending=RoundEnding.NOT_STARTED, audit=None, result_valid=False)

__all__ = ["RoundRunner", "RoundsResult", "Step"]


def _retry_prompt(prepared: Prepared, step: Retry, round_state: RoundState) -> str:
    """A retry round's prompt: the brief when no round named a session, else the retry prompt
    in the backend profile's words with the transient error."""
    if step.with_brief:
        return prepared.brief
    error = (
        round_state.transient.error if round_state.transient else "a transient model-service error"
    )
    return retry_prompt(error, prepared.backend.profile.brief)
