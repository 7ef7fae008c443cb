"""The scripted Responses API server's own rules, over real HTTP on 127.0.0.1 (what the real
`codex exec` accepts of it is tests/contract/test_responses_server_contract.py): the events of a
turn in the order codex reads them, a step repeated `times`, a failing step kept, the script used
up, every request kept."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any

import pytest
from servers.responses_server import (
    EXHAUSTED_TEXT,
    Call,
    Fail,
    Patch,
    ScriptedResponsesServer,
    Turn,
    Usage,
    call_outputs,
)


@pytest.fixture
def server() -> Iterator[ScriptedResponsesServer]:
    started = ScriptedResponsesServer().start()
    try:
        yield started
    finally:
        started.stop()


def post(server: ScriptedResponsesServer, body: dict[str, Any]) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        connection.request("POST", "/v1/responses", json.dumps(body), {"Authorization": "k"})
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


def events(payload: bytes) -> list[dict[str, Any]]:
    found = []
    for block in payload.decode().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "data" in lines:
            data = json.loads(lines["data"])
            assert lines["event"] == data["type"]
            found.append(data)
    return found


def test_a_turn_streams_its_items_then_completed_with_usage(
    server: ScriptedResponsesServer,
) -> None:
    patch = "*** Begin Patch\n*** Add File: n.txt\n+x\n*** End Patch\n"
    server.add(
        Turn(
            text="a" * 130,
            reasoning="why",
            calls=[Call("exec_command", {"cmd": "ls"}, "c1"), Patch(patch, "p1")],
            usage=Usage(10, 5, cached_tokens=3, reasoning_tokens=2),
        )
    )
    status, payload = post(server, {"model": "m", "input": []})
    assert status == 200
    seen = events(payload)
    kinds = [e["type"] for e in seen]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert (
        kinds.count("response.output_item.added") == 4 == kinds.count("response.output_item.done")
    )
    assert kinds.count("response.output_text.delta") == 3  # 130 characters in fragments of 60
    done = [e["item"] for e in seen if e["type"] == "response.output_item.done"]
    assert [i["type"] for i in done] == [
        "reasoning",
        "function_call",
        "custom_tool_call",
        "message",
    ]
    assert json.loads(done[1]["arguments"]) == {"cmd": "ls"} and done[1]["call_id"] == "c1"
    assert done[2]["input"] == patch and done[2]["name"] == "apply_patch"
    assert done[3]["content"][0]["text"] == "a" * 130
    completed = seen[-1]["response"]
    assert completed["status"] == "completed" and completed["output"] == done
    assert completed["usage"] == {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 3},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 2},
        "total_tokens": 15,
    }


def test_a_failure_repeats_its_times_then_the_script_goes_on_then_is_used_up(
    server: ScriptedResponsesServer,
) -> None:
    server.add(Fail(500, "boom", times=2), Turn(text="after"))
    answers = [post(server, {"input": []}) for _ in range(4)]
    assert [a[0] for a in answers] == [500, 500, 200, 200]
    assert json.loads(answers[0][1])["error"]["message"] == "boom"
    assert events(answers[3][1])[-1]["response"]["output"][0]["content"][0]["text"] == (
        EXHAUSTED_TEXT
    )
    assert server.exhausted == 1 and server.remaining == 0
    assert [r["served"] for r in server.requests] == [
        "HTTP 500: boom",
        "HTTP 500: boom",
        "turn: message",
        "turn: message",
    ]


def test_a_step_that_fails_is_kept_and_answered_500(server: ScriptedResponsesServer) -> None:
    def step(body: dict[str, Any]) -> Turn:
        raise AssertionError("no output of c1")

    server.add(step)
    status, _ = post(server, {"input": []})
    assert status == 500
    assert server.failures == ["step 1: AssertionError('no output of c1')"]


def test_call_outputs_are_read_by_call_id() -> None:
    body = {
        "input": [
            {"type": "function_call_output", "call_id": "c1", "output": "out"},
            {"type": "custom_tool_call_output", "call_id": "p1", "output": "patched"},
            {"type": "message", "role": "user", "content": []},
        ]
    }
    assert call_outputs(body) == {"c1": "out", "p1": "patched"}
