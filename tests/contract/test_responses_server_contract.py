"""The scripted Responses API server held to the real Codex CLI (issue 33 §5): the pinned
`codex exec` (tests/servers/codex_exec.py, the hardened configuration of
../shared/notes/codex.md) runs against it offline, and what codex sends and accepts is what the
server expects and serves. The same runs pin the facts of the installed version the Codex backend
relies on (docs/decisions.md "Codex facts verified and its failure wordings"): its `--json`
events, its exit codes, its failure wordings and how the host's retry table classifies each.

A missing codex fails these tests (never skips them): run ./scripts/setup (npm ci installs the
pinned @openai/codex), or set CONCORDE_CODEX to a native codex binary.
"""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from servers.codex_exec import (
    KEY,
    MODEL,
    PROVIDER,
    CodexExec,
    ExecResult,
    find_codex,
    hardened_config,
)
from servers.responses_server import (
    Call,
    Cut,
    Fail,
    Failed,
    Hang,
    Patch,
    Refuse,
    ResponsesStep,
    ScriptedResponsesServer,
    Turn,
    Usage,
    refused_port,
)
from timing import SLOW

from concorde_workers.domain.configuration.program_versions import version_text
from concorde_workers.domain.run.retries import TransientCause, transient_cause

HIGH_DEMAND = "We\u2019re currently experiencing high demand, which may cause temporary errors."
"""Codex's text for any HTTP 500, whatever the server said (a curly apostrophe)."""

SCHEMA = {
    "type": "object",
    "properties": {"status": {"type": "string"}, "summary": {"type": "string"}},
    "required": ["status", "summary"],
    "additionalProperties": False,
}
FINAL = json.dumps({"status": "ok", "summary": "done"})


@pytest.fixture(scope="session")
def codex() -> Path:
    found = find_codex()
    if found is None or not found.exists():
        pytest.fail(
            "the Codex CLI under test is missing: run ./scripts/setup (npm ci installs the "
            "pinned @openai/codex), or set CONCORDE_CODEX to a native codex binary",
            pytrace=False,
        )
    return found


@pytest.fixture
def server() -> Iterator[ScriptedResponsesServer]:
    started = ScriptedResponsesServer().start()
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture
def exec_world(tmp_path: Path, codex: Path, server: ScriptedResponsesServer) -> CodexExec:
    """`codex exec` in a fresh Git worktree of one file, configured at `server`."""
    worktree = tmp_path / "wt"
    worktree.mkdir()
    subprocess.run(["git", "init", "-q", str(worktree)], check=True)
    (worktree / "a.txt").write_text("alpha\n")
    world = CodexExec(codex, tmp_path, worktree, timeout=SLOW)
    world.configure(hardened_config(server.base_url))
    return world


def schema_file(root: Path) -> Path:
    path = root / "schema.json"
    path.write_text(json.dumps(SCHEMA))
    return path


def run(
    world: CodexExec, server: ScriptedResponsesServer, *steps: ResponsesStep, **kw: object
) -> ExecResult:
    server.add(*steps)
    result = world.run(**kw)  # type: ignore[arg-type]
    assert server.failures == [], server.failures
    return result


# --- a turn, the request codex sends, the events it reports --------------------------------------


def test_a_message_turn_is_the_final_answer_with_its_usage(
    exec_world: CodexExec, server: ScriptedResponsesServer
) -> None:
    usage = Usage(input_tokens=1234, output_tokens=56, cached_tokens=200, reasoning_tokens=7)
    result = run(exec_world, server, Turn(text=FINAL, usage=usage))
    assert result.code == 0, result.explain()
    kinds = [e["type"] for e in result.events]
    assert kinds == ["thread.started", "turn.started", "item.completed", "turn.completed"], kinds
    assert result.items("agent_message") == [
        {"id": "item_0", "type": "agent_message", "text": FINAL}
    ]
    assert result.of_type("turn.completed")[0]["usage"] == {
        "input_tokens": 1234,
        "cached_input_tokens": 200,
        "cache_write_input_tokens": 0,
        "output_tokens": 56,
        "reasoning_output_tokens": 7,
    }
    assert result.last_message == FINAL
    assert len(server.requests) == 1


