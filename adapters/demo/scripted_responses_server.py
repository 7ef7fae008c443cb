"""A scripted OpenAI Responses API server on 127.0.0.1, for the Codex CLI backend's demo and its
end-to-end tests (issue 33 §5).

It answers `POST /v1/responses` (any prefix ending in `/responses`) with server-sent events as
the Responses API streams them, and as `codex exec` 0.171.0 reads them (docs/decisions.md
"Codex facts verified", ../shared/notes/codex.md §2): `response.created` (with a `response`
object), per output item `response.output_item.added`, for a message its
`response.output_text.delta` fragments, `response.output_item.done` (the item is what counts),
then `response.completed` with the response id and its `usage` (`input_tokens`,
`input_tokens_details.cached_tokens`, `output_tokens`, `output_tokens_details.reasoning_tokens`,
`total_tokens`). Each event is an `event:` line and a `data:` line (codex reads `data.type`).

The script is taken in order, one step per request:

* `Turn(text=..., calls=[Call(...), Patch(...)], reasoning=..., usage=Usage(...))`: one model
  turn; its output items are a `reasoning` item, the calls (`function_call` items such as
  `exec_command`, or `custom_tool_call` items of `apply_patch`) and the `message` with `text`
  (the final answer is the last message of a turn without calls);
* `Fail(status, message, times=n)`: n requests answered with that HTTP status and an
  OpenAI-style JSON error body (429, 500, 401, ...; `headers` for `retry-after`);
* `Failed(code, message)`: a stream that ends in `response.failed`;
* `Cut(times=n)`: n streams that start and are then cut off mid-chunk (a dropped stream), or
  with `clean=True` end in good order without `response.completed`;
* `Refuse(times=n)`: n connections accepted and reset at once, before any answer (what a client
  sees of a server that went away; for a port nothing listens on, see `refused_port`);
* `Hang(seconds)`: a request left unanswered (`stop` releases it);
* a callable `(request body) -> step`: a step that depends on the request (the previous call's
  output: `call_outputs(body)`).

When the script is used up, every further request gets a short text turn that says so
(`exhausted` counts them). Every request is kept in `requests` (n, path, headers, body, served).
The script's keeping is `loopback.ScriptedServer`'s, shared with the scripted model server.

Standard library only; it never listens anywhere but 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from concorde_workers.adapters.demo.loopback import LOOPBACK, ScriptedServer

__all__ = [
    "EXHAUSTED_TEXT",
    "Call",
    "Cut",
    "Fail",
    "Failed",
    "Hang",
    "Patch",
    "Refuse",
    "ResponsesStep",
    "ScriptedResponsesServer",
    "Turn",
    "Usage",
    "call_outputs",
    "refused_port",
    "response_events",
]

EXHAUSTED_TEXT = "(the scripted Responses server has no more scripted turns)"
TEXT_FRAGMENT = 60
"""A message's text is streamed in `response.output_text.delta` fragments of this many
characters."""


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 1000
    output_tokens: int = 50
    cached_tokens: int = 0
    reasoning_tokens: int = 0

    def wire(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "input_tokens_details": {"cached_tokens": self.cached_tokens},
            "output_tokens": self.output_tokens,
            "output_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
            "total_tokens": self.input_tokens + self.output_tokens,
        }


@dataclass(frozen=True)
class Call:
    """A `function_call` item: `exec_command` with `{"cmd": ...}` runs a shell command."""

    name: str
    arguments: Mapping[str, Any] | str
    call_id: str

    def item(self, item_id: str) -> dict[str, Any]:
        args = self.arguments
        text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        return {
            "type": "function_call",
            "id": item_id,
            "call_id": self.call_id,
            "name": self.name,
            "arguments": text,
            "status": "completed",
        }


@dataclass(frozen=True)
class Patch:
    """A `custom_tool_call` item of `apply_patch`: `input` is the freeform patch text
    (`*** Begin Patch` ... `*** End Patch`)."""

    input: str
    call_id: str
    name: str = "apply_patch"

    def item(self, item_id: str) -> dict[str, Any]:
        return {
            "type": "custom_tool_call",
            "id": item_id,
            "call_id": self.call_id,
            "name": self.name,
            "input": self.input,
            "status": "completed",
        }


@dataclass(frozen=True)
class Turn:
    """One model turn: an optional reasoning summary, calls, and an optional message."""

    text: str | None = None
    calls: Sequence[Call | Patch] = ()
    reasoning: str | None = None
    usage: Usage = Usage()


@dataclass(frozen=True)
class Fail:
    """`times` requests answered with an HTTP error and an OpenAI-style JSON body."""

    status: int
    message: str
    times: int = 1
    code: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Failed:
    """A stream that starts and ends in `response.failed` with `error.code` / `message`."""

    code: str = "server_error"
    message: str = "scripted response.failed"


@dataclass(frozen=True)
class Cut:
    """`times` streams that start (`response.created`) and end before `response.completed`:
    cut off in the middle of a chunk, or (`clean`) ended in good order without it."""

    times: int = 1
    clean: bool = False


@dataclass(frozen=True)
class Refuse:
    """`times` connections reset before any answer."""

    times: int = 1


@dataclass(frozen=True)
class Hang:
    """A request left unanswered for `seconds` (or until the server stops)."""

    seconds: float = 3600.0


Answer = Turn | Fail | Failed | Cut | Refuse | Hang
ResponsesStep = Answer | Callable[[dict[str, Any]], Answer]
REPEATED = (Fail, Cut, Refuse)


def _event(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()


def _response(response_id: str, model: str, status: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": response_id,
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "model": model,
        **extra,
    }


def _items(turn: Turn, n: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if turn.reasoning is not None:
        items.append(
            {
                "type": "reasoning",
                "id": f"rs_{n}",
                "summary": [{"type": "summary_text", "text": turn.reasoning}],
            }
        )
    items.extend(call.item(f"fc_{n}_{i}") for i, call in enumerate(turn.calls))
    if turn.text is not None:
        items.append(
            {
                "type": "message",
                "id": f"msg_{n}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": turn.text, "annotations": []}],
            }
        )
    return items


def response_events(turn: Turn, model: str, n: int) -> Iterator[bytes]:
    """The SSE events of one scripted turn, `response.completed` (with usage) last."""
    response_id = f"resp_scripted_{n}"
    yield _event("response.created", {"response": _response(response_id, model, "in_progress")})
    items = _items(turn, n)
    for index, item in enumerate(items):
        started = {**item, "status": "in_progress"}
        if item["type"] == "message":
            started["content"] = []
        yield _event("response.output_item.added", {"output_index": index, "item": started})
        if item["type"] == "message":
            text = item["content"][0]["text"]
            for start in range(0, len(text), TEXT_FRAGMENT):
                yield _event(
                    "response.output_text.delta",
                    {
                        "item_id": item["id"],
                        "output_index": index,
                        "content_index": 0,
                        "delta": text[start : start + TEXT_FRAGMENT],
                    },
                )
        yield _event("response.output_item.done", {"output_index": index, "item": item})
    done = _response(response_id, model, "completed", output=items, usage=turn.usage.wire())
    yield _event("response.completed", {"response": done})


class _Handler(BaseHTTPRequestHandler):
    owner: ScriptedResponsesServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"unparsed": raw.decode("utf-8", "replace")}
        if not self.path.split("?", 1)[0].rstrip("/").endswith("/responses"):
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        answer, entry = self.owner._next(self.path, dict(self.headers), body)
        n = entry["n"]
        model = str(body.get("model") or "scripted")
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client left
            self._answer(answer, model, n)

    def _answer(self, answer: Answer, model: str, n: int) -> None:
        if isinstance(answer, Fail):
            error = {"message": answer.message, "type": "scripted_error", "code": answer.code}
            self._json(answer.status, {"error": error}, answer.headers)
        elif isinstance(answer, Refuse):
            self._reset()
        elif isinstance(answer, Hang):
            self.owner._stopping.wait(answer.seconds)
            self.close_connection = True
        elif isinstance(answer, Cut):
            self._events(
                [_event("response.created", {"response": _response(f"resp_{n}", model, "x")})],
                complete=answer.clean,
            )
        elif isinstance(answer, Failed):
            failed = _response(
                f"resp_scripted_{n}",
                model,
                "failed",
                error={"code": answer.code, "message": answer.message},
            )
            self._events(
                [
                    _event("response.created", {"response": _response(f"resp_{n}", model, "x")}),
                    _event("response.failed", {"response": failed}),
                ]
            )
        else:
            self._events(response_events(answer, model, n))

    def _json(self, status: int, data: Any, headers: Mapping[str, str] | None = None) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Connection", "close")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.close_connection = True
        self.wfile.write(payload)

    def _events(self, events: Iterator[bytes] | Sequence[bytes], complete: bool = True) -> None:
        """Stream `events` chunked; an incomplete stream is cut mid-chunk (the client sees the
        body end before it was complete)."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for data in events:
            self.wfile.write(b"%x\r\n" % len(data) + data + b"\r\n")
        if complete:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            return
        self.wfile.write(b"%x\r\n" % 100 + b"data: {")
        self.wfile.flush()
        self.connection.shutdown(socket.SHUT_RDWR)

    def _reset(self) -> None:
        """Close with a TCP reset (SO_LINGER 0), before any byte of an answer."""
        self.close_connection = True
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()


