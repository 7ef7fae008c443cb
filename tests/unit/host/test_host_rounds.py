"""Seed 000 "Rounds", "Retries" and "Errors", end to end through WorkerHost over the fakes.

One test per row of the Rounds table (the row's text is the test id), then every code of the
Errors table the host can end with: its exact reason, a detail naming the round, paths and
messages, the evidence (the run's trace node with its folder, the transcript once a session
exists, `violation: <path>` audit lines), the causes and the attempts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from fakes.agent import Round
from fakes.agent_stream import error_line, result_line, session_line
from fakes.host_world import (
    RUN_ID,
    TRACE_PARENT,
    HostWorld,
    ok_result,
    worker_error_result,
    write_file,
)
from fakes.world import WORKTREE

from concorde_workers.application.runtime.cancellation import Cancellation
from concorde_workers.application.runtime.validation import (
    LinkAnswer,
    ValidationInput,
    ValidationOutcome,
)
from concorde_workers.domain.evidence.records import RunRecord
from concorde_workers.domain.ground.errors import ErrorLink, Evidence, Reason, Refusal

RUN_DIR = f"{TRACE_PARENT}/workers/{RUN_ID}"
TRANSCRIPT = f"{RUN_DIR}/transcript.jsonl"
TRACE = Evidence(kind="trace", ref=RUN_ID, detail=RUN_DIR)


def transcript_evidence(session: str = "s-1") -> Evidence:
    return Evidence(
        kind="transcript",
        ref=TRANSCRIPT,
        detail=f"the latest session's transcript (session {session})",
    )


def audit_line(n: int, path: str) -> Evidence:
    return Evidence(kind="audit", ref=str(n), detail=f"violation: {path}")


@dataclass
class CheckLink:
    code: str
    reason: str
    detail: Sequence[str] = ()
    evidence: Sequence[Evidence] = (TRACE,)
    causes: Sequence[tuple[str, str]] = ()  # (level, code)
    attempts: Sequence[str] = ()
    task_type: str = "implement"


def assert_link(record: RunRecord, want: CheckLink) -> ErrorLink:
    """Workers' link: level, actor, code, reason, the detail's every part, evidence, causes."""
    link = record.error
    assert link is not None, "a run that does not end ok has an error"
    actor = f"Workers run {RUN_ID} ({want.task_type} worker)"
    assert (link.level, link.actor, link.code) == ("workers", actor, want.code)
    assert link.unhandled.reason.value == want.reason
    for part in want.detail:
        assert part in link.detail, f"{part!r} not in the detail {link.detail!r}"
    assert list(link.evidence) == list(want.evidence)
    assert [(c.level, c.code) for c in link.causes] == list(want.causes)
    assert list(link.attempts) == list(want.attempts)
    return link


class Validator:
    """A round validation answering from a script (the last answer repeats); records calls."""

    def __init__(self, *answers: ValidationOutcome | Exception) -> None:
        self.answers = list(answers) or [ValidationOutcome()]
        self.calls: list[ValidationInput] = []

    def __call__(self, given: ValidationInput) -> ValidationOutcome:
        self.calls.append(given)
        answer = self.answers[min(len(self.calls), len(self.answers)) - 1]
        if isinstance(answer, Exception):
            raise answer
        return answer


# --- the Rounds table, row by row --------------------------------------------------------------

REPAIR = "fix tests/test_app.py: 2 failures"
CHECK_LINK = ErrorLink.model_validate(
    {
        "level": "component",
        "actor": "Check execution",
        "code": "check_failed",
        "detail": "pytest exited 1",
        "unhandled": {"reason": "capability", "explanation": "x"},
    }
)


@dataclass
class Row:
    rounds: Callable[[HostWorld], list[Round]]
    validator: Validator | None = None
    limits: dict[str, Any] = field(default_factory=dict)
    status: str = "ok"
    link: CheckLink | None = None
    prompts: Sequence[str] = ("initial",)
    validated: int = 0


ROWS: list[Any] = [
    pytest.param(
        Row(lambda w: [Round.transient(), Round.ok(ok_result())], prompts=("initial", "retry")),
        id="transient model-service error, audit clean, no valid result, retries left"
        " | not called | retry round",
    ),
    pytest.param(
        Row(
            lambda w: [Round.timeout(transcript="s-1")],
            limits={"timeout_seconds": 60},
            status="failed",
            link=CheckLink(
                "worker_timeout",
                "exhausted",
                ("round 1", "timed out after 60 seconds"),
                (TRACE, transcript_evidence()),
            ),
        ),
        id="the round timed out | not called | end failed with worker_timeout",
    ),
    pytest.param(
        Row(
            lambda w: [Round.limit("max_turns", 5, transcript="s-1")],
            status="failed",
            link=CheckLink(
                "worker_limit_reached",
                "exhausted",
                ("round 1", "max_turns", "5"),
                (TRACE, transcript_evidence()),
                (("component", "pi_limit_reached"),),
            ),
        ),
        id="the agent process reached a limit | not called | end failed with worker_limit_reached",
    ),
    pytest.param(
        Row(
            lambda w: [Round.failed("segmentation fault", transcript="s-1")],
            status="failed",
            link=CheckLink(
                "pi_failed",
                "environment",
                ("round 1", "segmentation fault"),
                (TRACE, transcript_evidence()),
                (("component", "pi_error"),),
            ),
        ),
        id="the agent process failed | not called | end failed with the backend's process"
        " failure code",
    ),
    pytest.param(
        Row(
            lambda w: [
                Round.ok(worker_error_result("blocked"), effects=write_file(w, "docs/notes.md"))
            ],
            Validator(),
            status="failed",
            link=CheckLink(
                "audit_violation",
                "permission",
                ("round 1", "docs/notes.md", "reported status blocked"),
                (audit_line(1, "docs/notes.md"), TRACE, transcript_evidence()),
                (("worker", "spec_gap"),),
            ),
        ),
        id="audit violation, whatever the result | not called | end failed with audit_violation",
    ),
    pytest.param(
        Row(
            lambda w: [Round.ok({"status": "ok", "output": {}})],
            Validator(),
            status="failed",
            link=CheckLink(
                "worker_result_invalid",
                "capability",
                ("round 1", "summary: Field required"),
                (TRACE, transcript_evidence()),
            ),
        ),
        id="invalid result, audit clean | not called | end failed with worker_result_invalid",
    ),
    pytest.param(
        Row(
            lambda w: [Round.ok(worker_error_result("blocked"))],
            Validator(),
            status="blocked",
            link=CheckLink(
                "worker_blocked",
                "capability",
                ("round 1", "spec_gap", "the spec says nothing about X"),
                (TRACE, transcript_evidence()),
                (("worker", "spec_gap"),),
            ),
        ),
        id="blocked, audit clean | not called | end with the worker's status and worker_blocked",
    ),
    pytest.param(
        Row(
            lambda w: [Round.ok(worker_error_result("failed", "cannot_build"))],
            Validator(),
            status="failed",
            link=CheckLink(
                "worker_failed",
                "capability",
                ("round 1", "cannot_build"),
                (TRACE, transcript_evidence()),
                (("worker", "cannot_build"),),
            ),
        ),
        id="failed, audit clean | not called | end with the worker's status and worker_failed",
    ),
    pytest.param(
        Row(lambda w: [Round.ok(ok_result())]),
        id="ok, audit clean, no round validation given | — | end ok",
    ),
    pytest.param(
        Row(
            lambda w: [Round.ok(ok_result())],
            Validator(RuntimeError("the checks crashed")),
            status="failed",
            validated=1,
            link=CheckLink(
                "validation_unavailable",
                "capability",
                ("round 1", "RuntimeError: the checks crashed"),
                (TRACE, transcript_evidence()),
            ),
        ),
        id="ok, audit clean | raises instead of answering | end failed with validation_unavailable",
    ),
    pytest.param(
        Row(
            lambda w: [Round.ok(ok_result())],
            Validator(
                ValidationOutcome(
                    unavailable=LinkAnswer(
                        "checks_unavailable", (CHECK_LINK,), "the check runner is missing"
                    )
                )
            ),
            status="failed",
            validated=1,
            link=CheckLink(
                "checks_unavailable",
                "environment",
                ("round 1", "the check runner is missing"),
                (TRACE, transcript_evidence()),
                (("component", "check_failed"),),
            ),
        ),
        id="ok, audit clean | answers unavailable | end failed with the code and causes it"
        " names, reason environment",
    ),
    pytest.param(
        Row(
            lambda w: [Round.ok(ok_result())],
            Validator(
                ValidationOutcome(
                    violation=LinkAnswer(
                        "audit_violation", (), "glossary.md#Grant (owner before: a, after: b)"
                    )
                )
            ),
            status="failed",
            validated=1,
            link=CheckLink(
                "audit_violation",
                "permission",
                ("round 1", "glossary.md#Grant (owner before: a, after: b)"),
                (TRACE, transcript_evidence()),
            ),
        ),
        id="ok, audit clean | answers a violation | end failed with the code and causes it"
        " names, reason permission",
    ),
    pytest.param(
        Row(lambda w: [Round.ok(ok_result())], Validator(), validated=1),
        id="ok, audit clean | nothing to repair | end ok",
    ),
    pytest.param(
        Row(
            lambda w: [Round.ok(ok_result()), Round.ok(ok_result())],
            Validator(ValidationOutcome(repair=REPAIR), ValidationOutcome()),
            prompts=("initial", "repair"),
            validated=2,
        ),
        id="ok, audit clean | a repair, rounds left | resume round",
    ),
    pytest.param(
        Row(
            lambda w: [Round.ok(ok_result()), Round.ok(ok_result())],
            Validator(
                ValidationOutcome(
                    repair=REPAIR,
                    failure=LinkAnswer("checks_failed", (CHECK_LINK,), "tests/test_app.py fails"),
                )
            ),
            limits={"rounds": 1},
            status="failed",
            prompts=("initial", "repair"),
            validated=2,
            link=CheckLink(
                "checks_failed",
                "exhausted",
                ("round 2", REPAIR, "2 round(s)", "tests/test_app.py fails"),
                (TRACE, transcript_evidence()),
                (("component", "check_failed"),),
                (f"round 1: repair asked: {REPAIR}", f"round 2: repair asked: {REPAIR}"),
            ),
        ),
        id="ok, audit clean | a repair that fails the run, no rounds left | end failed with"
        " the code and causes it names, reason exhausted",
    ),
    pytest.param(
        Row(
            lambda w: [Round.ok(ok_result())],
            Validator(ValidationOutcome(repair=REPAIR)),
            limits={"rounds": 0},
            validated=1,
        ),
        id="ok, audit clean | a repair that does not fail the run, no rounds left | end ok;"
        " the caller judges the result",
    ),
]


@pytest.mark.req("The round validation follows every clean ok round")
@pytest.mark.req("Rounds only repair what the round validation reports")
@pytest.mark.req("A failed run explains itself")
@pytest.mark.parametrize("row", ROWS)
def test_each_row_of_the_rounds_table(row: Row) -> None:
    world = HostWorld()
    record = world.run(row.rounds(world), row.validator, limits=row.limits)
    assert record.status == row.status
    assert [r.prompt for r in record.rounds] == list(row.prompts)
    assert len(world.runner.starts) == len(row.prompts)
    if row.validator is not None:
        assert len(row.validator.calls) == row.validated
    if row.link is None:
        assert record.error is None
        assert world.run_node()["error"] is None
    else:
        link = assert_link(record, row.link)
        assert world.run_node()["error"] == link.model_dump(mode="json")
    assert world.run_node()["status"] == row.status
    assert world.runtime_dirs() == []


# --- what every ending keeps --------------------------------------------------------------------


@pytest.mark.req("A failed run explains itself")
@pytest.mark.parametrize(
    "rounds",
    [
        pytest.param(
            lambda w: [Round.timeout(transcript="s-1", effects=write_file(w, "README.md"))],
            id="worker_timeout",
        ),
        pytest.param(
            lambda w: [Round.limit(transcript="s-1", effects=write_file(w, "README.md"))],
            id="worker_limit_reached",
        ),
        pytest.param(
            lambda w: [Round.failed("boom", transcript="s-1", effects=write_file(w, "README.md"))],
            id="pi_failed",
        ),
    ],
)
def test_a_round_that_ended_otherwise_names_its_write_outside_rw(
    rounds: Callable[[HostWorld], list[Round]],
) -> None:
    world = HostWorld()
    record = world.run(rounds(world), limits={"timeout_seconds": 60})
    link = record.error
    assert link is not None and link.code != "audit_violation"
    assert "README.md" in link.detail and "outside the grant's writable paths" in link.detail
    assert audit_line(1, "README.md") in link.evidence
    assert record.rounds[0].audit is not None
    assert record.rounds[0].audit.violations == ("README.md",)


@pytest.mark.req("Worker claims stay claims")
@pytest.mark.parametrize(
    "ending",
    [
        pytest.param(
            Round(
                lines=(session_line("s-1"), result_line(ok_result(summary="kept"))),
                hang=True,
                transcript="s-1",
            ),
            id="timed out after the result",
        ),
        pytest.param(
            Round(
                lines=(
                    session_line("s-1"),
                    result_line(ok_result(summary="kept")),
                    error_line("the process crashed"),
                ),
                exit=1,
                transcript="s-1",
            ),
            id="agent process failed after the result",
        ),
    ],
)
def test_a_valid_result_is_kept_whatever_ends_its_round(ending: Round) -> None:
    world = HostWorld()
    record = world.run([ending], limits={"timeout_seconds": 60})
    assert record.status == "failed"
    assert record.worker_result == ok_result(summary="kept")
    assert world.run_node()["content"]["worker_result"] == ok_result(summary="kept")
    # the claim stays apart from what the host observed
    assert record.error is not None and "kept" not in record.error.detail


@pytest.mark.req("Worker claims stay claims")
def test_the_worker_result_is_kept_verbatim_beside_the_audit() -> None:
    world = HostWorld()
    claim = ok_result(summary="I changed nothing outside src/app", output={"n": 1.50})
    record = world.run([Round.ok(claim, effects=write_file(world, "docs/notes.md"))])
    assert record.worker_result == claim
    assert record.rounds[0].audit is not None
    assert record.rounds[0].audit.violations == ("docs/notes.md",)
    assert record.error is not None and record.error.code == "audit_violation"


FINDINGS = {
    "type": "object",
    "required": ["findings"],
    "properties": {
        "findings": {"type": "array", "items": {"type": "string"}},
        "count": {"type": "integer"},
    },
}


@pytest.mark.req("Worker claims stay claims")
def test_an_output_the_callers_schema_refuses_is_an_invalid_result() -> None:
    world = HostWorld()
    record = world.run([Round.ok(ok_result(output={"findings": [1]}))], output_schema=FINDINGS)
    assert_link(
        record,
        CheckLink(
            "worker_result_invalid",
            "capability",
            (
                "round 1: the worker's result is invalid: "
                "output/findings/0: 1 is not of type 'string'",
            ),
            (TRACE, transcript_evidence()),
        ),
    )
    assert record.worker_result is None


@pytest.mark.parametrize(
    "output",
    [
        {"count": "two", "findings": [1]},
        {"findings": [1], "count": "two"},
    ],
)
def test_the_first_output_problem_is_the_same_whatever_the_key_order(
    output: dict[str, Any],
) -> None:
    record = HostWorld().run([Round.ok(ok_result(output=output))], output_schema=FINDINGS)
    assert record.error is not None
    assert record.error.detail.endswith("output/count: 'two' is not of type 'integer'")


def test_an_output_the_callers_schema_accepts_is_kept() -> None:
    claim = ok_result(output={"findings": ["a"], "count": 1})
    record = HostWorld().run([Round.ok(claim)], output_schema=FINDINGS)
    assert record.status == "ok" and record.worker_result == claim


# --- resume rounds ------------------------------------------------------------------------------


@pytest.mark.req("Resume from the newest session")
@pytest.mark.req("Rounds only repair what the round validation reports")
def test_each_resume_round_continues_the_latest_session_with_the_repair_text() -> None:
    world = HostWorld()
    validator = Validator(
        ValidationOutcome(repair="first repair"),
        ValidationOutcome(repair="second repair"),
        ValidationOutcome(),
    )
    record = world.run(
        [
            Round.ok(ok_result(), session="s-1"),
            Round.ok(ok_result(), session="s-2"),
            Round.ok(ok_result(), session="s-2"),
        ],
        validator,
    )
    assert record.status == "ok"
    starts = world.runner.starts
    assert [(s.argv[1:], s.stdin_text) for s in starts[1:]] == [
        (("repair", "s-1"), "first repair"),
        (("repair", "s-2"), "second repair"),
    ]
    assert starts[0].stdin_text == world.backend.contexts[-1].brief
    assert [r.session for r in record.rounds] == ["s-1", "s-2", "s-2"]


@pytest.mark.req("A run has at most its configured resume rounds")
@pytest.mark.parametrize("resumes", [0, 1, 3])
def test_a_run_starts_at_most_its_configured_resume_rounds(resumes: int) -> None:
    world = HostWorld()
    validator = Validator(ValidationOutcome(repair=REPAIR))
    record = world.run(
        [Round.ok(ok_result())] * (resumes + 1), validator, limits={"rounds": resumes}
    )
    assert [r.prompt for r in record.rounds] == ["initial"] + ["repair"] * resumes
    assert len(world.runner.starts) == resumes + 1
    assert record.status == "ok"  # a repair that does not fail the run: the caller judges


# --- retries ------------------------------------------------------------------------------------


@pytest.mark.req("A transient model-service error is retried")
@pytest.mark.req("Retries wait longer each time")
@pytest.mark.req("Every retry is recorded")
def test_retry_delays_double_with_the_random_factor_and_are_recorded() -> None:
    world = HostWorld()
    world.random.factors.extend([0.5, 1.0, 0.8])
    record = world.run(
        [
            Round.transient("API Error: 529 Overloaded"),
            Round.transient("API Error: 429 Too Many Requests"),
            Round.transient("API Error: 503 Service Unavailable"),
            Round.ok(ok_result()),
        ],
        limits={"retry_delay_seconds": 10},
    )
    assert record.status == "ok"
    assert world.clock.sleeps == [10 * 0.5, 20 * 1.0, 40 * 0.8]
    assert [c for c in world.random.calls if c[0] == "uniform"] == [("uniform", 0.5, 1.0)] * 3
    transients = [world.round_node(n)["content"]["transient"] for n in (1, 2, 3, 4)]
    assert transients == [
        {"error": "API Error: 529 Overloaded", "retried": True, "delay_seconds": 5.0},
        {"error": "API Error: 429 Too Many Requests", "retried": True, "delay_seconds": 20.0},
        {"error": "API Error: 503 Service Unavailable", "retried": True, "delay_seconds": 32.0},
        None,
    ]
    assert [r.transient.delay_seconds if r.transient else None for r in record.rounds] == [
        5.0,
        20.0,
        32.0,
        None,
    ]


@pytest.mark.req("A run has at most its configured retry rounds")
@pytest.mark.req("Every retry is recorded")
@pytest.mark.parametrize(
    "backend,code,process_code",
    [("pi", "pi_failed", "pi_error"), ("claude", "claude_failed", "claude_error")],
)
def test_the_retries_used_up_end_failed_exhausted_with_every_retry_in_attempts(
    backend: str, code: str, process_code: str
) -> None:
    world = HostWorld()
    record = world.run([Round.transient()] * 3, backend=backend, limits={"retries": 2})
    assert len(world.runner.starts) == 3
    assert world.clock.sleeps == [15 * 0.75, 30 * 0.75]
    assert_link(
        record,
        CheckLink(
            code,
            "exhausted",
            ("round 3", "API Error: 529 Overloaded", "used up"),
            (TRACE, transcript_evidence()),
            (("component", process_code),),
            (
                "round 1: API Error: 529 Overloaded; retried after 11.25 s",
                "round 2: API Error: 529 Overloaded; retried after 22.5 s",
            ),
        ),
    )
    last = world.round_node(3)["content"]["transient"]
    assert last == {"error": "API Error: 529 Overloaded", "retried": False, "delay_seconds": None}


@pytest.mark.req("A run has at most its configured retry rounds")
@pytest.mark.req("A run has at most its configured resume rounds")
def test_retries_and_resumes_are_counted_apart() -> None:
    world = HostWorld()
    validator = Validator(ValidationOutcome(repair=REPAIR), ValidationOutcome())
    record = world.run(
        [Round.transient(), Round.ok(ok_result()), Round.transient(), Round.ok(ok_result())],
        validator,
        limits={"rounds": 1, "retries": 1},
    )
    # one retry before the resume, then the retries are used up: counted apart, neither
    # limit spends the other's
    assert [r.prompt for r in record.rounds] == ["initial", "retry", "repair"]
    assert record.error is not None and record.error.code == "pi_failed"
    assert record.error.unhandled.reason.value == "exhausted"


@pytest.mark.req("A retry continues the session")
def test_a_retry_continues_the_session_with_the_retry_prompt() -> None:
    world = HostWorld()
    world.run(
        [
            Round.transient("API Error: 529 Overloaded", session="s-7"),
            Round.ok(ok_result(), session="s-7"),
        ]
    )
    retry = world.runner.starts[1]
    assert retry.argv[1:] == ("retry", "s-7")
    assert retry.stdin_text is not None
    assert "API Error: 529 Overloaded" in retry.stdin_text
    assert retry.stdin_text != world.runner.starts[0].stdin_text


@pytest.mark.req("A retry continues the session")
def test_a_retry_without_a_session_and_without_a_change_starts_with_the_brief() -> None:
    world = HostWorld()
    record = world.run([Round.transient(session=None), Round.ok(ok_result())])
    first, retry = world.runner.starts
    assert retry.argv[1:] == ("retry", "-")
    assert retry.stdin_text == first.stdin_text == world.backend.contexts[-1].brief
    assert record.status == "ok"


@pytest.mark.req("Any other error ends the run at once")
@pytest.mark.req("A violation is never retried")
@pytest.mark.parametrize(
    "first",
    [
        pytest.param(
            lambda w: Round.transient(session=None, effects=write_file(w, "src/app/a.py")),
            id="no session and the worktree changed",
        ),
        pytest.param(
            lambda w: Round.transient(effects=write_file(w, "docs/notes.md")),
            id="a write outside rw",
        ),
        pytest.param(
            lambda w: Round.failed(
                "API Error: quota exceeded for this billing period", transcript="s-1"
            ),
            id="quota",
        ),
        pytest.param(lambda w: Round.timeout(transcript="s-1"), id="timeout"),
        pytest.param(
            lambda w: Round(
                lines=(
                    session_line("s-1"),
                    result_line(ok_result()),
                    error_line("API Error: 529 Overloaded"),
                ),
                exit=1,
                transcript="s-1",
            ),
            id="a valid result",
        ),
    ],
)
def test_what_is_never_retried(first: Callable[[HostWorld], Round]) -> None:
    world = HostWorld()
    record = world.run([first(world), Round.ok(ok_result())], limits={"timeout_seconds": 60})
    assert len(world.runner.starts) == 1
    assert world.clock.sleeps == []
    assert record.status == "failed"
    assert record.rounds[0].transient is None or record.rounds[0].transient.retried is False


@pytest.mark.req("A transient model-service error is retried")
def test_the_progress_file_shows_waiting_before_a_retry_round() -> None:
    world = HostWorld()
    seen: list[tuple[str, int]] = []
    sleep = world.clock.sleep

    def watching(seconds: float, interrupt: Any = None) -> bool:
        status = world.status(f"{TRACE_PARENT}/workers/{RUN_ID}")
        seen.append((status["phase"], status["round"]))
        return sleep(seconds, interrupt)

    world.clock.sleep = watching  # type: ignore[method-assign]
    world.run([Round.transient(), Round.ok(ok_result())])
    assert seen == [("waiting", 1)]


@pytest.mark.req("Every retry is recorded")
def test_a_cancellation_during_the_delay_records_no_retry() -> None:
    world = HostWorld()
    cancel = Cancellation()
    sleep = world.clock.sleep

    def cancelled(seconds: float, interrupt: Any = None) -> bool:
        cancel.cancel("SIGTERM")
        return sleep(seconds, interrupt)

    world.clock.sleep = cancelled  # type: ignore[method-assign]
    record = world.run([Round.transient(), Round.ok(ok_result())], cancel=cancel)
    assert len(world.runner.starts) == 1
    assert record.error is not None and record.error.code == "interrupted"
    assert world.round_node(1)["content"]["transient"] == {
        "error": "API Error: 529 Overloaded",
        "retried": False,
        "delay_seconds": None,
    }


# --- the Errors table ---------------------------------------------------------------------------


def _denied_world() -> HostWorld:
    world = HostWorld(temp_root="/work/repo/.git/tmp")
    # a system temporary directory that is really inside the Git metadata: the runtime
    # directory is made there, and the deny rules over .git cover it
    world.fs.symlink("/work/repo/.git/tmp", "/var/tmp")
    return world


@dataclass
class Ending:
    run: Callable[[HostWorld], RunRecord]
    link: CheckLink
    world: Callable[[], HostWorld] = HostWorld


def _failing_status(world: HostWorld) -> RunRecord:
    world.git.fail("status")
    return world.run([Round.ok(ok_result())])


def _failed_deletion(world: HostWorld) -> RunRecord:
    world.fs.write(f"{WORKTREE}/src/app/old.py", "old\n")
    world.fs.fail("remove", f"{WORKTREE}/src/app/old.py", "Operation not permitted", 1)
    return world.run(
        [
            Round.ok(
                worker_error_result("failed", "cannot_build")
                | {"proposed_deletions": ["src/app/old.py", "src/app/gone.py"]}
            )
        ]
    )


def _failed_cleanup(world: HostWorld) -> RunRecord:
    world.fs.fail("rmtree", "/tmp/concorde-abc123-0badcafe", "Device or resource busy", 16)
    return world.run([Round.ok(worker_error_result("blocked"))])


def _no_runtime_directory(world: HostWorld) -> RunRecord:
    world.fs.fail("makedirs", "/tmp/concorde-abc123-0badcafe", "Read-only file system", 30)
    record = world.run([Round.ok(ok_result())])
    assert world.runner.starts == []
    return record


def _cancelled(world: HostWorld) -> RunRecord:
    cancel = Cancellation()
    return world.run(
        [Round.ok(ok_result(), effects=lambda _: cancel.cancel("SIGINT"))], cancel=cancel
    )


ENDINGS: list[Any] = [
    pytest.param(
        Ending(
            lambda w: w.run([], task_type="deploy"),
            CheckLink("grant_unavailable", "input", ("'deploy'", "implement"), task_type="deploy"),
        ),
        id="grant_unavailable",
    ),
    pytest.param(
        Ending(
            lambda w: w.run(
                [],
                grant={
                    "task_type": "implement",
                    "context_identity": "sha256:" + "2" * 64,
                    "entries": [{"path": "src/", "level": "rw"}, {"path": "", "level": "ro"}],
                },
            ),
            CheckLink("grant_malformed", "input", ("grant entry 2",)),
        ),
        id="grant_malformed",
    ),
    pytest.param(
        Ending(
            lambda w: w.run([], worktree="/work/repo"),
            CheckLink(
                "worktree_misplaced", "environment", ("/work/repo", "/work/repo/.claude/worktrees/")
            ),
        ),
        id="worktree_misplaced",
    ),
    pytest.param(
        Ending(
            lambda w: w.run([], backend="claude"),
            CheckLink(
                "run_directory_denied",
                "environment",
                ("Read(//work/repo/.git/**)", "/work/repo/.git/tmp/concorde-abc123-0badcafe/work"),
            ),
            _denied_world,
        ),
        id="run_directory_denied",
    ),
    pytest.param(
        Ending(
            lambda w: w.run(
                [],
                refusal=Refusal(
                    code="pi_runtime_missing",
                    reason=Reason.ENVIRONMENT,
                    message="pi's sandbox runtime is missing: no dist/index.js in /opt/sandbox-runtime",
                ),
            ),
            CheckLink("pi_runtime_missing", "environment", ("no dist/index.js",)),
        ),
        id="pi_runtime_missing",
    ),
    pytest.param(
        Ending(
            _failing_status,
            CheckLink("snapshot_failed", "environment", ("git status", "fatal: injected failure")),
        ),
        id="snapshot_failed",
    ),
    pytest.param(
        Ending(
            _no_runtime_directory,
            CheckLink(
                "launch_failed",
                "environment",
                ("runtime directory", "/tmp", "Read-only file system"),
            ),
        ),
        id="launch_failed: no runtime directory",
    ),
    pytest.param(
        Ending(
            lambda w: w.run([Round.not_started("Permission denied")]),
            CheckLink(
                "launch_failed", "environment", ("round 1", "fake-agent", "Permission denied")
            ),
        ),
        id="launch_failed",
    ),
    pytest.param(
        Ending(
            lambda w: w.run(
                [Round.failed("API Error: 400 invalid request", transcript="s-1")], backend="claude"
            ),
            CheckLink(
                "claude_failed",
                "environment",
                ("round 1", "API Error: 400 invalid request"),
                (TRACE, transcript_evidence()),
                (("component", "claude_error"),),
            ),
        ),
        id="claude_failed",
    ),
    pytest.param(
        Ending(
            _failed_deletion,
            CheckLink(
                "deletion_failed",
                "environment",
                (
                    "failed: src/app/old.py (Operation not permitted)",
                    "already absent: src/app/gone.py",
                ),
                (TRACE, transcript_evidence()),
                (("workers", "worker_failed"),),
            ),
        ),
        id="deletion_failed",
    ),
    pytest.param(
        Ending(
            _failed_cleanup,
            CheckLink(
                "cleanup_failed",
                "environment",
                ("/tmp/concorde-abc123-0badcafe", "Device or resource busy"),
                (TRACE, transcript_evidence()),
                (("workers", "worker_blocked"),),
            ),
        ),
        id="cleanup_failed",
    ),
    pytest.param(
        Ending(
            _cancelled,
            CheckLink(
                "interrupted", "environment", ("round 1", "SIGINT"), (TRACE, transcript_evidence())
            ),
        ),
        id="interrupted",
    ),
]


@pytest.mark.req("A failed run explains itself")
@pytest.mark.parametrize("ending", ENDINGS)
def test_each_code_of_the_errors_table(ending: Ending) -> None:
    world = ending.world()
    record = ending.run(world)
    assert record.status == "failed"
    link = assert_link(record, ending.link)
    node = world.run_node()
    assert node["status"] == "failed"
    assert node["outcome"] == ("interrupted" if link.code == "interrupted" else "failed")
    assert node["error"] == link.model_dump(mode="json")
    assert world.runtime_dirs() == (
        [] if link.code != "cleanup_failed" else ["concorde-abc123-0badcafe"]
    )


def test_a_cleanup_that_failed_names_the_transcript_it_could_not_keep() -> None:
    world = HostWorld()
    world.fs.fail("write_atomic", TRANSCRIPT, "Read-only file system", 30)
    record = world.run([Round.ok(ok_result())])
    link = assert_link(
        record,
        CheckLink(
            "cleanup_failed",
            "environment",
            ("the transcript could not be kept", "Read-only file system"),
            (TRACE,),
        ),
    )
    assert link.causes == ()
    assert world.runtime_dirs() == []
