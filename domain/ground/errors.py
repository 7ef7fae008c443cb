"""The error link of the Framework's error chain (contract.tracing.error) and refusals.

Domain outcomes are values, not exceptions: a refusal before a run is a `Refusal`, a failed run
carries an `ErrorLink`. The code tables of seed 000 "Errors" and "Refusals before a run" and of
seed 001 "Errors" live in `domain/ground/codes.py` as data.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from concorde_workers.domain.ground.codes import Code, Reason

__all__ = ["Code", "ErrorLink", "Evidence", "LinkCode", "Reason", "Refusal", "Unhandled"]

LinkCode = Annotated[
    Code | Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$")], Field(union_mode="left_to_right")
]
"""A link's code: one of Workers' `Code`s, or any code another actor gives (the worker's own,
one the round validation names); either serialises to the same string."""


class Evidence(BaseModel):
    """One evidence item of a link: what kind of thing, which one, and a short explanation."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str = Field(min_length=1)
    ref: str = Field(min_length=1)
    detail: str = ""


class Unhandled(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    reason: Reason
    explanation: str = Field(min_length=1)


class ErrorLink(BaseModel):
    """One link of the error chain: level, actor, code, detail, evidence, attempts, unhandled,
    options, recommendation and causes (contract.tracing.error)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    level: str = Field(min_length=1)
    actor: str = Field(min_length=1)
    code: LinkCode
    detail: str = Field(min_length=1)
    evidence: tuple[Evidence, ...] = ()
    attempts: tuple[str, ...] = ()
    unhandled: Unhandled
    options: tuple[str, ...] = ()
    recommendation: str = ""
    causes: tuple[ErrorLink, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The link as the contract's JSON object (lists, not tuples)."""
        return self.model_dump(mode="json")


class Refusal(BaseModel):
    """A refusal before anything is generated or launched: a stable code, the reason of the
    spec's table, and a message that names the file or entry, what is wrong and the repair."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    code: Code
    reason: Reason
    message: str
    file: str | None = Field(default=None, description="the file the refusal concerns, if any")

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"
