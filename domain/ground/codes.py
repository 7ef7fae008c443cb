"""Workers' codes as data: the `Code` enum and the spec's tables of them.

Seed 000 "Errors" and seed 001 "Errors": every code of a run that does not end ok, with its
reason (and the alternative reason `exhausted` of the process failure codes once the retries for
a transient model-service error are used up), what its detail names, its causes rule and the
explanation Workers gives in `unhandled.explanation` (`RUN_CODES`). Seed 000 "Refusals before a
run": the configuration reader's codes and their reasons (`REFUSAL_REASONS`). The codes of the
agent processes' links (seed 000 "Errors", seed 001 "Errors"), the codes Concorde's round
validation names, and the codes of refusals beyond the spec's tables (docs/decisions.md) complete
`Code`. Every code string of the program is written here, once; everything else names a member.

The builders of the links of a failed run's error chain are `domain/evidence/links.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.ground.backends import BACKENDS as CONTRACT_BACKENDS


class Reason(StrEnum):
    """Why the actor could not handle the error (`unhandled.reason`): the tables' reason column."""

    PERMISSION = "permission"
    DECISION = "decision"
    SCOPE = "scope"
    CAPABILITY = "capability"
    EXHAUSTED = "exhausted"
    ENVIRONMENT = "environment"
    INPUT = "input"


class Code(StrEnum):
    """Every code Workers gives: a run's, a refusal's, a component link's (serialised as its
    value, so records and traces keep the same strings)."""

    # seed 000 "Errors", in the table's order, with seed 001's pi_runtime_missing and pi_failed
    GRANT_UNAVAILABLE = "grant_unavailable"
    GRANT_MALFORMED = "grant_malformed"
    WORKTREE_MISPLACED = "worktree_misplaced"
    RUN_DIRECTORY_DENIED = "run_directory_denied"
    SNAPSHOT_FAILED = "snapshot_failed"
    LAUNCH_FAILED = "launch_failed"
    WORKER_TIMEOUT = "worker_timeout"
    WORKER_LIMIT_REACHED = "worker_limit_reached"
    CLAUDE_FAILED = "claude_failed"
    PI_RUNTIME_MISSING = "pi_runtime_missing"
    PI_FAILED = "pi_failed"
    CODEX_FAILED = "codex_failed"
    WORKER_RESULT_INVALID = "worker_result_invalid"
    AUDIT_VIOLATION = "audit_violation"
    WORKER_BLOCKED = "worker_blocked"
    WORKER_FAILED = "worker_failed"
    VALIDATION_UNAVAILABLE = "validation_unavailable"
    DELETION_FAILED = "deletion_failed"
    CLEANUP_FAILED = "cleanup_failed"
    INTERRUPTED = "interrupted"
    # the agent processes' links (seed 000 "Errors", seed 001 "Errors")
    CLAUDE_LIMIT_REACHED = "claude_limit_reached"
    CLAUDE_ERROR = "claude_error"
    PI_LIMIT_REACHED = "pi_limit_reached"
    PI_ERROR = "pi_error"
    CODEX_LIMIT_REACHED = "codex_limit_reached"
    CODEX_ERROR = "codex_error"
    # seed 000 "Refusals before a run"
    CONFIG_MISSING = "config_missing"
    CONFIG_INVALID = "config_invalid"
    MODEL_NOT_ENABLED = "model_not_enabled"
    MODEL_UNRESOLVED = "model_unresolved"
    BACKEND_MISSING = "backend_missing"
    MODEL_MAP_MISSING = "model_map_missing"
    MODEL_MAP_INVALID = "model_map_invalid"
    MODEL_UNMAPPED = "model_unmapped"
    # the codes Concorde's round validation names (seed 000 "Errors"; audit_violation above)
    CHECKS_UNAVAILABLE = "checks_unavailable"
    CHECKS_FAILED = "checks_failed"
    # the links of Check execution when the checks are the round validation (domain/run/checks.py)
    CHECK_FAILED = "check_failed"
    CHECK_UNAVAILABLE = "check_unavailable"
    # beyond the spec's tables (docs/decisions.md): a request no run is made for, a command
    # without its optional extra, a record that cannot be read back, a runtime parent `sweep`
    # cannot list
    REQUEST_INVALID = "request_invalid"
    DEMO_EXTRA_MISSING = "demo_extra_missing"
    RECORD_UNREADABLE = "record_unreadable"
    RUNTIME_PARENT_UNREADABLE = "runtime_parent_unreadable"
    SIGNING_KEY_INVALID = "signing_key_invalid"
    TRACE_UNVERIFIED = "trace_unverified"
    # the host's own link of a limit it enforces (docs/decisions.md "A limit the host enforces
    # is told as one"): worker_limit_reached's cause on every backend
    HOST_LIMIT_REACHED = "host_limit_reached"
    # the command line's refusal of a run whose worktree another run holds (issue 31 §4)
    WORKTREE_BUSY = "worktree_busy"


