"""A round's output as it arrives: worker activity for the progress file (seed 000 "Progress
file"), and the round ended at its group's first limit (issue 20)."""

from __future__ import annotations

import threading

from concorde_workers.application.runtime.events import EventEmitter
from concorde_workers.application.tracing.progress import ProgressWriter
from concorde_workers.domain.evidence.records import LastAction
from concorde_workers.ports.agents.agent import LimitedReader, StreamReader
from concorde_workers.ports.processes.process import ProcessHandle
from concorde_workers.ports.processes.resources import ResourceGroup


class ActivityFlusher:
    """Worker activity for the progress file while a round runs: each tool call is kept and
    written at most once a second (ProgressWriter.activity); a call held back is written by a
    background thread once its second has passed, so a worker silent for minutes (one long
    Bash command) still shows its latest tool call (seed 000 "Progress file").

    The thread starts with the first held-back action and is stopped when the round ends. It
    waits on a condition — for a held-back action, then for the moment it may be written
    (`ProgressWriter.due_in`) — and never wakes for nothing. The progress writer is only touched
    under the condition's lock while it runs."""

    def __init__(self, progress: ProgressWriter) -> None:
        self._progress = progress
        self._changed = threading.Condition(threading.Lock())
        self._stopped = False
        self._thread: threading.Thread | None = None

    def activity(self, action: LastAction) -> None:
        with self._changed:
            self._progress.activity(action)
            held_back = self._progress.pending
            if held_back:
                self._changed.notify()
            if held_back and self._thread is None and not self._stopped:
                self._thread = threading.Thread(
                    target=self._run, name="progress-activity", daemon=True
                )
                self._thread.start()  # it waits for the lock this call holds

    def _run(self) -> None:
        with self._changed:
            while not self._stopped:
                due = self._progress.due_in()
                if due is None:
                    self._changed.wait()  # until an action is held back, or the round ends
                elif due > 0:
                    self._changed.wait(due)  # until it may be written, or the round ends
                else:
                    self._progress.flush()

    def stop(self) -> None:
        with self._changed:
            self._stopped = True
            self._changed.notify_all()
            thread, self._thread = self._thread, None
        if thread is not None:
            thread.join()


def follow(
    handle: ProcessHandle,
    reader: StreamReader,
    flusher: ActivityFlusher,
    group: ResourceGroup | None,
    events: EventEmitter | None = None,
    round_number: int = 1,
) -> None:
    """The agent's output to its reader, line by line, each tool call to the progress file and,
    through the reader's parse, to the events; a round whose group reached a limit is ended
    there (issue 20), as soon as the kernel says so (`ResourceGroup.watch`): a runaway round
    does not run on to its timeout, even while its agent prints nothing (a Bash command forking
    in a loop)."""
    stop_watching = group.watch(handle.kill_group) if group is not None else None
    if events is not None and events.watching:
        # Each tool call with its decision, as it is answered, from the reader's own parse of
        # the line (issue 34 §5): no line is parsed twice.
        reader.watch(lambda line: events.output_object(round_number, line))
    try:
        limited = reader if isinstance(reader, LimitedReader) else None
        for line in handle.lines():
            action = reader.feed(line)
            if action is not None:
                flusher.activity(action)
            if limited is not None and limited.limit_reached is not None:
                handle.kill_group()  # a program without limits of its own (Codex): the host's
                break
    finally:
        if stop_watching is not None:
            stop_watching()
