"""The test agents' stream reader: its classification table row by row, garbage lines, progress."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
from fakes.agent_stream import (
    CLASSIFICATION,
    CLAUDE_AGENT_FIELDS,
    PI_AGENT_FIELDS,
    TestStreamReader,
    agent_line,
    classify,
    error_line,
    limit_line,
    result_line,
    session_line,
    text_line,
    tool_line,
    usage_line,
)
from fakes.system import FakeClock

from concorde_workers.adapters.pi.links import pi_limit_detail
from concorde_workers.domain.evidence.records import LastAction
from concorde_workers.domain.run.agent_report import RoundReport
from concorde_workers.domain.run.rounds import RoundEnding
from concorde_workers.ports.agents.agent import StreamReader

RESULT = {"status": "ok", "summary": "done", "error": None}
INVALID_RESULT = {"status": "maybe", "surprise": [1, 2]}


def read(
    lines: Sequence[str],
    exit_status: int | None = 0,
    timed_out: bool = False,
    stderr: str = "",
    backend: str = "pi",
) -> RoundReport:
    reader = TestStreamReader(backend=backend, clock=FakeClock())
    for line in lines:
        reader.feed(line)
    return reader.finish(exit_status, timed_out, stderr)


def test_the_reader_is_a_stream_reader() -> None:
    assert isinstance(TestStreamReader(), StreamReader)
    with pytest.raises(ValueError, match="stands in for"):
        TestStreamReader(backend="gemini")


# --- the classification, row by row ---------------------------------------------------------------

ROW_CASES = [
    # (row text, lines, exit, timed_out, ending)
    (
        "the runner killed the round at its timeout",
        [session_line("s-1"), limit_line("max_turns", 5), result_line(RESULT)],
        None,
        True,
        RoundEnding.TIMEOUT,
    ),
    (
        "a limit line",
        [session_line("s-1"), error_line("API Error: 529 Overloaded"), limit_line("max_turns", 5)],
        1,
        False,
        RoundEnding.LIMIT_REACHED,
    ),
    (
        "the last error line names a transient model-service error and no result line came",
        [session_line("s-1"), error_line("API Error: 529 Overloaded")],
        1,
        False,
        RoundEnding.TRANSIENT_ERROR,
    ),
    (
        "a non-zero (or no) exit status, or an error line",
        [session_line("s-1"), result_line(RESULT)],
        3,
        False,
        RoundEnding.PROCESS_FAILED,
    ),
    (
        "exit status 0 (with or without a result line)",
        [session_line("s-1"), result_line(RESULT)],
        0,
        False,
        RoundEnding.OK,
    ),
]


@pytest.mark.parametrize(
    ("row", "lines", "exit_status", "timed_out", "ending"), ROW_CASES, ids=[c[0] for c in ROW_CASES]
)
def test_each_row_of_the_classification(
    row: str, lines: list[str], exit_status: int | None, timed_out: bool, ending: RoundEnding
) -> None:
    reader = TestStreamReader(clock=FakeClock())
    for line in lines:
        reader.feed(line)
    assert classify(reader.observed(exit_status, timed_out, "")).text == row
    assert reader.finish(exit_status, timed_out, "").ending is ending


def test_every_row_has_its_case_and_the_last_row_always_applies() -> None:
    assert [r.text for r in CLASSIFICATION] == [c[0] for c in ROW_CASES]
    assert [r.ending for r in CLASSIFICATION] == [c[4] for c in ROW_CASES]


@pytest.mark.parametrize("backend", ["pi", "claude"])
def test_timeout_keeps_the_result_and_carries_a_process_link(backend: str) -> None:
    report = read([session_line("s-1"), result_line(RESULT)], None, True, "late", backend)
    assert report.ending is RoundEnding.TIMEOUT
    assert report.worker_result == RESULT  # a valid result is kept whatever ended the round
    assert report.exit is None and report.session == "s-1"
    assert report.process_link is not None and report.failure == "the round timed out"


def test_a_pi_limit_names_the_limit_value_and_maximum() -> None:
    report = read([session_line("s-1"), limit_line("max_turns", 5, 5), usage_line(turns=5)], 1)
    assert report.ending is RoundEnding.LIMIT_REACHED
    assert report.limit == pi_limit_detail("max_turns", 5, 5)
    link = report.process_link
    assert link is not None and link.code == "pi_limit_reached"
    assert link.unhandled.reason.value == "exhausted"
    assert "max_turns limit (5 reached, at most 5 allowed)" in link.detail
    assert report.agent == {"pi": {"stop_reason": "aborted", "turns": 5, "cost": None}}


@pytest.mark.parametrize(
    ("limit", "subtype"),
    [("max_turns", "error_max_turns"), ("max_budget_usd", "error_max_budget_usd")],
)
def test_a_claude_limit_is_its_subtype(limit: str, subtype: str) -> None:
    report = read([limit_line(limit, 2)], 0, backend="claude")
    assert report.ending is RoundEnding.LIMIT_REACHED and report.limit == subtype
    assert report.process_link is not None
    assert report.process_link.code == "claude_limit_reached"
    assert report.agent["claude"]["subtype"] == subtype


@pytest.mark.parametrize("exit_status", [0, 1])
@pytest.mark.parametrize("backend", ["pi", "claude"])
def test_a_transient_error_without_result(exit_status: int, backend: str) -> None:
    report = read(
        [session_line("s-1"), error_line("API Error: 529 Overloaded")], exit_status, backend=backend
    )
    assert report.ending is RoundEnding.TRANSIENT_ERROR
    assert report.transient_error == "API Error: 529 Overloaded"
    assert report.process_link is not None
    assert report.process_link.code == f"{backend}_error"
    assert "529 Overloaded" in report.process_link.detail


def test_the_last_error_line_decides() -> None:
    transient_last = read([error_line("tool said no"), error_line("429 Too Many Requests")], 1)
    assert transient_last.ending is RoundEnding.TRANSIENT_ERROR
    assert transient_last.transient_error == "429 Too Many Requests"
    failed_last = read([error_line("429 Too Many Requests"), error_line("tool said no")], 1)
    assert failed_last.ending is RoundEnding.PROCESS_FAILED
    assert failed_last.transient_error is None and failed_last.failure == "tool said no"


@pytest.mark.parametrize(
    "lines",
    [
        [error_line("API Error: 529 Overloaded"), result_line(RESULT)],  # a result: no retry
        [error_line("You exceeded your current quota, retry later (429)")],  # never transient
        [error_line("something broke")],
    ],
)
def test_an_error_line_otherwise_fails_the_process_even_with_exit_0(lines: list[str]) -> None:
    report = read(lines, 0)
    assert report.ending is RoundEnding.PROCESS_FAILED
    assert report.transient_error is None
    assert report.process_link is not None and report.process_link.code == "pi_error"


@pytest.mark.parametrize(
    ("exit_status", "failure"),
    [
        (3, "the agent program exited with status 3"),
        (-9, "the agent program exited with status -9"),
        (None, "the agent program ended without an exit status"),
    ],
)
def test_a_non_zero_exit_fails_the_process(exit_status: int | None, failure: str) -> None:
    report = read([session_line("s-1"), tool_line("Write", "/w/a")], exit_status, stderr="boom")
    assert report.ending is RoundEnding.PROCESS_FAILED and report.failure == failure
    assert report.process_link is not None and "boom" in report.process_link.detail


def test_claude_without_any_envelope_says_so() -> None:
    report = read([], 1, stderr="Traceback ...", backend="claude")
    link = report.process_link
    assert link is not None and link.code == "claude_error"
    assert link.detail.startswith("Claude Code printed no result envelope")
    assert report.agent["claude"]["subtype"] is None and report.agent["claude"]["is_error"] is None


@pytest.mark.parametrize("result", [RESULT, INVALID_RESULT])
def test_exit_0_with_a_result_is_ok_with_the_result_verbatim(result: dict[str, object]) -> None:
    report = read([session_line("s-1"), text_line("done"), result_line(result)], 0)
    assert report.ending is RoundEnding.OK
    assert report.worker_result == result
    assert report.process_link is None and report.failure is None and report.limit is None
    assert report.final_text == "done"


def test_exit_0_without_a_result_is_ok_with_the_final_text() -> None:
    report = read([session_line("s-1"), text_line("first"), text_line("I could not")], 0)
    assert report.ending is RoundEnding.OK
    assert report.worker_result is None and report.final_text == "I could not"


def test_a_result_that_is_no_object_is_given_as_final_text() -> None:
    report = read([result_line(["not", "an", "object"])], 0)
    assert report.ending is RoundEnding.OK and report.worker_result is None
    assert report.final_text == '["not", "an", "object"]'


def test_the_last_result_and_session_win() -> None:
    report = read(
        [session_line("s-1"), result_line({"a": 1}), session_line("s-2"), result_line({"a": 2})]
    )
    assert report.session == "s-2" and report.worker_result == {"a": 2}


# --- usage and the agent report -------------------------------------------------------------------


def test_usage_is_summed_and_none_where_never_given() -> None:
    report = read(
        [
            usage_line(tokens_in=10, tokens_out=5, cost_usd=0.25, turns=1),
            usage_line(tokens_in=1, cost_usd=0.5, turns=2, tokens_cache_read=7),
        ]
    )
    assert report.usage.model_dump() == {
        "tokens_in": 11,
        "tokens_out": 5,
        "tokens_cache_read": 7,
        "tokens_cache_write": None,
        "cost_usd": 0.75,
        "turns": 3,
    }


def test_the_agent_report_takes_the_shape_of_the_backend_stood_in_for() -> None:
    lines = [usage_line(turns=4, cost_usd=0.5), result_line(RESULT)]
    pi = read(lines, backend="pi").agent
    assert pi == {"pi": {"stop_reason": "stop", "turns": 4, "cost": 0.5}}
    assert tuple(pi["pi"]) == PI_AGENT_FIELDS
    claude = read(lines, backend="claude").agent["claude"]
    assert tuple(claude) == CLAUDE_AGENT_FIELDS
    assert claude == {
        "subtype": "success",
        "is_error": False,
        "num_turns": 4,
        "total_cost_usd": 0.5,
        "permission_denials": None,
        "modelUsage": None,
        "duration_api_ms": None,
        "claude_code_version": None,
    }


def test_an_agent_line_overrides_the_report_and_a_mistyped_override_never_breaks_the_link() -> None:
    denial = {"tool_name": "Write", "tool_use_id": "t1", "tool_input": {"file_path": "/x"}}
    report = read(
        [
            agent_line(permission_denials=[denial], duration_api_ms=12, num_turns="many"),
            error_line("nope"),
        ],
        1,
        backend="claude",
    )
    claude = report.agent["claude"]
    assert claude["permission_denials"] == [denial] and claude["duration_api_ms"] == 12
    assert claude["num_turns"] == "many"  # the test's own words, as given
    assert report.process_link is not None and "none turn(s)" in report.process_link.detail


# --- garbage lines ----------------------------------------------------------------------------------

GARBAGE = [
    "",
    "   ",
    "not json",
    "{",
    '{"type": "tool", "tool": "Write"',
    "[1, 2]",
    "42",
    "null",
    "true",
    '"a string"',
    "[" * 100_000,
    '{"no_type": 1}',
    '{"type": 5}',
    '{"type": ["tool"]}',
    '{"type": {"a": 1}}',
    '{"type": "unknown"}',
    '{"type": "tool"}',
    '{"type": "tool", "tool": ""}',
    '{"type": "tool", "tool": 5, "target": "x"}',
    '{"type": "tool", "tool": "W", "target": 5}',
    '{"type": "session"}',
    '{"type": "session", "id": ""}',
    '{"type": "session", "id": 3}',
    '{"type": "text"}',
    '{"type": "result"}',
    '{"type": "error"}',
    '{"type": "error", "message": ""}',
    '{"type": "limit", "limit": "max_turns"}',
    '{"type": "limit", "limit": "max_turns", "value": "5"}',
    '{"type": "limit", "limit": "max_turns", "value": true}',
    '{"type": "limit", "limit": "max_turns", "value": NaN}',
    '{"type": "usage", "turns": "3"}',
    '{"type": "usage", "turns": true}',
    '{"type": "usage", "cost_usd": Infinity}',
    '{"type": "usage", "turns": -1}',
    '{"type": "usage"}',
    '{"type": "agent", "fields": [1]}',
    "\x00\x01\x02",
    "\udcff\udcfe",
]


@pytest.mark.parametrize("backend", ["pi", "claude"])
def test_garbage_lines_are_ignored_never_fatal(backend: str) -> None:
    reader = TestStreamReader(backend=backend, clock=FakeClock())
    assert all(reader.feed(line) is None for line in GARBAGE)
    assert (reader.ignored.count, reader.ignored.last) == (len(GARBAGE), GARBAGE[-5:])
    report = reader.finish(0, False, "")
    assert report.ending is RoundEnding.OK
    assert report.session is None and report.worker_result is None and report.final_text is None
    assert report.usage.model_dump() == dict.fromkeys(report.usage.model_dump())


def test_garbage_between_good_lines_changes_nothing() -> None:
    good = [session_line("s-1"), usage_line(turns=1), result_line(RESULT)]
    mixed = [good[0], *GARBAGE[:10], good[1], *GARBAGE[10:], good[2]]
    assert read(mixed) == read(good)


# --- progress -------------------------------------------------------------------------------------


def test_a_tool_line_gives_the_latest_action_with_the_clock_time() -> None:
    reader = TestStreamReader(clock=FakeClock())
    action = reader.feed(tool_line("Write", "/w/src/a.py"))
    assert action == LastAction(tool="Write", target="/w/src/a.py", at="2026-01-01T00:00:00Z")
    assert reader.feed(session_line("s-1")) is None
    assert reader.feed(json.dumps({"type": "tool", "tool": "Bash"})) == LastAction(
        tool="Bash", target="", at="2026-01-01T00:00:00Z"
    )
    assert len(reader.actions) == 2


@pytest.mark.parametrize(
    ("target", "shown"),
    [
        ("x" * 500, "x" * 200),
        ("y" * 200, "y" * 200),
        ("pytest -q\nrm -rf /", "pytest -q"),
        ("é" * 300, "é" * 200),
    ],
)
def test_the_target_is_cut_to_its_first_line_and_200_characters(target: str, shown: str) -> None:
    action = TestStreamReader(clock=FakeClock()).feed(tool_line("Bash", target))
    assert action is not None and action.target == shown
    LastAction.model_validate(action.model_dump())
