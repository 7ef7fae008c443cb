"""What follows a round: seed 000 "Rounds" as data, tried in the spec's order.

The application gathers a round's facts (how it ended, its audit, the worker result, the round
validation's answer, what is left) into a `RoundFacts`, calls the round validation only when
`should_validate` says so, and asks `next_step` for a `Retry`, a `Resume` or an `End`. Each row
of `ROWS` carries the spec's row text, so the tests name their cases by it.

One row lies outside the spec's table and comes first: a round whose command could not be started
has no audit (seed 000 "Audit": audit null) and ends failed with launch_failed (seed 000 "Errors").
The spec's second row is split by its own words, in its order: a timeout, a limit, the retries
used up (reason exhausted, seed 000 "Retries"), any other agent process failure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, model_validator

from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.ground.errors import LinkCode, Reason
from concorde_workers.domain.run.audit import Verdict


class RoundEnding(StrEnum):
    """How the agent process ended the round."""

    OK = "ok"
    TRANSIENT_ERROR = "transient model-service error"
    TIMEOUT = "timeout"
    PROCESS_FAILED = "agent process failed"
    LIMIT_REACHED = "limit reached"
    NOT_STARTED = "could not start"


class WorkerStatus(StrEnum):
    OK = "ok"
    BLOCKED = "blocked"
    FAILED = "failed"


class ValidationAnswer(StrEnum):
    """What the round validation answered (seed 000 "Round validation")."""

    RAISED = "raised instead of answering"
    UNAVAILABLE = "unavailable"
    VIOLATION = "violation"
    NOTHING_TO_REPAIR = "nothing to repair"
    REPAIR_FAILS_RUN = "a repair that fails the run"
    REPAIR = "a repair that does not fail the run"


REPAIRS = frozenset({ValidationAnswer.REPAIR_FAILS_RUN, ValidationAnswer.REPAIR})
CODED_ANSWERS = frozenset(
    {ValidationAnswer.UNAVAILABLE, ValidationAnswer.VIOLATION, ValidationAnswer.REPAIR_FAILS_RUN}
)


class RoundFacts(BaseModel):
    """Everything `next_step` decides on, as the application observed it after a round."""

    model_config = ConfigDict(frozen=True)

    ending: RoundEnding
    audit: Verdict | None
    result_valid: bool
    result_status: WorkerStatus | None = None
    validation_given: bool = False
    validation: ValidationAnswer | None = None
    validation_code: str | None = None
    repair: str | None = None
    resume_rounds_left: int = 0
    retries_left: int = 0
    session_named: bool = False
    worktree_unchanged: bool = False

    @model_validator(mode="after")
    def _consistent(self) -> RoundFacts:
        if self.result_valid != (self.result_status is not None):
            raise ValueError("a valid worker result has a status, and only a valid one")
        if (self.audit is None) != (self.ending is RoundEnding.NOT_STARTED):
            raise ValueError("every round that started is audited, and only such a round")
        if self.validation is not None and not self.validation_given:
            raise ValueError("a validation answer needs a round validation")
        if self.validation in REPAIRS and not self.repair:
            raise ValueError("a repair answer names what to repair")
        if self.validation in CODED_ANSWERS and not self.validation_code:
            raise ValueError(f"the answer {self.validation} names its code")
        if self.resume_rounds_left < 0 or self.retries_left < 0:
            raise ValueError("rounds left are never negative")
        return self

    @property
    def clean(self) -> bool:
        return self.audit is Verdict.CLEAN

    @property
    def worker_ok(self) -> bool:
        return self.result_status is WorkerStatus.OK


class Causes(StrEnum):
    """Which side supplies the causes of the run's error link (seed 000 "Errors")."""

    NONE = "none"
    AGENT_PROCESS = "the agent process's link"
    WORKER = "the worker's link"
    WORKER_ERROR = "the worker's link when its valid result carries an error"
    VALIDATION = "the links the round validation names"


class Retry(BaseModel):
    """Start a retry round; with no session to continue (and nothing changed) it takes the brief."""

    model_config = ConfigDict(frozen=True)

    with_brief: bool


class Resume(BaseModel):
    """Start a resume round whose prompt is the round validation's repair text."""

    model_config = ConfigDict(frozen=True)

    repair: str


