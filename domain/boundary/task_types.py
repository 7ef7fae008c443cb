"""The eight Protocol task types (contract.workers.grant-input), which of them write nothing, and
which of them get file tools and Bash (notes/harness.md §1.5; the tool set a backend's names make
is its profile's: domain/configuration/profile.py `tool_set`).

Standard library without `typing`: the command line's grammar reads `TASK_TYPE_LINES` for
`--help` (issue 32 §2)."""

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

TASK_TYPE_LINES: dict[str, str] = {
    "understand": "read the granted paths and report what they do (read-only tools)",
    "specify": "write or change specification files (file tools, no Bash)",
    "implement": "change code under the grant and run commands in the sandbox (file tools and "
    "Bash)",
    "test": "judge the checks' results the Operation hands over (read-only tools, no Bash)",
    "review-spec": "review specification files (read-only tools)",
    "review-code": "review code (read-only tools)",
    "code-to-spec": "write specification from existing code (file tools, no Bash)",
    "review-architecture": "review the architecture (read-only tools)",
}
"""One line per task type, for `--help` (a test holds the keys to TASK_TYPES and the tools
said to the tool sets)."""

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
