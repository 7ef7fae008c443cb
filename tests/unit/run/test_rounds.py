"""Seed 000 "Rounds": the table as data, one case per row in the spec's order, and precedence."""

from __future__ import annotations

from typing import Any

import pytest

from concorde_workers.container import PROFILES
from concorde_workers.domain.configuration.request import Backend
from concorde_workers.domain.ground.errors import Reason
from concorde_workers.domain.run.audit import Verdict
from concorde_workers.domain.run.rounds import (
    ROWS,
    Causes,
    End,
    Resume,
    Retry,
    RoundEnding,
    RoundFacts,
    Step,
    ValidationAnswer,
    WorkerStatus,
    deletions_allowed,
    matching_row,
    should_validate,
)
from concorde_workers.domain.run.rounds import (
    next_step as step_after,
)

CLEAN, VIOLATION = Verdict.CLEAN, Verdict.VIOLATION
OK, BLOCKED, FAILED = WorkerStatus.OK, WorkerStatus.BLOCKED, WorkerStatus.FAILED
A = ValidationAnswer


def next_step(facts: RoundFacts, backend: Backend) -> Step:
    """The step after a round of `backend`, whose profile gives its program's failure code."""
    return step_after(facts, PROFILES[backend].failure_code)


def facts(**changes: Any) -> RoundFacts:
    """An ok round with a clean audit and a valid ok result, no validation, changed by `changes`."""
    base: dict[str, Any] = {
        "ending": RoundEnding.OK,
        "audit": CLEAN,
        "result_valid": True,
        "result_status": OK,
        "resume_rounds_left": 3,
        "retries_left": 5,
        "session_named": True,
    }
    base.update(changes)
    if base["result_status"] is None:
        base["result_valid"] = False
    return RoundFacts(**base)


def validated(answer: ValidationAnswer, **changes: Any) -> RoundFacts:
    extra: dict[str, Any] = {"validation_given": True, "validation": answer}
    if answer in (A.REPAIR, A.REPAIR_FAILS_RUN):
        extra["repair"] = "fix tests/test_x.py: 2 failures"
    if answer in (A.UNAVAILABLE, A.VIOLATION, A.REPAIR_FAILS_RUN):
        extra["validation_code"] = {
            A.UNAVAILABLE: "checks_unavailable",
            A.VIOLATION: "audit_violation",
            A.REPAIR_FAILS_RUN: "checks_failed",
        }[answer]
    return facts(**extra, **changes)


def failed(code: str, reason: Reason, causes: Causes = Causes.NONE, names: bool = False) -> End:
    return End(status=FAILED, code=code, reason=reason, causes=causes, names_audit_violations=names)


TRANSIENT = {"ending": RoundEnding.TRANSIENT_ERROR, "result_status": None}

# One case per row of ROWS, in order: the facts, the backend and the step the row gives.
ROW_CASES: list[tuple[RoundFacts, Backend, Step]] = [
    (
        facts(ending=RoundEnding.NOT_STARTED, audit=None, result_status=None),
        "claude",
        failed("launch_failed", Reason.ENVIRONMENT),
    ),
    (facts(**TRANSIENT), "claude", Retry(with_brief=False)),
    (
        facts(ending=RoundEnding.TIMEOUT),
        "pi",
        failed("worker_timeout", Reason.EXHAUSTED, names=True),
    ),
    (
        facts(ending=RoundEnding.LIMIT_REACHED, result_status=None),
        "claude",
        failed("worker_limit_reached", Reason.EXHAUSTED, Causes.AGENT_PROCESS, True),
    ),
    (
        facts(**TRANSIENT, retries_left=0),
        "pi",
        failed("pi_failed", Reason.EXHAUSTED, Causes.AGENT_PROCESS, True),
    ),
    (
        facts(ending=RoundEnding.PROCESS_FAILED, result_status=None),
        "claude",
        failed("claude_failed", Reason.ENVIRONMENT, Causes.AGENT_PROCESS, True),
    ),
    (
        facts(audit=VIOLATION),
        "claude",
        failed("audit_violation", Reason.PERMISSION, Causes.WORKER_ERROR, True),
    ),
    (facts(result_status=None), "claude", failed("worker_result_invalid", Reason.CAPABILITY)),
    (
        facts(result_status=BLOCKED),
        "claude",
        End(status=BLOCKED, code="worker_blocked", reason=Reason.CAPABILITY, causes=Causes.WORKER),
    ),
    (facts(), "claude", End(status=OK)),
    (validated(A.RAISED), "claude", failed("validation_unavailable", Reason.CAPABILITY)),
    (
        validated(A.UNAVAILABLE),
        "claude",
        failed("checks_unavailable", Reason.ENVIRONMENT, Causes.VALIDATION),
    ),
    (
        validated(A.VIOLATION),
        "claude",
        failed("audit_violation", Reason.PERMISSION, Causes.VALIDATION),
    ),
    (validated(A.NOTHING_TO_REPAIR), "claude", End(status=OK)),
    (validated(A.REPAIR), "claude", Resume(repair="fix tests/test_x.py: 2 failures")),
    (
        validated(A.REPAIR_FAILS_RUN, resume_rounds_left=0),
        "claude",
        failed("checks_failed", Reason.EXHAUSTED, Causes.VALIDATION),
    ),
    (validated(A.REPAIR, resume_rounds_left=0), "claude", End(status=OK)),
]