def test_codex_posts_one_streamed_request_per_turn_to_the_base_url_s_responses(
    exec_world: CodexExec, server: ScriptedResponsesServer, codex: Path
) -> None:
    result = run(exec_world, server, Turn(text=FINAL), schema=schema_file(exec_world.root))
    assert result.code == 0, result.explain()
    (entry,) = server.requests
    headers = {k.lower(): v for k, v in entry["headers"].items()}
    body = entry["body"]
    version = version_text(
        subprocess.run([str(codex), "--version"], capture_output=True, text=True).stdout
    )
    assert entry["path"] == "/v1/responses"
    assert headers["authorization"] == f"Bearer {KEY}"
    assert headers["originator"] == "codex_exec"
    assert headers["user-agent"].startswith(f"codex_exec/{version} "), headers
    assert headers["accept"] == "text/event-stream"
    assert body["model"] == MODEL and body["stream"] is True and body["store"] is False
    assert "instructions" not in body  # the system prompt is the first developer message
    assert body["input"][0]["role"] == "developer", body["input"][0]
    assert "Do the scripted task." in server.texts(1)
    tools = {t.get("name"): t["type"] for t in body["tools"]}
    assert tools["exec_command"] == "function" and tools["apply_patch"] == "custom", tools
    assert "web_search" not in json.dumps(body["tools"])
    assert body["text"]["format"] == {
        "type": "json_schema",
        "strict": True,
        "schema": SCHEMA,
        "name": "codex_output_schema",
    }


def test_an_exec_command_call_runs_and_its_output_goes_back_to_the_model(
    exec_world: CodexExec, server: ScriptedResponsesServer
) -> None:
    command = {"cmd": "cat a.txt; echo from-the-tool", "yield_time_ms": 3000}
    result = run(
        exec_world,
        server,
        Turn(calls=[Call("exec_command", command, "call_1")]),
        Turn(text=FINAL),
        schema=schema_file(exec_world.root),
    )
    assert result.code == 0, result.explain()
    (started,) = result.items("command_execution", "item.started")
    (done,) = result.items("command_execution")
    assert started["status"] == "in_progress" and started["exit_code"] is None, started
    assert done["command"] == "/bin/bash -c 'cat a.txt; echo from-the-tool'", done
    assert done["aggregated_output"] == "alpha\nfrom-the-tool\n" and done["exit_code"] == 0
    output = server.outputs()["call_1"]
    assert "Process exited with code 0" in output and "alpha\nfrom-the-tool\n" in output, output
    echoed = [i for i in server.requests[1]["body"]["input"] if i.get("type") == "function_call"]
    assert [i["call_id"] for i in echoed] == ["call_1"], echoed
    # The schema is sent on every request, also the one that ended in a call (issue 19816).
    assert all(r["body"]["text"]["format"]["schema"] == SCHEMA for r in server.requests)


def test_an_apply_patch_call_changes_the_worktree_and_is_a_file_change_item(
    exec_world: CodexExec, server: ScriptedResponsesServer
) -> None:
    patch = "*** Begin Patch\n*** Add File: new.txt\n+made by a patch\n*** End Patch\n"
    result = run(exec_world, server, Turn(calls=[Patch(patch, "call_p")]), Turn(text=FINAL))
    assert result.code == 0, result.explain()
    (change,) = result.items("file_change")
    assert change["status"] == "completed", change
    assert change["changes"] == [{"path": str(exec_world.worktree / "new.txt"), "kind": "add"}]
    assert (exec_world.worktree / "new.txt").read_text() == "made by a patch\n"
    assert "Success. Updated the following files:\nA new.txt" in server.outputs()["call_p"]


