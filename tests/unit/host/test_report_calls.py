"""The tool calls of a transcript with the decision each got (issue 21 §3), for both
programs' session formats, row by row, and the report page's escaping of what they say."""

from __future__ import annotations

import html.parser
import json

import pytest
from fakes.events import RecordedEvents
from fakes.system import FakeClock

from concorde_workers.adapters.cli.views.report import report_html
from concorde_workers.application.evidence.report import ReportInput
from concorde_workers.application.runtime.events import EventEmitter
from concorde_workers.application.tracing.calls import MAX_CALLS, ToolCall, tool_calls
from concorde_workers.container import PROFILES


def claude(*lines: dict[str, object]) -> list[str]:
    return [json.dumps(line) for line in lines]


def c_prompt(text: str) -> dict[str, object]:
    return {"type": "user", "message": {"role": "user", "content": text}}


def c_call(call_id: str, name: str, **arguments: object) -> dict[str, object]:
    return {
        "type": "assistant",
        "message": {
            "content": [{"type": "tool_use", "id": call_id, "name": name, "input": arguments}]
        },
    }


def c_result(call_id: str, text: str, error: bool = False) -> dict[str, object]:
    return {
        "type": "user",
        "message": {
            "content": [
                {"type": "tool_result", "tool_use_id": call_id, "is_error": error, "content": text}
            ]
        },
    }


def p_message(message: dict[str, object]) -> str:
    return json.dumps({"type": "message", "message": message})


@pytest.mark.parametrize(
    ("tool", "text", "error", "decision", "reason"),
    [
        ("Write", "File created", False, "allowed", ""),
        (
            "Write",
            "Concorde grant: src/app/util.py is read-only for this task",
            True,
            "refused by the grant",
            "src/app/util.py is read-only for this task",
        ),
        (
            "Bash",
            "touch: cannot touch 'x': Read-only file system\nrc=1",
            False,
            "refused by the sandbox",
            "touch: cannot touch 'x': Read-only file system",
        ),
        (
            "Bash",
            "curl: (7) Failed to connect: Connection refused",
            True,
            "refused by the sandbox",
            "curl: (7) Failed to connect: Connection refused",
        ),
        ("Read", "File does not exist.", True, "failed", "File does not exist."),
        (
            "Write",
            "<tool_use_error>File is in a directory that is denied by your permission "
            "settings.</tool_use_error>",
            True,
            "refused by the grant",
            "File is in a directory that is denied by your permission settings.",
        ),
    ],
    ids=["allowed", "grant", "sandbox-ok-exit", "sandbox-error", "failed", "permission-rules"],
)
def test_a_claude_code_call_s_decision(
    tool: str, text: str, error: bool, decision: str, reason: str
) -> None:
    calls = tool_calls(
        claude(
            c_prompt("do it"), c_call("t1", tool, file_path="/w/a.py"), c_result("t1", text, error)
        ),
        PROFILES["claude"],
    )
    assert calls == [
        ToolCall(round=1, id="t1", tool=tool, target="/w/a.py", decision=decision, reason=reason)
    ]


def test_calls_belong_to_the_round_whose_prompt_came_last_and_an_unanswered_one_says_so() -> None:
    lines = [
        p_message({"role": "user", "content": [{"type": "text", "text": "task"}]}),
        p_message(
            {
                "role": "assistant",
                "content": [
                    {"type": "toolCall", "id": "a", "name": "bash", "arguments": {"command": "ls"}}
                ],
            }
        ),
        p_message(
            {
                "role": "toolResult",
                "toolCallId": "a",
                "isError": False,
                "content": [{"type": "text", "text": "x"}],
            }
        ),
        "not json at all",
        p_message({"role": "user", "content": [{"type": "text", "text": "repair"}]}),
        p_message(
            {
                "role": "assistant",
                "content": [
                    {"type": "toolCall", "id": "b", "name": "write", "arguments": {"path": "/w/b"}}
                ],
            }
        ),
    ]
    assert [(c.round, c.id, c.target, c.decision) for c in tool_calls(lines, PROFILES["pi"])] == [
        (1, "a", "ls", "allowed"),
        (2, "b", "/w/b", "no result"),
    ]


