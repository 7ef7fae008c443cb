"""The pi event-stream reader over streams pi 0.73.1 really printed (tests/fixtures/pi/, copied
from notes/pi.md's captures), its classification row by row, and the pi backend's transcript,
session check and credential copies."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from fakes.agent import make_context
from fakes.filesystem import FakeFileSystem
from fakes.system import FakeClock
from timing import SLOW

from concorde_workers.adapters.pi import layout as pi_layout
from concorde_workers.adapters.pi.backend import PiBackend, user_pi_directory
from concorde_workers.adapters.pi.links import pi_limit_detail
from concorde_workers.adapters.pi.stream import (
    CLASSIFICATION,
    PiStreamReader,
    limit_entries,
    stderr_limit,
)
from concorde_workers.domain.ground.codes import PI_ERROR_CODE, PI_LIMIT_CODE
from concorde_workers.domain.ground.errors import Reason
from concorde_workers.domain.run.agent_report import RoundReport
from concorde_workers.domain.run.rounds import RoundEnding
from concorde_workers.ports.agents.agent import StreamReader

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "pi"
SESSION_FILE = "/tmp/concorde-abc123-k9/config/sessions/w-20260101T000000-abc123.jsonl"


def lines(name: str) -> list[str]:
    return (FIXTURES / name).read_text().splitlines()


def read(
    stream: Sequence[str],
    exit_status: int | None = 0,
    timed_out: bool = False,
    stderr: str = "",
    fs: FakeFileSystem | None = None,
    session_after: str | None = None,
) -> tuple[RoundReport, PiStreamReader]:
    """Feed a stream; `session_after` is the session file's text once the round ended."""
    fs = fs or FakeFileSystem()
    reader = PiStreamReader(session_file=SESSION_FILE, fs=fs, clock=FakeClock())
    for line in stream:
        reader.feed(line)
    if session_after is not None:
        fs.write(SESSION_FILE, session_after)
    return reader.finish(exit_status, timed_out, stderr), reader


def event(kind: str, **fields: Any) -> str:
    return json.dumps({"type": kind, **fields})


def assistant_end(
    stop: str,
    *,
    error: str | None = None,
    text: str | None = None,
    cost: float = 0.001,
    tokens: tuple[int, int, int, int] = (100, 10, 0, 0),
) -> str:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": [{"type": "text", "text": text}] if text else [],
        "usage": {
            "input": tokens[0],
            "output": tokens[1],
            "cacheRead": tokens[2],
            "cacheWrite": tokens[3],
            "totalTokens": sum(tokens),
            "cost": {"total": cost},
        },
        "stopReason": stop,
    }
    if error is not None:
        message["errorMessage"] = error
    return event("message_end", message=message)


HEADER = event(
    "session",
    version=3,
    id="01a236aa-0000-7000-8000-000000000001",
    timestamp="2026-12-02T12:00:00Z",
    cwd="/rt/work",
)
RESULT = {"status": "ok", "summary": "done", "error": None, "proposed_deletions": [], "output": {}}


def result_end(details: Any, is_error: bool = False) -> str:
    return event(
        "tool_execution_end",
        toolCallId="c1",
        toolName="concorde_result",
        result={"content": [{"type": "text", "text": "recorded"}], "details": details},
        isError=is_error,
    )


def test_the_reader_is_a_stream_reader() -> None:
    assert isinstance(PiStreamReader(), StreamReader)


# --- real streams ---------------------------------------------------------------------------------