class ScriptedResponsesServer(ScriptedServer[Answer]):
    """The server; `start()` (or `with`) listens on 127.0.0.1 at a free port."""

    handler = _Handler
    thread_name = "scripted-responses"
    repeated = REPEATED

    def _exhausted_answer(self) -> Answer:
        return Turn(text=EXHAUSTED_TEXT, usage=Usage(10, 5))

    def _describe(self, answer: Answer) -> str:
        return describe(answer)

    def _step_failed(self, error: Exception) -> Answer:
        """A failed assertion of a scripted step: kept, and answered 500."""
        self.failures.append(f"step {self._position + 1}: {error!r}")
        self._position += 1
        return Fail(500, f"the scripted step failed: {error!r}")

    # -- the request log -----------------------------------------------------------------------

    def outputs(self) -> dict[str, str]:
        """Every call output the model was sent, by call id (the last text wins)."""
        found: dict[str, str] = {}
        for entry in self.requests:
            found.update(call_outputs(entry["body"]))
        return found

    def texts(self, n: int = -1) -> str:
        """Every input text of request `n` (from 1; -1 the last), joined: what the model read."""
        entry = self.requests[n] if n < 0 else self.requests[n - 1]
        return "\n".join(_input_texts(entry["body"]))


def call_outputs(body: Mapping[str, Any]) -> dict[str, str]:
    """The outputs of function and custom tool calls a request carries, by call id."""
    found: dict[str, str] = {}
    for item in body.get("input") or []:
        if isinstance(item, dict) and item.get("type") in (
            "function_call_output",
            "custom_tool_call_output",
        ):
            output = item.get("output")
            found[str(item.get("call_id"))] = (
                output if isinstance(output, str) else json.dumps(output)
            )
    return found


def _input_texts(body: Mapping[str, Any]) -> Iterator[str]:
    for item in body.get("input") or []:
        if not isinstance(item, dict):
            continue
        content = item.get("content")
        if isinstance(content, str):
            yield content
        elif isinstance(content, list):
            yield from (str(p.get("text", "")) for p in content if isinstance(p, dict))


def describe(answer: Answer) -> str:
    if isinstance(answer, Fail):
        return f"HTTP {answer.status}: {answer.message}"
    if isinstance(answer, Failed):
        return f"response.failed {answer.code}: {answer.message}"
    if isinstance(answer, Cut):
        return f"a stream {'ended' if answer.clean else 'cut'} before response.completed"
    if isinstance(answer, Refuse):
        return "a connection reset"
    if isinstance(answer, Hang):
        return f"no answer for {answer.seconds:g} s"
    parts = [c.name for c in answer.calls] + (["message"] if answer.text is not None else [])
    return "turn: " + " + ".join(parts)


def refused_port() -> socket.socket:
    """A socket bound to a free port of 127.0.0.1 that never listens: connecting to its port is
    refused, and no other process can take the port while the caller holds it (close it
    after)."""
    held = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    held.bind((LOOPBACK, 0))
    return held
