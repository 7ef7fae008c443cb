"""The Claude Code process's link of a failed round's error chain (level component), from what
its result envelope and standard error said: `claude_limit_reached` (reason exhausted) for the
error_max_turns and error_max_budget_usd subtypes, else `claude_error` (reason environment)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from decimal import Decimal

from concorde_workers.domain.evidence.links import (
    COMPONENT_LEVEL,
    exit_text,
    number_text,
    quote_head,
    quote_tail,
)
from concorde_workers.domain.ground.codes import CLAUDE_ERROR_CODE, CLAUDE_LIMIT_CODE, Reason
from concorde_workers.domain.ground.errors import ErrorLink, Unhandled

__all__ = ["CLAUDE_LIMIT_SUBTYPES", "CLAUDE_PROCESS_ACTOR", "claude_process_link"]

CLAUDE_PROCESS_ACTOR = "Claude Code process (claude -p)"
CLAUDE_LIMIT_SUBTYPES: frozenset[str] = frozenset({"error_max_turns", "error_max_budget_usd"})
"""The Claude Code envelope subtypes of a limit reached (claude_limit_reached)."""


def claude_process_link(
    subtype: str | None,
    is_error: bool | None,
    num_turns: int | None,
    total_cost_usd: int | float | Decimal | None,
    exit_status: int | None,
    final_text: str | None,
    errors: Sequence[str],
    stderr_tail: str,
) -> ErrorLink:
    """The Claude Code process's link (level component): the envelope's subtype, error flag,
    turn count and cost, the exit status, the final text, the reported errors and the tail of
    standard error. `subtype` None means Claude Code printed no result envelope."""
    limit = subtype in CLAUDE_LIMIT_SUBTYPES
    head = (
        "Claude Code printed no result envelope"
        if subtype is None
        else f"Claude Code ended with the result subtype {subtype}"
    )
    flag = "none" if is_error is None else json.dumps(is_error)
    parts = [
        f"{head} (is_error {flag}, {number_text(num_turns)} turn(s), cost "
        f"{number_text(total_cost_usd)} USD, exit status {exit_text(exit_status)})",
        f"errors: {json.dumps(list(errors), ensure_ascii=False)}",
        f"final text: {'none' if final_text is None else quote_head(final_text)}",
        f"stderr tail: {quote_tail(stderr_tail)}",
    ]
    reason = Reason.EXHAUSTED if limit else Reason.ENVIRONMENT
    explanation = (
        "Claude Code stopped the run at the turn or budget limit it was given"
        if limit
        else "Claude Code could not complete the round"
    )
    return ErrorLink(
        level=COMPONENT_LEVEL,
        actor=CLAUDE_PROCESS_ACTOR,
        code=CLAUDE_LIMIT_CODE if limit else CLAUDE_ERROR_CODE,
        detail="; ".join(parts),
        unhandled=Unhandled(reason=reason, explanation=explanation),
    )