def test_every_row_has_one_case() -> None:
    assert len(ROW_CASES) == len(ROWS)


@pytest.mark.parametrize(
    ("index", "case"), list(enumerate(ROW_CASES)), ids=[row.text for row in ROWS]
)
def test_each_row_of_the_table(index: int, case: tuple[RoundFacts, Backend, Step]) -> None:
    given, backend, expected = case
    assert matching_row(given) is ROWS[index]
    assert next_step(given, backend) == expected


@pytest.mark.parametrize(("backend", "code"), [("claude", "claude_failed"), ("pi", "pi_failed")])
def test_the_process_failure_code_is_the_backend_s(backend: Backend, code: str) -> None:
    step = next_step(facts(ending=RoundEnding.PROCESS_FAILED), backend)
    assert isinstance(step, End) and step.code == code


def test_a_failed_worker_ends_failed() -> None:
    step = next_step(facts(result_status=FAILED), "pi")
    assert step == End(
        status=FAILED, code="worker_failed", reason=Reason.CAPABILITY, causes=Causes.WORKER
    )


# Precedence: the rows are tried in order.


def test_a_timeout_with_a_violation_ends_worker_timeout_naming_the_violation() -> None:
    step = next_step(facts(ending=RoundEnding.TIMEOUT, audit=VIOLATION), "claude")
    assert step == failed("worker_timeout", Reason.EXHAUSTED, names=True)


def test_a_process_failure_after_a_valid_result_ends_with_the_process_code() -> None:
    step = next_step(facts(ending=RoundEnding.PROCESS_FAILED, result_status=OK), "claude")
    assert isinstance(step, End) and step.code == "claude_failed"


@pytest.mark.req("A violation is never retried")
@pytest.mark.parametrize(
    "given",
    [
        facts(audit=VIOLATION),
        facts(audit=VIOLATION, result_status=None),
        facts(audit=VIOLATION, result_status=BLOCKED),
        facts(audit=VIOLATION, resume_rounds_left=9, retries_left=9),
    ],
)
def test_a_violation_with_any_result_ends_audit_violation(given: RoundFacts) -> None:
    step = next_step(given, "claude")
    assert isinstance(step, End)
    assert (step.status, step.code, step.reason) == (FAILED, "audit_violation", Reason.PERMISSION)


@pytest.mark.req("A violation is never retried")
def test_a_transient_error_with_a_violation_is_not_retried() -> None:
    step = next_step(facts(**TRANSIENT, audit=VIOLATION), "claude")
    assert step == failed("claude_failed", Reason.ENVIRONMENT, Causes.AGENT_PROCESS, True)


@pytest.mark.req("A violation is never retried")
def test_the_validation_is_never_called_after_a_violation() -> None:
    given = facts(audit=VIOLATION, validation_given=True)
    assert not should_validate(given)
    answered = facts(audit=VIOLATION, validation_given=True, validation=A.NOTHING_TO_REPAIR)
    with pytest.raises(ValueError, match="must not be called"):
        next_step(answered, "claude")


