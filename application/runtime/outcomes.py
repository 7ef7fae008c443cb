"""Workers' error link of a run that does not end ok (seed 000 "Errors"), built from what the
host observed: the code and reason the Rounds table chose, a detail naming the round, paths,
commands and messages, the evidence (the run's trace node, the transcript once a session exists,
the audit lines, refused trace writes) and the causes the table lists.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from concorde_workers.application.runtime.run_state import RoundState, RunState
from concorde_workers.application.runtime.runtime_directory import CleanupOutcome
from concorde_workers.application.runtime.validation import ValidationOutcome
from concorde_workers.domain.evidence.links import (
    audit_evidence,
    audit_violation_detail,
    host_limit_link,
    trace_evidence,
    transcript_evidence,
    worker_link,
    workers_link,
)
from concorde_workers.domain.gitview.git_metadata import describe_git_metadata
from concorde_workers.domain.ground.codes import RUN_CODES, Code
from concorde_workers.domain.ground.errors import ErrorLink, Evidence, Reason, Refusal
from concorde_workers.domain.ground.layout import RunLayout
from concorde_workers.domain.run.agent_report import RoundReport
from concorde_workers.domain.run.audit import describe_violations
from concorde_workers.domain.run.deletions import (
    DeletionOutcome,
    describe_interruption,
    describe_outcome,
)
from concorde_workers.domain.run.rounds import Causes, End, RoundEnding, RoundFacts
from concorde_workers.ports.repository.git import GitCommandFailed


@dataclass(frozen=True)
class LinkContext:
    """What every link of one run shares: its identity, task type, node folder and backend."""

    run_id: str
    task_type: str
    layout: RunLayout
    backend: str

    def evidence(
        self, state: RunState | None = None, round_state: RoundState | None = None
    ) -> list[Evidence]:
        items: list[Evidence] = []
        if round_state is not None and round_state.audit is not None:
            items += [
                audit_evidence(round_state.number, v) for v in round_state.audit.violation_texts
            ]
        items.append(trace_evidence(self.run_id, self.layout.run_dir))
        if state is not None and state.session is not None:
            items.append(transcript_evidence(self.layout.transcript, state.session))
        return items

    def link(
        self,
        code: str,
        detail: str,
        evidence: Sequence[Evidence],
        attempts: Sequence[str] = (),
        causes: Sequence[ErrorLink] = (),
        reason: Reason | None = None,
    ) -> ErrorLink:
        return workers_link(
            self.run_id,
            self.task_type,
            code,
            detail,
            evidence,
            attempts=attempts,
            causes=causes,
            reason=reason,
        )

    def without_transcript(self, link: ErrorLink) -> ErrorLink:
        """The link, and every link below it, without evidence naming the run's transcript:
        for a run that kept none (pi writes its session file only after its first answer), so
        that evidence names only files that exist."""
        kept = tuple(
            e
            for e in link.evidence
            if not (e.kind == "transcript" and e.ref == self.layout.transcript)
        )
        causes = tuple(self.without_transcript(cause) for cause in link.causes)
        return link.model_copy(update={"evidence": kept, "causes": causes})

    def with_evidence(self, link: ErrorLink, extra: Sequence[Evidence]) -> ErrorLink:
        """The link with `extra` evidence (such as trace-write evidence) it does not hold yet,
        each piece once (a file refused at several writes of one moment is one piece)."""
        known = {(e.kind, e.ref, e.detail) for e in link.evidence}
        new: list[Evidence] = []
        for e in extra:
            if (e.kind, e.ref, e.detail) not in known:
                known.add((e.kind, e.ref, e.detail))
                new.append(e)
        return link.model_copy(update={"evidence": (*link.evidence, *new)})


def as_run_refusal(refusal: Refusal) -> Refusal:
    """A refusal as a run may end with it. A code outside the run-code table (request_invalid,
    seed 000 "Errors": one the run still meets when the disk changed since
    `refusal_before_run`, or the request makes no command line; any other `Code`, such as a
    configuration reader's) is the launch that could not be made, its own code kept in the
    detail; a run code keeps its reason when its row allows it, else takes the row's own."""
    row = RUN_CODES.get(refusal.code)
    if row is None:
        return Refusal(
            code=Code.LAUNCH_FAILED,
            reason=Reason.ENVIRONMENT,
            file=refusal.file,
            message=f"the run could not launch ({refusal.code}): {refusal.message}",
        )
    if Reason(refusal.reason) in row.reasons:
        return refusal
    return refusal.model_copy(update={"reason": row.reason})


def refusal_link(links: LinkContext, refusal: Refusal) -> ErrorLink:
    """A refusal that comes with a run node: grant_unavailable, grant_malformed,
    worktree_misplaced, run_directory_denied, pi_runtime_missing, launch_failed, ...; whatever
    its code and reason, a link (`as_run_refusal`), never an exception."""
    refusal = as_run_refusal(refusal)
    return links.link(
        refusal.code, refusal.message, links.evidence(), reason=Reason(refusal.reason)
    )


def snapshot_link(
    links: LinkContext, failed: GitCommandFailed, state: RunState | None = None
) -> ErrorLink:
    detail = (
        f"the Git command {' '.join(failed.argv)} failed"
        f"{'' if failed.returncode is None else f' with exit status {failed.returncode}'}: "
        f"{failed.output.strip() or 'no output'}"
    )
    last = state.rounds[-1] if state is not None and state.rounds else None
    if last is not None:
        detail = f"round {last.number}: {detail}{_git_metadata_note(last, state)}"
    return links.link(Code.SNAPSHOT_FAILED, detail, links.evidence(state, last))


def interrupted_link(
    links: LinkContext, reason: str | None, state: RunState | None = None
) -> ErrorLink:
    """The run ended from outside: what ended it, the round it was in, and any write outside
    rw that round made (seed 000 "Errors": every code whose round had one reports it)."""
    said = reason or "the run was ended from outside before it finished"
    last = state.rounds[-1] if state is not None and state.rounds else None
    detail = said if last is None else f"round {last.number}: {said}{_violations_note(last, state)}"
    if state is not None and state.deletions.not_performed:
        detail += "; " + describe_interruption(state.deletions)
    return links.link(Code.INTERRUPTED, detail, links.evidence(state, last))


def ended_by(exception: BaseException, phase: str) -> str:
    """What ended a run from outside when an exception escaped into the host: KeyboardInterrupt,
    SystemExit, or whatever the caller's own code (a signal handler, the round validation)
    raised, named with its message and the phase it came in."""
    name = type(exception).__name__
    text = str(exception).strip()
    if isinstance(exception, SystemExit):
        said = f"{name}({text})" if text else name
    else:
        said = f"{name}: {text}" if text else name
    return f"{said} was raised in the process running the run during its {phase} phase and ended it"


def retry_attempts(state: RunState) -> list[str]:
    """Every retry of the run, for the attempts of its error."""
    return [
        f"round {r.number}: {r.transient.error}; retried after {r.transient.delay_seconds:g} s"
        for r in state.rounds
        if r.transient is not None and r.transient.retried and r.transient.delay_seconds is not None
    ]


def _violations_note(round_state: RoundState, state: RunState | None = None) -> str:
    if round_state.audit is None or not round_state.audit.violations:
        return ""
    return (
        f"; the round also changed paths outside the grant's writable paths: "
        f"{describe_violations(round_state.audit)}{_git_metadata_note(round_state, state)}"
    )


def _git_metadata_note(round_state: RoundState, state: RunState | None) -> str:
    """What the Git metadata the round left would run, and where it is now (issue 8 §1)."""
    if not round_state.git_metadata:
        return ""
    worktree = (
        ""
        if state is None
        else (
            state.prepared.placement.worktree
            if state.prepared is not None
            else state.request.worktree
        )
    )
    return ". " + describe_git_metadata(round_state.git_metadata, worktree)


@dataclass(frozen=True)
class _Ending:
    """What the detail builder of an end row reads: the run, its last round, the step."""

    links: LinkContext
    state: RunState
    step: End
    facts: RoundFacts
    answer: ValidationOutcome | None
    raised: str | None

    @property
    def last(self) -> RoundState:
        return self.state.rounds[-1]

    @property
    def report(self) -> RoundReport:
        return self.last.report or RoundReport(ending=RoundEnding.NOT_STARTED)

    @property
    def head(self) -> str:
        return f"round {self.last.number}: "

    @property
    def note(self) -> str:
        """Every write outside rw the round made, for a code that names them (seed 000)."""
        return _violations_note(self.last, self.state) if self.step.names_audit_violations else ""

    @property
    def process_causes(self) -> list[ErrorLink]:
        link = self.report.process_link
        return [link] if link is not None else []

    def link(
        self,
        detail: str,
        attempts: Sequence[str] = (),
        causes: Sequence[ErrorLink] = (),
        reason: Reason | None = None,
    ) -> ErrorLink:
        assert self.step.code is not None
        return self.links.link(
            self.step.code,
            detail,
            self.links.evidence(self.state, self.last),
            attempts=attempts,
            causes=causes,
            reason=reason,
        )


def _launch_failed(e: _Ending) -> ErrorLink:
    return e.link(e.head + (e.last.failure or "the agent could not start"))


def _worker_timeout(e: _Ending) -> ErrorLink:
    limit = e.state.request.limits.timeout_seconds
    return e.link(f"{e.head}the round timed out after {limit:g} seconds{e.note}")


def _worker_limit_reached(e: _Ending) -> ErrorLink:
    what = e.report.limit or "its limit"
    if e.report.host_limits:
        # The run's own limits (issue 20): the host's control group ended the round, and its
        # link is the cause on every backend (docs/decisions.md "A limit the host enforces is
        # told as one"), never what the program said as it was stopped.
        detail = f"{e.head}the host ended the round at a limit of its control group: {what}"
        return e.link(detail + e.note, causes=[host_limit_link(e.report.host_limits)])
    return e.link(
        f"{e.head}the agent program stopped at a limit: {what}{e.note}", causes=e.process_causes
    )


def _process_failed(e: _Ending) -> ErrorLink:
    failure = e.report.failure or e.report.transient_error or "the agent process failed"
    used_up = (
        "; the retries for a transient model-service error are used up"
        if e.step.reason is Reason.EXHAUSTED
        else ""
    )
    return e.link(
        f"{e.head}{failure}{used_up}{e.note}",
        attempts=retry_attempts(e.state),
        causes=e.process_causes,
        reason=e.step.reason,
    )


def _audit_violation(e: _Ending) -> ErrorLink:
    violations = e.last.audit.violation_texts if e.last.audit else ()
    status = state_result_status(e.last, e.facts)
    causes = _worker_causes(e.state, e.last) if e.step.causes is Causes.WORKER_ERROR else []
    detail = audit_violation_detail(e.last.number, violations, status)
    return e.link(detail + _git_metadata_note(e.last, e.state), causes=causes)


def _worker_result_invalid(e: _Ending) -> ErrorLink:
    problem = e.last.result_problem or "the worker gave no structured result"
    final = e.report.final_text
    told = final and (e.last.result_problem is None or "no structured result" in problem)
    return e.link(
        f"{e.head}the worker's result is invalid: {problem}"
        + (f"; its final text: {final[:2000]}" if told and final else "")
    )


def _worker_reported(e: _Ending) -> ErrorLink:
    result = e.state.worker_result
    error = result.error if result is not None else None
    said = str(e.step.code).removeprefix("worker_")
    detail = (
        f"{e.head}the worker reported {said}: "
        f"{error.code if error else '?'}: {error.detail if error else ''}".rstrip(": ")
    )
    return e.link(detail, causes=_worker_causes(e.state, e.last))


def _validation_unavailable(e: _Ending) -> ErrorLink:
    return e.link(f"{e.head}the round validation could not validate: it {e.raised}")


_DETAILS: Mapping[Code, Callable[[_Ending], ErrorLink]] = {
    Code.LAUNCH_FAILED: _launch_failed,
    Code.WORKER_TIMEOUT: _worker_timeout,
    Code.WORKER_LIMIT_REACHED: _worker_limit_reached,
    Code.AUDIT_VIOLATION: _audit_violation,
    Code.WORKER_RESULT_INVALID: _worker_result_invalid,
    Code.WORKER_BLOCKED: _worker_reported,
    Code.WORKER_FAILED: _worker_reported,
    Code.VALIDATION_UNAVAILABLE: _validation_unavailable,
}
"""The detail builder of each code a Rounds table end row gives (seed 000 "Errors"); the
backend's own process failure code (its profile's: claude_failed, pi_failed) is told by its
causes, the agent process's link."""


def end_link(
    links: LinkContext,
    state: RunState,
    step: End,
    facts: RoundFacts,
    answer: ValidationOutcome | None,
    raised: str | None,
) -> ErrorLink | None:
    """The link of the Rounds table's end row, None for an ok end. A code the round validation
    names (in Concorde also audit_violation) takes the validation's detail and causes, whatever
    the code is called."""
    if step.code is None:
        return None
    build = _DETAILS.get(step.code) if isinstance(step.code, Code) else None
    if build is None and step.causes is Causes.AGENT_PROCESS:
        build = _process_failed  # the backend's process failure code, whatever its profile's
    if step.causes is Causes.VALIDATION or build is None:
        return _validation_link(links, state, step, answer, links.evidence(state, state.rounds[-1]))
    return build(_Ending(links, state, step, facts, answer, raised))


def _validation_link(
    links: LinkContext,
    state: RunState,
    step: End,
    answer: ValidationOutcome | None,
    evidence: list[Evidence],
) -> ErrorLink:
    """A code the round validation names (violation, unavailable, a repair failing the run)."""
    assert step.code is not None
    coded = answer.coded() if answer else None
    n = state.rounds[-1].number
    said = coded.detail if coded and coded.detail else ""
    attempts: list[str] = []
    if answer is not None and answer.repair is not None:
        attempts = [
            f"round {r.number}: repair asked: {r.validation}"
            for r in state.rounds
            if r.validation not in (None, "clean")
        ]
        detail = (
            f"round {n}: still to repair after {len(state.rounds)} round(s): "
            f"{answer.repair}" + (f"; {said}" if said else "")
        )
    elif answer is not None and answer.violation is not None:
        detail = f"round {n}: the round validation reports a violation: {said or step.code}"
    else:
        detail = f"round {n}: the round validation could not validate: {said or step.code}"
    return links.link(
        step.code,
        detail,
        evidence,
        attempts=attempts,
        causes=list(coded.causes) if coded else [],
        reason=step.reason,
    )


def state_result_status(round_state: RoundState, facts: RoundFacts) -> str | None:
    return facts.result_status.value if facts.result_status is not None else None


def _worker_causes(state: RunState, round_state: RoundState) -> list[ErrorLink]:
    error = state.worker_result.error if state.worker_result is not None else None
    if round_state.result_problem is None and error is not None:
        return [worker_link(error, state.run_id, state.session)]
    return []


def deletion_link(
    links: LinkContext,
    deletions: DeletionOutcome,
    cause: ErrorLink | None,
    state: RunState | None = None,
) -> ErrorLink:
    return links.link(
        Code.DELETION_FAILED,
        describe_outcome(deletions),
        links.evidence(state),
        causes=[cause] if cause else [],
    )


def cleanup_link(
    links: LinkContext,
    cleaned: CleanupOutcome,
    cause: ErrorLink | None,
    state: RunState | None = None,
) -> ErrorLink:
    parts = []
    if not cleaned.transcript_kept and cleaned.transcript_error:
        parts.append(f"the transcript could not be kept: {cleaned.transcript_error}")
    if cleaned.remains:
        parts.append(
            "the runtime directory could not be removed; what remains: "
            + ", ".join(cleaned.remains)
        )
    parts += list(cleaned.errors)
    kept = state if state is not None and state.transcript_kept else None
    return links.link(
        Code.CLEANUP_FAILED,
        "; ".join(parts) or "the cleanup failed",
        links.evidence(kept),
        causes=[cause] if cause else [],
    )


__all__ = ["RoundEnding"]
