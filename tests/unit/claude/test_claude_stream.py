"""The Claude Code stream-json reader against streams captured from the real, pinned claude
(tests/fixtures/claude/, recaptured with 2.1.332 by tests/servers/capture_claude.py against the
scripted Messages API; paths rewritten to <rt>), and the transcript, session and credential
lookups of ClaudeBackend."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from concorde_workers.adapters.claude.backend import ClaudeBackend
from concorde_workers.adapters.claude.stream import (
    AGENT_FIELDS,
    CLASSIFICATION,
    NO_ENVELOPE,
    VERSION_FIELD,
    ClaudeStreamReader,
    project_slug,
    session_file_name,
    tool_target,
)
from concorde_workers.adapters.machine.filesystem import LocalFileSystem
from concorde_workers.domain.run.agent_report import RoundReport
from concorde_workers.domain.run.rounds import RoundEnding
from concorde_workers.ports.agents.agent import StreamReader

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "claude"


def lines(name: str) -> list[str]:
    return (FIXTURES / f"{name}.stdout.jsonl").read_text().splitlines()


def exit_of(name: str) -> int:
    text = (FIXTURES / f"{name}.rc").read_text()
    return int(text.split()[0].removeprefix("rc="))


def read(
    name: str, *, timed_out: bool = False, stderr: str = ""
) -> tuple[ClaudeStreamReader, RoundReport]:
    reader = ClaudeStreamReader(now=lambda: datetime(2026, 12, 2, 12, 0, 0, tzinfo=UTC))
    for line in lines(name):
        reader.feed(line)
    return reader, reader.finish(exit_of(name), timed_out, stderr)


def envelope(name: str) -> dict[str, Any]:
    found = [json.loads(line) for line in lines(name) if '"type":"result"' in line]
    assert found
    return dict(found[-1])


def test_reader_is_a_stream_reader() -> None:
    assert isinstance(ClaudeStreamReader(), StreamReader)


# --- the classification ------------------------------------------------------------------------


def test_success_gives_ok_with_the_structured_output() -> None:
    reader, report = read("round1")
    env = envelope("round1")
    assert report.ending is RoundEnding.OK
    assert report.exit == 0
    assert report.session == env["session_id"] is not None
    assert report.worker_result == env["structured_output"]
    assert report.worker_result is not None and report.worker_result["status"] == "ok"
    assert report.process_link is None and report.failure is None
    assert report.transient_error is None and report.limit is None
    # Usage: tokens from modelUsage, cost, turns.
    assert report.usage.tokens_in == 200 and report.usage.tokens_out == 40
    assert report.usage.tokens_cache_read == 0 and report.usage.tokens_cache_write == 0
    assert report.usage.cost_usd == env["total_cost_usd"] > 0 and report.usage.turns == 3
    assert report.agent == {
        "claude": {
            "subtype": "success",
            "is_error": False,
            "num_turns": 3,
            "total_cost_usd": env["total_cost_usd"],
            "permission_denials": [],
            "modelUsage": env["modelUsage"],
            "duration_api_ms": env["duration_api_ms"],
            # the Claude Code that ran, as its init event says (the capture's own version)
            VERSION_FIELD: json.loads(lines("round1")[0])["claude_code_version"],
        }
    }
    assert [(a.tool, a.target) for a in reader.actions] == [
        ("Write", "<rt>/work/hello.txt"),
        ("StructuredOutput", ""),
    ]
    assert reader.ignored.count == 0


def test_resume_round_reports_its_own_session_and_cost() -> None:
    _, first = read("round1")
    _, resumed = read("round1_resume")
    assert resumed.ending is RoundEnding.OK
    assert resumed.session == first.session


def test_max_turns_is_a_limit_with_claudes_link() -> None:
    _, report = read("loop")
    assert report.ending is RoundEnding.LIMIT_REACHED
    assert report.limit == "error_max_turns"
    assert report.exit == 1
    assert report.worker_result is None
    link = report.process_link
    assert link is not None and link.code == "claude_limit_reached"
    assert link.unhandled.reason.value == "exhausted"
    assert "error_max_turns" in link.detail and "Reached maximum number of turns (4)" in link.detail
    assert report.usage.turns == 5
    assert report.usage.cost_usd == envelope("loop")["total_cost_usd"] > 0
    assert report.agent["claude"]["subtype"] == "error_max_turns"
    assert report.agent["claude"]["is_error"] is True


def test_budget_is_a_limit_counted_from_model_usage() -> None:
    _, report = read("budget")
    env = envelope("budget")
    assert report.ending is RoundEnding.LIMIT_REACHED
    assert report.limit == "error_max_budget_usd"
    assert report.process_link is not None
    assert report.process_link.code == "claude_limit_reached"
    # The top-level usage lags modelUsage by one call here: modelUsage wins.
    model_in = sum(m["inputTokens"] for m in env["modelUsage"].values())
    assert env["usage"]["input_tokens"] != model_in
    assert report.usage.tokens_in == model_in


@pytest.mark.parametrize(
    "name, status",
    [
        ("err429", "429"),
        ("err529", "529"),
        ("err500", "500"),
        ("connrefused", "ECONNREFUSED"),
        ("err529_nonroot", "Repeated 529"),
    ],
)
def test_transient_api_errors(name: str, status: str) -> None:
    _, report = read(name)
    assert report.ending is RoundEnding.TRANSIENT_ERROR
    assert report.transient_error is not None
    assert report.transient_error.startswith("API Error") and status in report.transient_error
    assert report.failure == report.transient_error
    link = report.process_link
    assert link is not None and link.code == "claude_error"
    assert link.unhandled.reason.value == "environment"
    assert report.worker_result is None
    assert report.session is not None
    assert report.agent["claude"]["subtype"] == "success"
    assert report.agent["claude"]["is_error"] is True


def test_a_bad_request_is_not_transient() -> None:
    _, report = read("err400")
    assert report.ending is RoundEnding.PROCESS_FAILED
    assert report.transient_error is None
    assert report.process_link is not None and report.process_link.code == "claude_error"
    assert "API Error: 400 fake bad request" in report.process_link.detail
    assert report.failure is not None and "400 fake bad request" in report.failure


def test_text_only_is_ok_without_a_worker_result() -> None:
    """No structured_output: the host finds the result invalid (worker_result_invalid)."""
    _, report = read("text_only")
    assert report.ending is RoundEnding.OK
    assert report.worker_result is None
    assert report.final_text == "I refuse to call tools."


def test_structured_output_retries_used_up_is_a_process_failure() -> None:
    _, report = read("always_invalid20")
    assert report.ending is RoundEnding.PROCESS_FAILED
    assert report.worker_result is None
    assert report.process_link is not None and report.process_link.code == "claude_error"
    assert "Failed to provide valid structured output after 5 attempts" in report.failure  # type: ignore[operator]


@pytest.mark.parametrize(
    "name, said",
    [
        ("resume_bogus", "No conversation found with session ID"),
        ("resume_notuuid", "--resume requires a valid session ID"),
    ],
)
def test_resume_errors_are_process_failures(name: str, said: str) -> None:
    _, report = read(name)
    assert report.ending is RoundEnding.PROCESS_FAILED
    assert report.process_link is not None
    assert "error_during_execution" in report.process_link.detail
    assert said in report.process_link.detail
    assert report.failure is not None and said in report.failure


def test_permission_denials_are_kept_as_given() -> None:
    _, report = read("hook_json")
    assert report.ending is RoundEnding.OK
    denials = report.agent["claude"]["permission_denials"]
    assert denials == envelope("hook_json")["permission_denials"]
    assert denials[0]["tool_name"] == "Write"


def test_no_envelope_is_a_process_failure() -> None:
    reader = ClaudeStreamReader()
    for line in lines("round1")[:-1]:
        reader.feed(line)
    report = reader.finish(0, False, "boom\n")
    assert report.ending is RoundEnding.PROCESS_FAILED
    assert report.session == envelope("round1")["session_id"]
    assert report.failure is not None and report.failure.startswith(NO_ENVELOPE)
    assert report.process_link is not None and report.process_link.code == "claude_error"
    assert report.process_link.detail.startswith(NO_ENVELOPE)
    assert "boom" in report.process_link.detail
    assert report.agent == {
        "claude": {
            **dict.fromkeys(AGENT_FIELDS),
            VERSION_FIELD: json.loads(lines("round1")[0])["claude_code_version"],
        }
    }
    assert report.usage.turns is None and report.usage.cost_usd is None


def test_nothing_at_all_is_a_process_failure() -> None:
    report = ClaudeStreamReader().finish(1, False, "Error: something\n")
    assert report.ending is RoundEnding.PROCESS_FAILED and report.session is None


def test_timeout_wins_over_everything() -> None:
    _, report = read("round1", timed_out=True)
    assert report.ending is RoundEnding.TIMEOUT
    assert report.failure == "the round timed out"
    # A valid result is still reported: the host keeps it whatever ended the round.
    assert report.worker_result is not None


def test_success_with_a_nonzero_exit_is_a_failure() -> None:
    reader = ClaudeStreamReader()
    for line in lines("round1"):
        reader.feed(line)
    report = reader.finish(1, False, "")
    assert report.ending is RoundEnding.PROCESS_FAILED
    assert report.worker_result is not None


def test_quota_is_never_transient() -> None:
    reader = ClaudeStreamReader()
    reader.feed(
        json.dumps(
            {
                "type": "result",
                "subtype": "success",
                "is_error": True,
                "result": "API Error: 429 You exceeded your current quota",
                "session_id": "s",
            }
        )
    )
    assert reader.finish(1, False, "").ending is RoundEnding.PROCESS_FAILED


def test_listed_errors_are_read_for_a_transient_error() -> None:
    reader = ClaudeStreamReader()
    reader.feed(
        json.dumps(
            {
                "type": "result",
                "subtype": "error_during_execution",
                "is_error": True,
                "errors": ["Connection reset by peer"],
                "session_id": "s",
            }
        )
    )
    report = reader.finish(1, False, "")
    assert report.ending is RoundEnding.TRANSIENT_ERROR
    assert report.transient_error == "Connection reset by peer"


def test_a_successful_text_is_never_read_as_an_error() -> None:
    reader = ClaudeStreamReader()
    reader.feed(
        json.dumps(
            {
                "type": "result",
                "subtype": "success",
                "is_error": False,
                "result": "API Error: 529 Overloaded (quoted by the worker)",
                "session_id": "s",
            }
        )
    )
    assert reader.finish(0, False, "").ending is RoundEnding.OK


@pytest.mark.parametrize(
    ("turns", "cost"),
    [(True, True), (-1, -0.5), ("3", "0.1"), (3.0, float("nan")), (None, 10**400)],
)
def test_envelope_numbers_of_the_wrong_kind_are_no_numbers(turns: Any, cost: Any) -> None:
    """An envelope field of the wrong type, negative, not finite or too large for a float is
    reported as absent; reading it never raises."""
    reader = ClaudeStreamReader()
    reader.feed(
        json.dumps(
            {
                "type": "result",
                "subtype": "success",
                "is_error": False,
                "num_turns": turns,
                "total_cost_usd": cost,
                "usage": {"input_tokens": turns},
                "session_id": "s",
            }
        )
    )
    report = reader.finish(0, False, "")
    assert (report.usage.turns, report.usage.cost_usd, report.usage.tokens_in) == (None, None, None)


def test_envelope_numbers_are_read() -> None:
    reader = ClaudeStreamReader()
    reader.feed(
        json.dumps(
            {
                "type": "result",
                "subtype": "success",
                "is_error": False,
                "num_turns": 0,
                "total_cost_usd": 1,
                "session_id": "s",
            }
        )
    )
    usage = reader.finish(0, False, "").usage
    assert (usage.turns, usage.cost_usd) == (0, 1.0)
    assert isinstance(usage.cost_usd, float)


def test_classification_rows_are_ordered_with_a_catch_all() -> None:
    assert CLASSIFICATION[0].ending is RoundEnding.TIMEOUT
    assert CLASSIFICATION[-1].text == "anything else"


# --- feed ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "",
        "not json",
        "[1, 2]",
        "42",
        '{"type": "assistant"}',
        '{"type": "assistant", "message": {"content": "x"}}',
        '{"type": "assistant", "message": {"content": [1, {"type": "tool_use"}]}}',
        "{" * 100_000,
    ],
)
def test_malformed_lines_are_ignored(line: str) -> None:
    reader = ClaudeStreamReader()
    assert reader.feed(line) is None
    assert reader.finish(0, False, "").ending is RoundEnding.PROCESS_FAILED


def test_every_tool_use_block_is_an_action_the_last_one_returned() -> None:
    reader = ClaudeStreamReader(now=lambda: datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
    line = json.dumps(
        {
            "type": "assistant",
            "session_id": "s",
            "message": {
                "content": [
                    {"type": "text", "text": "hi"},
                    {"type": "tool_use", "name": "Read", "input": {"file_path": "/a/b"}},
                    {"type": "tool_use", "name": "Bash", "input": {"command": "ls -la\necho x"}},
                ]
            },
        }
    )
    action = reader.feed(line)
    assert action is not None and (action.tool, action.target) == ("Bash", "ls -la")
    assert action.at == "2026-01-02T03:04:05Z"
    assert [a.tool for a in reader.actions] == ["Read", "Bash"]


@pytest.mark.parametrize(
    "tool_input, target",
    [
        ({"file_path": "/x", "content": "y"}, "/x"),
        ({"notebook_path": "/n.ipynb"}, "/n.ipynb"),
        ({"pattern": "*.py", "path": "/w"}, "/w"),
        ({"pattern": "TODO"}, "TODO"),
        ({"command": "make\ntest"}, "make\ntest"),
        ({}, ""),
        ("not a dict", ""),
    ],
)
def test_tool_target(tool_input: Any, target: str) -> None:
    assert tool_target(tool_input) == target


def test_a_long_target_is_cut_to_200_characters() -> None:
    reader = ClaudeStreamReader()
    action = reader.feed(
        json.dumps(
            {
                "type": "assistant",
                "message": {
                    "content": [
                        {"type": "tool_use", "name": "Bash", "input": {"command": "x" * 500}}
                    ]
                },
            }
        )
    )
    assert action is not None and len(action.target) == 200


# --- transcript, session, credentials ---------------------------------------------------------


def test_project_slug_matches_claude_code() -> None:
    assert project_slug("/tmp/ccr1/work") == "-tmp-ccr1-work"
    assert project_slug("/tmp/concorde-ab12cd-x_y.z/work") == "-tmp-concorde-ab12cd-x-y-z-work"
    long = "/tmp/" + "a" * 300
    slug = project_slug(long)
    assert slug.startswith("-tmp-" + "a" * 195 + "-") and len(slug) > 200
    # Java's String.hashCode, |0, Math.abs, base 36 (Claude Code's jCe/fNu).
    h = 0
    for ch in long:
        h = (h * 31 + ord(ch)) & 0xFFFFFFFF
    h = h - (1 << 32) if h & 0x80000000 else h
    assert slug.rsplit("-", 1)[1] == _base36(abs(h))
    assert project_slug("/tmp/é") == "-tmp--"


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return out


class _Context:
    """The few BackendContext fields the lookups read."""

    def __init__(self, root: Path, environ: dict[str, str]) -> None:
        from concorde_workers.domain.ground.layout import RuntimeLayout

        class _Policy:
            runtime = RuntimeLayout(root=str(root))

        self.policy = _Policy()
        self.environ = environ


def test_transcript(tmp_path: Path) -> None:
    backend = ClaudeBackend(LocalFileSystem())
    rt = tmp_path / "rt"
    ctx: Any = _Context(rt, {})
    session = "8410585c-fdcc-42fd-8ce0-f6d9767b27d1"
    assert backend.transcript(ctx, session) is None
    assert backend.transcript(ctx, None) is None
    folder = rt / "config" / "projects" / project_slug(str(rt / "work"))
    folder.mkdir(parents=True)
    transcript = folder / f"{session}.jsonl"
    transcript.write_text('{"type": "user"}\n{"type": "assistant"}\n')
    assert backend.transcript(ctx, session) == str(transcript)
    assert backend.transcript(ctx, "../x") is None


@pytest.mark.parametrize(
    "session", ["", ".", "..", "../x", "a/../../b", "/etc/passwd", "a/b", ".hidden", "x\x00y"]
)
def test_a_session_that_is_no_plain_file_name_has_no_transcript(
    tmp_path: Path, session: str
) -> None:
    """The session id comes from the stream: it never leaves config/projects/<dir>/."""
    assert session_file_name(session) is None
    backend = ClaudeBackend(LocalFileSystem())
    rt = tmp_path / "rt"
    (rt / "config" / "projects" / "p").mkdir(parents=True)
    (rt / "config" / "x.jsonl").write_text("{}\n")
    (rt / "config" / "projects" / "p" / ".jsonl").write_text("{}\n")
    ctx: Any = _Context(rt, {})
    assert backend.transcript(ctx, session) is None


def test_transcript_found_under_another_slug(tmp_path: Path) -> None:
    backend = ClaudeBackend(LocalFileSystem())
    rt = tmp_path / "rt"
    ctx: Any = _Context(rt, {})
    other = rt / "config" / "projects" / "-private-elsewhere"
    other.mkdir(parents=True)
    (other / "s-1.jsonl").write_text("{}\n")
    assert backend.transcript(ctx, "s-1") == str(other / "s-1.jsonl")


def test_credential_copies(tmp_path: Path) -> None:
    backend = ClaudeBackend(LocalFileSystem())
    rt = tmp_path / "rt"
    copy = str(rt / "config" / ".credentials.json")
    by_home: Any = _Context(rt, {"HOME": "/home/u"})
    assert list(backend.credential_copies(by_home)) == [("/home/u/.claude/.credentials.json", copy)]
    by_config: Any = _Context(rt, {"HOME": "/home/u", "CLAUDE_CONFIG_DIR": "/cfg"})
    assert list(backend.credential_copies(by_config)) == [("/cfg/.credentials.json", copy)]
