"""seed 000 and 001 "Launch": the exact command line of a round, per backend."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from concorde_workers.adapters.claude.launch import claude_command
from concorde_workers.adapters.pi.launch import PI_COMMAND_MAPPING, pi_command
from concorde_workers.domain.ground.layout import RuntimeLayout
from concorde_workers.domain.ground.text import format_number
from concorde_workers.domain.isolation.launch import (
    GUARD_SCRIPT,
    LIFELINE_FD,
    guarded,
    lifeline,
    schema_text,
    tool_set,
    tools_argument,
)

RT = "/tmp/concorde-a1b2c3-x7k2"
RUN = "w-20261002T101500-a1b2c3"
SCHEMA = schema_text({"type": "object", "required": ["status"]})
CLAUDE_TOOLS = ("Read", "Glob", "Grep", "Edit", "Write", "Bash")
PI_TOOLS = ("read", "grep", "find", "ls", "edit", "write", "bash", "concorde_result")

CLAUDE_BASE = (
    "claude",
    "-p",
    "--settings",
    f"{RT}/control/settings.json",
    "--tools",
    ",".join(CLAUDE_TOOLS),
    "--json-schema",
    SCHEMA,
    "--output-format",
    "stream-json",
    "--verbose",
    "--permission-mode",
    "bypassPermissions",
    "--allow-dangerously-skip-permissions",
    "--strict-mcp-config",
    "--max-turns",
    "200",
)


def _claude(**kwargs: object) -> tuple[str, ...]:
    args: dict[str, object] = {
        "runtime": RT,
        "tools": CLAUDE_TOOLS,
        "result_schema": SCHEMA,
        "max_turns": 200,
    }
    args.update(kwargs)
    return claude_command(**args).argv  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "tail"),
    [
        ({}, ()),
        ({"max_budget_usd": 0.5}, ("--max-budget-usd", "0.5")),
        ({"max_budget_usd": 2}, ("--max-budget-usd", "2")),
        ({"max_budget_usd": 2.0}, ("--max-budget-usd", "2")),
        ({"max_budget_usd": Decimal("0.010")}, ("--max-budget-usd", "0.01")),
        ({"model": "claude-opus-4-8"}, ("--model", "claude-opus-4-8")),
        ({"effort": "high"}, ("--effort", "high")),
        ({"resume": "4f1c"}, ("--resume", "4f1c")),
        (
            {"max_budget_usd": 1.25, "model": "m", "effort": "low", "resume": "s-1"},
            ("--max-budget-usd", "1.25", "--model", "m", "--effort", "low", "--resume", "s-1"),
        ),
    ],
)
def test_claude_command(kwargs: dict[str, object], tail: tuple[str, ...]) -> None:
    assert _claude(**kwargs) == CLAUDE_BASE + tail


def test_claude_program_and_tools_list() -> None:
    cmd = claude_command(
        runtime=RuntimeLayout(root=RT),
        tools=["Read", "Glob", "Grep"],
        result_schema=SCHEMA,
        max_turns=7,
        program="/opt/claude/bin/claude",
    )
    assert cmd.argv[0] == "/opt/claude/bin/claude"
    assert cmd.argv[cmd.argv.index("--tools") + 1] == "Read,Glob,Grep"
    assert cmd.argv[cmd.argv.index("--max-turns") + 1] == "7"
    assert cmd.tools == ("Read", "Glob", "Grep")
    assert cmd.adaptations == ()


def test_the_schema_goes_inline_as_text() -> None:
    argv = _claude()
    text = argv[argv.index("--json-schema") + 1]
    assert json.loads(text) == {"type": "object", "required": ["status"]}
    assert not text.startswith("/")


@pytest.mark.req("The worker never works in the worktree")
@pytest.mark.parametrize(
    "cmd",
    [
        claude_command(runtime=RT, tools=("Read",), result_schema=SCHEMA, max_turns=1),
        pi_command(runtime=RT, tools=("read",), run_id=RUN),
    ],
)
def test_every_round_works_in_the_runtime_work_directory(cmd: object) -> None:
    assert cmd.cwd == f"{RT}/work"  # type: ignore[attr-defined]


@pytest.mark.req("Resume from the newest session")
def test_claude_resume_names_the_session_and_keeps_the_rest() -> None:
    first = _claude(model="m")
    resumed = _claude(model="m", resume="sess-2")
    assert resumed[: len(first)] == first
    assert resumed[len(first) :] == ("--resume", "sess-2")


@pytest.mark.req("The run's configuration never changes between rounds")
def test_rounds_share_settings_and_tool_set() -> None:
    first = claude_command(runtime=RT, tools=CLAUDE_TOOLS, result_schema=SCHEMA, max_turns=3)
    later = claude_command(
        runtime=RT, tools=CLAUDE_TOOLS, result_schema=SCHEMA, max_turns=3, resume="s"
    )
    for flag in ("--settings", "--tools", "--json-schema"):
        assert first.argv[first.argv.index(flag) + 1] == later.argv[later.argv.index(flag) + 1]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_turns": 0},
        {"max_turns": True},
        {"max_turns": 1.5},
        {"max_budget_usd": 0},
        {"max_budget_usd": -1},
        {"max_budget_usd": float("nan")},
        {"max_budget_usd": float("inf")},
        {"result_schema": "/tmp/x/control/result.schema.json"},
        {"result_schema": "[]"},
        {"model": "--dangerously-skip-permissions"},
        {"model": ""},
        {"effort": " high"},
        {"resume": "-x"},
        {"tools": ""},
        {"tools": "Read,,Glob"},
        {"tools": ["Read", "Glob,Grep"]},
        {"program": ""},
    ],
)
def test_claude_command_refuses_bad_values(kwargs: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        _claude(**kwargs)


PI_BASE = (
    "pi",
    "-p",
    "--mode",
    "json",
    "--no-extensions",
    "-e",
    f"{RT}/control/permission.ts",
    "--no-context-files",
    "--no-skills",
    "--no-prompt-templates",
    "--tools",
    ",".join(PI_TOOLS),
    "--session-dir",
    f"{RT}/config/sessions",
    "--session",
    f"{RT}/config/sessions/{RUN}.jsonl",
)


@pytest.mark.parametrize(
    ("kwargs", "tail"),
    [
        ({}, ()),
        ({"model": "local-openai/gpt-6-astra"}, ("--model", "local-openai/gpt-6-astra")),
        ({"thinking": "high"}, ("--thinking", "high")),
        ({"model": "p/m", "thinking": "off"}, ("--model", "p/m", "--thinking", "off")),
    ],
)
def test_pi_command(kwargs: dict[str, str], tail: tuple[str, ...]) -> None:
    cmd = pi_command(
        runtime=RT,
        tools=PI_TOOLS,
        run_id=RUN,
        model=kwargs.get("model"),
        thinking=kwargs.get("thinking"),
    )
    assert cmd.argv == PI_BASE + tail


def test_pi_program_is_given() -> None:
    cmd = pi_command(runtime=RT, tools=PI_TOOLS, run_id=RUN, program="/opt/pi/bin/pi")
    assert cmd.argv[0] == "/opt/pi/bin/pi"


@pytest.mark.req("The permission extension is a pi worker's only extension")
def test_pi_extension_discovery_off_and_only_the_permission_extension() -> None:
    argv = pi_command(runtime=RT, tools=PI_TOOLS, run_id=RUN).argv
    assert "--no-extensions" in argv
    extensions = [argv[i + 1] for i, a in enumerate(argv) if a in ("-e", "--extension")]
    assert extensions == [f"{RT}/control/permission.ts"]


@pytest.mark.req("A pi worker reads no context file")
def test_pi_context_files_off() -> None:
    assert "--no-context-files" in pi_command(runtime=RT, tools=PI_TOOLS, run_id=RUN).argv


@pytest.mark.req("A pi worker loads no skill")
def test_pi_skills_off() -> None:
    assert "--no-skills" in pi_command(runtime=RT, tools=PI_TOOLS, run_id=RUN).argv


@pytest.mark.req("A pi worker loads no prompt template")
def test_pi_prompt_templates_off() -> None:
    assert "--no-prompt-templates" in pi_command(runtime=RT, tools=PI_TOOLS, run_id=RUN).argv


@pytest.mark.req("Resume from the newest session")
def test_pi_every_round_runs_the_same_command_on_the_fixed_session() -> None:
    first = pi_command(runtime=RT, tools=PI_TOOLS, run_id=RUN, model="p/m")
    again = pi_command(runtime=RT, tools=PI_TOOLS, run_id=RUN, model="p/m")
    assert first == again
    assert "--session-id" not in first.argv
    assert first.argv[first.argv.index("--session") + 1] == f"{RT}/config/sessions/{RUN}.jsonl"


def test_pi_tool_set_always_names_concorde_result() -> None:
    cmd = pi_command(runtime=RT, tools=["read", "grep", "find", "ls"], run_id=RUN)
    assert cmd.tools == ("read", "grep", "find", "ls", "concorde_result")
    assert cmd.argv[cmd.argv.index("--tools") + 1] == ",".join(cmd.tools)
    assert pi_command(runtime=RT, tools=PI_TOOLS, run_id=RUN).tools == PI_TOOLS


def test_pi_adaptations_are_listed_for_the_planner() -> None:
    cmd = pi_command(runtime=RT, tools=PI_TOOLS, run_id=RUN)
    assert len(cmd.adaptations) == 2
    assert "--session-id" in cmd.adaptations[0]
    assert f"{RT}/config/sessions/{RUN}.jsonl" in cmd.adaptations[0]
    assert "concorde_result" in cmd.adaptations[1]
    assert cmd.adaptations == PI_COMMAND_MAPPING.adaptations(RuntimeLayout(root=RT), RUN)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"run_id": "w-bad"},
        {"run_id": "../x"},
        {"model": "-m"},
        {"thinking": ""},
        {"tools": ""},
        {"program": ""},
    ],
)
def test_pi_command_refuses_bad_values(kwargs: dict[str, str]) -> None:
    args: dict[str, object] = {"runtime": RT, "tools": PI_TOOLS, "run_id": RUN}
    args.update(kwargs)
    with pytest.raises(ValueError):
        pi_command(**args)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.5, "0.5"),
        (2, "2"),
        (2.0, "2"),
        (200, "200"),
        (0.0025, "0.0025"),
        (1e-05, "0.00001"),
        (1e20, "100000000000000000000"),
        (0.1 + 0.2, "0.30000000000000004"),
        (Decimal("1.50"), "1.5"),
        (-0.0, "0"),
    ],
)
def test_format_number(value: float, text: str) -> None:
    assert format_number(value) == text


@pytest.mark.parametrize("value", [True, float("nan"), float("inf"), "1"])
def test_format_number_refuses(value: object) -> None:
    with pytest.raises(ValueError):
        format_number(value)  # type: ignore[arg-type]


def test_tools_argument() -> None:
    assert tools_argument(["Read", "Glob"]) == "Read,Glob"
    assert tool_set(["Read", "Glob"]) == ("Read", "Glob")
    with pytest.raises(ValueError):
        tools_argument([])
    with pytest.raises(ValueError, match="not one string"):
        tools_argument("Read,Glob")  # a tool set is carried as names, never as its joined text


def test_schema_text_is_compact_json_object() -> None:
    assert schema_text({"a": [1, 2]}) == '{"a":[1,2]}'
    with pytest.raises(ValueError):
        schema_text([1])


def test_a_program_asking_for_a_lifeline_runs_behind_the_guard_in_the_lifeline_s_shell() -> None:
    """The process runner puts the guard first (docs/decisions.md "What the lifeline reaches"):
    run by the shell the plan resolved for the lifeline inside, else by bash (dash cannot read
    a descriptor above 9 by number)."""
    argv = ("/usr/bin/bwrap", "--unshare-pid", "--", *lifeline("/usr/bin/bash"), "/bin/true")
    assert guarded(argv) == (
        "/usr/bin/bash",
        "-c",
        GUARD_SCRIPT,
        "concorde-guard",
        LIFELINE_FD,
        *argv,
    )
    assert guarded(("prog", LIFELINE_FD))[:2] == ("/bin/bash", "-c")
    assert lifeline()[0] == "/bin/bash"
    # The watcher kills its own process group (never a group id that could be another's), and
    # leaves SIGTERM to the program.
    assert "kill -s KILL 0" in GUARD_SCRIPT and "trap '' HUP INT QUIT TERM" in GUARD_SCRIPT
