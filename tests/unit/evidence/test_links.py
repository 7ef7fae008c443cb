"""seed 000 "Errors" and seed 001 "Errors": the links of a failed run's error chain
(domain/evidence/links.py)."""

from __future__ import annotations

import pytest
from unit.evidence.test_codes import RUN, RUN_DIR, TABLE

from concorde_workers.adapters.claude.links import CLAUDE_PROCESS_ACTOR, claude_process_link
from concorde_workers.adapters.pi.links import PI_PROCESS_ACTOR, pi_limit_detail, pi_process_link
from concorde_workers.domain.boundary.task_types import TaskType
from concorde_workers.domain.evidence.links import (
    audit_evidence,
    audit_violation_detail,
    host_limit_link,
    trace_evidence,
    trace_write_evidence,
    transcript_evidence,
    worker_link,
    workers_link,
)
from concorde_workers.domain.ground.codes import CausesRule, code_spec
from concorde_workers.domain.ground.errors import ErrorLink, Reason
from concorde_workers.domain.run.worker_result import WorkerError


def test_the_contract_example_link() -> None:
    """The returned run record's example error, rebuilt with the builders."""
    link = workers_link(
        RUN,
        "implement",
        "audit_violation",
        audit_violation_detail(1, ["src/shop/legacy.py (deleted)", "src/shop/pricing.py"], "ok"),
        [
            audit_evidence(1, "src/shop/legacy.py (deleted)"),
            audit_evidence(1, "src/shop/pricing.py"),
            trace_evidence(RUN, RUN_DIR),
        ],
    )
    assert link.to_json() == {
        "level": "workers",
        "actor": "Workers run w-20261002T101500-a1b2c3 (implement worker)",
        "code": "audit_violation",
        "detail": (
            "round 1: the worker changed 2 path(s) outside the grant's writable paths: "
            "src/shop/legacy.py (deleted), src/shop/pricing.py; the worker itself reported "
            "status ok"
        ),
        "evidence": [
            {"kind": "audit", "ref": "1", "detail": "violation: src/shop/legacy.py (deleted)"},
            {"kind": "audit", "ref": "1", "detail": "violation: src/shop/pricing.py"},
            {"kind": "trace", "ref": RUN, "detail": RUN_DIR},
        ],
        "attempts": [],
        "unhandled": {
            "reason": "permission",
            "explanation": "Workers never accepts a write outside the grant and never widens it",
        },
        "options": [],
        "recommendation": "",
        "causes": [],
    }


def test_audit_violation_detail_for_an_invalid_result() -> None:
    assert audit_violation_detail(2, ["HEAD"], None).endswith("the worker's result was invalid")


@pytest.mark.parametrize(("code", "reason", "alternative", "causes", "backends"), TABLE)
def test_workers_link_takes_the_table_reason(
    code: str, reason: str, alternative: str | None, causes: CausesRule, backends: set[str]
) -> None:
    link = workers_link(RUN, "review-code", code, "round 1: x", [trace_evidence(RUN, RUN_DIR)])
    assert link.level == "workers"
    assert link.actor == f"Workers run {RUN} (review-code worker)"
    assert link.unhandled.reason == Reason(reason)
    assert link.unhandled.explanation == code_spec(code).explanation
    if alternative is not None:
        exhausted = workers_link(RUN, "implement", code, "d", [], reason=Reason.EXHAUSTED)
        assert exhausted.unhandled.reason is Reason.EXHAUSTED
        assert exhausted.unhandled.explanation == code_spec(code).exhausted_explanation


def test_workers_link_takes_a_task_type_value() -> None:
    link = workers_link(RUN, TaskType.REVIEW_ARCHITECTURE, "interrupted", "SIGTERM", [])
    assert link.actor == f"Workers run {RUN} (review-architecture worker)"


def test_workers_link_refuses_a_reason_the_table_does_not_give() -> None:
    with pytest.raises(ValueError):
        workers_link(RUN, "implement", "worker_timeout", "d", [], reason=Reason.ENVIRONMENT)


def test_workers_link_refuses_causes_for_a_code_without() -> None:
    cause = pi_process_link(1, None, None, 0, "")
    with pytest.raises(ValueError):
        workers_link(RUN, "implement", "worker_timeout", "d", [], causes=[cause])


