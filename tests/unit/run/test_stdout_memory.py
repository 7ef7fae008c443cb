"""What the host keeps of what an agent prints does not grow with it (issue 9 §2): both real
stream readers count ignored lines and keep only the last few, keep only the latest tool calls,
and the round's trace notes ignored and overlong lines under `agent.stdout` (domain.run.stdout)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes.agent import Round
from fakes.agent_stream import session_line, tool_line
from fakes.host_world import HostWorld, ok_result
from fakes.system import FakeClock

from concorde_workers.adapters.claude.stream import ACTIONS_KEPT as CLAUDE_ACTIONS_KEPT
from concorde_workers.adapters.claude.stream import ClaudeStreamReader
from concorde_workers.adapters.pi.stream import ACTIONS_KEPT as PI_ACTIONS_KEPT
from concorde_workers.adapters.pi.stream import PiStreamReader
from concorde_workers.contracts import validator
from concorde_workers.domain.run.rounds import RoundEnding
from concorde_workers.domain.run.stdout import (
    IGNORED_KEPT,
    IGNORED_KEPT_CHARS,
    MAX_LINE_BYTES,
    IgnoredLines,
    Overlong,
    stdout_note,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
JUNK = [f"junk {i}: " + "#" * (i * 7 % 701) for i in range(10_000)]


def claude_reader() -> ClaudeStreamReader:
    return ClaudeStreamReader()


def pi_reader() -> PiStreamReader:
    return PiStreamReader(clock=FakeClock())


READERS = {"claude": claude_reader, "pi": pi_reader}
RECORDED = {
    "claude": FIXTURES / "claude" / "round1.stdout.jsonl",
    "pi": FIXTURES / "pi" / "round1.stdout.jsonl",
}


# --- the domain values ----------------------------------------------------------------------------


def test_ignored_lines_are_all_counted_and_only_the_last_few_kept_cut() -> None:
    ignored = IgnoredLines()
    for line in JUNK:
        ignored.add(line)
    assert ignored.count == len(JUNK)
    assert ignored.last == [line[:IGNORED_KEPT_CHARS] for line in JUNK[-IGNORED_KEPT:]]
    assert any(len(line) > IGNORED_KEPT_CHARS for line in JUNK[-IGNORED_KEPT:])


def test_nothing_ignored_or_dropped_leaves_no_note() -> None:
    assert stdout_note(IgnoredLines(), Overlong()) is None


def test_the_note_counts_both_and_names_the_limit() -> None:
    ignored = IgnoredLines(keep=2, chars=4)
    for line in ["first line", "second", "third line"]:
        ignored.add(line)
    overlong = Overlong(limit=10).adding(11).adding(500)
    assert stdout_note(ignored, overlong) == {
        "ignored": 3,
        "ignored_last": ["seco", "thir"],
        "overlong": 2,
        "overlong_bytes": 511,
        "line_limit_bytes": 10,
    }
    assert stdout_note(IgnoredLines(), Overlong(limit=10).adding(11)) == {
        "ignored": 0,
        "ignored_last": [],
        "overlong": 1,
        "overlong_bytes": 11,
        "line_limit_bytes": 10,
    }


# --- both real readers ----------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["claude", "pi"])
def test_a_reader_counts_a_flood_of_junk_and_keeps_only_the_last_lines(backend: str) -> None:
    reader = READERS[backend]()
    recorded = RECORDED[backend].read_text().splitlines()
    for line in [recorded[0], *JUNK, *recorded[1:]]:
        reader.feed(line)
    assert reader.ignored.count == len(JUNK)
    assert reader.ignored.last == [line[:IGNORED_KEPT_CHARS] for line in JUNK[-IGNORED_KEPT:]]
    assert reader.finish(0, False, "").ending is RoundEnding.OK  # the junk changed nothing


@pytest.mark.parametrize(
    ("backend", "kept"), [("claude", CLAUDE_ACTIONS_KEPT), ("pi", PI_ACTIONS_KEPT)]
)
def test_a_reader_keeps_only_the_latest_tool_calls(backend: str, kept: int) -> None:
    reader = READERS[backend]()
    returned = [reader.feed(_tool_event(backend, i)) for i in range(kept * 3)]
    assert all(action is not None for action in returned)  # each is returned as it comes
    assert [a.target for a in reader.actions] == [f"/w/f{i}" for i in range(kept * 2, kept * 3)]


def _tool_event(backend: str, i: int) -> str:
    if backend == "claude":
        return json.dumps(
            {
                "type": "assistant",
                "message": {
                    "content": [
                        {"type": "tool_use", "name": "Read", "input": {"file_path": f"/w/f{i}"}}
                    ]
                },
            }
        )
    return json.dumps(
        {"type": "tool_execution_start", "toolName": "read", "args": {"path": f"/w/f{i}"}}
    )


# --- the round's trace ----------------------------------------------------------------------------


def _round_agent(world: HostWorld, lines: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    record = world.run(
        [
            Round(
                lines=(
                    session_line("s-1"),
                    *lines,
                    json.dumps({"type": "result", "result": ok_result()}),
                ),
                transcript="s-1",
            )
        ],
        limits={"rounds": 0},
    )
    assert record.status == "ok", record.error
    node = world.round_node(1)
    validator("contract.workers.worker-round-trace").validate(node["content"])
    validator("contract.tracing.node").validate(node)
    return node["content"]["agent"], record.model_dump(mode="json")["rounds"][0]


def test_the_round_trace_notes_overlong_and_ignored_lines() -> None:
    world = HostWorld()
    overlong = "x" * (MAX_LINE_BYTES + 1)
    agent, record_round = _round_agent(
        world, [tool_line("Read", "/w/a"), overlong, "not json", '{"type": "nope"}', "é" * 400]
    )
    assert agent["stdout"] == {
        "ignored": 3,
        "ignored_last": ["not json", '{"type": "nope"}', "é" * IGNORED_KEPT_CHARS],
        "overlong": 1,
        "overlong_bytes": MAX_LINE_BYTES + 1,
        "line_limit_bytes": MAX_LINE_BYTES,
    }
    assert "pi" in agent  # the backend's own report stays beside the note
    # The returned record keeps only the backend's report: its contract has no place for more.
    assert "stdout" not in record_round and "pi" in record_round


def test_a_round_without_ignored_or_overlong_lines_has_no_note() -> None:
    agent, _ = _round_agent(HostWorld(), [tool_line("Read", "/w/a")])
    assert set(agent) == {"pi"}
