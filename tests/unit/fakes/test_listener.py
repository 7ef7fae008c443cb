"""The tests' listener (tests/servers/listener.py) leaves no thread behind: a thread left in
`accept` on a closed listening socket later took another test's model call (its descriptor's
number given to that test's server)."""

from __future__ import annotations

import socket

from servers.listener import Listener
from timing import SLOW


def test_a_closed_listener_leaves_no_thread_in_accept() -> None:
    listener = Listener()
    listener.close()
    assert listener.stopped


def test_a_listener_closed_while_it_reads_a_connection_leaves_no_thread() -> None:
    listener = Listener()
    with socket.create_connection(("127.0.0.1", listener.port)) as silent:
        silent.sendall(b"GET http://example.test/ HTTP/1.1\r\n")
        assert listener.first.wait(SLOW)
        listener.close()
    assert listener.stopped
    assert listener.accepted == 1
    assert listener.requests == ["GET http://example.test/ HTTP/1.1"]