def test_workers_link_carries_causes_and_attempts() -> None:
    cause = claude_process_link("success", True, 1, 0.0, 1, "API Error: 529", [], "")
    link = workers_link(
        RUN,
        "implement",
        "claude_failed",
        "round 3: API Error: 529 overloaded",
        [trace_evidence(RUN, RUN_DIR), transcript_evidence(f"{RUN_DIR}/transcript.jsonl", "s1")],
        attempts=["round 1: API Error: 529 (retried after 12.3 s)"],
        causes=[cause],
        reason=Reason.EXHAUSTED,
    )
    assert link.causes == (cause,)
    assert link.attempts == ("round 1: API Error: 529 (retried after 12.3 s)",)
    assert link.evidence[1].kind == "transcript"
    assert link.evidence[1].ref == f"{RUN_DIR}/transcript.jsonl"


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        ("checks_failed", Reason.EXHAUSTED),
        ("checks_unavailable", Reason.ENVIRONMENT),
        ("glossary_owner_changed", Reason.PERMISSION),
    ],
)
def test_a_code_the_round_validation_names(code: str, reason: Reason) -> None:
    link = workers_link(RUN, "specify", code, "round 2: x", [], reason=reason)
    assert link.code == code and link.unhandled.reason is reason


def test_a_code_the_round_validation_names_needs_its_reason() -> None:
    with pytest.raises(ValueError):
        workers_link(RUN, "specify", "checks_failed", "d", [])
    with pytest.raises(ValueError):
        workers_link(RUN, "specify", "checks_failed", "d", [], reason=Reason.INPUT)


@pytest.mark.parametrize(
    ("subtype", "code", "reason"),
    [
        ("error_max_turns", "claude_limit_reached", Reason.EXHAUSTED),
        ("error_max_budget_usd", "claude_limit_reached", Reason.EXHAUSTED),
        ("error_during_execution", "claude_error", Reason.ENVIRONMENT),
        ("error_max_structured_output_retries", "claude_error", Reason.ENVIRONMENT),
        ("success", "claude_error", Reason.ENVIRONMENT),
        (None, "claude_error", Reason.ENVIRONMENT),
    ],
)
def test_claude_process_link(subtype: str | None, code: str, reason: Reason) -> None:
    link = claude_process_link(
        subtype,
        True,
        5,
        0.0025,
        1,
        "API Error: 500",
        ["Reached maximum number of turns (4)"],
        "boom",
    )
    assert link.level == "component"
    assert link.actor == CLAUDE_PROCESS_ACTOR
    assert link.code == code
    assert link.unhandled.reason is reason
    assert link.causes == ()
    for fact in ("is_error true", "5 turn(s)", "0.0025 USD", "exit status 1", "API Error: 500"):
        assert fact in link.detail
    assert "Reached maximum number of turns (4)" in link.detail
    assert '"boom"' in link.detail
    if subtype is None:
        assert "printed no result envelope" in link.detail
    else:
        assert subtype in link.detail


def test_claude_process_link_with_nothing_known() -> None:
    link = claude_process_link(None, None, None, None, None, None, [], "")
    assert "exit status none" in link.detail
    assert "final text: none" in link.detail


def test_process_links_quote_only_the_tail_of_stderr() -> None:
    tail = "x" * 10_000 + "THE END"
    link = claude_process_link(None, None, None, None, 1, "y" * 10_000, [], tail)
    assert "THE END" in link.detail
    assert len(link.detail) < 9_000
    assert "THE END" in pi_process_link(1, None, None, 0, tail).detail


@pytest.mark.parametrize(
    ("limit", "value", "maximum", "text"),
    [
        ("turns", 3, 2, "turns limit (3 reached, at most 2 allowed)"),
        ("budget", 0.6, 0.5, "budget limit (0.6 reached, at most 0.5 allowed)"),
        ("max_turns", 3.0, 2, "max_turns limit (3 reached, at most 2 allowed)"),
    ],
)
def test_pi_limit_link(limit: str, value: float, maximum: float, text: str) -> None:
    link = pi_process_link(0, "aborted", "Request was aborted.", 3, "", limit, value, maximum)
    assert link.level == "component"
    assert link.actor == PI_PROCESS_ACTOR
    assert link.code == "pi_limit_reached"
    assert link.unhandled.reason is Reason.EXHAUSTED
    assert link.detail.startswith(f"the permission extension stopped the run at its {text}")
    assert pi_limit_detail(limit, value, maximum).endswith(text)
    for fact in ("exit status 0", "last stop reason aborted", "Request was aborted.", "3 turn(s)"):
        assert fact in link.detail


