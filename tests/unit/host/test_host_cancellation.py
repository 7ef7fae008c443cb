"""Cancellation as the host uses it: set from any thread or from a signal handler (seed 000
"Progress file": something outside ends the run, interrupted)."""

from __future__ import annotations

import threading

from pytest_mock import MockerFixture
from timing import SLOW

from concorde_workers.application.runtime.cancellation import Cancellation


def test_a_signal_handler_that_cancels_while_the_lock_is_held_does_not_deadlock(
    mocker: MockerFixture,
) -> None:
    cancel = Cancellation()
    kill_group = mocker.stub(name="kill the group")
    unregister = cancel.on_cancel(kill_group)

    def main_thread_in_unregister_when_the_signal_arrives() -> None:
        with cancel._lock:  # where the main thread is when the signal arrives
            cancel.cancel("SIGTERM")  # what the CLI's signal handler calls
        unregister()

    thread = threading.Thread(target=main_thread_in_unregister_when_the_signal_arrives, daemon=True)
    thread.start()
    thread.join(SLOW)  # only a deadlock reaches it
    assert not thread.is_alive(), "cancel deadlocked on the lock its own thread held"
    assert cancel.is_set() and cancel.reason == "SIGTERM"
    kill_group.assert_called_once_with()  # the kill ran, once, though its unregistering raced it


def test_a_callback_registered_after_the_cancellation_runs_at_once(mocker: MockerFixture) -> None:
    cancel = Cancellation()
    cancel.cancel("stop")
    kill_group = mocker.stub(name="kill the group")
    cancel.on_cancel(kill_group)()
    kill_group.assert_called_once_with()