def test_round1_gives_session_usage_turns_progress_and_the_last_valid_result() -> None:
    report, reader = read(lines("round1.stdout.jsonl"))
    assert report.ending is RoundEnding.OK
    assert report.session == "01a236aa-0c34-75ea-aa43-1c73751a00f8"
    assert report.worker_result == {
        "status": "ok",
        "summary": "Wrote src/allowed.txt; readme.md is read-only.",
        "error": None,
        "proposed_deletions": [],
        "output": {"note": "demo"},
    }
    assert report.process_link is None and report.failure is None
    assert report.usage.turns == 6
    assert report.usage.cost_usd == pytest.approx(
        0.0051 + 0.00192 + 0.00258 + 0.00399 + 0.0039 + 0.00432
    )
    ends = [
        json.loads(x)["message"]
        for x in lines("round1.stdout.jsonl")
        if '"message_end"' in x and '"role":"assistant"' in x
    ]
    assert report.usage.tokens_in == sum(m["usage"]["input"] for m in ends)
    assert report.usage.tokens_out == sum(m["usage"]["output"] for m in ends)
    assert report.usage.tokens_cache_read == sum(m["usage"]["cacheRead"] for m in ends) == 9200
    assert report.usage.tokens_cache_write == 0
    assert report.agent == {
        "pi": {"stop_reason": "toolUse", "turns": 6, "cost": report.usage.cost_usd}
    }
    tools = [a.tool for a in reader.actions]
    assert tools == [
        "write",
        "write",
        "bash",
        "ls",
        "find",
        "grep",
        "read",
        "read",
        "read",
        "concorde_result",
        "concorde_result",
    ]
    assert reader.actions[0].target.endswith("/src/allowed.txt")
    assert reader.actions[2].target.startswith("curl -sS -m 5 http://127.0.0.1:")
    assert reader.actions[4].target == "*.txt"  # find: its pattern
    assert reader.actions[3].target == "<rt>/tmp"  # ls: its path


def test_a_resume_round_reports_the_same_session_and_its_own_result() -> None:
    report, _ = read(lines("round2_resume.stdout.jsonl"))
    assert report.ending is RoundEnding.OK
    assert report.session == "01a236aa-0c34-75ea-aa43-1c73751a00f8"
    assert report.worker_result is not None
    assert report.worker_result["proposed_deletions"] == ["src/allowed.txt"]
    assert report.usage.turns == 2


@pytest.mark.parametrize(
    "name", ["err_e429.stdout.jsonl", "err_estream.stdout.jsonl", "err_e529conc.stdout.jsonl"]
)
def test_a_transient_error_after_pis_own_retries_is_transient(name: str) -> None:
    report, _ = read(lines(name))
    assert report.ending is RoundEnding.TRANSIENT_ERROR
    last = [
        json.loads(x)["message"]
        for x in lines(name)
        if '"message_end"' in x and '"role":"assistant"' in x
    ][-1]
    assert report.transient_error == last["errorMessage"]
    assert report.process_link is not None and report.process_link.code == PI_ERROR_CODE
    assert report.agent["pi"]["stop_reason"] == "error"
    assert report.worker_result is None


def test_several_agent_ends_are_judged_by_the_last_assistant_message() -> None:
    report, _ = read(lines("err_e429then_ok.stdout.jsonl"))
    assert report.ending is RoundEnding.OK
    assert report.final_text == "Recovered answer."
    assert report.worker_result is None  # the host's worker_result_invalid
    assert report.usage.cost_usd == pytest.approx(0.000375)


def test_an_error_that_is_not_transient_fails_the_process() -> None:
    report, _ = read(lines("err_e400.stdout.jsonl"))
    assert report.ending is RoundEnding.PROCESS_FAILED
    assert report.transient_error is None
    assert (
        report.failure == "pi ended with the stop reason error: 400 Invalid request: bad parameter"
    )
    link = report.process_link
    assert link is not None and link.code == PI_ERROR_CODE
    assert link.unhandled.reason is Reason.ENVIRONMENT
    assert "400 Invalid request" in link.detail and "exit status 0" in link.detail