@pytest.mark.req("A transient model-service error is retried")
@pytest.mark.parametrize(
    ("session", "unchanged", "with_brief"),
    [
        (True, False, False),
        (True, True, False),
        (False, True, True),
    ],
)
def test_a_transient_error_is_retried(session: bool, unchanged: bool, with_brief: bool) -> None:
    given = facts(**TRANSIENT, session_named=session, worktree_unchanged=unchanged)
    assert next_step(given, "pi") == Retry(with_brief=with_brief)


@pytest.mark.req("Any other error ends the run at once")
@pytest.mark.parametrize(
    ("why", "given", "code"),
    [
        ("a valid result", facts(**{**TRANSIENT, "result_status": OK}), "claude_failed"),
        ("no session and changes", facts(**TRANSIENT, session_named=False), "claude_failed"),
        ("a timeout", facts(ending=RoundEnding.TIMEOUT, result_status=None), "worker_timeout"),
        (
            "a limit",
            facts(ending=RoundEnding.LIMIT_REACHED, result_status=None),
            "worker_limit_reached",
        ),
        (
            "another process error",
            facts(ending=RoundEnding.PROCESS_FAILED, result_status=None),
            "claude_failed",
        ),
        ("a violation", facts(**TRANSIENT, audit=VIOLATION), "claude_failed"),
    ],
)
def test_any_other_error_is_not_retried(why: str, given: RoundFacts, code: str) -> None:
    step = next_step(given, "claude")
    assert isinstance(step, End), why
    assert step.code == code and step.status is FAILED
    assert step.reason is not Reason.EXHAUSTED or code != "claude_failed"


@pytest.mark.req("A run has at most its configured retry rounds")
def test_no_retry_when_the_retries_are_used_up() -> None:
    step = next_step(facts(**TRANSIENT, retries_left=0, resume_rounds_left=3), "claude")
    assert step == failed("claude_failed", Reason.EXHAUSTED, Causes.AGENT_PROCESS, True)


@pytest.mark.req("A run has at most its configured retry rounds")
def test_retries_are_counted_apart_from_resume_rounds() -> None:
    assert next_step(facts(**TRANSIENT, retries_left=1, resume_rounds_left=0), "pi") == Retry(
        with_brief=False
    )
    assert isinstance(next_step(validated(A.REPAIR, retries_left=0), "pi"), Resume)


@pytest.mark.req("A run has at most its configured resume rounds")
@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (A.REPAIR, End(status=OK)),
        (A.REPAIR_FAILS_RUN, failed("checks_failed", Reason.EXHAUSTED, Causes.VALIDATION)),
    ],
)
def test_no_resume_round_when_none_is_left(answer: ValidationAnswer, expected: End) -> None:
    assert next_step(validated(answer, resume_rounds_left=0), "claude") == expected


@pytest.mark.req("A run has at most its configured resume rounds")
def test_a_run_resumes_exactly_its_configured_rounds() -> None:
    limit, resumed = 3, 0
    while True:
        step = next_step(validated(A.REPAIR_FAILS_RUN, resume_rounds_left=limit - resumed), "pi")
        if not isinstance(step, Resume):
            break
        resumed += 1
    assert resumed == limit
    assert isinstance(step, End) and step.code == "checks_failed"


@pytest.mark.req("Rounds only repair what the round validation reports")
@pytest.mark.parametrize(
    "given",
    [
        facts(),
        facts(result_status=BLOCKED),
        facts(result_status=FAILED),
        facts(result_status=None),
        facts(audit=VIOLATION),
        facts(ending=RoundEnding.TIMEOUT),
        facts(**TRANSIENT, retries_left=0),
        validated(A.NOTHING_TO_REPAIR),
        validated(A.RAISED),
        validated(A.UNAVAILABLE),
        validated(A.VIOLATION),
    ],
)
def test_only_a_reported_repair_resumes(given: RoundFacts) -> None:
    assert not isinstance(next_step(given, "claude"), Resume)


@pytest.mark.req("Rounds only repair what the round validation reports")
def test_the_resume_prompt_is_the_repair_text() -> None:
    step = next_step(validated(A.REPAIR_FAILS_RUN), "claude")
    assert step == Resume(repair="fix tests/test_x.py: 2 failures")


