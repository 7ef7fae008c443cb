"""The progress file: status.json kept current while a run lasts (seed 000 "Progress file").

`ProgressWriter` rewrites it at once at every phase change, at most once a second for worker
activity. A refused progress write never fails the run. Its times are the records' own
(`domain/ground/record_fields.py` `utc_text`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from concorde_workers.domain.evidence.records import LastAction, Phase, ProgressFile, ProgressStatus
from concorde_workers.domain.ground.record_fields import utc_text
from concorde_workers.ports.machine.clock import Clock
from concorde_workers.ports.machine.filesystem import FileSystemError, FileWriting

__all__ = ["ACTIVITY_INTERVAL_SECONDS", "ProgressWriter"]

ACTIVITY_INTERVAL_SECONDS = 1.0
"""Worker activity rewrites the progress file at most once a second (seed 000 "Progress file")."""


class ProgressWriter:
    """Keeps status.json current (seed 000 "Progress file").

    `phase` rewrites the file at once; `activity` keeps the latest action and rewrites the file
    only when a second has passed (by the clock's monotonic time) since the last write, so the
    next write (a later `activity`, `flush`, or the next phase change) carries the action held
    back. A refused write never fails the run: it is recorded in `failures` (not trace failures;
    the progress file is an observation aid, not evidence) and the next write tries again.
    """

    def __init__(
        self,
        fs: FileWriting,
        clock: Clock,
        path: str,
        *,
        run_id: str,
        task_type: str,
        backend: str,
        worktree: str,
        operation_run_id: str | None,
        host_pid: int,
        started_at: datetime | str | None = None,
    ) -> None:
        self._fs = fs
        self._clock = clock
        self._path = path
        if started_at is None:
            started_at = clock.now_utc()
        started = started_at if isinstance(started_at, str) else utc_text(started_at)
        self._base: dict[str, Any] = {
            "run_id": run_id,
            "task_type": task_type,
            "backend": backend,
            "worktree": worktree,
            "operation_run_id": operation_run_id,
            "host_pid": host_pid,
            "started_at": started,
        }
        self._phase: Phase = "preparing"
        self._round = 1
        self._status: ProgressStatus | None = None
        self._last_action: LastAction | None = None
        self._pending = False
        self._last_write: float | None = None
        self.failures: list[str] = []
        self.current()  # refuse base fields the progress file cannot hold, at once

    @property
    def path(self) -> str:
        return self._path

    @property
    def phase_now(self) -> Phase:
        """The phase the run is in (the last one entered)."""
        return self._phase

    @property
    def status_now(self) -> ProgressStatus | None:
        """The final status the file says, once its phase is finished."""
        return self._status

    @property
    def pending(self) -> bool:
        """True when an action is held back for the next write."""
        return self._pending

    def due_in(self) -> float | None:
        """Seconds until a held-back action may be written (0 or less: now), None when no action
        is held back."""
        if not self._pending:
            return None
        if self._last_write is None:
            return 0.0
        return self._last_write + ACTIVITY_INTERVAL_SECONDS - self._clock.monotonic()

    def current(self) -> ProgressFile:
        """The progress file as the next write would write it."""
        return ProgressFile(
            **self._base,
            phase=self._phase,
            round=self._round,
            last_action=self._last_action,
            status=self._status,
            updated_at=utc_text(self._clock.now_utc()),
        )

    def phase(self, phase: Phase, round: int, status: ProgressStatus | None = None) -> bool:
        """Enter `phase` in round `round` and rewrite the file at once; `status` only with
        finished. True when the write succeeded."""
        ProgressFile.model_validate(  # refuse an impossible phase/status pair before keeping it
            {
                **self.current().model_dump(mode="json"),
                "phase": phase,
                "round": round,
                "status": status,
            }
        )
        self._phase, self._round, self._status = phase, round, status
        return self._write(phase)

    def activity(self, action: LastAction) -> bool:
        """The worker's latest tool call: kept, and written when a second has passed since the
        last write. True when it was written now."""
        self._last_action = action
        self._pending = True
        return self.flush()

    def flush(self, force: bool = False) -> bool:
        """Write a held-back action when a second has passed since the last write (or at once
        with `force`). True when it was written now."""
        due = self.due_in()
        if due is None or not (due <= 0 or force):
            return False
        return self._write("activity")

    def _write(self, moment: str) -> bool:
        self._last_write = self._clock.monotonic()
        self._pending = False
        try:
            self._fs.write_atomic(self._path, self.current().model_dump_json(indent=2) + "\n")
        except FileSystemError as error:
            self.failures.append(f"{self._path} ({moment}): {error.os_error_text}")
            return False
        return True