BACKENDS: frozenset[str] = frozenset(CONTRACT_BACKENDS)

CLAUDE_LIMIT_CODE = Code.CLAUDE_LIMIT_REACHED
CLAUDE_ERROR_CODE = Code.CLAUDE_ERROR
PI_LIMIT_CODE = Code.PI_LIMIT_REACHED
PI_ERROR_CODE = Code.PI_ERROR
CODEX_LIMIT_CODE = Code.CODEX_LIMIT_REACHED
CODEX_ERROR_CODE = Code.CODEX_ERROR

REFUSAL_REASONS: Mapping[Code, Reason] = {
    Code.CONFIG_MISSING: Reason.INPUT,
    Code.CONFIG_INVALID: Reason.INPUT,
    Code.MODEL_NOT_ENABLED: Reason.INPUT,
    Code.MODEL_UNRESOLVED: Reason.INPUT,
    Code.BACKEND_MISSING: Reason.ENVIRONMENT,
    Code.MODEL_MAP_MISSING: Reason.ENVIRONMENT,
    Code.MODEL_MAP_INVALID: Reason.ENVIRONMENT,
    Code.MODEL_UNMAPPED: Reason.ENVIRONMENT,
}
"""Seed 000 "Refusals before a run": code -> reason, row by row."""


class CausesRule(StrEnum):
    """What a code's link has as its causes."""

    NONE = "none"
    PROCESS_LINK = "the agent process's link"
    WORKER_LINK = "the worker's link"
    VALIDATION_LINKS = "the links the round validation names"
    PREVIOUS_LINK = "the link the run would otherwise have ended with, if any"


class CodeSpec(BaseModel):
    """One row of an Errors table."""

    model_config = ConfigDict(frozen=True)

    code: Code
    reason: Reason
    exhausted_when: str | None = None
    """When set, the alternative reason `exhausted` applies in this case."""
    detail: str
    """What the detail names (the table's column, verbatim)."""
    causes: str
    """The table's causes column, verbatim."""
    causes_rule: CausesRule
    explanation: str
    exhausted_explanation: str | None = None
    backends: frozenset[str] = BACKENDS
    source: str = "000 Errors"

    @property
    def alternative_reason(self) -> Reason | None:
        return Reason.EXHAUSTED if self.exhausted_when is not None else None

    @property
    def reasons(self) -> tuple[Reason, ...]:
        alternative = self.alternative_reason
        return (self.reason,) if alternative is None else (self.reason, alternative)

    def explanation_for(self, reason: Reason) -> str:
        if reason == self.reason:
            return self.explanation
        if reason == self.alternative_reason and self.exhausted_explanation is not None:
            return self.exhausted_explanation
        raise ValueError(f"{self.code} has no reason {reason.value}")


_RETRIES_USED_UP = "when the retries for a transient model-service error are used up"

