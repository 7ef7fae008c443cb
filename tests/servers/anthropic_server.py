"""A scripted Anthropic Messages API on 127.0.0.1, for driving the real Claude Code offline.

Standard library only (on the scripted OpenAI server's `LoopbackServer`). Start it and point
Claude Code at `server.url` (ANTHROPIC_BASE_URL):

    server = AnthropicServer([Reply.tool("Write", {"file_path": p, "content": "x"}),
                              Reply.structured({"status": "ok", ...})]).start()
    ...
    server.requests          # every POST /v1/messages body, parsed, in order
    server.stop()

Endpoints:

* `POST /v1/messages` (any query, e.g. `?beta=true`): the next scripted step. A `Reply` is an
  assistant message streamed as SSE (`message_start`, per block `content_block_start` /
  `content_block_delta` (`text_delta`, or `input_json_delta` for a `tool_use`) /
  `content_block_stop`, `message_delta` with the stop reason and usage, `message_stop`), or an
  HTTP error with Anthropic's JSON error body (`Reply.error`, `Reply.overloaded`,
  `Reply.rate_limited`, `Reply.server_error`). `stream: false` gets the same message as JSON.
* `HEAD /` (Claude Code's warm-up) and `GET /` -> 200; any other GET -> 404 (Claude Code
  tolerates 404 for its policy/settings look-ups).

The script is taken in order, one step per POST. A step is a `Reply` or a callable that takes the
request body and returns one, so a step can look at the previous tool result
(`last_tool_result(body)`) to assert or branch; an exception raised by such a callable is kept in
`server.failures` and answered with a 500. When the script is used up, `repeat` (if set) answers
every further POST, else the POST is recorded in `server.failures` and answered 500.
`Reply.delay` holds a reply back (a timeout test); `stop()` releases every held reply.
"""

from __future__ import annotations

import json
import socket
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from concorde_workers.adapters.demo.scripted_model_server import LoopbackServer

__all__ = ["AnthropicServer", "Reply", "Step", "last_tool_result", "tool_results"]


@dataclass
class Reply:
    """One scripted answer: an assistant message (`blocks`) or an HTTP error (`status`)."""

    blocks: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str | None = None
    input_tokens: int = 100
    output_tokens: int = 20
    cache_read: int = 0
    cache_write: int = 0
    status: int = 200
    error_type: str | None = None
    error_message: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    cut: bool = False
    hangup: bool = False

    # -- messages ------------------------------------------------------------------------------

    @classmethod
    def text(cls, text: str, **kw: Any) -> Reply:
        return cls(blocks=[{"type": "text", "text": text}], **kw)

    @classmethod
    def tool(
        cls, name: str, tool_input: dict[str, Any], *, text: str | None = None, **kw: Any
    ) -> Reply:
        blocks = [{"type": "text", "text": text}] if text else []
        return cls(blocks=[*blocks, _tool_block(name, tool_input)], **kw)

    @classmethod
    def tools(cls, *calls: tuple[str, dict[str, Any]], **kw: Any) -> Reply:
        """Several tool_use blocks in one message."""
        return cls(blocks=[_tool_block(name, tool_input) for name, tool_input in calls], **kw)

    @classmethod
    def structured(cls, result: dict[str, Any], **kw: Any) -> Reply:
        """The worker result through Claude Code's StructuredOutput tool (--json-schema)."""
        return cls.tool("StructuredOutput", result, **kw)

    # -- errors --------------------------------------------------------------------------------

    @classmethod
    def error(
        cls,
        status: int,
        error_type: str,
        message: str,
        *,
        retry_after: float | None = None,
        **kw: Any,
    ) -> Reply:
        headers = {"retry-after": f"{retry_after:g}"} if retry_after is not None else {}
        return cls(
            status=status, error_type=error_type, error_message=message, headers=headers, **kw
        )

    @classmethod
    def overloaded(cls, **kw: Any) -> Reply:
        return cls.error(529, "overloaded_error", "Overloaded", **kw)

    @classmethod
    def rate_limited(cls, retry_after: float = 1, **kw: Any) -> Reply:
        return cls.error(
            429,
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit",
            retry_after=retry_after,
            **kw,
        )

    @classmethod
    def server_error(cls, **kw: Any) -> Reply:
        return cls.error(500, "api_error", "Internal server error", **kw)

    @classmethod
    def lost(cls, **kw: Any) -> Reply:
        """A call lost on its way: the stream starts (200, message_start, a first text delta),
        then the server closes the connection without finishing it."""
        return cls.text("I will st", cut=True, **kw)

    @property
    def is_error(self) -> bool:
        return self.status >= 400


