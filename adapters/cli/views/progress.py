"""The live progress line of a running run, for a person at a shell (`run`, `demo`, `watch`).

* `progress_text` — the line from the run's progress file (status.json, seed 000 "Progress
  file"): run, round, phase, last action, elapsed time.
* `ProgressWatcher` — finds the run's directory as the single new `workers/w-*` folder below the
  parent trace node folder, reads its status.json through the `FileSystem` port, and shows the
  line: rewritten in place on a terminal, one plain line per phase change otherwise.
* `elapsed_text` and `seconds_between` — durations as a person reads them (the end-of-run
  account, display.py, and the report, report.py, say them alike).

The formatting functions are pure (values in, text out); only the watcher reads and writes. The
line has its control characters escaped (domain/ground/text.py): whatever a worker put in a last
action reaches the terminal as text, never as a sequence the terminal would obey.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TextIO

from pydantic import ValidationError

from concorde_workers.domain.evidence.records import ProgressFile
from concorde_workers.domain.ground.layout import ROUNDS_DIR, STATUS_FILE, TRACE_FILE, WORKERS_DIR
from concorde_workers.domain.ground.record_fields import UTC_FORMAT
from concorde_workers.domain.ground.run_id import is_run_id
from concorde_workers.domain.ground.text import escape_controls
from concorde_workers.ports.machine.filesystem import FileSystemError, TreeReading

__all__ = ["ProgressWatcher", "elapsed_text", "progress_text", "seconds_between"]


def _parse_utc(text: str) -> datetime | None:
    for pattern in (UTC_FORMAT, "%Y-%m-%dT%H:%M:%S.%fZ"):
        try:
            return datetime.strptime(text, pattern).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def seconds_between(start: str, end: str | datetime | None) -> float | None:
    """The seconds from a recorded UTC time to another (or to `end` itself); None when either
    cannot be read."""
    begun = _parse_utc(start)
    ended = _parse_utc(end) if isinstance(end, str) else end
    if begun is None or ended is None:
        return None
    return max(0.0, (ended - begun).total_seconds())


def elapsed_text(seconds: float) -> str:
    """A duration as a person reads it: 7s, 1m05s, 2h03m."""
    whole = int(max(0.0, seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def progress_text(progress: ProgressFile, now: datetime, round_begun: bool = True) -> str:
    """One line: run id, round, phase (with the final status once finished), the last action and
    the time elapsed since the run started (until its last update once it finished). A run that
    finished before its first round began (`round_begun` False) says `no round`, not round 1."""
    phase: str = progress.phase
    if progress.phase == "finished" and progress.status is not None:
        phase = f"finished {progress.status}"
    finished_early = progress.phase == "finished" and not round_begun
    parts = [
        f"{progress.run_id}",
        "no round" if finished_early else f"round {progress.round}",
        phase,
    ]
    action = progress.last_action
    if action is not None and progress.phase != "finished":
        parts.append(f"{action.tool} {action.target}".rstrip())
    until: str | datetime = progress.updated_at if progress.phase == "finished" else now
    seconds = seconds_between(progress.started_at, until)
    if seconds is not None:
        parts.append(elapsed_text(seconds))
    return escape_controls(" · ".join(parts))


def _fit(text: str, width: int) -> str:
    """The line cut to the terminal's width (one column kept free for the cursor)."""
    room = max(10, width - 1)
    return text if len(text) <= room else text[: room - 1] + "…"


class ProgressWatcher:
    """Shows a run's progress while it runs, from its status.json.

    Create it before the run starts (it notes the `workers/` folders that exist already), call
    `refresh()` between waits and `close()` once the run ended. `live` rewrites one line in place
    (a terminal); otherwise a plain line is written at every change of phase or round. A progress
    file that is missing, half written or malformed is skipped: it is an observation aid only.
    """

    def __init__(
        self,
        fs: TreeReading,
        parent: str,
        stream: TextIO,
        *,
        live: bool,
        now: Callable[[], datetime],
        width: int = 100,
        host_pid: int | None = None,
        prefix: str = "concorde-workers: ",
    ) -> None:
        self._fs = fs
        self._workers = posixpath.join(parent, WORKERS_DIR)
        self._stream = stream
        self._live = live
        self._now = now
        self._width = width
        self._host_pid = host_pid
        self._prefix = prefix
        self._before = set(self._run_folders())
        self._run_dir: str | None = None
        self._last: tuple[str, int, str | None] | None = None
        self._shown = False
        self.progress: ProgressFile | None = None

    @property
    def run_dir(self) -> str | None:
        """The run's directory once found."""
        return self._run_dir

    def _run_folders(self) -> list[str]:
        try:
            entries = self._fs.listdir(self._workers)
        except FileSystemError:
            return []
        return [e.name for e in entries if is_run_id(e.name)]

    def _read(self, run_dir: str) -> ProgressFile | None:
        try:
            text = self._fs.read_text(posixpath.join(run_dir, STATUS_FILE))
        except FileSystemError:
            return None
        try:
            return ProgressFile.model_validate_json(text)
        except ValidationError:
            return None

    def _find(self) -> str | None:
        new = sorted(set(self._run_folders()) - self._before)
        if len(new) == 1:
            return posixpath.join(self._workers, new[0])
        if len(new) > 1 and self._host_pid is not None:
            # several runs started in the same parent at once: ours names our process
            ours = [
                name
                for name in new
                if (found := self._read(posixpath.join(self._workers, name))) is not None
                and found.host_pid == self._host_pid
            ]
            if len(ours) == 1:
                return posixpath.join(self._workers, ours[0])
        return None

    def refresh(self) -> None:
        """Read status.json once and show what changed."""
        if self._run_dir is None:
            self._run_dir = self._find()
            if self._run_dir is None:
                return
        progress = self._read(self._run_dir)
        if progress is None:
            return
        self.progress = progress
        # The progress file counts rounds from 1 even for a run refused before any began; its
        # trace says whether round 1 did.
        begun = progress.phase != "finished" or self._fs.lexists(
            posixpath.join(self._run_dir, ROUNDS_DIR, "1", TRACE_FILE)
        )
        text = progress_text(progress, self._now(), begun)
        if self._live:
            self._stream.write("\r" + _fit(self._prefix + text, self._width) + "\x1b[K")
            self._stream.flush()
            self._shown = True
            return
        key = (progress.phase, progress.round, progress.status)
        if key != self._last:
            self._last = key
            self._stream.write(self._prefix + text + "\n")
            self._stream.flush()

    def close(self) -> None:
        """Clear the live line, so that what follows starts on a clean line."""
        if self._live and self._shown:
            self._stream.write("\r\x1b[K")
            self._stream.flush()
            self._shown = False