def test_reasoning_and_progress_are_items_and_the_last_message_is_the_result(
    exec_world: CodexExec, server: ScriptedResponsesServer
) -> None:
    call = Call("exec_command", {"cmd": "true"}, "call_t")
    result = run(
        exec_world,
        server,
        Turn(text="I will look first.", reasoning="thinking it over", calls=[call]),
        Turn(text=FINAL),
    )
    assert result.code == 0, result.explain()
    assert [i["text"] for i in result.items("reasoning")] == ["thinking it over"]
    texts = [i["text"] for i in result.items("agent_message")]
    assert texts == ["I will look first.", FINAL], texts
    assert result.last_message == FINAL


def test_codex_never_validates_the_final_answer_and_exits_0(
    exec_world: CodexExec, server: ScriptedResponsesServer
) -> None:
    result = run(
        exec_world,
        server,
        Turn(text="Sure! Here is the result."),
        schema=schema_file(exec_world.root),
    )
    assert result.code == 0, result.explain()
    assert result.failure is None
    assert result.last_message == "Sure! Here is the result."


def test_a_resumed_thread_keeps_its_id_resends_its_history_and_its_usage_adds_up(
    exec_world: CodexExec, server: ScriptedResponsesServer
) -> None:
    schema = schema_file(exec_world.root)
    first = run(exec_world, server, Turn(text=FINAL, usage=Usage(100, 20)), schema=schema)
    assert first.code == 0, first.explain()
    again = run(
        exec_world,
        server,
        Turn(text=FINAL, usage=Usage(200, 40)),
        prompt="Repair the scripted task.",
        schema=schema,
        resume=first.thread_id,
    )
    assert again.code == 0, again.explain()
    assert again.thread_id == first.thread_id
    assert len(server.requests) == 2
    history = server.texts(2)
    assert "Do the scripted task." in history and "Repair the scripted task." in history
    assert server.requests[1]["body"]["text"]["format"]["schema"] == SCHEMA
    usage = again.of_type("turn.completed")[0]["usage"]
    assert (usage["input_tokens"], usage["output_tokens"]) == (300, 60), usage  # cumulative


# --- failures: one request each (codex's retries off), their wordings, their classification ----


@dataclass(frozen=True)
class Failure:
    """A scripted failure, what `codex exec` then says (`turn.failed`, the same text as a
    top-level `error`), and the cause the host's retry table gives it (None: not transient)."""

    name: str
    step: ResponsesStep | None
    said: str
    cause: TransientCause | None


FAILURES = [
    Failure("HTTP 500", Fail(500, "scripted boom"), HIGH_DEMAND, TransientCause.OVERLOADED),
    Failure(
        "HTTP 503",
        Fail(503, "scripted 503"),
        "unexpected status 503 Service Unavailable: scripted 503, url: {base}/responses",
        TransientCause.OVERLOADED,
    ),
    Failure(
        "HTTP 429",
        Fail(429, "slow down", code="rate_limit_exceeded"),
        "exceeded retry limit, last status: 429 Too Many Requests",
        TransientCause.RATE_LIMIT,
    ),
    Failure(
        "HTTP 429 insufficient_quota",
        Fail(429, "You exceeded your current quota", code="insufficient_quota"),
        "Quota exceeded. Check your plan and billing details.",
        None,
    ),
    Failure(
        "HTTP 401",
        Fail(401, "Incorrect API key provided"),
        "unexpected status 401 Unauthorized: Incorrect API key provided, url: {base}/responses",
        None,
    ),
    Failure(
        "HTTP 400",
        Fail(400, "bad request body"),
        '{{"error": {{"message": "bad request body", "type": "scripted_error", "code": null}}}}',
        None,
    ),
    Failure(
        "a stream cut off",
        Cut(),
        "stream disconnected before completion: Transport error: network error: error "
        "decoding response body",
        TransientCause.LOST_CALL,
    ),
    Failure(
        "a stream ended without response.completed",
        Cut(clean=True),
        "stream disconnected before completion: stream closed before response.completed",
        TransientCause.LOST_CALL,
    ),
    Failure(
        "response.failed",
        Failed("server_error", "injected response.failed"),
        "stream disconnected before completion: injected response.failed",
        TransientCause.LOST_CALL,
    ),
    Failure(
        "a connection reset",
        Refuse(),
        "stream disconnected before completion: error sending request",
        TransientCause.LOST_CALL,
    ),
    Failure(
        "a connection refused",
        None,
        "Connection failed: error sending request",
        TransientCause.LOST_CALL,
    ),
]