def test_a_transcript_past_the_bound_keeps_its_first_calls() -> None:
    lines = [json.dumps(c_call(f"t{i}", "Read", file_path="/a")) for i in range(MAX_CALLS + 5)]
    assert len(tool_calls(lines, PROFILES["claude"])) == MAX_CALLS


class Elements(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attrs += [name for name, _ in attrs]


def test_a_hostile_call_or_problem_is_text_on_the_page() -> None:
    hostile = '<script>x</script></textarea><a href="javascript:1">y</a>\x1b[2J'
    page = report_html(ReportInput(run_dir=hostile, record=None, problems=[hostile]))
    parsed = Elements()
    parsed.feed(page)
    assert "script" not in parsed.tags and "a" not in parsed.tags
    assert not {"href", "src", "onerror", "onload"} & set(parsed.attrs)
    assert "&lt;script&gt;x&lt;/script&gt;" in page and "\\x1b[2J" in page
    assert "default-src 'none'" in page  # the policy: even a link would load nothing


def rollout(*payloads: dict[str, object]) -> list[str]:
    return [json.dumps({"type": "response_item", "payload": p}) for p in payloads]


def x_call(call_id: str, cmd: str) -> dict[str, object]:
    arguments = json.dumps({"cmd": cmd})
    return {
        "type": "function_call",
        "call_id": call_id,
        "name": "exec_command",
        "arguments": arguments,
    }


def x_output(call_id: str, output: str) -> dict[str, object]:
    return {"type": "function_call_output", "call_id": call_id, "output": output}


CODEX_PROMPT = {
    "type": "message",
    "role": "user",
    "content": [{"type": "input_text", "text": "go"}],
}


def test_a_codex_command_the_sandbox_refused_is_said_so_though_it_exited_0() -> None:
    """Codex's exec_command is in its read-only tool set, not its shell's: its output is judged
    by the sandbox's walls all the same (`ToolNames.commands`), as Bash's and pi's bash are."""
    calls = tool_calls(
        rollout(
            CODEX_PROMPT,
            x_call("x1", "echo y > /w/ro.py; echo rc=$?"),
            x_output("x1", "Process exited with code 0\nOutput:\n/w/ro.py: Read-only file system"),
            x_call("x2", "ls"),
            x_output("x2", "Process exited with code 0\nOutput:\na.py"),
        ),
        PROFILES["codex"],
    )
    assert [(c.tool, c.decision, c.reason) for c in calls] == [
        ("exec_command", "refused by the sandbox", "/w/ro.py: Read-only file system"),
        ("exec_command", "allowed", ""),
    ]


def test_codex_s_calls_are_told_from_its_transcript_once_each() -> None:
    """Codex's output does not carry its calls (`TranscriptDialect.in_output`): its rollout,
    read at each round's end, tells every call not told yet, once (a later round's rollout
    holds the earlier rounds' calls again)."""
    assert not PROFILES["codex"].transcript.in_output
    assert PROFILES["claude"].transcript.in_output and PROFILES["pi"].transcript.in_output
    sink = RecordedEvents()
    events = EventEmitter(sink, FakeClock(), "w-1", PROFILES["codex"])
    assert (
        events.watching and not EventEmitter(None, FakeClock(), "w-1", PROFILES["codex"]).watching
    )
    first = rollout(CODEX_PROMPT, x_call("x1", "ls"), x_output("x1", "Process exited with code 0"))
    events.output_line(1, json.dumps({"type": "item.completed", "item": {"type": "agent_message"}}))
    events.transcript_lines(1, first)
    events.transcript_lines(
        2, [*first, *rollout(x_call("x2", "pwd"), x_output("x2", "Exit code: 0"))]
    )
    said = [(e["round"], e["tool"], e["target"]) for e in sink.events if e["event"] == "tool_call"]
    assert said == [(1, "exec_command", "ls"), (2, "exec_command", "pwd")]