@pytest.mark.parametrize(
    ("stream", "session", "limit", "value", "maximum", "turns"),
    [
        ("limit_turns.stdout.jsonl", "limit_turns.session.jsonl", "max_turns", 3, 2, 3),
        (
            "limit_budget.stdout.jsonl",
            "limit_budget.session.jsonl",
            "max_budget_usd",
            0.0063,
            0.005,
            2,
        ),
    ],
)
def test_a_limit_entry_in_the_session_file_is_the_limit_reached(
    stream: str, session: str, limit: str, value: float, maximum: float, turns: int
) -> None:
    report, _ = read(lines(stream), session_after=(FIXTURES / session).read_text())
    assert report.ending is RoundEnding.LIMIT_REACHED
    assert report.limit == pi_limit_detail(limit, value, maximum)
    link = report.process_link
    assert link is not None and link.code == PI_LIMIT_CODE
    assert link.unhandled.reason is Reason.EXHAUSTED
    assert report.usage.turns == turns  # the aborted pseudo-turn does not count
    assert report.agent["pi"]["stop_reason"] == "aborted"


def test_the_limit_falls_back_to_the_stderr_line() -> None:
    stderr = 'noise\n[concorde-limit] {"limit":"max_turns","value":3,"maximum":2}\n'
    report, _ = read(lines("limit_turns.stdout.jsonl"), stderr=stderr)
    assert report.ending is RoundEnding.LIMIT_REACHED
    assert report.limit == pi_limit_detail("max_turns", 3, 2)


def test_an_abort_without_a_limit_fails_the_process() -> None:
    report, _ = read(lines("limit_turns.stdout.jsonl"))
    assert report.ending is RoundEnding.PROCESS_FAILED
    assert report.process_link is not None and report.process_link.code == PI_ERROR_CODE
    assert "aborted" in (report.failure or "")


def test_limit_entries_of_earlier_rounds_do_not_count() -> None:
    fs = FakeFileSystem()
    earlier = (FIXTURES / "limit_turns.session.jsonl").read_text()
    fs.write(SESSION_FILE, earlier)
    report, _ = read(lines("round2_resume.stdout.jsonl"), fs=fs, session_after=earlier)
    assert report.ending is RoundEnding.OK


def test_a_round_killed_before_the_first_answer_has_a_session_but_no_result() -> None:
    report, _ = read(lines("killed_before_first_answer.stdout.jsonl"), exit_status=-9)
    assert report.ending is RoundEnding.PROCESS_FAILED
    assert report.session == "01a236ad-0a6c-735a-a56c-85ec4f764b87"
    assert report.usage.cost_usd is None and report.usage.turns == 0
    assert report.failure == "pi exited with status -9 without a worker result"


def test_a_startup_failure_without_a_session_record_fails_the_process() -> None:
    stderr = (FIXTURES / "session_id_flag.stderr.log").read_text()
    report, _ = read([], exit_status=1, stderr=stderr)
    assert report.ending is RoundEnding.PROCESS_FAILED
    assert report.session is None
    assert report.failure == "pi printed no session record (exit status 1)"
    link = report.process_link
    assert link is not None and "Unknown option: --session-id" in link.detail
    assert "none (no assistant message)" in link.detail
    assert report.agent == {"pi": {"stop_reason": None, "turns": 0, "cost": None}}


def test_a_stop_length_end_without_result_is_ok_with_its_final_text() -> None:
    report, _ = read(lines("stop_length.stdout.jsonl"))
    assert report.ending is RoundEnding.OK
    assert report.worker_result is None and report.final_text == "truncated answ"


def test_a_timeout_is_a_timeout_whatever_was_read() -> None:
    report, _ = read(lines("round1.stdout.jsonl")[:20], exit_status=-9, timed_out=True)
    assert report.ending is RoundEnding.TIMEOUT
    assert report.failure == "the round timed out"


# --- the classification, row by row ---------------------------------------------------------------