Step = Reply | Callable[[dict[str, Any]], Reply]


def _tool_block(name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": f"toolu_fake_{uuid.uuid4().hex[:20]}",
        "name": name,
        "input": tool_input,
    }


def tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every tool_result block of the request's last user message."""
    messages = body.get("messages") or []
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return [
                    b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"
                ]
            return []
    return []


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def last_tool_result(body: dict[str, Any]) -> tuple[str, bool] | None:
    """The text and error flag of the last tool_result the request carries, None if none."""
    results = tool_results(body)
    if not results:
        return None
    last = results[-1]
    return _result_text(last), bool(last.get("is_error"))


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


class _Handler(BaseHTTPRequestHandler):
    owner: AnthropicServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _record(self, body: Any = None) -> None:
        self.owner.log.append(
            {
                "method": self.command,
                "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body,
            }
        )

    def end_headers(self) -> None:
        """Every answer closes its connection: a kept-alive socket the client picks from its
        pool while this server is busy on a loaded machine is one more way for a call to be
        lost that no test asks for (a lost call is scripted with `Reply.hangup`)."""
        if not self.close_connection:
            self.send_header("Connection", "close")
            self.close_connection = True
        super().end_headers()

    def _plain(self, status: int, payload: bytes = b"", content_type: str = "text/plain") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def do_HEAD(self) -> None:
        self._record()
        self._plain(200 if self.path in ("", "/") else 404)

    def do_GET(self) -> None:
        self._record()
        if self.path in ("", "/"):
            self._plain(200, b"ok")
        else:
            self._plain(
                404,
                json.dumps(
                    {"type": "error", "error": {"type": "not_found_error", "message": "not found"}}
                ).encode(),
                "application/json",
            )

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_unparsed": raw.decode("utf-8", "replace")}
        self._record(body)
        if not self.path.split("?", 1)[0].rstrip("/").endswith("/v1/messages"):
            self._plain(404, b"{}", "application/json")
            return
        if not isinstance(body, dict):
            body = {"_unparsed": body}
        reply = self.owner._next(body)
        if reply.delay and not self.owner.wait(reply.delay):
            return
        if reply.hangup:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        try:
            if reply.is_error:
                self._error(reply)
            elif body.get("stream"):
                self._stream(reply, str(body.get("model") or "claude-fake"))
            else:
                self._json(reply, str(body.get("model") or "claude-fake"))
        except (BrokenPipeError, ConnectionResetError):
            pass

    # -- replies -------------------------------------------------------------------------------

    def _error(self, reply: Reply) -> None:
        payload = json.dumps(
            {
                "type": "error",
                "error": {
                    "type": reply.error_type or "api_error",
                    "message": reply.error_message or "error",
                },
            }
        ).encode()
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("request-id", f"req_fake_{uuid.uuid4().hex[:12]}")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    @staticmethod
    def _stop_reason(reply: Reply) -> str:
        if reply.stop_reason:
            return reply.stop_reason
        return "tool_use" if any(b["type"] == "tool_use" for b in reply.blocks) else "end_turn"

    def _usage(self, reply: Reply) -> dict[str, int]:
        return {
            "input_tokens": reply.input_tokens,
            "output_tokens": reply.output_tokens,
            "cache_creation_input_tokens": reply.cache_write,
            "cache_read_input_tokens": reply.cache_read,
        }

    def _message(self, reply: Reply, model: str) -> dict[str, Any]:
        return {
            "id": f"msg_fake_{uuid.uuid4().hex[:16]}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": self._usage(reply),
        }

    def _json(self, reply: Reply, model: str) -> None:
        message = self._message(reply, model)
        message.update(content=reply.blocks, stop_reason=self._stop_reason(reply))
        self._plain(200, json.dumps(message).encode(), "application/json")

    def _stream(self, reply: Reply, model: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("request-id", f"req_fake_{uuid.uuid4().hex[:12]}")
        self.send_header("Connection", "close")
        if reply.cut:
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.close_connection = True
        start = self._message(reply, model)
        start["usage"] = {**start["usage"], "output_tokens": 1}
        out = [_sse("message_start", {"type": "message_start", "message": start})]
        if reply.cut:
            self._cut(out, reply)
            return
        for index, block in enumerate(reply.blocks):
            if block["type"] == "text":
                out += [
                    _sse(
                        "content_block_start",
                        {
                            "type": "content_block_start",
                            "index": index,
                            "content_block": {"type": "text", "text": ""},
                        },
                    ),
                    _sse(
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {"type": "text_delta", "text": block["text"]},
                        },
                    ),
                ]
            else:
                out += [
                    _sse(
                        "content_block_start",
                        {
                            "type": "content_block_start",
                            "index": index,
                            "content_block": {
                                "type": "tool_use",
                                "id": block["id"],
                                "name": block["name"],
                                "input": {},
                            },
                        },
                    ),
                    _sse(
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {
                                "type": "input_json_delta",
                                "partial_json": json.dumps(block["input"]),
                            },
                        },
                    ),
                ]
            out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        out += [
            _sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": self._stop_reason(reply), "stop_sequence": None},
                    "usage": {"output_tokens": reply.output_tokens},
                },
            ),
            _sse("message_stop", {"type": "message_stop"}),
        ]
        self.wfile.write(b"".join(out))
        self.wfile.flush()

    def _cut(self, out: list[bytes], reply: Reply) -> None:
        """Start the stream, then close the connection in the middle of a chunk: the body
        is sent chunked, so the client sees it end before it was complete (a lost call)."""
        text = next((b["text"] for b in reply.blocks if b["type"] == "text"), "")
        out += (
            []
            if not text
            else [
                _sse(
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": 0,
                        "content_block": {"type": "text", "text": ""},
                    },
                ),
                _sse(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": text},
                    },
                ),
            ]
        )
        data = b"".join(out)
        self.wfile.write(b"%x\r\n" % (len(data) + 100) + data)
        self.wfile.flush()
        self.connection.shutdown(socket.SHUT_RDWR)


