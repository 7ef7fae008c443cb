"""The progress file, status.json (seed 000 "Progress file"), as its model."""

from __future__ import annotations

from typing import Annotated, Self

from pydantic import BaseModel, Field, StrictInt, StrictStr, model_validator

from concorde_workers.domain.ground.record_fields import (
    RECORD,
    NonEmpty,
    Phase,
    ProgressStatus,
    UtcTime,
)

__all__ = ["LAST_ACTION_TARGET_LIMIT", "LastAction", "ProgressFile", "cut_target"]


LAST_ACTION_TARGET_LIMIT = 200


def cut_target(target: str) -> str:
    """A tool call's target as the progress file shows it: its first line (a command's first
    line), at most 200 characters (seed 000 "Progress file")."""
    first_line = target.split("\n", 1)[0].rstrip("\r")
    return first_line[:LAST_ACTION_TARGET_LIMIT]


class LastAction(BaseModel):
    """The worker's latest tool call: the tool, its target and when it was made."""

    model_config = RECORD

    tool: NonEmpty
    target: Annotated[StrictStr, Field(max_length=LAST_ACTION_TARGET_LIMIT)]
    at: UtcTime

    @classmethod
    def of(cls, tool: str, target: str, at: str) -> LastAction:
        """The action with its target cut by `cut_target`."""
        return cls(tool=tool, target=cut_target(target), at=at)


class ProgressFile(BaseModel):
    """status.json: what the run is doing while it runs; an observation aid, not evidence.

    status is null while running and the final status once phase is finished (interrupted when
    something outside ended the run).
    """

    model_config = RECORD

    run_id: NonEmpty
    task_type: NonEmpty
    backend: NonEmpty
    worktree: NonEmpty
    operation_run_id: NonEmpty | None
    phase: Phase
    round: Annotated[StrictInt, Field(ge=1)]
    last_action: LastAction | None
    status: ProgressStatus | None
    host_pid: Annotated[StrictInt, Field(ge=1)]
    started_at: UtcTime
    updated_at: UtcTime

    @model_validator(mode="after")
    def _status_when_finished(self) -> Self:
        if (self.phase == "finished") != (self.status is not None):
            raise ValueError("status is null while running and set once phase is finished")
        return self
