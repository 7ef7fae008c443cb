"""The progress file over the fakes: every phase change written at once, worker activity at most
once a second, refused writes never failing the run; the records' time."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest
from fakes.filesystem import FakeFileSystem
from fakes.system import FakeClock
from trace_nodes import RUN_DIR, RUN_ID, WORKTREE, fs_with_parent

from concorde_workers.application.tracing.progress import ProgressWriter
from concorde_workers.domain.evidence.records import LastAction
from concorde_workers.domain.ground.record_fields import utc_text


def progress(fs: FakeFileSystem, clock: FakeClock) -> ProgressWriter:
    return ProgressWriter(
        fs,
        clock,
        f"{RUN_DIR}/status.json",
        run_id=RUN_ID,
        task_type="implement",
        backend="pi",
        worktree=WORKTREE,
        operation_run_id="r-1",
        host_pid=4242,
        started_at=clock.now_utc(),
    )


def status(fs: FakeFileSystem) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(fs.read_text(f"{RUN_DIR}/status.json"))
    return data


def writes(fs: FakeFileSystem) -> int:
    return fs.ops.count(("write_atomic", f"{RUN_DIR}/status.json"))


def action(tool: str, at: str = "2026-01-01T00:00:00Z") -> LastAction:
    return LastAction.of(tool, f"/work/{tool}.py", at)


@pytest.mark.req("A running run shows its progress")
def test_every_phase_change_rewrites_the_progress_file_at_once() -> None:
    fs, clock = fs_with_parent(), FakeClock()
    fs.mkdir(RUN_DIR)
    writer_ = progress(fs, clock)
    phases = [
        ("preparing", 1),
        ("worker", 1),
        ("audit", 1),
        ("validation", 1),
        ("worker", 2),
        ("audit", 2),
        ("waiting", 2),
        ("worker", 3),
        ("audit", 3),
        ("deletions", 3),  # issue 30 §3: the host's deletions, a phase of their own
    ]
    for i, (phase, n) in enumerate(phases, start=1):
        assert writer_.phase(phase, n)  # type: ignore[arg-type]
        assert writes(fs) == i
        assert (status(fs)["phase"], status(fs)["round"], status(fs)["status"]) == (phase, n, None)
    writer_.phase("finished", 3, status="ok")
    final = status(fs)
    assert (final["phase"], final["status"]) == ("finished", "ok")
    assert final["run_id"] == RUN_ID and final["worktree"] == WORKTREE
    assert final["operation_run_id"] == "r-1" and final["host_pid"] == 4242
    assert has_exactly_the_progress_fields(final)


def has_exactly_the_progress_fields(data: dict[str, Any]) -> bool:
    return set(data) == {
        "run_id",
        "task_type",
        "backend",
        "worktree",
        "operation_run_id",
        "phase",
        "round",
        "last_action",
        "status",
        "host_pid",
        "started_at",
        "updated_at",
    }


@pytest.mark.req("A running run shows its progress")
def test_activity_rewrites_at_most_once_a_second_and_keeps_the_latest_action() -> None:
    fs, clock = fs_with_parent(), FakeClock()
    fs.mkdir(RUN_DIR)
    writer_ = progress(fs, clock)
    writer_.phase("worker", 1)
    assert writes(fs) == 1
    assert not writer_.activity(action("Read"))  # within the second of the phase write
    clock.advance(0.4)
    assert not writer_.activity(action("Grep"))
    assert writes(fs) == 1 and writer_.pending
    clock.advance(0.6)  # one second since the last write
    assert writer_.activity(action("Edit"))
    assert writes(fs) == 2 and not writer_.pending
    assert status(fs)["last_action"]["tool"] == "Edit"
    clock.advance(0.5)
    writer_.activity(action("Bash"))
    assert writes(fs) == 2
    writer_.phase("audit", 1)  # the next phase change carries the held-back action
    assert writes(fs) == 3
    assert status(fs)["last_action"]["tool"] == "Bash" and status(fs)["phase"] == "audit"


def test_flush_writes_a_held_back_action_once_its_second_has_passed() -> None:
    fs, clock = fs_with_parent(), FakeClock()
    fs.mkdir(RUN_DIR)
    writer_ = progress(fs, clock)
    writer_.phase("worker", 1)
    writer_.activity(action("Read"))
    assert not writer_.flush()
    clock.advance(1.0)
    assert writer_.flush()
    assert status(fs)["last_action"]["tool"] == "Read"
    assert not writer_.flush()  # nothing held back
    writer_.activity(action("Grep"))
    assert writer_.flush(force=True)
    assert writes(fs) == 3


def test_updated_at_comes_from_the_clock_and_the_action_is_kept_as_the_stream_gave_it() -> None:
    fs, clock = fs_with_parent(), FakeClock()
    fs.mkdir(RUN_DIR)
    writer_ = progress(fs, clock)
    clock.advance(65)
    # the agent's stream stamps its actions (LastAction.of cuts the target to its first line)
    writer_.activity(LastAction.of("Bash", "pytest -q\nsecond line", utc_text(clock.now_utc())))
    data = status(fs)
    assert data["started_at"] == "2026-01-01T00:00:00Z"
    assert data["updated_at"] == "2026-01-01T00:01:05Z"
    assert data["last_action"] == {
        "tool": "Bash",
        "target": "pytest -q",
        "at": "2026-01-01T00:01:05Z",
    }


@pytest.mark.req("A running run shows its progress")
def test_a_refused_progress_write_never_fails_the_run_and_the_next_write_tries_again() -> None:
    fs, clock = fs_with_parent(), FakeClock()
    fs.mkdir(RUN_DIR)
    writer_ = progress(fs, clock)
    fs.fail("write_atomic", f"{RUN_DIR}/status.json", times=1)
    assert writer_.phase("worker", 1) is False
    assert writer_.failures == [f"{RUN_DIR}/status.json (worker): Permission denied"]
    assert writer_.phase("audit", 1) is True
    assert status(fs)["phase"] == "audit"


def test_status_is_set_exactly_when_the_phase_is_finished() -> None:
    fs, clock = fs_with_parent(), FakeClock()
    fs.mkdir(RUN_DIR)
    writer_ = progress(fs, clock)
    with pytest.raises(ValueError):
        writer_.phase("worker", 1, status="ok")
    with pytest.raises(ValueError):
        writer_.phase("finished", 1)
    assert writes(fs) == 0
    assert writer_.phase("finished", 1, status="interrupted")


def test_utc_text_refuses_a_naive_time() -> None:
    with pytest.raises(ValueError):
        utc_text(datetime(2026, 1, 1))
