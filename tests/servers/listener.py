"""A TCP listener on 127.0.0.1 that counts the connections it accepts and keeps the first line
each one sends: a browser's proxy (any request a page makes arrives here), a port a sandboxed
command must not reach.

`close` ends the accepting thread before the socket is closed. A thread left blocked in
`accept` on a closed listening socket is not a harmless leak: the descriptor's number is given
to the next socket the process opens, and that thread came back later on a scripted model
server's listening socket of another test, took its next connection, read 4 KiB of the request
and closed it (a Codex or Claude Code model call reset 0.4 ms in, "error sending request", once
a full e2e run; docs/decisions.md "A thread left in accept takes another test's connection").
"""

from __future__ import annotations

import contextlib
import socket
import threading

from timing import SLOW

__all__ = ["Listener"]


class Listener:
    """Listens on 127.0.0.1 at a free `port` until `close`; `accepted` counts the connections,
    `requests` keeps the first line of each (when `reads`), `first` is set at the first one."""

    def __init__(self, reads: bool = True) -> None:
        self._reads = reads
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port: int = self.sock.getsockname()[1]
        self.accepted = 0
        self.requests: list[str] = []
        self.first = threading.Event()
        self._thread = threading.Thread(
            target=self._accept, name=f"listener-{self.port}", daemon=True
        )
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.sock.accept()  # ends when close() shuts the socket down
            except OSError:
                return
            with connection:
                if self._reads:
                    self.requests.append(_first_line(connection))
            self.accepted += 1
            self.first.set()

    def close(self) -> None:
        """Shut the socket down (which wakes the blocked `accept`), wait for the thread to end,
        then close: no thread of this listener outlives it."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(SLOW)
        self.sock.close()
        if self._thread.is_alive():
            raise RuntimeError(f"the listener on port {self.port} did not stop within {SLOW} s")

    @property
    def stopped(self) -> bool:
        return not self._thread.is_alive()


def _first_line(connection: socket.socket) -> str:
    connection.settimeout(5)
    try:
        return connection.recv(4096).split(b"\r\n", 1)[0].decode("latin-1")
    except OSError:
        return "(nothing read)"
