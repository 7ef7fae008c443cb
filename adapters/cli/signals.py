"""SIGINT and SIGTERM cancel a run while it runs."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType

from concorde_workers.application.runtime.cancellation import Cancellation

CANCEL_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def cancel_on_signals(cancel: Cancellation) -> Iterator[None]:
    """SIGINT and SIGTERM cancel the run for as long as it runs; the handlers the process had
    before are restored afterwards. Only the main thread can install handlers: elsewhere the
    run is cancelled only by its caller."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        cancel.cancel(f"concorde-workers received {signal.Signals(signum).name} and ended the run")

    previous: dict[signal.Signals, Callable[[int, FrameType | None], object] | int | None] = {}
    try:
        for sig in CANCEL_SIGNALS:
            previous[sig] = signal.signal(sig, handler)
        yield
    finally:
        for sig, before in previous.items():
            signal.signal(sig, before if before is not None else signal.SIG_DFL)