class End(BaseModel):
    """End the run: its status, Workers' code and reason (None for ok) and the causes' side."""

    model_config = ConfigDict(frozen=True)

    status: WorkerStatus
    code: LinkCode | None = None
    """One of Workers' codes, or the code the round validation names."""
    reason: Reason | None = None
    causes: Causes = Causes.NONE
    names_audit_violations: bool = False


Step = Retry | Resume | End


@dataclass(frozen=True)
class Row:
    """One row of the Rounds table: the spec's text, when it applies and the step it gives."""

    text: str
    applies: Callable[[RoundFacts], bool]
    step: Callable[[RoundFacts, Code], Step]


def _failed(
    code: LinkCode | None,
    reason: Reason,
    causes: Causes = Causes.NONE,
    names_violations: bool = False,
) -> End:
    return End(
        status=WorkerStatus.FAILED,
        code=code,
        reason=reason,
        causes=causes,
        names_audit_violations=names_violations,
    )


def _process_failed(reason: Reason) -> Callable[[RoundFacts, Code], Step]:
    def step(_: RoundFacts, failure_code: Code) -> Step:
        return _failed(failure_code, reason, Causes.AGENT_PROCESS, True)

    return step


def _can_retry(f: RoundFacts) -> bool:
    return (
        f.ending is RoundEnding.TRANSIENT_ERROR
        and f.clean
        and not f.result_valid
        and (f.session_named or f.worktree_unchanged)
    )


def _validated(f: RoundFacts, *answers: ValidationAnswer) -> bool:
    return f.validation in answers


_WORKER_CODES = {WorkerStatus.BLOCKED: Code.WORKER_BLOCKED, WorkerStatus.FAILED: Code.WORKER_FAILED}


def _worker_end(f: RoundFacts, _: Code) -> Step:
    assert f.result_status is not None
    return End(
        status=f.result_status,
        code=_WORKER_CODES[f.result_status],
        reason=Reason.CAPABILITY,
        causes=Causes.WORKER,
    )


def _validation_end(reason: Reason) -> Callable[[RoundFacts, Code], Step]:
    def step(f: RoundFacts, _: Code) -> Step:
        return _failed(f.validation_code, reason, Causes.VALIDATION)

    return step


def _resume(f: RoundFacts, _: Code) -> Step:
    assert f.repair is not None
    return Resume(repair=f.repair)


def _ok(_: RoundFacts, __: Code) -> Step:
    return End(status=WorkerStatus.OK)


_ENDED_BY_PROCESS = (RoundEnding.TRANSIENT_ERROR, RoundEnding.PROCESS_FAILED)
_TIMEOUT_ROW = (
    "the round timed out, or the agent process failed or reached a limit | not called"
    " | end failed with worker_timeout, worker_limit_reached or the backend's process"
    " failure code, naming any audit violation in its detail"
)

