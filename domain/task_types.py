"""The eight Protocol task types (contract.workers.grant-input) and which of them write nothing."""

from __future__ import annotations

from enum import StrEnum


class TaskType(StrEnum):
    UNDERSTAND = "understand"
    SPECIFY = "specify"
    IMPLEMENT = "implement"
    TEST = "test"
    REVIEW_SPEC = "review-spec"
    REVIEW_CODE = "review-code"
    CODE_TO_SPEC = "code-to-spec"
    REVIEW_ARCHITECTURE = "review-architecture"


TASK_TYPES: tuple[str, ...] = tuple(t.value for t in TaskType)

# notes/harness.md §1.5: the task types whose Protocol row writes nothing get the read-only set;
# `test` gets no Bash (its Operation runs the checks and hands the worker their results).
READ_ONLY_TASK_TYPES: frozenset[TaskType] = frozenset(
    {
        TaskType.UNDERSTAND,
        TaskType.REVIEW_SPEC,
        TaskType.REVIEW_CODE,
        TaskType.TEST,
        TaskType.REVIEW_ARCHITECTURE,
    }
)
FILE_WRITING_TASK_TYPES: frozenset[TaskType] = frozenset({TaskType.SPECIFY, TaskType.CODE_TO_SPEC})
BASH_TASK_TYPES: frozenset[TaskType] = frozenset({TaskType.IMPLEMENT})


def parse_task_type(value: object) -> TaskType | None:
    """The task type named by `value`, or None when it is not one of the eight."""
    if isinstance(value, str) and value in TASK_TYPES:
        return TaskType(value)
    return None


def writes_nothing(task_type: TaskType) -> bool:
    """True for a task type that gets the read-only tool set whatever its grant."""
    return task_type in READ_ONLY_TASK_TYPES
