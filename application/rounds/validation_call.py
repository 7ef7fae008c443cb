"""The caller's round validation called (seed 000 "Round validation"): once after a round whose
worker ended ok with a clean audit, given the worktree, the round's node folder, the round's
valid worker result and the run's mount plan inside the worktree; its answer checked (one the
record cannot keep is a validation that could not validate, never a failed host), its evidence
kept for the node and the record, and the answer put to the Rounds table's facts."""

from __future__ import annotations

from concorde_workers.application.preparation.prepared import Prepared
from concorde_workers.application.rounds.round_context import RoundContext
from concorde_workers.application.runtime.run_state import RoundState
from concorde_workers.application.runtime.validation import (
    ValidationInput,
    ValidationOutcome,
    evidence_for_node,
    evidence_for_record,
)
from concorde_workers.domain.ground.paths import is_within
from concorde_workers.domain.isolation.confinement import Mount
from concorde_workers.domain.run.rounds import RoundFacts, ValidationAnswer

__all__ = ["outcome_text", "validate", "with_answer", "worktree_view"]


def validate(
    context: RoundContext, round_state: RoundState
) -> tuple[ValidationOutcome | None, str | None]:
    """The caller's round validation called once for `round_state` (seed 000 "Round
    validation"): its outcome, or None with what went wrong (validation_unavailable) when it
    raised or gave an answer the record cannot keep. The round's node then says it."""
    assert context.validation is not None and context.state.worker_result is not None
    context.progress.phase("validation", round_state.number)
    round_dir = context.state.layout.round_dir(round_state.number)
    result = context.state.worker_result
    try:
        outcome = context.validation(
            ValidationInput(
                worktree=context.prepared.placement.worktree,
                round_dir=round_dir,
                result=result.model_dump(mode="json"),
                round=round_state.number,
                view=worktree_view(context.prepared),
                worker_result=result,
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
    round_state.validation = outcome_text(outcome)
    return outcome, None


def worktree_view(prepared: Prepared) -> tuple[Mount, ...] | None:
    """The run's mount plan inside its worktree: what a check may see (None: unconfined)."""
    confinement = prepared.confinement
    if confinement is None:
        return None
    worktree = prepared.placement.worktree
    return tuple(m for m in confinement.mounts if is_within(m.path, worktree))


def with_answer(
    facts: RoundFacts, outcome: ValidationOutcome | None, raised: str | None
) -> RoundFacts:
    """The round's facts with the validation's answer, as the Rounds table reads them."""
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


def outcome_text(outcome: ValidationOutcome) -> str:
    """The round trace's `validation`: clean, the text to repair, or why it could not validate."""
    if outcome.unavailable is not None:
        return f"unavailable ({outcome.unavailable.code}): {outcome.unavailable.detail}".rstrip()
    if outcome.violation is not None:
        return f"violation ({outcome.violation.code}): {outcome.violation.detail}".rstrip()
    if outcome.repair is not None:
        return outcome.repair
    return "clean"