ROW_CASES: dict[str, tuple[list[str], int | None, bool, str]] = {
    "the runner killed the round at its timeout": ([HEADER], None, True, ""),
    "the permission extension recorded a concorde-limit entry this round": (
        [HEADER, assistant_end("aborted", error="Request was aborted.")],
        0,
        False,
        '[concorde-limit] {"limit":"max_budget_usd","value":0.02,"maximum":0.01}',
    ),
    "no session record (pi failed before its session started)": ([], 1, False, "Error: x"),
    "the last assistant message's stop reason is error and its error message names a transient "
    "model-service error": (
        [HEADER, assistant_end("error", error="503 Service Unavailable")],
        0,
        False,
        "",
    ),
    "the last assistant message's stop reason is error or aborted": (
        [HEADER, assistant_end("error", error="402 quota exceeded, retry later")],
        0,
        False,
        "",
    ),
    "no worker result and a non-zero (or no) exit status": (
        [HEADER, assistant_end("stop", text="bye")],
        143,
        False,
        "",
    ),
    "a normal end (with or without a worker result)": (
        [HEADER, assistant_end("toolUse"), result_end(RESULT), assistant_end("stop")],
        0,
        False,
        "",
    ),
}


@pytest.mark.parametrize("rule", CLASSIFICATION, ids=lambda r: r.text[:40])
def test_every_row_of_the_classification(rule: Any) -> None:
    stream, exit_status, timed_out, stderr = ROW_CASES[rule.text]
    report, reader = read(stream, exit_status=exit_status, timed_out=timed_out, stderr=stderr)
    assert report.ending is rule.ending
    observed = reader.observed(exit_status, timed_out, stderr)
    assert next(r for r in CLASSIFICATION if r.applies(observed)) is rule


def test_quota_errors_are_never_transient() -> None:
    report, _ = read([HEADER, assistant_end("error", error="429 You exceeded your current quota")])
    assert report.ending is RoundEnding.PROCESS_FAILED


def test_the_result_is_the_last_concorde_result_that_did_not_fail() -> None:
    later = dict(RESULT, summary="later")
    report, _ = read(
        [
            HEADER,
            result_end(RESULT),
            result_end({}, is_error=True),
            result_end(later),
            result_end({"x": 1}, is_error=True),
            event(
                "tool_execution_end",
                toolName="bash",
                isError=False,
                result={"details": {"status": "ok"}},
            ),
            assistant_end("stop"),
        ]
    )
    assert report.worker_result == later


def test_a_result_is_kept_after_a_non_zero_exit() -> None:
    report, _ = read([HEADER, assistant_end("toolUse"), result_end(RESULT)], exit_status=-9)
    assert report.ending is RoundEnding.OK and report.worker_result == RESULT


def test_garbage_lines_are_ignored_and_counted() -> None:
    report, reader = read(
        [
            HEADER,
            "not json",
            "[1]",
            event("nonsense"),
            event("message_end", message="x"),
            event("tool_execution_start", toolName=""),
            assistant_end("stop", text="t", cost=float("nan")),
            event("turn_end", message={"stopReason": "stop"}),
        ]
    )
    assert (reader.ignored.count, reader.ignored.last) == (
        3,
        ["not json", "[1]", event("nonsense")],
    )
    assert report.ending is RoundEnding.OK and report.usage.turns == 1
    assert report.usage.cost_usd == 0.0


def test_cache_reads_and_writes_are_summed() -> None:
    report, _ = read(
        [
            HEADER,
            assistant_end("toolUse", tokens=(1000, 10, 200, 30), cost=0.5),
            assistant_end("stop", tokens=(5, 1, 2, 3), cost=0.25),
        ]
    )
    usage = report.usage
    assert (
        usage.tokens_in,
        usage.tokens_out,
        usage.tokens_cache_read,
        usage.tokens_cache_write,
        usage.cost_usd,
    ) == (1005, 11, 202, 33, 0.75)


