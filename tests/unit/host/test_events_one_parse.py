"""Issue 34 §5 "the events fed by the backend's reader instead of a second parse": with events
on, each line of the agent's output is parsed once, by its backend's stream reader, which gives
the parsed line to the events (`StreamReader.watch`); the tool calls the events tell are the
ones the reader read for the progress file and the record."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, cast

import pytest
from fakes.events import RecordedEvents
from fakes.host_world import RUN_ID, TRACE_PARENT, HostWorld
from fakes.world import WORKTREE

from concorde_workers.adapters.claude.stream import ClaudeStreamReader
from concorde_workers.adapters.codex.stream import CodexStreamReader
from concorde_workers.adapters.pi.stream import PiStreamReader
from concorde_workers.application.rounds.activity import ActivityFlusher, follow
from concorde_workers.application.runtime.events import EventEmitter
from concorde_workers.application.tracing.progress import ProgressWriter
from concorde_workers.container import PROFILES
from concorde_workers.domain.ground import json_limits
from concorde_workers.ports.agents.agent import StreamReader
from concorde_workers.ports.processes.process import ProcessHandle

RUN_DIR = f"{TRACE_PARENT}/workers/{RUN_ID}"


class Output:
    """The agent process's stdout, as `follow` reads it."""

    def __init__(self, lines: list[str]) -> None:
        self._lines = lines

    def lines(self) -> Iterator[str]:
        yield from self._lines

    def kill_group(self) -> None:
        raise AssertionError("no limit was reached: nothing is killed")


def claude_session() -> list[str]:
    read = {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/w/a.py"}}
    answer = {"type": "tool_result", "tool_use_id": "t1", "is_error": False, "content": "x"}
    return [
        json.dumps({"type": "system", "subtype": "init", "session_id": "s-1"}),
        json.dumps({"type": "assistant", "message": {"content": [read]}, "session_id": "s-1"}),
        json.dumps({"type": "user", "message": {"content": [answer]}, "session_id": "s-1"}),
        "not JSON at all",
    ]


def pi_session() -> list[str]:
    call = {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "/w/a.py"}}
    return [
        json.dumps({"type": "session", "id": "p-1"}),
        json.dumps({"type": "tool_execution_start", "toolCallId": "c1", "toolName": "read",
                    "args": {"path": "/w/a.py"}}),
        json.dumps({"type": "message_update", "message": {"role": "assistant"}}),
        json.dumps({"type": "message_end", "message": {"role": "assistant", "content": [call]}}),
        json.dumps({"type": "message_end", "message": {"role": "toolResult", "toolCallId": "c1",
                    "isError": False, "content": [{"type": "text", "text": "x"}]}}),
    ]  # fmt: skip


def followed(
    backend: str, reader: StreamReader, lines: list[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[list[dict[str, Any]], int]:
    """The events `follow` told of `lines` and how many times a line was parsed."""
    parses = 0
    parse = json_limits.loads

    def counted(text: str | bytes) -> Any:
        nonlocal parses
        parses += 1
        return parse(text)

    monkeypatch.setattr(json_limits, "loads", counted)
    world = HostWorld()
    world.fs.mkdir(RUN_DIR)
    progress = ProgressWriter(
        world.fs,
        world.clock,
        f"{RUN_DIR}/status.json",
        run_id=RUN_ID,
        task_type="implement",
        backend=backend,
        worktree=WORKTREE,
        operation_run_id=None,
        host_pid=42,
    )
    flusher = ActivityFlusher(progress)
    sink = RecordedEvents()
    events = EventEmitter(sink, world.clock, RUN_ID, PROFILES[backend])
    follow(cast(ProcessHandle, Output(lines)), reader, flusher, None, events, 1)
    flusher.stop()
    return [e for e in sink.events if e["event"] == "tool_call"], parses


@pytest.mark.parametrize(
    ("backend", "reader", "lines"),
    [
        ("claude", ClaudeStreamReader(), claude_session()),
        ("pi", PiStreamReader(), pi_session()),
    ],
)
def test_each_output_line_is_parsed_once_and_its_calls_told(
    backend: str,
    reader: ClaudeStreamReader | PiStreamReader,
    lines: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    told, parses = followed(backend, reader, lines, monkeypatch)
    assert parses == len(lines)  # the reader's parse, none by the events
    assert [(e["round"], e["target"], e["decision"]) for e in told] == [(1, "/w/a.py", "allowed")]
    # The call the events told is the one the reader read for the progress file and record.
    assert [(a.tool.lower(), a.target) for a in reader.actions] == [("read", "/w/a.py")]
    assert told[0]["tool"].lower() == "read"


def test_without_a_watcher_the_reader_gives_nothing_on() -> None:
    reader = ClaudeStreamReader()
    given: list[object] = []
    for line in claude_session()[:2]:
        reader.feed(line)
    reader.watch(given.append)
    for line in claude_session()[2:]:
        reader.feed(line)
    assert given == [json.loads(claude_session()[2])]  # after watch, only the JSON objects


def test_codex_output_lines_are_parsed_once_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """Codex's calls are told from its transcript at the round's end; its output lines are
    still read once, by its reader."""
    lines = [
        json.dumps({"type": "thread.started", "thread_id": "x-1"}),
        json.dumps({"type": "turn.started"}),
    ]
    told, parses = followed("codex", CodexStreamReader(), lines, monkeypatch)
    assert parses == len(lines) and told == []
