"""The caller's round validation (seed 000 "Round validation"): what it is given and answers.

The host calls it once after every round whose worker ended ok with a clean audit, with the
worktree, the folder of the round's trace node and the round's valid worker result. It answers
with evidence to keep and at most one of: a repair (optionally failing the run when no rounds are
left), a violation, or unavailable.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from concorde_workers.domain.errors import ErrorLink
from concorde_workers.domain.paths import is_within, relative_to
from concorde_workers.domain.rounds import ValidationAnswer


@dataclass(frozen=True)
class ValidationInput:
    """What the round validation is called with."""

    worktree: str
    round_dir: str
    result: Mapping[str, Any]
    round: int


@dataclass(frozen=True)
class LinkAnswer:
    """The code and causes of Workers' link, and what to say in its detail."""

    code: str
    causes: Sequence[ErrorLink] = ()
    detail: str = ""


@dataclass(frozen=True)
class ValidationOutcome:
    """The round validation's answer (seed 000 "Round validation" table)."""

    evidence: Sequence[Mapping[str, Any]] = ()
    repair: str | None = None
    failure: LinkAnswer | None = None
    violation: LinkAnswer | None = None
    unavailable: LinkAnswer | None = None
    attempts: Sequence[str] = field(default_factory=tuple)

    def problem(self) -> str | None:
        """Why the answer is not one of the table's, or None."""
        given = [name for name in ("repair", "violation", "unavailable")
                 if getattr(self, name) is not None]
        if len(given) > 1:
            return f"it answered {' and '.join(given)} at once; answer at most one of them"
        if self.failure is not None and self.repair is None:
            return "it gave a failure without a repair"
        if self.repair is not None and not self.repair.strip():
            return "its repair text is empty"
        return None

    def answer(self) -> ValidationAnswer:
        if self.unavailable is not None:
            return ValidationAnswer.UNAVAILABLE
        if self.violation is not None:
            return ValidationAnswer.VIOLATION
        if self.repair is not None:
            return (ValidationAnswer.REPAIR_FAILS_RUN if self.failure is not None
                    else ValidationAnswer.REPAIR)
        return ValidationAnswer.NOTHING_TO_REPAIR

    def coded(self) -> LinkAnswer | None:
        return self.unavailable or self.violation or self.failure


RoundValidation = Callable[[ValidationInput], ValidationOutcome]


def evidence_for_node(evidence: Sequence[Mapping[str, Any]], round_dir: str
                      ) -> tuple[dict[str, Any], ...]:
    """Each artifact path (a top-level string that is an absolute path below the round's folder)
    relative to that folder, as the round's node keeps it."""
    out = []
    for value in evidence:
        item = dict(value)
        for key, text in value.items():
            if isinstance(text, str) and posixpath.isabs(text) and is_within(text, round_dir) \
                    and posixpath.normpath(text) != posixpath.normpath(round_dir):
                item[key] = relative_to(text, round_dir)
        out.append(item)
    return tuple(out)


def evidence_for_record(evidence: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], ...]:
    """The evidence as the returned record carries it: as the caller returned it, so every
    artifact path is absolute (the round's node keeps them relative)."""
    return tuple(dict(value) for value in evidence)
