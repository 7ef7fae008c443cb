"""The brief and the retry prompt (notes/harness.md §4; seed 000 "Retries").

The brief is composed once from the frozen grant, sent on standard input in round 1 and unchanged
for the run (seed 000 "The run's configuration never changes between rounds"). Its wording is
the same for every backend but what its profile's `BriefVariant` gives: the names of its
tools and how the worker ends (pi's name `write`, `bash`, `concorde_result`). It tells
the worker to give its tools absolute paths and to name worktree paths in its result relative to
the worktree, and names the project interpreter when the request gives one.
"""

from __future__ import annotations

import posixpath
import re

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.boundary.grant import Grant, Level

UNHANDLED_REASONS = "permission|decision|scope|capability|exhausted|environment|input"


def boundary_lines(grant: Grant, worktree: str, level: Level) -> list[str]:
    """`- <absolute path>` per entry of `level`, directory entries keeping their `/`."""
    paths = [posixpath.join(worktree, e.path) for e in grant.entries if e.level is level]
    return [f"- {p}" for p in paths] or ["- (none)"]


_OPENING = re.compile(
    r"You are a worker of Concorde\. The task worktree is (?P<worktree>/[^\n]*?); your working "
    r"directory is a private scratch directory outside it, so give your tools absolute paths "
    r"\(such as (?P=worktree)/src/app\.py\)"
)


def worktree_of_brief(brief: str) -> str | None:
    """The task worktree a brief names in its opening (the inverse of the opening below), or
    None when the text holds no such opening. The path is named twice there, and both must
    agree."""
    found = _OPENING.search(brief)
    return found.group("worktree") if found else None


def _opening(worktree: str) -> str:
    return (
        f"You are a worker of Concorde. The task worktree is {worktree}; your working directory "
        "is a private scratch directory outside it, so give your tools absolute paths (such as "
        f"{posixpath.join(worktree, 'src/app.py')}), never paths relative to the working "
        "directory. In the structured result, write every task-worktree path relative to the "
        "task worktree, such as `src/app.py`, never as an absolute path."
    )


def _boundary(grant: Grant, worktree: str) -> list[str]:
    return [
        "## Your boundary",
        "",
        "You may change only these paths (a path ending with / covers the files below it):",
        *boundary_lines(grant, worktree, Level.RW),
        "",
        "You may read, but not change, these paths:",
        *boundary_lines(grant, worktree, Level.RO),
        "",
        "You may know that these files exist, but you may not read or change them:",
        *boundary_lines(grant, worktree, Level.NAMES),
        "",
        "Every other path is hidden from you. A refused read or write means the path is outside "
        "your boundary: do not work around it. If your task needs it, stop and return `blocked`, "
        "naming the path and why you need it.",
    ]


def _interpreter(interpreter: str | None) -> list[str]:
    if interpreter is None:
        return []
    return [
        "## Running the project's code",
        "",
        f"The project's own interpreter is {interpreter}, first on your PATH as "
        f"`{posixpath.basename(interpreter)}`. Run the project's code and tests with it, from "
        "the task worktree.",
        "",
    ]


class BriefVariant(BaseModel):
    """What of the brief and the retry prompt is one program's: the names of its shell and write
    tools as the worker knows them, and how the worker ends its session (a backend's profile
    holds one: ports/agents/agent.py `BackendProfile`)."""

    model_config = ConfigDict(frozen=True)

    shell: str
    write_tool: str
    ending: str
    """The brief's sentence, e.g. "End with the structured result."."""
    retry_ending: str
    """The retry prompt's closing words, e.g. "end with the structured result"."""


def _rules(variant: BriefVariant) -> list[str]:
    shell, write, ending = variant.shell, variant.write_tool, variant.ending
    return [
        "## Rules",
        "",
        "- Never use Git and never read `.git`: Git metadata is not available to workers.",
        "- You cannot delete files: list every file to delete in `proposed_deletions`, relative "
        "to the task worktree; the host deletes them after checking them against your boundary.",
        f"- A file you create with {shell} outside the writable paths is lost: create and change "
        f"files with the {write}.",
        f"- {ending} For `ok`, `error` is null. For `blocked` or `failed`, the error must be "
        "complete: its code, the full detail with the exact messages, the evidence, the attempts "
        f"you made, the `unhandled` reason (one of {UNHANDLED_REASONS}) with its explanation, the "
        "options and your recommendation.",
    ]


def compose_brief(
    *,
    variant: BriefVariant,
    task_type: str,
    worktree: str,
    grant: Grant,
    instructions: str,
    interpreter: str | None = None,
) -> str:
    """The brief, deterministic text ending with one newline (notes/harness.md §4)."""
    lines = [
        f"# Concorde worker task ({task_type})",
        "",
        _opening(worktree),
        "",
        "## Task",
        "",
        instructions.strip() or "(no task-specific instructions)",
        "",
        *_boundary(grant, worktree),
        "",
        *_interpreter(interpreter),
        *_rules(variant),
    ]
    return "\n".join(lines) + "\n"


def retry_prompt(error: str, variant: BriefVariant) -> str:
    """A retry round's prompt (seed 000 "Retries"): names the error, asks to go on from where the
    worker stopped, repeating the two path rules of the brief."""
    ending = variant.retry_ending
    return (
        "Your previous turn was cut off by a transient error of the model service:\n\n"
        f"{error.strip()}\n\n"
        "Continue your task from where you stopped. Your earlier work and this session's history "
        "are kept: do not redo what is done. Give your tools absolute paths, write every "
        "task-worktree path in your result relative to the task worktree, and "
        f"{ending}.\n"
    )