@pytest.mark.parametrize("failure", FAILURES, ids=[f.name for f in FAILURES])
def test_a_failure_is_one_request_a_failed_turn_exit_1_and_a_classified_wording(
    exec_world: CodexExec, server: ScriptedResponsesServer, failure: Failure
) -> None:
    base = server.base_url
    if failure.step is None:  # a port nothing listens on, held so no one else takes it
        with refused_port() as held:
            base = f"http://127.0.0.1:{held.getsockname()[1]}/v1"
            exec_world.configure(hardened_config(base))
            result = run(exec_world, server)
    else:
        result = run(exec_world, server, failure.step)
    said = failure.said.format(base=base)
    assert result.code == 1, result.explain()
    assert len(server.requests) == (0 if failure.step is None else 1)
    assert result.failure == said, result.explain()
    assert [e["message"] for e in result.of_type("error")] == [said]
    assert result.of_type("turn.completed") == []
    assert transient_cause(said) is failure.cause, said


def test_codex_s_own_retry_is_a_reconnecting_notice_the_host_turns_off(
    exec_world: CodexExec, server: ScriptedResponsesServer
) -> None:
    """With one stream retry of its own, codex retries a dropped stream and says so in a
    top-level `error` line without failing the turn: the host's config sets both retry counts
    to 0 so that every failure reaches the host's own retry policy."""
    exec_world.configure(
        hardened_config(
            server.base_url, overrides={f"model_providers.{PROVIDER}": {"stream_max_retries": 1}}
        )
    )
    result = run(exec_world, server, Cut(clean=True), Turn(text=FINAL))
    assert result.code == 0, result.explain()
    assert len(server.requests) == 2
    assert [e["message"] for e in result.of_type("error")] == [
        "Reconnecting... 1/1 (stream disconnected before completion: stream closed before "
        "response.completed)"
    ]
    assert result.failure is None and result.last_message == FINAL


def test_sigterm_ends_codex_at_once_without_an_event_and_the_thread_stays_resumable(
    exec_world: CodexExec, server: ScriptedResponsesServer
) -> None:
    first = run(exec_world, server, Turn(text=FINAL))
    assert first.code == 0, first.explain()
    server.add(Hang())
    prompt = exec_world.root / "prompt.txt"
    prompt.write_text("Go on.")
    with prompt.open() as stdin:
        proc = subprocess.Popen(
            exec_world.argv(resume=first.thread_id),
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=exec_world.environment(),
            text=True,
        )
    try:
        assert server.wait_requests(2, SLOW), "codex never sent its request"
        proc.send_signal(signal.SIGTERM)
        stdout, _ = proc.communicate(timeout=SLOW)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGTERM, proc.returncode
    kinds = [json.loads(line)["type"] for line in stdout.splitlines() if line.startswith("{")]
    assert "turn.failed" not in kinds and "turn.completed" not in kinds, kinds
    after = run(exec_world, server, Turn(text=FINAL), resume=first.thread_id)
    assert after.code == 0 and after.thread_id == first.thread_id, after.explain()


def test_an_unknown_thread_cannot_be_resumed_exit_1_without_events(
    exec_world: CodexExec, server: ScriptedResponsesServer
) -> None:
    result = run(exec_world, server, resume="01a2492b-0000-7000-8000-000000000000")
    assert result.code == 1, result.explain()
    assert result.events == [] and server.requests == []
    assert "no rollout found for thread id" in result.stderr, result.stderr
