"""A scripted OpenAI-compatible model server on 127.0.0.1, for the demo and the end-to-end tests.

It answers `POST /v1/chat/completions` with server-sent events as the OpenAI API streams them
(`data: {chunk}` lines whose `choices[0].delta` carries `content` or `tool_calls` - id, function
name, then the arguments in fragments - a chunk with the `finish_reason`, a final chunk with
`usage` {prompt_tokens, completion_tokens, total_tokens} and `data: [DONE]`), taking its answers
from a script in order:

* `Reply(text=..., tool_calls=[ToolCall(name, arguments)], usage=Usage(...))`: one assistant turn;
* `Fail(status, message, times=n)`: n requests answered with that HTTP status and the JSON body
  `{"error": {"message": ..., "type": ..., "code": ...}}` (429, 500, 503, 529, ...);
* `Hang(seconds)`: a request left unanswered (a model that never answers; `stop` releases it);
* `Cut(times=n)`: n requests whose stream starts (200, a first chunk) and whose connection the
  server then closes before the stream ends (a call lost on its way);
* a callable `(request body) -> Reply | Fail | Hang`: a step that depends on the request, for
  paths known only once the run started (the system prompt names pi's working directory).

When the script is used up, every further request gets a short text reply that says so (and
`exhausted` counts them), so a worker that goes on ends its turn instead of retrying.
Every request is kept in `requests` (n, path, headers, body, what was served) for assertions.
The script's keeping is `loopback.ScriptedServer`'s, shared with the scripted Responses server.

pi reaches it exactly as it reaches a user's own local model proxy: a `models.json` provider
with `baseUrl http://127.0.0.1:<port>/v1` and `api: openai-completions` in the user's pi
configuration directory, and an `auth.json` key (`write_pi_config`). Nothing here is known to
the host: it copies those two files like any user's.

Standard library only (http.server, threading); it never listens anywhere but 127.0.0.1.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from concorde_workers.adapters.demo.loopback import LoopbackServer, ScriptedServer

__all__ = [
    "COST_PER_MILLION",
    "DEFAULT_MODEL",
    "DEFAULT_PROVIDER",
    "EXHAUSTED_TEXT",
    "Cut",
    "Fail",
    "Hang",
    "LoopbackServer",
    "Reply",
    "ScriptedModelServer",
    "Step",
    "ToolCall",
    "Usage",
    "sse_chunks",
    "write_pi_config",
]

DEFAULT_PROVIDER = "scripted"
DEFAULT_MODEL = "scripted-model"
COST_PER_MILLION = {"input": 3.0, "output": 15.0, "cacheRead": 0.3, "cacheWrite": 3.75}
"""USD per million tokens, so pi reports a cost and a budget limit can be reached."""

EXHAUSTED_TEXT = "(the scripted model server has no more scripted responses)"
ARGUMENT_FRAGMENT = 40
"""Tool call arguments are streamed in fragments of this many characters."""


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 1000
    completion_tokens: int = 50
    cached_tokens: int = 0


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: Mapping[str, Any] | str
    id: str | None = None

    def arguments_text(self) -> str:
        args = self.arguments
        return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)


@dataclass(frozen=True)
class Reply:
    """One assistant turn: text and/or tool calls; finish_reason defaults to tool_calls when
    there are calls, else stop."""

    text: str | None = None
    tool_calls: Sequence[ToolCall] = ()
    usage: Usage = Usage()
    finish_reason: str | None = None


@dataclass(frozen=True)
class Fail:
    """`times` requests answered with an HTTP error and an OpenAI-style JSON body."""

    status: int
    message: str
    times: int = 1
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Hang:
    """A request left unanswered for `seconds` (or until the server stops)."""

    seconds: float = 3600.0


@dataclass(frozen=True)
class Cut:
    """`times` requests whose stream starts and whose connection is then closed mid-stream."""

    times: int = 1


Answer = Reply | Fail | Hang | Cut
Step = Answer | Callable[[dict[str, Any]], Answer]


class _Handler(BaseHTTPRequestHandler):
    owner: ScriptedModelServer
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
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        owner = self.owner
        answer, entry = owner._next(self.path, dict(self.headers), body)
        if isinstance(answer, Fail):
            self._json(
                answer.status,
                {
                    "error": {
                        "message": answer.message,
                        "type": "scripted_error",
                        "code": answer.status,
                    }
                },
                answer.headers,
            )
        elif isinstance(answer, Hang):
            owner._stopping.wait(answer.seconds)
            self.close_connection = True
        elif isinstance(answer, Cut):
            self._cut(body, entry["n"])
        else:
            self._stream(answer, body, entry["n"])

    def _json(self, status: int, data: Any, headers: Mapping[str, str] | None = None) -> None:
        payload = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def _stream(self, reply: Reply, body: dict[str, Any], n: int) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        model = str(body.get("model") or DEFAULT_MODEL)
        for chunk in sse_chunks(reply, model, f"chatcmpl-scripted-{n}", n):
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def _cut(self, body: dict[str, Any], n: int) -> None:
        """Start the stream, then close the connection in the middle of a chunk: the body is
        sent chunked, so the client sees it end before it was complete."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        first = next(
            sse_chunks(
                Reply(text="I will"),
                str(body.get("model") or DEFAULT_MODEL),
                f"chatcmpl-scripted-{n}",
                n,
            )
        )
        data = b"data: " + json.dumps(first).encode() + b"\n\n"
        self.wfile.write(b"%x\r\n" % (len(data) + 100) + data)
        self.wfile.flush()
        self.connection.shutdown(socket.SHUT_RDWR)


