"""The exact command line of a worker round, per backend (seed 000 "Launch", seed 001 "Launch").

Every round runs with the runtime directory's work/ as working directory (never the worktree) and
its prompt on standard input: the brief, the round validation's repair text, or the retry prompt.

Claude Code (seed 000):

    claude -p --settings <rt>/control/settings.json --tools <set> --json-schema <schema JSON text>
           --output-format stream-json --verbose --permission-mode bypassPermissions
           --allow-dangerously-skip-permissions --strict-mcp-config --max-turns <n>
           [--max-budget-usd <x>] [--model <local id>] [--effort <level>] [--resume <session>]

  `--json-schema` takes the schema's text inline (Claude Code 2.1.197 rejects a file path); a
  resume or retry round adds `--resume <latest session id>`; a retry round with no session to
  continue runs the first round's command.

pi (seed 001, adapted to the installed pi 0.73.1 by `PiCommandMapping`, the one place that says
how): the turn and budget limits are not on pi's command line, the permission extension counts
them.

Numbers are formatted stably: integers as integers, other numbers in plain decimal notation
without trailing zeros (0.5 -> "0.5", 2.0 -> "2", 1e-05 -> "0.00001").
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from decimal import Decimal
from typing import ClassVar

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.evidence.layout import RuntimeLayout
from concorde_workers.domain.evidence.run_id import is_run_id

CLAUDE_PROGRAM = "claude"
PI_PROGRAM = "pi"
PI_RESULT_TOOL = "concorde_result"

NAMESPACE_REPORT_FD = "{namespace-report-fd}"
"""An argument the process runner replaces with the number of a pipe's write end it passes to
the program, on which the program reports, as bubblewrap's `--info-fd` does (JSON with
`child-pid` and `pid-namespace`), the process whose exit ends its PID namespace: the round ends
only once that process has exited (ports/process.py "How a round ends")."""

EXIT_STATUS_FD = "{exit-status-fd}"
"""An argument the process runner replaces with the number of a pipe's write end on which the
program reports the exact wait status of the process it runs for it (one decimal line, as
waitpid(2) gives it): `wait()` then returns that status rather than the program's own, which
bubblewrap collapses (a death by signal n becomes the exit status 128 + n)."""


LIFELINE_FD = "{lifeline-fd}"
"""An argument the process runner replaces with the number of a pipe's read end it passes to
the program, whose write end only the host holds (close-on-exec, never inherited): it reaches
end of file when the host is gone, however it died (`LIFELINE_SCRIPT`)."""

LIFELINE_SCRIPT = (
    'fd=$1; shift; case $fd in ""|*[!0-9]*) exit 125;; esac; '
    '( exec </dev/null >/dev/null 2>&1; read -r _ <&"$fd"; kill -s KILL -- -1 ) & '
    'exec "$@"'
)
"""The first program inside a PID namespace of bubblewrap's (a check's, a round's): a watcher
in the background reads the lifeline, and at its end of file kills every process of the
namespace but its init, which then exits with no child left, ending the namespace; the
foreground becomes the command (which keeps the read end: dash cannot close a descriptor above
9 by number, and an end of file is all the pipe will ever carry). bwrap's `--die-with-parent` alone
loses a race: its init sets its parent-death signal only after it forked the command, so a host
killed in between (measured under load: 1 run in 9 of tests/integration/
test_check_host_killed.py) leaves an init with no such signal and the namespace alive for good.
A lifeline read after its writer died ends at once: there is no window."""


def lifeline(shell: str) -> list[str]:
    """The command line in front of a namespace's command: `shell` by absolute path."""
    return [shell, "-c", LIFELINE_SCRIPT, "concorde-lifeline", LIFELINE_FD]


class LaunchCommand(BaseModel):
    """One round's command: its argv (program first), working directory, the tool set --tools
    names (one name each, in order), and the ways the command departs from the spec's text for
    the installed program (empty when it follows the spec literally)."""

    model_config = ConfigDict(frozen=True)

    argv: tuple[str, ...]
    cwd: str
    tools: tuple[str, ...]
    adaptations: tuple[str, ...] = ()


def format_number(value: int | float | Decimal) -> str:
    """A stable decimal text: integers as integers, no exponent, no trailing zeros."""
    if isinstance(value, bool):
        raise ValueError(f"not a number: {value!r}")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"not a finite number: {value!r}")
        decimal = Decimal(repr(value))
    elif isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"not a finite number: {value!r}")
        decimal = value
    else:
        raise ValueError(f"not a number: {value!r}")
    text = format(decimal, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _option_value(flag: str, value: str) -> str:
    """A value that cannot be mistaken for an option or be empty."""
    if not value or value.startswith("-") or value != value.strip() or "\x00" in value:
        raise ValueError(f"invalid value for {flag}: {value!r}")
    return value


def tool_set(tools: Sequence[str]) -> tuple[str, ...]:
    """The tool set as a tuple of names, each one --tools can carry."""
    if isinstance(tools, str):
        raise ValueError(f"a tool set is a sequence of names, not one string: {tools!r}")
    names = tuple(tools)
    if not names or any(not n or n != n.strip() or "," in n or n.startswith("-") for n in names):
        raise ValueError(f"invalid tool set: {tools!r}")
    return names


def tools_argument(tools: Sequence[str]) -> str:
    """The comma-separated tool set as passed to --tools (and as the run record names it)."""
    return ",".join(tool_set(tools))


def schema_text(schema: object) -> str:
    """The worker result schema as compact JSON text, for --json-schema and result.schema.json."""
    if not isinstance(schema, dict):
        raise ValueError("the worker result schema must be a JSON object")
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False)


def _runtime(runtime: RuntimeLayout | str) -> RuntimeLayout:
    return runtime if isinstance(runtime, RuntimeLayout) else RuntimeLayout(root=runtime)


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
    rt = _runtime(runtime)
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
        rt.settings,
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
            options += [flag, _option_value(flag, value)]
    return options


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
        return ("--session-dir", runtime.sessions, "--session", runtime.pi_session_file(run_id))

    def tool_set(self, tools: Sequence[str]) -> tuple[str, ...]:
        """The tool set with concorde_result appended when the given set lacks it."""
        names = tool_set(tools)
        return names if PI_RESULT_TOOL in names else (*names, PI_RESULT_TOOL)

    def adaptations(self, runtime: RuntimeLayout, run_id: str) -> tuple[str, ...]:
        """The departures, as lines a person reads (the dry-run planner shows them)."""
        session_file = runtime.pi_session_file(run_id)
        return (
            f"pi {self.pi_version} has no --session-id: the run fixes its session by its file, "
            f"--session-dir {runtime.sessions} --session {session_file}, "
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
    rt = _runtime(runtime)
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
        rt.permission_extension,
        "--no-context-files",
        "--no-skills",
        "--no-prompt-templates",
        "--tools",
        tools_argument(names),
        *mapping.session_arguments(rt, run_id),
    ]
    if model is not None:
        argv += ["--model", _option_value("--model", model)]
    if thinking is not None:
        argv += ["--thinking", _option_value("--thinking", thinking)]
    return LaunchCommand(
        argv=tuple(argv), cwd=rt.work, tools=names, adaptations=mapping.adaptations(rt, run_id)
    )
