"""The scripted model server's script keeping, which it shares with the scripted Responses
server (adapters/demo/loopback.py `ScriptedServer`, issue 34): a step repeated `times`, a
callable step asked with the request's body, its own answer once the script is used up, every
request logged with what was served; a step that raises is not answered for (the Responses server
answers it 500: tests/unit/fakes/test_scripted_responses_server.py)."""

from __future__ import annotations

import pytest
from servers.openai_server import EXHAUSTED_TEXT, Cut, Fail, Reply, ScriptedModelServer

from concorde_workers.adapters.demo.loopback import ScriptedServer


def take(server: ScriptedModelServer, body: dict[str, object]) -> object:
    answer, entry = server._next("/v1/chat/completions", {}, dict(body))
    assert server.requests[-1] is entry
    return answer


def test_the_script_is_kept_as_the_responses_server_keeps_it() -> None:
    boom, cut = Fail(529, "overloaded", times=2), Cut()
    server = ScriptedModelServer([boom, lambda body: Reply(text=str(body["n"])), cut])
    assert isinstance(server, ScriptedServer) and server.remaining == 3
    assert [take(server, {"n": 1}), take(server, {"n": 2})] == [boom, boom]
    assert take(server, {"n": 3}) == Reply(text="3")
    assert take(server, {}) is cut and server.remaining == 0
    exhausted = take(server, {})
    assert isinstance(exhausted, Reply) and exhausted.text == EXHAUSTED_TEXT
    assert server.exhausted == 1
    assert [e["n"] for e in server.requests] == [1, 2, 3, 4, 5]
    assert [e["served"] for e in server.requests[:4]] == [
        "HTTP 529: overloaded",
        "HTTP 529: overloaded",
        "reply: text",
        "a stream cut off mid-way",
    ]
    assert server.wait_requests(5, 0)


def test_a_step_that_raises_is_not_answered_for() -> None:
    def fails(body: dict[str, object]) -> Reply:
        raise AssertionError("no such body")

    server = ScriptedModelServer([fails])
    with pytest.raises(AssertionError, match="no such body"):
        take(server, {})
    assert server.failures == [] and server.remaining == 1