ROWS: tuple[Row, ...] = (
    Row(
        "(beyond the table) the round's command could not be started | not called"
        " | end failed with launch_failed",
        lambda f: f.ending is RoundEnding.NOT_STARTED,
        lambda f, b: _failed(Code.LAUNCH_FAILED, Reason.ENVIRONMENT),
    ),
    Row(
        "the agent process ended with a transient model-service error, audit clean, no valid"
        " result, retries left | not called | retry round",
        lambda f: _can_retry(f) and f.retries_left > 0,
        lambda f, b: Retry(with_brief=not f.session_named),
    ),
    Row(
        _TIMEOUT_ROW + ": worker_timeout",
        lambda f: f.ending is RoundEnding.TIMEOUT,
        lambda f, b: _failed(Code.WORKER_TIMEOUT, Reason.EXHAUSTED, names_violations=True),
    ),
    Row(
        _TIMEOUT_ROW + ": worker_limit_reached",
        lambda f: f.ending is RoundEnding.LIMIT_REACHED,
        lambda f, b: _failed(
            Code.WORKER_LIMIT_REACHED, Reason.EXHAUSTED, Causes.AGENT_PROCESS, True
        ),
    ),
    Row(
        _TIMEOUT_ROW + ": the retries used up, the process failure code with reason exhausted",
        lambda f: _can_retry(f) and f.retries_left == 0,
        _process_failed(Reason.EXHAUSTED),
    ),
    Row(
        _TIMEOUT_ROW + ": the process failure code",
        lambda f: f.ending in _ENDED_BY_PROCESS,
        _process_failed(Reason.ENVIRONMENT),
    ),
    Row(
        "audit violation, whatever the result | not called | end failed with audit_violation",
        lambda f: f.audit is Verdict.VIOLATION,
        lambda f, b: _failed(Code.AUDIT_VIOLATION, Reason.PERMISSION, Causes.WORKER_ERROR, True),
    ),
    Row(
        "invalid result, audit clean | not called | end failed with worker_result_invalid",
        lambda f: not f.result_valid,
        lambda f, b: _failed(Code.WORKER_RESULT_INVALID, Reason.CAPABILITY),
    ),
    Row(
        "blocked or failed, audit clean | not called | end with the worker's status and"
        " worker_blocked or worker_failed",
        lambda f: not f.worker_ok,
        _worker_end,
    ),
    Row(
        "ok, audit clean, no round validation given | — | end ok",
        lambda f: not f.validation_given,
        _ok,
    ),
    Row(
        "ok, audit clean | raises instead of answering | end failed with validation_unavailable",
        lambda f: _validated(f, ValidationAnswer.RAISED),
        lambda f, b: _failed(Code.VALIDATION_UNAVAILABLE, Reason.CAPABILITY),
    ),
    Row(
        "ok, audit clean | answers unavailable | end failed with the code and causes it names,"
        " reason environment",
        lambda f: _validated(f, ValidationAnswer.UNAVAILABLE),
        _validation_end(Reason.ENVIRONMENT),
    ),
    Row(
        "ok, audit clean | answers a violation | end failed with the code and causes it names,"
        " reason permission",
        lambda f: _validated(f, ValidationAnswer.VIOLATION),
        _validation_end(Reason.PERMISSION),
    ),
    Row(
        "ok, audit clean | nothing to repair | end ok",
        lambda f: _validated(f, ValidationAnswer.NOTHING_TO_REPAIR),
        _ok,
    ),
    Row(
        "ok, audit clean | a repair, rounds left | resume round",
        lambda f: f.validation in REPAIRS and f.resume_rounds_left > 0,
        _resume,
    ),
    Row(
        "ok, audit clean | a repair that fails the run, no rounds left | end failed with the code"
        " and causes it names, reason exhausted",
        lambda f: _validated(f, ValidationAnswer.REPAIR_FAILS_RUN),
        _validation_end(Reason.EXHAUSTED),
    ),
    Row(
        "ok, audit clean | a repair that does not fail the run, no rounds left | end ok; the"
        " caller judges the result",
        lambda f: _validated(f, ValidationAnswer.REPAIR),
        _ok,
    ),
)


def matching_row(facts: RoundFacts) -> Row:
    """The first row of `ROWS` that applies to the facts."""
    for row in ROWS:
        if row.applies(facts):
            return row
    raise ValueError(
        "no row of the Rounds table applies: a given round validation must be "
        f"called after an ok round with a clean audit before deciding ({facts!r})"
    )


def next_step(facts: RoundFacts, failure_code: Code) -> Step:
    """Seed 000 "Rounds": the step after a round, from the first row that applies;
    `failure_code` is the backend's for its program's failure (its profile's)."""
    if facts.validation is not None and not should_validate(facts):
        raise ValueError("the round validation answered for a round it must not be called after")
    return matching_row(facts).step(facts, failure_code)


def should_validate(facts: RoundFacts) -> bool:
    """Seed 000 "Round validation": called once after every round whose worker ended ok with a
    clean audit (agent process ended ok, valid ok result), and after no other round."""
    return (
        facts.validation_given
        and facts.ending is RoundEnding.OK
        and facts.clean
        and facts.result_valid
        and facts.worker_ok
    )


def deletions_allowed(last_round: RoundFacts, interrupted: bool) -> bool:
    """Seed 000 "Proposed deletions": performed after the last round, whatever the run's outcome,
    when its audit was clean, its worker returned a valid result, the round validation did not
    answer a violation and the run was not interrupted."""
    return (
        last_round.clean
        and last_round.result_valid
        and last_round.validation is not ValidationAnswer.VIOLATION
        and not interrupted
    )