def test_a_command_target_is_its_first_line_cut_to_200_characters() -> None:
    reader = PiStreamReader(clock=FakeClock())
    action = reader.feed(
        event(
            "tool_execution_start",
            toolCallId="c",
            toolName="bash",
            args={"command": "x" * 300 + "\nsecond"},
        )
    )
    assert action is not None and action.tool == "bash" and action.target == "x" * 200
    assert action.at == "2026-01-01T00:00:00Z"
    grep = reader.feed(
        event("tool_execution_start", toolName="grep", args={"pattern": "hello", "path": "/w/src"})
    )
    assert grep is not None and grep.target == "hello"
    result = reader.feed(
        event("tool_execution_start", toolName="concorde_result", args={"status": "ok"})
    )
    assert result is not None and result.target == ""


def test_limit_helpers() -> None:
    text = (FIXTURES / "limit_budget.session.jsonl").read_text()
    (limit,) = limit_entries(text)
    assert limit is not None and (limit.name, limit.value, limit.maximum) == (
        "max_budget_usd",
        0.0063,
        0.005,
    )
    assert stderr_limit('[concorde-limit] {"limit":"max_turns","value":"3"}') is None
    assert stderr_limit("[concorde-limit] {broken") is None


# --- the backend's transcript, session check and credential copies -------------------------------


def backend_and_context(
    environ: dict[str, str] | None = None,
) -> tuple[PiBackend, Any, FakeFileSystem]:
    fs = FakeFileSystem()
    context = make_context(environ=environ)
    return PiBackend(fs=fs, environ={}), context, fs


def test_the_transcript_is_the_runs_session_file_once_pi_wrote_it() -> None:
    backend, context, fs = backend_and_context()
    assert pi_layout.session_file(context.policy.runtime, context.run_id) == SESSION_FILE
    assert backend.transcript(context, "s") is None
    fs.write(SESSION_FILE, (FIXTURES / "session_after_round2.jsonl").read_text())
    assert backend.transcript(context, "s") == SESSION_FILE
    assert backend.transcript(context, None) == SESSION_FILE


def test_the_reader_reads_the_session_file_for_the_limit() -> None:
    backend, context, fs = backend_and_context()
    reader = backend.reader(context)
    assert isinstance(reader, PiStreamReader) and reader.session_file == SESSION_FILE
    for line in lines("limit_turns.stdout.jsonl"):
        reader.feed(line)
    fs.write(SESSION_FILE, (FIXTURES / "limit_turns.session.jsonl").read_text())
    assert reader.finish(0, False, "").ending is RoundEnding.LIMIT_REACHED


@pytest.mark.parametrize(
    ("environ", "directory"),
    [
        ({"HOME": "/home/u"}, "/home/u/.pi/agent"),
        ({"HOME": "/home/u", "PI_CODING_AGENT_DIR": "/etc/pi"}, "/etc/pi"),
        ({"HOME": "/home/u", "PI_CODING_AGENT_DIR": "~/cfg/pi"}, "/home/u/cfg/pi"),
        ({"HOME": "/home/u", "PI_CODING_AGENT_DIR": "~"}, "/home/u"),
        ({"HOME": "/home/u", "PI_CODING_AGENT_DIR": "~other/pi"}, "~other/pi"),
        ({"HOME": "/home/u", "PI_CODING_AGENT_DIR": ""}, "/home/u/.pi/agent"),
        ({}, None),
        ({"PI_CODING_AGENT_DIR": "~/pi"}, None),
    ],
)
def test_the_users_pi_directory(environ: dict[str, str], directory: str | None) -> None:
    assert user_pi_directory(environ) == directory


def test_only_auth_and_models_are_copied() -> None:
    backend, context, _ = backend_and_context({"HOME": "/home/u", "PATH": "/bin"})
    rt = context.policy.runtime
    assert list(backend.credential_copies(context)) == [
        ("/home/u/.pi/agent/auth.json", rt.copy_of("auth.json")),
        ("/home/u/.pi/agent/models.json", rt.copy_of("models.json")),
    ]
    assert rt.copy_of("auth.json").endswith("/config/auth.json") and rt.copy_of(
        "models.json"
    ).endswith("/config/models.json")
    no_home, context2, _ = backend_and_context({"PATH": "/bin"})
    assert list(no_home.credential_copies(context2)) == []


