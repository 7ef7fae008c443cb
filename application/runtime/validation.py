"""The caller's round validation (seed 000 "Round validation"): what it is given and answers.

The host calls it once after every round whose worker ended ok with a clean audit, with the
worktree, the folder of the round's trace node and the round's valid worker result. It answers
with evidence to keep and at most one of: a repair (optionally failing the run when no rounds are
left), a violation, or unavailable.
"""

from __future__ import annotations

import math
import posixpath
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from concorde_workers.domain.ground.errors import ErrorLink
from concorde_workers.domain.ground.paths import is_within, relative_to
from concorde_workers.domain.isolation.confinement import Mount
from concorde_workers.domain.run.rounds import ValidationAnswer
from concorde_workers.domain.run.worker_result import WorkerResult


@dataclass(frozen=True)
class ValidationInput:
    """What the round validation is called with."""

    worktree: str
    round_dir: str
    result: Mapping[str, Any]
    round: int
    view: tuple[Mount, ...] | None = None
    """The run's mount plan inside the worktree, as the agent ran under it (None: the round ran
    unconfined: a test backend): what a check may see of the worktree
    (domain/isolation/check_layer.py)."""
    worker_result: WorkerResult | None = None
    """`result` as its model (issue 34 §5: the caller's typed face of the worker result), the
    one the host judged valid; the host always gives it."""


@dataclass(frozen=True)
class LinkAnswer:
    """The code and causes of Workers' link, and what to say in its detail."""

    code: str
    causes: Sequence[ErrorLink] = ()
    detail: str = ""

    def problem(self) -> str | None:
        """What the run's error link could not take from this answer, or None."""
        if not isinstance(self.code, str) or not self.code.strip():
            return f"names no code (code {self.code!r})"
        if not isinstance(self.detail, str):
            return f"has a detail that is a {type(self.detail).__name__}, not a text"
        if isinstance(self.causes, str) or not all(isinstance(c, ErrorLink) for c in self.causes):
            return "has causes that are not error links"
        return None


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
        """Why the answer is not one of the table's, or what in it the record cannot keep
        (evidence that is no JSON, a field of the wrong type); None for a good answer."""
        kept = self._unkeepable()
        if kept is not None:
            return kept
        given = [
            name
            for name in ("repair", "violation", "unavailable")
            if getattr(self, name) is not None
        ]
        if len(given) > 1:
            return f"it answered {' and '.join(given)} at once; answer at most one of them"
        if self.failure is not None and self.repair is None:
            return "it gave a failure without a repair"
        if self.repair is not None and not self.repair.strip():
            return "its repair text is empty"
        return None

    def _unkeepable(self) -> str | None:
        """The first part of the answer the run record cannot keep as it is given."""
        if isinstance(self.evidence, str | bytes | Mapping) or not isinstance(
            self.evidence, Sequence
        ):
            return f"its evidence is a {type(self.evidence).__name__}, not a list of objects"
        for n, item in enumerate(self.evidence):
            if not isinstance(item, Mapping):
                return f"its evidence[{n}] is a {type(item).__name__}, not an object"
            problem = json_problem(item, f"evidence[{n}]")
            if problem is not None:
                return f"its {problem}"
        if self.repair is not None and not isinstance(self.repair, str):
            return f"its repair is a {type(self.repair).__name__}, not a text"
        for name in ("failure", "violation", "unavailable"):
            link = getattr(self, name)
            if link is not None and not isinstance(link, LinkAnswer):
                return f"its {name} is a {type(link).__name__}, not a LinkAnswer"
            if link is not None and (problem := link.problem()) is not None:
                return f"its {name} {problem}"
        if isinstance(self.attempts, str) or not all(isinstance(a, str) for a in self.attempts):
            return "its attempts are not a list of texts"
        return None

    def answer(self) -> ValidationAnswer:
        if self.unavailable is not None:
            return ValidationAnswer.UNAVAILABLE
        if self.violation is not None:
            return ValidationAnswer.VIOLATION
        if self.repair is not None:
            return (
                ValidationAnswer.REPAIR_FAILS_RUN
                if self.failure is not None
                else ValidationAnswer.REPAIR
            )
        return ValidationAnswer.NOTHING_TO_REPAIR

    def coded(self) -> LinkAnswer | None:
        return self.unavailable or self.violation or self.failure


RoundValidation = Callable[[ValidationInput], ValidationOutcome]


def json_problem(value: object, where: str) -> str | None:
    """Why `value` is not plain JSON the trace can keep as it is (objects with text keys, lists,
    texts, finite numbers, true, false, null), naming where; None when it is."""
    if value is None or isinstance(value, str | bool | int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{where} is {value!r}, which JSON cannot hold"
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{where} has the key {key!r}, which is no text"
            problem = json_problem(item, f"{where}.{key}")
            if problem is not None:
                return problem
        return None
    if isinstance(value, list | tuple):
        for n, item in enumerate(value):
            problem = json_problem(item, f"{where}[{n}]")
            if problem is not None:
                return problem
        return None
    return f"{where} is a {type(value).__name__}, which JSON cannot hold"


def evidence_for_node(
    evidence: Sequence[Mapping[str, Any]], round_dir: str
) -> tuple[dict[str, Any], ...]:
    """Each artifact path (a top-level string that is an absolute path below the round's folder)
    relative to that folder, as the round's node keeps it."""
    out = []
    for value in evidence:
        item = dict(value)
        for key, text in value.items():
            if (
                isinstance(text, str)
                and posixpath.isabs(text)
                and is_within(text, round_dir)
                and posixpath.normpath(text) != posixpath.normpath(round_dir)
            ):
                item[key] = relative_to(text, round_dir)
        out.append(item)
    return tuple(out)


def evidence_for_record(evidence: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], ...]:
    """The evidence as the returned record carries it: as the caller returned it, so every
    artifact path is absolute (the round's node keeps them relative)."""
    return tuple(dict(value) for value in evidence)
