"""The exact command line of a Claude Code round (seed 000 "Launch"):

    claude -p --settings <rt>/control/settings.json --tools <set> --json-schema <schema JSON text>
           --output-format stream-json --verbose --permission-mode bypassPermissions
           --allow-dangerously-skip-permissions --strict-mcp-config --max-turns <n>
           [--max-budget-usd <x>] [--model <local id>] [--effort <level>] [--resume <session>]

`--json-schema` takes the schema's text inline (Claude Code 2.1.197 rejects a file path); a
resume or retry round adds `--resume <latest session id>`; a retry round with no session to
continue runs the first round's command. Pure.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from decimal import Decimal

from concorde_workers.adapters.claude.layout import settings_file
from concorde_workers.domain.ground.layout import RuntimeLayout
from concorde_workers.domain.ground.text import format_number
from concorde_workers.domain.isolation.launch import (
    LaunchCommand,
    as_runtime,
    option_value,
    tool_set,
    tools_argument,
)

__all__ = ["CLAUDE_PROGRAM", "claude_command"]

CLAUDE_PROGRAM = "claude"


def claude_command(
    *,
    runtime: RuntimeLayout | str,
    tools: Sequence[str],
    result_schema: str,
    max_turns: int,
    max_budget_usd: int | float | Decimal | None = None,
    model: str | None = None,
    effort: str | None = None,
    resume: str | None = None,
    program: str = CLAUDE_PROGRAM,
) -> LaunchCommand:
    """The Claude Code round command (seed 000 "Launch").

    `result_schema` is the worker result schema's JSON text (the same text the host writes to
    control/result.schema.json); `resume` the latest session id for a resume or retry round,
    None for the first round and for a retry round with no session to continue.
    """
    rt = as_runtime(runtime)
    if not program:
        raise ValueError("the Claude Code program is empty")
    _check_json_schema(result_schema)
    if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
        raise ValueError(f"max_turns must be an integer from 1, got {max_turns!r}")
    names = tool_set(tools)
    argv = [
        program,
        "-p",
        "--settings",
        settings_file(rt),
        "--tools",
        tools_argument(names),
        "--json-schema",
        result_schema,
        "--output-format",
        "stream-json",
        "--verbose",
        "--permission-mode",
        "bypassPermissions",
        "--allow-dangerously-skip-permissions",
        "--strict-mcp-config",
        "--max-turns",
        str(max_turns),
        *_claude_options(max_budget_usd, model, effort, resume),
    ]
    return LaunchCommand(argv=tuple(argv), cwd=rt.work, tools=names)


def _check_json_schema(result_schema: str) -> None:
    """--json-schema's text must be a JSON object."""
    try:
        parsed = json.loads(result_schema)
    except json.JSONDecodeError as exc:
        raise ValueError(f"--json-schema is not valid JSON: {exc}") from exc
    if not isinstance(parsed, dict):
        raise ValueError("--json-schema must be a JSON object")


def _claude_options(
    max_budget_usd: int | float | Decimal | None,
    model: str | None,
    effort: str | None,
    resume: str | None,
) -> list[str]:
    """The Claude Code round command's optional flags, in this order, each only when given."""
    options: list[str] = []
    if max_budget_usd is not None:
        budget = format_number(max_budget_usd)
        if max_budget_usd <= 0:
            raise ValueError(f"max_budget_usd must be positive, got {max_budget_usd!r}")
        options += ["--max-budget-usd", budget]
    for flag, value in (("--model", model), ("--effort", effort), ("--resume", resume)):
        if value is not None:
            options += [flag, option_value(flag, value)]
    return options