# --- the scripted model server the e2e tests and the demo run pi against -------------------------


def _post(url: str, body: dict[str, Any]) -> tuple[int, str]:
    """POST to the loopback server directly (http.client: no proxy from the environment)."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=SLOW)
    try:
        connection.request(
            "POST", parts.path, json.dumps(body), {"Content-Type": "application/json"}
        )
        response = connection.getresponse()
        return response.status, response.read().decode()
    finally:
        connection.close()


def test_the_scripted_server_streams_text_tool_calls_and_usage_then_fails_as_told() -> None:
    from servers.openai_server import (
        EXHAUSTED_TEXT,
        Fail,
        Reply,
        ScriptedModelServer,
        ToolCall,
        Usage,
    )

    body = {
        "model": "m",
        "stream": True,
        "messages": [
            {"role": "system", "content": "Current working directory: /rt/work"},
            {"role": "tool", "tool_call_id": "c0", "content": "denied"},
        ],
    }
    script = [
        Reply(
            text="hi",
            tool_calls=[ToolCall("write", {"path": "/a", "content": "x" * 90}, id="c1")],
            usage=Usage(12, 3, 2),
        ),
        Fail(529, "please retry later", times=2),
        lambda b: Reply(text=b["model"]),
    ]
    with ScriptedModelServer(script) as server:
        assert server.base_url.startswith("http://127.0.0.1:")
        url = f"{server.base_url}/chat/completions"
        status, text = _post(url, body)
        assert status == 200 and text.endswith("data: [DONE]\n\n")
        chunks = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: {")]
        deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
        assert "".join(d.get("content", "") for d in deltas) == "hi"
        calls = [tc for d in deltas for tc in d.get("tool_calls", [])]
        assert calls[0]["id"] == "c1" and calls[0]["function"]["name"] == "write"
        arguments = "".join(tc["function"].get("arguments", "") for tc in calls)
        assert json.loads(arguments) == {"path": "/a", "content": "x" * 90}
        assert len(calls) > 2  # the arguments arrive in fragments
        assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][
            -1
        ] == "tool_calls"
        assert chunks[-1]["usage"] == {
            "prompt_tokens": 12,
            "completion_tokens": 3,
            "total_tokens": 15,
            "prompt_tokens_details": {"cached_tokens": 2},
        }
        for _ in range(2):
            status, text = _post(url, body)
            assert status == 529
            assert json.loads(text)["error"]["message"] == "please retry later"
        assert "data: {" in _post(url, body)[1]  # the callable step
        assert EXHAUSTED_TEXT in _post(url, body)[1] and server.exhausted == 1
        assert _post(f"http://127.0.0.1:{server.port}/v1/other", body)[0] == 404
        assert [r["served"] for r in server.requests][:3] == [
            "reply: text + write",
            "HTTP 529: please retry later",
            "HTTP 529: please retry later",
        ]
        assert server.tool_results() == {"c0": "denied"}
        assert server.system_prompt(1) == "Current working directory: /rt/work"


def test_write_pi_config_is_a_local_model_proxy_configuration(tmp_path: Path) -> None:
    from servers.openai_server import write_pi_config

    models, auth = write_pi_config(tmp_path / "pi", "http://127.0.0.1:1/v1")
    provider = json.loads(models.read_text())["providers"]["scripted"]
    assert provider["baseUrl"] == "http://127.0.0.1:1/v1"
    assert provider["api"] == "openai-completions"
    assert provider["models"][0]["cost"]["input"] > 0
    assert json.loads(auth.read_text()) == {
        "scripted": {"type": "api_key", "key": "sk-scripted-local-key"}
    }
    assert not (tmp_path / "pi" / "settings.json").exists()
