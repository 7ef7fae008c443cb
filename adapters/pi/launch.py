"""The exact command line of a pi round (seed 001 "Launch", adapted to the installed pi 0.73.1
by `PiCommandMapping`, the one place that says how): the turn and budget limits are not on pi's
command line, the permission extension counts them. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from pydantic import BaseModel, ConfigDict

from concorde_workers.adapters.pi import layout
from concorde_workers.domain.ground.layout import RuntimeLayout
from concorde_workers.domain.ground.run_id import is_run_id
from concorde_workers.domain.isolation.launch import (
    LaunchCommand,
    as_runtime,
    option_value,
    tool_set,
    tools_argument,
)

__all__ = ["PI_COMMAND_MAPPING", "PI_PROGRAM", "PI_RESULT_TOOL", "PiCommandMapping", "pi_command"]

PI_PROGRAM = "pi"
PI_RESULT_TOOL = "concorde_result"


class PiCommandMapping(BaseModel):
    """How the pi command of seed 001 maps onto the installed pi (0.73.1): the one place.

    Departures from the spec's text, each keeping the spec's behaviour:

    1. `--session-id <run-id>` does not exist in pi 0.73.1 (pi exits 1, "Unknown option"). The
       run fixes its session by its file instead: `--session-dir <rt>/config/sessions --session
       <rt>/config/sessions/<run-id>.jsonl`. pi starts a new session at exactly that path when
       the file does not exist and continues it when it does, so every round - first, resume and
       retry - runs the same command, and a retry whose round was killed before pi wrote the file
       starts anew with the brief, as the spec asks. The session id pi records is its own UUID,
       read from the stream's session record; the session file is the transcript.
    2. `--tools` always names `concorde_result`: pi 0.73.1 offers an extension's tool only when
       --tools lists it, and the worker returns its result through that tool.
    """

    model_config = ConfigDict(frozen=True)

    pi_version: ClassVar[str] = "0.73.1"

    def session_arguments(self, runtime: RuntimeLayout, run_id: str) -> tuple[str, ...]:
        """What stands for the spec's `--session-dir <rt>/config/sessions --session-id <run-id>`."""
        return (
            "--session-dir",
            layout.sessions(runtime),
            "--session",
            layout.session_file(runtime, run_id),
        )

    def tool_set(self, tools: Sequence[str]) -> tuple[str, ...]:
        """The tool set with concorde_result appended when the given set lacks it."""
        names = tool_set(tools)
        return names if PI_RESULT_TOOL in names else (*names, PI_RESULT_TOOL)

    def adaptations(self, runtime: RuntimeLayout, run_id: str) -> tuple[str, ...]:
        """The departures, as lines a person reads (the dry-run planner shows them)."""
        session_file = layout.session_file(runtime, run_id)
        return (
            f"pi {self.pi_version} has no --session-id: the run fixes its session by its file, "
            f"--session-dir {layout.sessions(runtime)} --session {session_file}, "
            f"instead of --session-id {run_id}; resume and retry rounds run the same command",
            f"--tools always names {PI_RESULT_TOOL}: pi {self.pi_version} offers the permission "
            "extension's result tool only when --tools lists it",
        )


PI_COMMAND_MAPPING = PiCommandMapping()


def pi_command(
    *,
    runtime: RuntimeLayout | str,
    tools: Sequence[str],
    run_id: str,
    model: str | None = None,
    thinking: str | None = None,
    program: str = PI_PROGRAM,
    mapping: PiCommandMapping = PI_COMMAND_MAPPING,
) -> LaunchCommand:
    """The pi round command (seed 001 "Launch", mapped by `PiCommandMapping`); every round of the
    run, first, resume or retry, runs the same command with its own prompt on standard input.

    Extension discovery, context files, skills and prompt templates are disabled; the permission
    extension control/permission.ts is the only extension.
    """
    rt = as_runtime(runtime)
    if not program:
        raise ValueError("the pi program is empty")
    if not is_run_id(run_id):
        raise ValueError(f"not a run id: {run_id!r}")
    names = mapping.tool_set(tools)
    argv = [
        program,
        "-p",
        "--mode",
        "json",
        "--no-extensions",
        "-e",
        layout.permission_extension(rt),
        "--no-context-files",
        "--no-skills",
        "--no-prompt-templates",
        "--tools",
        tools_argument(names),
        *mapping.session_arguments(rt, run_id),
    ]
    if model is not None:
        argv += ["--model", option_value("--model", model)]
    if thinking is not None:
        argv += ["--thinking", option_value("--thinking", thinking)]
    return LaunchCommand(
        argv=tuple(argv), cwd=rt.work, tools=names, adaptations=mapping.adaptations(rt, run_id)
    )