@pytest.mark.req("The round validation follows every clean ok round")
@pytest.mark.parametrize(
    ("given", "called"),
    [
        (facts(validation_given=True), True),
        (facts(validation_given=False), False),
        (facts(validation_given=True, audit=VIOLATION), False),
        (facts(validation_given=True, result_status=None), False),
        (facts(validation_given=True, result_status=BLOCKED), False),
        (facts(validation_given=True, result_status=FAILED), False),
        (facts(validation_given=True, ending=RoundEnding.TIMEOUT), False),
        (facts(validation_given=True, ending=RoundEnding.PROCESS_FAILED), False),
        (facts(validation_given=True, **TRANSIENT), False),
    ],
)
def test_the_validation_is_called_after_clean_ok_rounds_only(
    given: RoundFacts, called: bool
) -> None:
    assert should_validate(given) is called


def test_a_given_validation_must_answer_before_deciding() -> None:
    with pytest.raises(ValueError, match="must be called"):
        next_step(facts(validation_given=True), "claude")


@pytest.mark.req("Every round is audited")
def test_a_round_that_started_has_an_audit() -> None:
    with pytest.raises(ValueError, match="audited"):
        facts(audit=None)
    with pytest.raises(ValueError, match="audited"):
        facts(ending=RoundEnding.NOT_STARTED, result_status=None)


@pytest.mark.parametrize(
    "bad",
    [
        {"result_valid": True, "result_status": None},
        {"result_valid": False},
        {"validation": A.NOTHING_TO_REPAIR},
        {"validation_given": True, "validation": A.REPAIR},
        {"validation_given": True, "validation": A.VIOLATION},
        {"retries_left": -1},
    ],
)
def test_inconsistent_facts_are_refused(bad: dict[str, Any]) -> None:
    base: dict[str, Any] = {
        "ending": RoundEnding.OK,
        "audit": CLEAN,
        "result_valid": True,
        "result_status": OK,
    }
    with pytest.raises(ValueError):
        RoundFacts(**{**base, **bad})


@pytest.mark.req("Proposed deletions follow every clean last round")
@pytest.mark.parametrize(
    ("why", "last", "interrupted", "allowed"),
    [
        ("ok run", facts(), False, True),
        ("blocked worker", facts(result_status=BLOCKED), False, True),
        ("failed worker", facts(result_status=FAILED), False, True),
        ("timed out after the result", facts(ending=RoundEnding.TIMEOUT), False, True),
        ("process failed after the result", facts(ending=RoundEnding.PROCESS_FAILED), False, True),
        (
            "validation failed the run",
            validated(A.REPAIR_FAILS_RUN, resume_rounds_left=0),
            False,
            True,
        ),
        ("validation unavailable", validated(A.UNAVAILABLE), False, True),
        ("validation raised", validated(A.RAISED), False, True),
        ("validation violation", validated(A.VIOLATION), False, False),
        ("audit violation", facts(audit=VIOLATION), False, False),
        ("invalid result", facts(result_status=None), False, False),
        (
            "could not start",
            facts(ending=RoundEnding.NOT_STARTED, audit=None, result_status=None),
            False,
            False,
        ),
        ("interrupted", facts(), True, False),
    ],
)
def test_deletions_follow_a_clean_last_round_with_a_valid_result(
    why: str,
    last: RoundFacts,
    interrupted: bool,
    allowed: bool,
) -> None:
    assert deletions_allowed(last, interrupted) is allowed, why


@pytest.mark.req("Only the host deletes")
def test_no_deletion_after_a_violation() -> None:
    assert not deletions_allowed(facts(audit=VIOLATION), interrupted=False)


def test_row_texts_are_unique_and_follow_the_spec_order() -> None:
    texts = [row.text for row in ROWS]
    assert len(set(texts)) == len(texts)
    order = [
        "transient",
        "timed out",
        "audit violation",
        "invalid result",
        "blocked or failed",
        "no round validation given",
        "raises",
        "answers unavailable",
        "answers a violation",
        "nothing to repair",
        "a repair, rounds left",
        "a repair that fails the run",
        "a repair that does not fail the run",
    ]
    positions = [next(i for i, t in enumerate(texts) if key in t) for key in order]
    assert positions == sorted(positions)