_ROWS: tuple[CodeSpec, ...] = (
    CodeSpec(
        code=Code.GRANT_UNAVAILABLE,
        reason=Reason.INPUT,
        detail="which of the task type, grant, context identity or entries is missing",
        causes="none",
        causes_rule=CausesRule.NONE,
        explanation=(
            "Workers takes a worker's grant only from its request and never computes, widens or "
            "completes one; the request must give the task type, grant, context identity and "
            "entries"
        ),
    ),
    CodeSpec(
        code=Code.GRANT_MALFORMED,
        reason=Reason.INPUT,
        detail=(
            "the first grant entry that is not an object with a worktree-relative path and a "
            "level of rw, ro or names, and what is wrong with it"
        ),
        causes="none",
        causes_rule=CausesRule.NONE,
        explanation=(
            "Workers generates nothing from a malformed grant and never repairs one; only its "
            "caller can correct the entry"
        ),
    ),
    CodeSpec(
        code=Code.WORKTREE_MISPLACED,
        reason=Reason.ENVIRONMENT,
        detail=(
            "the worktree, the primary worktree's .claude/worktrees/ where it must lie directly, "
            "or what Git said when it found no primary worktree"
        ),
        causes="none",
        causes_rule=CausesRule.NONE,
        explanation=(
            "Workers runs a worker only in a worktree lying directly in .claude/worktrees/ of "
            "its repository's primary worktree"
        ),
    ),
    CodeSpec(
        code=Code.RUN_DIRECTORY_DENIED,
        reason=Reason.ENVIRONMENT,
        detail=(
            "the deny rule that would cover the worker's own directories of the runtime directory"
        ),
        causes="none",
        causes_rule=CausesRule.NONE,
        explanation=(
            "A generated deny rule would disable the worker's own work/, home/ or tmp/; Workers "
            "never drops a rule the grant implies to make room"
        ),
        backends=frozenset({"claude"}),
    ),
    CodeSpec(
        code=Code.SNAPSHOT_FAILED,
        reason=Reason.ENVIRONMENT,
        detail="the Git command that failed and its output",
        causes="none",
        causes_rule=CausesRule.NONE,
        explanation=(
            "Without a snapshot of the worktree Workers cannot audit a worker, so it launches none"
        ),
    ),
    CodeSpec(
        code=Code.LAUNCH_FAILED,
        reason=Reason.ENVIRONMENT,
        detail="the command that could not be started and the operating system's error",
        causes="none",
        causes_rule=CausesRule.NONE,
        explanation="The agent program could not be started on this host",
    ),
    CodeSpec(
        code=Code.WORKER_TIMEOUT,
        reason=Reason.EXHAUSTED,
        detail="the round and the timeout",
        causes="none",
        causes_rule=CausesRule.NONE,
        explanation="The round used up its time limit; Workers never retries a timed-out round",
    ),
    CodeSpec(
        code=Code.WORKER_LIMIT_REACHED,
        reason=Reason.EXHAUSTED,
        detail=(
            "the round and the limit the agent program reported: on Claude Code its turn or "
            "budget subtype, on pi the limit and the value the permission extension names"
        ),
        causes=(
            "the agent process's link: the Claude Code process's link, or the pi process's link "
            "with that limit and value"
        ),
        causes_rule=CausesRule.PROCESS_LINK,
        explanation=(
            "The worker reached the turn or budget limit of its worker configuration; Workers "
            "never raises a limit or retries a round that reached one"
        ),
    ),
    CodeSpec(
        code=Code.CLAUDE_FAILED,
        reason=Reason.ENVIRONMENT,
        exhausted_when=_RETRIES_USED_UP,
        detail=(
            "the round and the error Claude Code reported, or that it printed no envelope "
            "(Claude Code backend); attempts lists every retry"
        ),
        causes="the Claude Code process's link",
        causes_rule=CausesRule.PROCESS_LINK,
        explanation=(
            "Claude Code failed with an error that is not a transient model-service error, which "
            "Workers does not retry"
        ),
        exhausted_explanation=(
            "Claude Code kept failing with a transient model-service error and the run's retry "
            "rounds are used up"
        ),
        backends=frozenset({"claude"}),
    ),
    CodeSpec(
        code=Code.PI_RUNTIME_MISSING,
        reason=Reason.ENVIRONMENT,
        detail="every missing program or package and how to provide it",
        causes="none",
        causes_rule=CausesRule.NONE,
        explanation=(
            "The pi backend cannot enforce the grant without pi, rg, fd, the sandbox-runtime "
            "package and, on Linux, bwrap and socat, so Workers launches nothing"
        ),
        backends=frozenset({"pi"}),
        source="001 Errors",
    ),
    CodeSpec(
        code=Code.PI_FAILED,
        reason=Reason.ENVIRONMENT,
        exhausted_when=_RETRIES_USED_UP,
        detail=(
            "the round and the error pi reported: it ended without a worker result and with a "
            "non-zero exit status, without a session record, or with the stop reason error or "
            "aborted; attempts lists every retry"
        ),
        causes="the pi process's link",
        causes_rule=CausesRule.PROCESS_LINK,
        explanation=(
            "pi failed with an error that is not a transient model-service error, which Workers "
            "does not retry"
        ),
        exhausted_explanation=(
            "pi kept failing with a transient model-service error and the run's retry rounds are "
            "used up"
        ),
        backends=frozenset({"pi"}),
        source="001 Errors",
    ),
    CodeSpec(
        code=Code.CODEX_FAILED,
        reason=Reason.ENVIRONMENT,
        exhausted_when=_RETRIES_USED_UP,
        detail=(
            "the round and the error the Codex CLI reported: its turn failed, it printed no "
            "thread, or it exited non-zero without a final message; attempts lists every retry"
        ),
        causes="the Codex CLI process's link",
        causes_rule=CausesRule.PROCESS_LINK,
        explanation=(
            "The Codex CLI failed with an error that is not a transient model-service error, "
            "which Workers does not retry"
        ),
        exhausted_explanation=(
            "The Codex CLI kept failing with a transient model-service error and the run's "
            "retry rounds are used up"
        ),
        backends=frozenset({"codex"}),
        source="decisions 72",
    ),
    CodeSpec(
        code=Code.WORKER_RESULT_INVALID,
        reason=Reason.CAPABILITY,
        detail=(
            "the schema violation, or the worker's final text when it gave no structured result"
        ),
        causes="none",
        causes_rule=CausesRule.NONE,
        explanation=(
            "Workers accepts only a worker result valid against the worker result schema and "
            "never repairs a worker's answer"
        ),
    ),
    CodeSpec(
        code=Code.AUDIT_VIOLATION,
        reason=Reason.PERMISSION,
        detail=(
            "every violating path and the worker's own reported status, or that its result was "
            "invalid"
        ),
        causes=(
            "the worker's link, when its result was valid and carries an error; none for a valid "
            "ok result, whose error is null, or an invalid one"
        ),
        causes_rule=CausesRule.WORKER_LINK,
        explanation="Workers never accepts a write outside the grant and never widens it",
    ),
    CodeSpec(
        code=Code.WORKER_BLOCKED,
        reason=Reason.CAPABILITY,
        detail="the worker's code and detail",
        causes="the worker's link",
        causes_rule=CausesRule.WORKER_LINK,
        explanation=(
            "The worker cannot continue without a decision above it; Workers takes no such decision"
        ),
    ),
    CodeSpec(
        code=Code.WORKER_FAILED,
        reason=Reason.CAPABILITY,
        detail="the worker's code and detail",
        causes="the worker's link",
        causes_rule=CausesRule.WORKER_LINK,
        explanation="The worker tried and could not finish its task; Workers does not redo it",
    ),
    CodeSpec(
        code=Code.VALIDATION_UNAVAILABLE,
        reason=Reason.CAPABILITY,
        detail="the round and the error the round validation raised instead of answering",
        causes="none",
        causes_rule=CausesRule.NONE,
        explanation=(
            "The caller's round validation raised instead of answering, or answered what the run "
            "record cannot keep; whether a round needs repair is the caller's judgement, which "
            "Workers never makes itself"
        ),
    ),
    CodeSpec(
        code=Code.DELETION_FAILED,
        reason=Reason.ENVIRONMENT,
        detail=(
            "every proposed deletion the host performed, every one that failed with the operating "
            "system's error, and those it refused or found already absent"
        ),
        causes="the link the run would otherwise have ended with, if any",
        causes_rule=CausesRule.PREVIOUS_LINK,
        explanation=(
            "The operating system refused a proposed deletion; Workers leaves the file in place "
            "and restores nothing it deleted"
        ),
    ),
    CodeSpec(
        code=Code.CLEANUP_FAILED,
        reason=Reason.ENVIRONMENT,
        detail=(
            "the transcript the host could not keep and the runtime directory it could not "
            "remove, each with the operating system's error"
        ),
        causes="the link the run would otherwise have ended with, if any",
        causes_rule=CausesRule.PREVIOUS_LINK,
        explanation=(
            "The operating system refused to keep the transcript or remove the runtime directory; "
            "credentials and transcripts must never outlive a run unnoticed"
        ),
    ),
    CodeSpec(
        code=Code.INTERRUPTED,
        reason=Reason.ENVIRONMENT,
        detail=(
            "what ended the run from outside before it finished, such as a signal or the "
            "cancellation of the run that launched it"
        ),
        causes="none",
        causes_rule=CausesRule.NONE,
        explanation=(
            "Something outside ended the run before it finished; Workers does not restart it and "
            "leaves the worktree as the interruption found it"
        ),
    ),
)

