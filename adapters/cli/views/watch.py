"""A run watched: `WorkerHost.run` in a worker thread while the calling thread shows its progress,
waiting on the run's end with a timeout between two reads of its progress file (no busy
polling). `run` and `demo` both watch their run this way."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from concorde_workers.adapters.cli.views.progress import ProgressWatcher
from concorde_workers.application.runtime.cancellation import Cancellation
from concorde_workers.application.runtime.validation import RoundValidation
from concorde_workers.domain.configuration.request import RunRequest
from concorde_workers.domain.evidence.records import RunRecord
from concorde_workers.ports.agents.events import RunEvents

if TYPE_CHECKING:  # the host is built by the container; naming its type costs no import
    from concorde_workers.application.run.host import WorkerHost

REFRESH_SECONDS = 0.5
"""How long the CLI waits for the run to end between two reads of its progress file."""


def run_watched(
    host: WorkerHost,
    request: RunRequest,
    cancel: Cancellation,
    watcher: ProgressWatcher,
    refresh_seconds: float | None = None,
    validation: RoundValidation | None = None,
    events: RunEvents | None = None,
) -> RunRecord:
    """`host.run(request, validation)` in a worker thread while this thread shows its
    progress; the run's record, or the fault the run raised, raised here."""
    interval = REFRESH_SECONDS if refresh_seconds is None else refresh_seconds
    done = threading.Event()
    outcome: dict[str, RunRecord | BaseException] = {}

    def target() -> None:
        try:
            outcome["record"] = host.run(
                request, validation=validation, cancel=cancel, events=events
            )
        except BaseException as fault:  # handed to the main thread, raised there
            outcome["fault"] = fault
        finally:
            done.set()

    thread = threading.Thread(target=target, name="concorde-workers-run", daemon=True)
    thread.start()
    try:
        while True:
            try:
                if done.wait(interval):
                    break
            except KeyboardInterrupt:  # no handler of ours (not the main thread's signals)
                cancel.cancel("concorde-workers was interrupted and ended the run")
                continue
            watcher.refresh()
        thread.join()
        watcher.refresh()
    finally:
        watcher.close()
    fault = outcome.get("fault")
    if isinstance(fault, BaseException):
        raise fault
    record = outcome["record"]
    assert isinstance(record, RunRecord)
    return record