class AnthropicServer(LoopbackServer):
    """The scripted server (see the module's docstring)."""

    handler = _Handler
    thread_name = "anthropic-server"

    def __init__(self, script: Iterable[Step] = (), *, repeat: Step | None = None) -> None:
        super().__init__()
        self._script: list[Step] = list(script)
        self.repeat = repeat
        self.requests: list[dict[str, Any]] = []
        self.log: list[dict[str, Any]] = []
        self.failures: list[str] = []
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- the script ----------------------------------------------------------------------------

    def push(self, *steps: Step) -> None:
        with self._lock:
            self._script.extend(steps)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._script)

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(body)
            step = self._script.pop(0) if self._script else self.repeat
            number = len(self.requests)
        if step is None:
            self.failures.append(f"request {number}: the script is used up")
            return Reply.error(500, "api_error", "the fake server's script is used up")
        if isinstance(step, Reply):
            return step
        try:
            return step(body)
        except Exception as error:  # a test's assertion: kept and reported, never lost
            self.failures.append(f"request {number}: {type(error).__name__}: {error}")
            return Reply.error(500, "api_error", f"script step failed: {error}")

    def wait(self, seconds: float) -> bool:
        """Hold a reply back; False when the server was stopped meanwhile."""
        return not self._stopping.wait(seconds)