RUN_CODES: Mapping[Code, CodeSpec] = {row.code: row for row in _ROWS}
"""Every code of seed 000 "Errors" and seed 001 "Errors", in the tables' order."""


class ValidationAnswer(StrEnum):
    """The round validation's answers that end a run with a code the round validation names."""

    VIOLATION = "violation"
    UNAVAILABLE = "unavailable"
    REPAIR_FAILED = "repair_failed"


class ValidationCodeRule(BaseModel):
    """A row of the Errors table whose code the round validation names."""

    model_config = ConfigDict(frozen=True)

    answer: ValidationAnswer
    reason: Reason
    concorde_code: Code
    detail: str
    causes: str
    explanation: str


VALIDATION_CODE_RULES: Mapping[ValidationAnswer, ValidationCodeRule] = {
    ValidationAnswer.VIOLATION: ValidationCodeRule(
        answer=ValidationAnswer.VIOLATION,
        reason=Reason.PERMISSION,
        concorde_code=Code.AUDIT_VIOLATION,
        detail="every violating entry the round validation names",
        causes="the links the round validation names, none in Concorde",
        explanation=(
            "The caller does not allow what the round did at all; Workers ends such a run at "
            "once, with no further round"
        ),
    ),
    ValidationAnswer.UNAVAILABLE: ValidationCodeRule(
        answer=ValidationAnswer.UNAVAILABLE,
        reason=Reason.ENVIRONMENT,
        concorde_code=Code.CHECKS_UNAVAILABLE,
        detail="the round and what the round validation reported",
        causes="the links the round validation names, in Concorde Check execution's",
        explanation=(
            "The caller's round validation could not validate the round, and Workers judges no "
            "round itself"
        ),
    ),
    ValidationAnswer.REPAIR_FAILED: ValidationCodeRule(
        answer=ValidationAnswer.REPAIR_FAILED,
        reason=Reason.EXHAUSTED,
        concorde_code=Code.CHECKS_FAILED,
        detail="what still needs repair and the rounds used; attempts lists each round's repair",
        causes=(
            "the links the round validation names, in Concorde one per failing check, from Check "
            "execution"
        ),
        explanation=(
            "The round validation still asks for a repair and the run's resume rounds are used up"
        ),
    ),
}


def codes_for_backend(backend: str) -> tuple[Code, ...]:
    """The run codes a run of `backend` may end with (seed 001: pi uses the run mechanics' codes
    except claude_failed and run_directory_denied, and adds pi_runtime_missing and pi_failed)."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}: expected one of {sorted(BACKENDS)}")
    return tuple(code for code, row in RUN_CODES.items() if backend in row.backends)


def code_spec(code: str) -> CodeSpec:
    """The row of a run code; a ValueError for any other code."""
    try:
        return RUN_CODES[Code(code)]
    except (KeyError, ValueError):
        raise ValueError(f"{code!r} is not one of Workers' run codes") from None


def run_code_row(code: str) -> CodeSpec | None:
    """The row of the run code `code` names, or None when it names none (a refusal's, a
    component link's, one the round validation names)."""
    try:
        return RUN_CODES.get(Code(code))
    except ValueError:
        return None