def sse_chunks(reply: Reply, model: str, response_id: str, n: int) -> Iterator[dict[str, Any]]:
    """The chat.completion.chunk objects of one streamed reply, usage last."""
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": response_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    yield chunk({"role": "assistant", "content": ""})
    if reply.text:
        for start in range(0, len(reply.text), 80):
            yield chunk({"content": reply.text[start : start + 80]})
    for index, call in enumerate(reply.tool_calls):
        call_id = call.id or f"call_{n}_{index}"
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": index,
                        "id": call_id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": ""},
                    }
                ]
            }
        )
        text = call.arguments_text()
        for start in range(0, len(text), ARGUMENT_FRAGMENT):
            yield chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "function": {"arguments": text[start : start + ARGUMENT_FRAGMENT]},
                        }
                    ]
                }
            )
    finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
    yield chunk({}, finish)
    usage = reply.usage
    yield {
        "id": response_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [],
        "usage": {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.prompt_tokens + usage.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": usage.cached_tokens},
        },
    }


class ScriptedModelServer(ScriptedServer[Answer]):
    """The server; `start()` (or `with`) listens on 127.0.0.1 at a free port."""

    handler = _Handler
    thread_name = "scripted-model"
    repeated = (Fail, Cut)

    def _exhausted_answer(self) -> Answer:
        return Reply(text=EXHAUSTED_TEXT, usage=Usage(10, 5))

    def _describe(self, answer: Answer) -> str:
        return _describe(answer)

    # -- the request log -----------------------------------------------------------------------

    def messages(self, n: int = -1) -> list[dict[str, Any]]:
        """The messages of request `n` (from 1; -1 the last)."""
        entry = self.requests[n] if n < 0 else self.requests[n - 1]
        messages = entry["body"].get("messages", [])
        return list(messages) if isinstance(messages, list) else []

    def tool_results(self) -> dict[str, str]:
        """Every tool result the model was sent, by tool call id (the last text wins)."""
        found: dict[str, str] = {}
        for entry in self.requests:
            for message in entry["body"].get("messages", []) or []:
                if isinstance(message, dict) and message.get("role") == "tool":
                    found[str(message.get("tool_call_id"))] = _content_text(message.get("content"))
        return found

    def system_prompt(self, n: int = -1) -> str:
        for message in self.messages(n):
            if message.get("role") in ("system", "developer"):
                return _content_text(message.get("content"))
        return ""


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _describe(answer: Answer) -> str:
    if isinstance(answer, Fail):
        return f"HTTP {answer.status}: {answer.message}"
    if isinstance(answer, Hang):
        return f"no answer for {answer.seconds:g} s"
    if isinstance(answer, Cut):
        return "a stream cut off mid-way"
    calls = ", ".join(call.name for call in answer.tool_calls)
    return (
        f"reply: {'text' if answer.text else ''}{' + ' if answer.text and calls else ''}"
        f"{calls}".rstrip(": ")
    )


def write_pi_config(
    directory: str | Path,
    base_url: str,
    *,
    provider: str = DEFAULT_PROVIDER,
    model: str = DEFAULT_MODEL,
    api_key: str = "sk-scripted-local-key",
    cost: Mapping[str, float] | None = None,
) -> tuple[Path, Path]:
    """A user's pi configuration directory that reaches `base_url` as a local model proxy:
    `models.json` (an openai-completions provider with one model priced per million tokens) and
    `auth.json` (its key). Returns their paths; the model's pi id is `<provider>/<model>`."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    models = {
        "providers": {
            provider: {
                "baseUrl": base_url,
                "api": "openai-completions",
                "apiKey": "SCRIPTED_API_KEY",
                "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                "models": [
                    {
                        "id": model,
                        "name": "Scripted local model",
                        "reasoning": False,
                        "input": ["text"],
                        "contextWindow": 128000,
                        "maxTokens": 4096,
                        "cost": dict(cost or COST_PER_MILLION),
                    }
                ],
            }
        }
    }
    auth = {provider: {"type": "api_key", "key": api_key}}
    models_file, auth_file = folder / "models.json", folder / "auth.json"
    models_file.write_text(json.dumps(models, indent=2) + "\n")
    auth_file.write_text(json.dumps(auth, indent=2) + "\n")
    models_file.chmod(0o600)
    auth_file.chmod(0o600)
    return models_file, auth_file
