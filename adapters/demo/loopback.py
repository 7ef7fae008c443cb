"""The scripted servers' common ground: a threaded HTTP server on 127.0.0.1 (`LoopbackServer`) and
the keeping of a script (`ScriptedServer`): the steps taken in order, one a request, a step that
stands for `times` requests kept until it has answered them all, a callable step asked with the
request's body, every request logged with what was served, and an answer of the server's own
once the script is used up. The scripted model server (OpenAI chat completions, pi) and the
scripted Responses server (the Codex CLI) are the two kinds of script; each says what its
answers are and how they go on the wire.

Standard library only (http.server, threading); it never listens anywhere but 127.0.0.1.
"""

from __future__ import annotations

import itertools
import os
import selectors
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Generic, Protocol, Self, TypeVar

__all__ = ["LOOPBACK", "LoopbackServer", "Repeated", "ScriptedServer"]

LOOPBACK = "127.0.0.1"


class LoopbackServer:
    """A threaded HTTP server on 127.0.0.1 at a free port: `start()` (or `with`), `stop()`,
    `port`. A subclass names its `handler` class; each request's handler sees the server object
    as `self.owner`, and `_stopping` is set once `stop()` begins (to release held requests)."""

    handler: type[BaseHTTPRequestHandler]
    thread_name = "loopback-server"

    def __init__(self) -> None:
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._wake: tuple[int, int] | None = None

    def start(self, port: int = 0) -> Self:
        """Listen on `port` of 127.0.0.1 (0: a free one): a fixed port is for a network
        namespace of the caller's own, where no one else listens (the README's examples)."""
        handler = type(self.handler.__name__, (self.handler,), {"owner": self})
        httpd = ThreadingHTTPServer((LOOPBACK, port), handler)
        httpd.daemon_threads = True
        httpd.socket.setblocking(False)  # an accept whose connection vanished returns, never waits
        self._httpd = httpd
        self._wake = os.pipe()
        self._thread = threading.Thread(
            target=self._serve, args=(httpd, self._wake[0]), name=self.thread_name, daemon=True
        )
        self._thread.start()
        return self

    @staticmethod
    def _serve(httpd: ThreadingHTTPServer, wake: int) -> None:
        """Accept connections until `stop` writes to the wake-up pipe: one `select` on both,
        without a timeout (socketserver's `serve_forever` wakes every poll interval to look
        for a shutdown request). The thread waits nowhere else: the listening socket is
        non-blocking and each wake accepts once, so `stop` finds it ended before it closes the
        socket (docs/decisions.md "A thread left in accept takes another test's connection")."""
        with selectors.DefaultSelector() as selector:
            selector.register(httpd, selectors.EVENT_READ)
            selector.register(wake, selectors.EVENT_READ)
            while True:
                ready = [key.fileobj for key, _ in selector.select()]
                if wake in ready:
                    return
                try:
                    request, address = httpd.get_request()
                except OSError:  # BlockingIOError: the client left before the accept
                    continue
                try:
                    httpd.process_request(request, address)  # a thread of its own
                except Exception:
                    httpd.handle_error(request, address)
                    httpd.shutdown_request(request)

    def stop(self) -> None:
        self._stopping.set()
        if self._wake is not None:
            os.write(self._wake[1], b"x")
        if self._thread is not None:
            self._thread.join(timeout=5)
            if self._thread.is_alive():  # never closed under a thread that may still accept
                raise RuntimeError(f"the {self.thread_name} thread did not stop")
        if self._httpd is not None:
            self._httpd.server_close()
        if self._wake is not None:
            for fd in self._wake:
                os.close(fd)
        self._httpd = self._thread = self._wake = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the server is not started")
        return int(self._httpd.server_address[1])


class Repeated(Protocol):
    """An answer that stands for `times` requests."""

    @property
    def times(self) -> int: ...


AnswerT = TypeVar("AnswerT")


class ScriptedServer(LoopbackServer, Generic[AnswerT]):
    """A loopback server whose requests take the steps of a script in order (see the module's
    docstring). A subclass says which answers are `repeated`, what it answers once the script
    is used up (`_exhausted_answer`), how an answer is described in the log (`_describe`), and,
    if it does not let it raise, what a step that raised answers (`_step_failed`)."""

    repeated: ClassVar[tuple[type[Repeated], ...]] = ()
    """The answers that stand for `times` requests each."""

    def __init__(
        self, script: Sequence[AnswerT | Callable[[dict[str, Any]], AnswerT]] = ()
    ) -> None:
        super().__init__()
        self._script = list(script)
        self._used: dict[int, int] = {}
        self._position = 0
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._counter = itertools.count(1)
        self.requests: list[dict[str, Any]] = []
        """Every request: n (from 1), time, path, headers, body and what was `served`."""
        self.failures: list[str] = []
        """The steps that raised, where the server answers for them (`_step_failed`)."""
        self.exhausted = 0
        """How many requests came after the script was used up."""

    @property
    def base_url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}/v1"

    def add(self, *steps: AnswerT | Callable[[dict[str, Any]], AnswerT]) -> Self:
        """Append steps to the script (also while it is served)."""
        with self._lock:
            self._script.extend(steps)
        return self

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._script) - self._position

    def wait_requests(self, count: int, within: float) -> bool:
        """Wait until `count` requests arrived (an event, not a guess at a duration); False
        when `within` seconds passed first."""
        with self._arrived:
            return self._arrived.wait_for(lambda: len(self.requests) >= count, within)

    def _next(
        self, path: str, headers: dict[str, str], body: dict[str, Any]
    ) -> tuple[AnswerT, dict[str, Any]]:
        """The request's answer and its log entry, the request logged."""
        with self._lock:
            n = next(self._counter)
            entry: dict[str, Any] = {
                "n": n,
                "time": time.time(),
                "path": path,
                "headers": headers,
                "body": body,
            }
            answer = self._take(body)
            entry["served"] = self._describe(answer)
            self.requests.append(entry)
            self._arrived.notify_all()
            return answer, entry

    def _take(self, body: dict[str, Any]) -> AnswerT:
        if self._position >= len(self._script):
            self.exhausted += 1
            return self._exhausted_answer()
        step = self._script[self._position]
        try:
            answer: AnswerT = step(body) if callable(step) else step
        except Exception as error:
            return self._step_failed(error)
        if isinstance(answer, self.repeated):
            used = self._used.get(self._position, 0) + 1
            self._used[self._position] = used
            if used < answer.times:
                return answer
        self._position += 1
        return answer

    # -- what a kind of script says -------------------------------------------------------------

    def _exhausted_answer(self) -> AnswerT:
        raise NotImplementedError

    def _describe(self, answer: AnswerT) -> str:
        raise NotImplementedError

    def _step_failed(self, error: Exception) -> AnswerT:
        """A step that raised: by default the request's handler fails with it."""
        raise error