def test_pi_error_link() -> None:
    link = pi_process_link(0, "error", "429 Rate limit reached for requests", 2, "warn")
    assert link.code == "pi_error"
    assert link.unhandled.reason is Reason.ENVIRONMENT
    assert "last stop reason error" in link.detail
    assert "429 Rate limit reached for requests" in link.detail
    assert '"warn"' in link.detail
    none = pi_process_link(1, None, None, None, "")
    assert "no assistant message" in none.detail and "exit status 1" in none.detail


def test_pi_limit_needs_value_and_maximum() -> None:
    with pytest.raises(ValueError):
        pi_process_link(0, "aborted", None, 3, "", "turns", None, 2)
    with pytest.raises(ValueError):
        pi_process_link(0, "aborted", None, 3, "", None, 3, 2)


WORKER_ERROR = {
    "code": "spec_gap",
    "detail": "The Spec does not say how discounts round.",
    "evidence": [{"kind": "spec", "ref": "specs/shop.md#discounts", "detail": "silent"}],
    "attempts": ["searched the Spec"],
    "unhandled": {"reason": "decision", "explanation": "rounding is the Spec's to state"},
    "options": ["round half up"],
    "recommendation": "decide in the Spec",
}


def test_worker_link_copies_the_error_unchanged() -> None:
    link = worker_link(WORKER_ERROR, RUN, "0199-session")
    assert link.level == "worker"
    assert RUN in link.actor and "0199-session" in link.actor
    assert link.causes == ()
    data = link.to_json()
    for key, value in WORKER_ERROR.items():
        assert data[key] == value


def test_worker_link_of_the_carried_model_is_the_link_of_its_json() -> None:
    error = WorkerError.model_validate(WORKER_ERROR)
    assert worker_link(error, RUN, "0199-session") == worker_link(WORKER_ERROR, RUN, "0199-session")


def test_worker_link_without_a_session() -> None:
    assert "session none" in worker_link(WORKER_ERROR, RUN, None).actor


def test_worker_link_refuses_chain_fields() -> None:
    with pytest.raises(ValueError):
        worker_link({**WORKER_ERROR, "causes": []}, RUN, "s")


def test_evidence_builders() -> None:
    assert trace_evidence(RUN, RUN_DIR).model_dump() == {
        "kind": "trace",
        "ref": RUN,
        "detail": RUN_DIR,
    }
    assert audit_evidence(2, "HEAD").model_dump() == {
        "kind": "audit",
        "ref": "2",
        "detail": "violation: HEAD",
    }
    write = trace_write_evidence(f"{RUN_DIR}/trace.json", "end", "[Errno 28] No space left")
    assert (write.kind, write.ref) == ("trace-write", f"{RUN_DIR}/trace.json")
    assert write.detail == "end: [Errno 28] No space left"


def test_links_serialize_to_the_error_contract() -> None:
    import json
    import pathlib

    import jsonschema

    from concorde_workers.contracts import __file__ as contracts_init

    path = pathlib.Path(contracts_init).parent / "contract.tracing.error.json"
    schema = json.loads(path.read_text())["schema"]
    cause = pi_process_link(0, "aborted", "x", 3, "", "turns", 3, 2)
    worker = worker_link(WORKER_ERROR, RUN, "s")
    link: ErrorLink = workers_link(
        RUN,
        "implement",
        "worker_limit_reached",
        "round 1: pi limit",
        [trace_evidence(RUN, RUN_DIR)],
        causes=[cause],
    )
    for item in (link, worker, claude_process_link(None, None, None, None, 1, None, [], "")):
        jsonschema.validate(item.to_json(), schema)


def test_a_limit_the_host_enforces_is_told_by_the_host_s_own_link() -> None:
    """docs/decisions.md "A limit the host enforces is told as one": level component, the
    host as its actor, every limit reached with its value and peak, reason exhausted, no
    causes; at least one limit."""
    reached = (
        "the run's process limit (100 processes) refused 3 new process(es), peak 100",
        "the run's memory limit (512 MiB, swap off) made the kernel kill 1 process(es), peak 512 MiB",
    )
    link = host_limit_link(reached)
    assert (link.level, link.actor, link.code) == (
        "component",
        "Workers host (the round's control group)",
        "host_limit_reached",
    )
    assert link.detail == "; ".join(reached)
    assert link.unhandled.reason == "exhausted" and link.causes == ()
    with pytest.raises(ValueError):
        host_limit_link(())
