"""The pi process's link of a failed round's error chain (level component), from what its events
and standard error said: `pi_limit_reached` (reason exhausted) when the permission extension
stopped the run at a limit, else `pi_error` (reason environment)."""

from __future__ import annotations

from decimal import Decimal

from concorde_workers.domain.evidence.links import (
    COMPONENT_LEVEL,
    exit_text,
    number_text,
    quote_head,
    quote_tail,
)
from concorde_workers.domain.ground.codes import PI_ERROR_CODE, PI_LIMIT_CODE, Reason
from concorde_workers.domain.ground.errors import ErrorLink, Unhandled
from concorde_workers.domain.ground.text import format_number

__all__ = ["PI_PROCESS_ACTOR", "pi_limit_detail", "pi_process_link"]

PI_PROCESS_ACTOR = "pi process (pi -p)"


def pi_limit_detail(
    limit: str, value: int | float | Decimal, maximum: int | float | Decimal
) -> str:
    """`the permission extension stopped the run at its <limit> limit (<value> reached, at most
    <maximum> allowed)`."""
    return (
        f"the permission extension stopped the run at its {limit} limit "
        f"({format_number(value)} reached, at most {format_number(maximum)} allowed)"
    )


def pi_process_link(
    exit_status: int | None,
    stop_reason: str | None,
    error_message: str | None,
    turns: int | None,
    stderr_tail: str,
    limit: str | None = None,
    value: int | float | Decimal | None = None,
    maximum: int | float | Decimal | None = None,
) -> ErrorLink:
    """The pi process's link (level component): pi_limit_reached (reason exhausted) with the
    limit, the value reached and the maximum allowed when the permission extension stopped the
    run at a limit, else pi_error (reason environment); both state the exit status, the last
    assistant message's stop reason and error message, the turns and the tail of standard
    error."""
    at_limit = limit is not None
    if at_limit and (value is None or maximum is None):
        raise ValueError("a pi limit names the value reached and the maximum allowed")
    if not at_limit and (value is not None or maximum is not None):
        raise ValueError("a value reached and a maximum allowed belong to a named limit")
    facts = (
        f"exit status {exit_text(exit_status)}, last stop reason "
        f"{stop_reason if stop_reason is not None else 'none (no assistant message)'}, "
        f"error message {'none' if error_message is None else quote_head(error_message)}, "
        f"{number_text(turns)} turn(s)"
    )
    parts = (
        [pi_limit_detail(limit, value, maximum)]
        if limit is not None and value is not None and maximum is not None
        else ["pi did not complete the round"]
    )
    parts += [facts, f"stderr tail: {quote_tail(stderr_tail)}"]
    return ErrorLink(
        level=COMPONENT_LEVEL,
        actor=PI_PROCESS_ACTOR,
        code=PI_LIMIT_CODE if at_limit else PI_ERROR_CODE,
        detail="; ".join(parts),
        unhandled=Unhandled(
            reason=Reason.EXHAUSTED if at_limit else Reason.ENVIRONMENT,
            explanation=(
                "the permission extension aborts a pi run that exceeds its turn or budget limit"
                if at_limit
                else "pi could not complete the round"
            ),
        ),
    )
