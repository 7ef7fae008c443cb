"""seed 000 "Errors" and seed 001 "Errors": every run code with its reason (domain/ground/codes.py)."""

from __future__ import annotations

import pytest

from concorde_workers.container import PROFILES
from concorde_workers.domain.ground.codes import (
    CLAUDE_ERROR_CODE,
    CLAUDE_LIMIT_CODE,
    CODEX_ERROR_CODE,
    CODEX_LIMIT_CODE,
    PI_ERROR_CODE,
    PI_LIMIT_CODE,
    REFUSAL_REASONS,
    RUN_CODES,
    VALIDATION_CODE_RULES,
    CausesRule,
    Code,
    ValidationAnswer,
    code_spec,
    codes_for_backend,
)
from concorde_workers.domain.ground.errors import Reason

RUN = "w-20261002T101500-a1b2c3"
RUN_DIR = f"/repo/.concorde/tasks/discounts/workspace/runs/r-1/workers/{RUN}"

# (code, reason, alternative reason, causes rule, backends), straight from the tables; the
# mechanics' codes are every backend's, the Codex CLI's too.
TABLE = [
    ("grant_unavailable", "input", None, CausesRule.NONE, {"claude", "pi", "codex"}),
    ("grant_malformed", "input", None, CausesRule.NONE, {"claude", "pi", "codex"}),
    ("worktree_misplaced", "environment", None, CausesRule.NONE, {"claude", "pi", "codex"}),
    ("run_directory_denied", "environment", None, CausesRule.NONE, {"claude"}),
    ("snapshot_failed", "environment", None, CausesRule.NONE, {"claude", "pi", "codex"}),
    ("launch_failed", "environment", None, CausesRule.NONE, {"claude", "pi", "codex"}),
    ("worker_timeout", "exhausted", None, CausesRule.NONE, {"claude", "pi", "codex"}),
    ("worker_limit_reached", "exhausted", None, CausesRule.PROCESS_LINK, {"claude", "pi", "codex"}),
    ("claude_failed", "environment", "exhausted", CausesRule.PROCESS_LINK, {"claude"}),
    ("pi_runtime_missing", "environment", None, CausesRule.NONE, {"pi"}),
    ("pi_failed", "environment", "exhausted", CausesRule.PROCESS_LINK, {"pi"}),
    # the Codex CLI's own process failure (issue 33; docs/decisions.md 72)
    ("codex_failed", "environment", "exhausted", CausesRule.PROCESS_LINK, {"codex"}),
    ("worker_result_invalid", "capability", None, CausesRule.NONE, {"claude", "pi", "codex"}),
    ("audit_violation", "permission", None, CausesRule.WORKER_LINK, {"claude", "pi", "codex"}),
    ("worker_blocked", "capability", None, CausesRule.WORKER_LINK, {"claude", "pi", "codex"}),
    ("worker_failed", "capability", None, CausesRule.WORKER_LINK, {"claude", "pi", "codex"}),
    ("validation_unavailable", "capability", None, CausesRule.NONE, {"claude", "pi", "codex"}),
    ("deletion_failed", "environment", None, CausesRule.PREVIOUS_LINK, {"claude", "pi", "codex"}),
    ("cleanup_failed", "environment", None, CausesRule.PREVIOUS_LINK, {"claude", "pi", "codex"}),
    ("interrupted", "environment", None, CausesRule.NONE, {"claude", "pi", "codex"}),
]


def test_the_tables_are_complete_and_in_order() -> None:
    assert list(RUN_CODES) == [row[0] for row in TABLE]


@pytest.mark.req("A failed run explains itself")
@pytest.mark.parametrize(("code", "reason", "alternative", "causes", "backends"), TABLE)
def test_every_code_has_its_reason(
    code: str, reason: str, alternative: str | None, causes: CausesRule, backends: set[str]
) -> None:
    spec = code_spec(code)
    assert spec.reason == Reason(reason)
    assert spec.alternative_reason == (None if alternative is None else Reason(alternative))
    assert spec.causes_rule is causes
    assert spec.backends == backends
    assert spec.detail and spec.causes and spec.explanation
    if alternative is not None:
        assert spec.exhausted_when == (
            "when the retries for a transient model-service error are used up"
        )
        assert spec.exhausted_explanation


def test_the_contract_example_explanation() -> None:
    assert code_spec("audit_violation").explanation == (
        "Workers never accepts a write outside the grant and never widens it"
    )


def test_codes_per_backend() -> None:
    claude = codes_for_backend("claude")
    pi = codes_for_backend("pi")
    assert "claude_failed" in claude and "run_directory_denied" in claude
    assert "pi_failed" not in claude and "pi_runtime_missing" not in claude
    assert "claude_failed" not in pi and "run_directory_denied" not in pi
    assert "pi_failed" in pi and "pi_runtime_missing" in pi
    assert set(claude) - {"claude_failed", "run_directory_denied"} == set(pi) - {
        "pi_failed",
        "pi_runtime_missing",
    }
    assert {name: p.failure_code for name, p in PROFILES.items()} == {
        "claude": "claude_failed",
        "pi": "pi_failed",
        "codex": "codex_failed",
    }
    codex = codes_for_backend("codex")
    assert set(codex) - {"codex_failed"} == set(pi) - {"pi_failed", "pi_runtime_missing"}
    with pytest.raises(ValueError):
        codes_for_backend("gemini")


@pytest.mark.parametrize(
    ("answer", "reason", "concorde"),
    [
        (ValidationAnswer.VIOLATION, Reason.PERMISSION, "audit_violation"),
        (ValidationAnswer.UNAVAILABLE, Reason.ENVIRONMENT, "checks_unavailable"),
        (ValidationAnswer.REPAIR_FAILED, Reason.EXHAUSTED, "checks_failed"),
    ],
)
def test_codes_the_round_validation_names(
    answer: ValidationAnswer, reason: Reason, concorde: str
) -> None:
    rule = VALIDATION_CODE_RULES[answer]
    assert rule.reason == reason
    assert rule.concorde_code == concorde


def test_every_code_is_a_row_of_a_table_or_named_beyond_them() -> None:
    """`Code` is the tables' codes and nothing else but the few docs/decisions.md names."""
    component = {CLAUDE_LIMIT_CODE, CLAUDE_ERROR_CODE, PI_LIMIT_CODE, PI_ERROR_CODE}
    component |= {CODEX_LIMIT_CODE, CODEX_ERROR_CODE}
    named = {rule.concorde_code for rule in VALIDATION_CODE_RULES.values()}
    checks = {"check_failed", "check_unavailable"}
    beyond = {
        "request_invalid",
        "demo_extra_missing",
        "record_unreadable",
        "runtime_parent_unreadable",
        "signing_key_invalid",
        "trace_unverified",
        "host_limit_reached",  # "A limit the host enforces is told as one"
        "worktree_busy",  # the command line's lock (issue 31 §4)
    }
    assert set(Code) == {*RUN_CODES, *REFUSAL_REASONS, *component, *named, *checks, *beyond}
    assert all(Code(str(code)) is code for code in Code)  # each serialises to its own string
