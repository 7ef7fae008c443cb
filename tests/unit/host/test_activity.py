"""The worker's activity in the progress file while a round runs (application/rounds/activity.py)."""

from __future__ import annotations

import pytest
from fakes.host_world import RUN_ID, TRACE_PARENT, HostWorld
from fakes.world import WORKTREE
from timing import eventually

from concorde_workers.application.rounds.activity import ActivityFlusher
from concorde_workers.application.tracing.progress import ProgressWriter
from concorde_workers.domain.evidence.records import LastAction

RUN_DIR = f"{TRACE_PARENT}/workers/{RUN_ID}"


@pytest.mark.req("A running run shows its progress")
def test_a_held_back_action_is_written_while_the_worker_is_silent() -> None:
    world = HostWorld()
    world.fs.mkdir(RUN_DIR)
    progress = ProgressWriter(
        world.fs,
        world.clock,
        f"{RUN_DIR}/status.json",
        run_id=RUN_ID,
        task_type="implement",
        backend="pi",
        worktree=WORKTREE,
        operation_run_id=None,
        host_pid=42,
    )
    progress.phase("worker", 1)
    flusher = ActivityFlusher(progress)
    flusher.activity(LastAction.of("bash", "pytest -q", "2026-01-01T00:00:00Z"))
    assert world.status(RUN_DIR)["last_action"] is None  # held back: within the second
    world.clock.advance(1.5)  # the worker runs one long command, printing nothing
    # The flusher's own thread writes it: wait for it, however long that thread takes to run.
    eventually(
        lambda: world.status(RUN_DIR)["last_action"] is not None,
        "the held-back action in status.json",
    )
    flusher.stop()
    assert world.status(RUN_DIR)["last_action"]["target"] == "pytest -q"
