"""The trace on disk over the fakes: the run directory, the nodes written at every moment (refused
writes recorded, never raised), stderr.log per round, the progress file and its once-a-second
throttle, and the returned run record read back from the nodes."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable
from typing import Any

import pytest
from fakes.filesystem import FakeFileSystem
from fakes.system import FakeClock

from concorde_workers.application.tracing import (
    RECORD_UNREADABLE,
    WORKTREE_UNKNOWN,
    ProgressWriter,
    TraceFailure,
    TraceWriter,
    node_json,
    read_record,
    utc_text,
)
from concorde_workers.contracts import load, validator
from concorde_workers.domain.brief import compose_brief, worktree_of_brief
from concorde_workers.domain.claude_settings import digest_text
from concorde_workers.domain.errors import Refusal
from concorde_workers.domain.grant import Grant, parse_grant
from concorde_workers.domain.layout import STDERR_TAIL_BYTES, RunLayout
from concorde_workers.domain.records import LastAction, RunRecord, TraceNode

PARENT = "/repo/.concorde/runs/r-1"
RUN_ID = "w-20261002T101500-a1b2c3"
RUN_DIR = f"{PARENT}/workers/{RUN_ID}"
WORKTREE = "/repo/.claude/worktrees/discounts"


def fs_with_parent() -> FakeFileSystem:
    fs = FakeFileSystem()
    fs.mkdir(PARENT)
    return fs


def writer(fs: FakeFileSystem) -> TraceWriter:
    return TraceWriter(fs, FakeClock())


def created(fs: FakeFileSystem, tracer: TraceWriter | None = None) -> RunLayout:
    layout = (tracer or writer(fs)).create_run(PARENT, RUN_ID)
    assert isinstance(layout, RunLayout)
    return layout


def run_node(**change: Any) -> TraceNode:
    data = copy.deepcopy(load("contract.tracing.node").example)
    data["id"] = RUN_ID
    data.update(change)
    return TraceNode.model_validate(data)


def running_run_node() -> TraceNode:
    return run_node(status="running", outcome=None, ended_at=None, error=None)


def round_node(n: int = 1, **content: Any) -> TraceNode:
    round_content = {**copy.deepcopy(load("contract.workers.worker-round-trace").example),
                     "round": n, **content}
    return TraceNode.model_validate({
        "kind": "worker-round", "id": f"{RUN_ID}/{n}", "parent": RUN_ID,
        "started_at": "2026-10-02T10:15:01Z", "ended_at": "2026-10-02T10:21:00Z",
        "status": "ok", "outcome": "ok", "error": None, "files": [], "metadata": {},
        "usage": {"tokens_in": 120, "tokens_out": 3400, "tokens_cache_read": 210400,
                  "tokens_cache_write": 18200, "cost_usd": 0.12, "turns": 9,
                  "duration_seconds": 359.0},
        "content": round_content,
    })


# --- the run directory ------------------------------------------------------------------------


def test_create_run_makes_the_node_folder_and_its_rounds_below_the_parent() -> None:
    fs = fs_with_parent()
    layout = created(fs)
    assert layout.run_dir == RUN_DIR
    assert fs.is_dir(RUN_DIR) and fs.is_dir(f"{RUN_DIR}/rounds")


def test_create_run_never_creates_a_missing_parent() -> None:
    fs = FakeFileSystem()
    result = writer(fs).create_run(PARENT, RUN_ID)
    assert not isinstance(result, RunLayout)
    assert result.not_found and result.path == PARENT
    assert not fs.lexists("/repo")


def test_create_run_refuses_a_parent_that_is_a_file() -> None:
    fs = FakeFileSystem()
    fs.write(PARENT, "not a folder")
    result = writer(fs).create_run(PARENT, RUN_ID)
    assert not isinstance(result, RunLayout)
    assert "Not a directory" in result.os_error_text


@pytest.mark.parametrize("bad", ["", "..", "w-1", "x/../../etc", "w-20261002T101500-A1B2C3",
                                 "w-20261399T101500-a1b2c3"])
def test_create_run_refuses_what_is_not_a_run_id(bad: str) -> None:
    fs = fs_with_parent()
    result = writer(fs).create_run(PARENT, bad)
    assert not isinstance(result, RunLayout)
    assert "not a run id" in result.os_error_text
    assert not fs.lexists(f"{PARENT}/workers")


def test_create_run_never_reuses_an_existing_run_directory() -> None:
    fs = fs_with_parent()
    fs.mkdir(RUN_DIR)
    result = writer(fs).create_run(PARENT, RUN_ID)
    assert not isinstance(result, RunLayout)
    assert result.path == RUN_DIR and "exists" in result.os_error_text


def test_create_run_returns_the_refused_makedirs() -> None:
    fs = fs_with_parent()
    fs.fail("makedirs", RUN_DIR)
    result = writer(fs).create_run(PARENT, RUN_ID)
    assert not isinstance(result, RunLayout)
    assert result.op == "makedirs" and result.os_error_text == "Permission denied"


# --- trace nodes --------------------------------------------------------------------------------


@pytest.mark.req("A run is recorded before its launch")
def test_the_run_node_is_written_atomically_with_status_running() -> None:
    fs = fs_with_parent()
    tracer = writer(fs)
    layout = created(fs, tracer)
    assert tracer.write_run_node(layout, running_run_node(), "start") is None
    assert ("write_atomic", layout.trace) in fs.ops
    written = json.loads(fs.read_text(layout.trace))
    assert written["status"] == "running" and written["kind"] == "worker-run"
    assert validator("contract.tracing.node").is_valid(written)
    assert tracer.failures == []


@pytest.mark.req("Every run leaves a final record")
def test_the_final_run_node_replaces_the_earlier_one() -> None:
    fs = fs_with_parent()
    tracer = writer(fs)
    layout = created(fs, tracer)
    tracer.write_run_node(layout, running_run_node(), "start")
    tracer.write_run_node(layout, run_node(), "end")
    assert fs.read_text(layout.trace) == node_json(run_node())
    assert TraceNode.model_validate_json(fs.read_text(layout.trace)).status == "failed"


@pytest.mark.req("A failed trace write is reported, never silent")
@pytest.mark.parametrize("moment", ["start", "update", "end"])
def test_a_refused_run_node_write_is_recorded_with_file_moment_and_error(moment: str) -> None:
    fs = fs_with_parent()
    tracer = writer(fs)
    layout = created(fs, tracer)
    fs.fail("write_atomic", layout.trace, times=1)
    node = running_run_node() if moment != "end" else run_node()
    failure = tracer.write_run_node(layout, node, moment)  # type: ignore[arg-type]
    expected = f"{layout.trace} ({moment}): Permission denied"
    assert failure == expected
    assert tracer.failures == [expected]
    assert tracer.final_failures == ([expected] if moment == "end" else [])
    (evidence,) = tracer.failure_evidence()
    assert (evidence.kind, evidence.ref, evidence.detail) == (
        "trace-write", layout.trace, f"{moment}: Permission denied")
    # the next write goes through and the failure stays listed
    assert tracer.write_run_node(layout, node, moment) is None  # type: ignore[arg-type]
    assert tracer.failures == [expected]


@pytest.mark.req("A failed trace write is reported, never silent")
def test_a_final_write_that_succeeds_after_a_refused_one_clears_final_failures() -> None:
    fs = fs_with_parent()
    tracer = writer(fs)
    layout = created(fs, tracer)
    fs.fail("write_atomic", layout.trace, times=1)
    tracer.write_run_node(layout, run_node(), "end")
    tracer.write_run_node(layout, run_node(), "end")
    assert tracer.final_failures == []
    assert len(tracer.failures) == 1


@pytest.mark.req("A failed trace write is reported, never silent")
@pytest.mark.parametrize("moment", ["start", "update", "end"])
def test_a_refused_round_node_write_is_recorded_never_raised(moment: str) -> None:
    fs = fs_with_parent()
    tracer = writer(fs)
    layout = created(fs, tracer)
    fs.fail("write_atomic", layout.round_trace(2), text="No space left on device", errno_=28)
    failure = tracer.write_round_node(layout, 2, round_node(2), moment)  # type: ignore[arg-type]
    assert failure == f"{layout.round_trace(2)} ({moment}): No space left on device"
    assert tracer.failures == [failure]
    assert tracer.final_failures == []
    assert tracer.trace_failures == (
        TraceFailure(layout.round_trace(2), moment, "No space left on device"),)


def test_a_round_folder_that_cannot_be_made_is_a_trace_failure_of_its_node() -> None:
    fs = fs_with_parent()
    tracer = writer(fs)
    layout = created(fs, tracer)
    fs.fail("makedirs", layout.round_dir(1))
    failure = tracer.write_round_node(layout, 1, round_node(1), "start")
    assert failure == f"{layout.round_trace(1)} (start): Permission denied"
    assert tracer.failures == [failure]


def test_round_nodes_are_written_in_their_own_folders() -> None:
    fs = fs_with_parent()
    tracer = writer(fs)
    layout = created(fs, tracer)
    for n in (1, 2):
        assert tracer.write_round_node(layout, n, round_node(n), "start") is None
    assert json.loads(fs.read_text(f"{RUN_DIR}/rounds/1/trace.json"))["content"]["round"] == 1
    assert json.loads(fs.read_text(f"{RUN_DIR}/rounds/2/trace.json"))["content"]["round"] == 2


def test_a_node_of_the_wrong_kind_or_round_is_a_programming_error() -> None:
    fs = fs_with_parent()
    tracer = writer(fs)
    layout = created(fs, tracer)
    with pytest.raises(ValueError):
        tracer.write_run_node(layout, round_node(), "start")
    with pytest.raises(ValueError):
        tracer.write_round_node(layout, 1, run_node(), "start")
    with pytest.raises(ValueError):
        tracer.write_round_node(layout, 2, round_node(1), "start")


def test_grant_and_brief_are_written_and_a_refusal_is_kept_apart_from_trace_failures() -> None:
    fs = fs_with_parent()
    tracer = writer(fs)
    layout = created(fs, tracer)
    assert tracer.write_text(layout.grant, '{"paths": []}\n') is None
    fs.fail("write_atomic", layout.brief)
    assert tracer.write_text(layout.brief, "# brief\n") == f"{layout.brief}: Permission denied"
    assert fs.read_text(layout.grant) == '{"paths": []}\n'
    assert tracer.artifact_failures == [f"{layout.brief}: Permission denied"]
    assert tracer.failures == []


# --- standard error -------------------------------------------------------------------------


@pytest.mark.req("Every round keeps its standard error")
def test_each_round_keeps_the_last_80000_bytes_of_its_standard_error_in_its_own_file() -> None:
    fs = fs_with_parent()
    tracer = writer(fs)
    layout = created(fs, tracer)
    first = b"A" * 10 + b"B" * STDERR_TAIL_BYTES
    assert tracer.write_stderr(layout, 1, first) is None
    assert tracer.write_stderr(layout, 2, b"second round\n") is None
    assert fs.read_bytes(f"{RUN_DIR}/rounds/1/stderr.log") == b"B" * STDERR_TAIL_BYTES
    assert fs.read_bytes(f"{RUN_DIR}/rounds/2/stderr.log") == b"second round\n"


def test_a_refused_stderr_write_is_reported_not_raised() -> None:
    fs = fs_with_parent()
    tracer = writer(fs)
    layout = created(fs, tracer)
    fs.fail("write_atomic", layout.round_stderr(1))
    failure = tracer.write_stderr(layout, 1, b"boom")
    assert failure == f"{layout.round_stderr(1)}: Permission denied"
    assert tracer.artifact_failures == [failure]


# --- node files ---------------------------------------------------------------------------------


def test_run_files_lists_the_existing_node_files_with_their_digests() -> None:
    fs = fs_with_parent()
    tracer = writer(fs)
    layout = created(fs, tracer)
    fs.write(layout.grant, "grant")
    fs.write(layout.status, "status")
    fs.write(layout.transcript, "transcript")
    files = tracer.run_files(layout)
    assert [f.path for f in files] == ["status.json", "grant.json", "transcript.jsonl"]
    assert files[1].digest == "sha256:" + hashlib.sha256(b"grant").hexdigest()


def test_run_files_leaves_out_an_entry_it_cannot_digest() -> None:
    fs = fs_with_parent()
    tracer = writer(fs)
    layout = created(fs, tracer)
    fs.mkdir(layout.brief)  # a directory where brief.md should be
    assert tracer.run_files(layout) == ()
    assert tracer.artifact_failures and layout.brief in tracer.artifact_failures[0]


# --- the progress file ----------------------------------------------------------------------


def progress(fs: FakeFileSystem, clock: FakeClock) -> ProgressWriter:
    return ProgressWriter(
        fs, clock, f"{RUN_DIR}/status.json", run_id=RUN_ID, task_type="implement",
        backend="pi", worktree=WORKTREE, operation_run_id="r-1", host_pid=4242,
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
    phases = [("preparing", 1), ("worker", 1), ("audit", 1), ("validation", 1), ("worker", 2),
              ("audit", 2), ("waiting", 2), ("worker", 3)]
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
    return set(data) == {"run_id", "task_type", "backend", "worktree", "operation_run_id",
                         "phase", "round", "last_action", "status", "host_pid", "started_at",
                         "updated_at"}


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


def test_updated_at_and_the_actions_time_come_from_the_clock() -> None:
    fs, clock = fs_with_parent(), FakeClock()
    fs.mkdir(RUN_DIR)
    writer_ = progress(fs, clock)
    clock.advance(65)
    writer_.tool_use("Bash", "pytest -q\nsecond line")
    data = status(fs)
    assert data["started_at"] == "2026-01-01T00:00:00Z"
    assert data["updated_at"] == "2026-01-01T00:01:05Z"
    assert data["last_action"] == {"tool": "Bash", "target": "pytest -q",
                                   "at": "2026-01-01T00:01:05Z"}


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
    from datetime import datetime

    with pytest.raises(ValueError):
        utc_text(datetime(2026, 1, 1))


# --- the record read back ---------------------------------------------------------------------


def write_finished_run(fs: FakeFileSystem, rounds: int = 2, **content: Any) -> RunLayout:
    tracer = writer(fs)
    layout = created(fs, tracer)
    node_data = copy.deepcopy(load("contract.tracing.node").example)
    node_data["id"] = RUN_ID
    node_data["content"]["rounds"] = rounds
    node_data["content"].update(content)
    assert tracer.write_run_node(layout, TraceNode.model_validate(node_data), "end") is None
    for n in range(rounds, 0, -1):  # written out of order: read back by number
        validation = "clean" if n == rounds else None
        node = round_node(n, prompt="initial" if n == 1 else "repair", validation=validation)
        assert tracer.write_round_node(layout, n, node, "end") is None
    fs.write(f"{RUN_DIR}/rounds/{rounds}/checks/check.http.tests/output.log", "log")
    fs.write(layout.status, json.dumps({
        "run_id": RUN_ID, "task_type": "implement", "backend": "pi", "worktree": WORKTREE,
        "operation_run_id": None, "phase": "finished", "round": max(1, rounds), "last_action": None,
        "status": "failed", "host_pid": 7, "started_at": "2026-10-02T10:15:00Z",
        "updated_at": "2026-10-02T10:21:40Z"}))
    return layout


def test_read_record_rebuilds_the_returned_record_from_the_nodes() -> None:
    fs = fs_with_parent()
    layout = write_finished_run(fs)
    fs.write(layout.round_stderr(2), b"last words\n")
    fs.write(layout.round_stderr(1), b"first words\n")
    record = read_record(fs, RUN_DIR, runtime_directory="/tmp/concorde-a1b2c3-0badf00d")
    assert isinstance(record, RunRecord), record
    dumped = record.to_json()
    assert validator("contract.workers.worker-run-record").is_valid(dumped)
    assert [r["round"] for r in dumped["rounds"]] == [1, 2]
    assert [r["prompt"] for r in dumped["rounds"]] == ["initial", "repair"]
    assert dumped["tools"] == "read,grep,find,ls,edit,write,bash,concorde_result"
    assert dumped["transcript"] == f"{RUN_DIR}/transcript.jsonl"
    assert dumped["run_directory"] == RUN_DIR
    assert dumped["worktree"] == WORKTREE  # from status.json
    assert dumped["runtime_directory"] == "/tmp/concorde-a1b2c3-0badf00d"
    assert dumped["stderr_tail"] == "last words\n"
    assert dumped["status"] == "failed" and dumped["error"]["code"] == "audit_violation"
    assert dumped["backend"] == "pi" and dumped["model"] == "gpt-6-astra"
    assert "evidence" not in dumped["rounds"][0] and "validation" not in dumped["rounds"][0]
    (evidence,) = dumped["rounds"][1]["evidence"]
    # an artifact path relative to the round's folder that exists there is made absolute;
    # strings that name nothing there stay as they are
    assert evidence["log"] == f"{RUN_DIR}/rounds/2/checks/check.http.tests/output.log"
    assert evidence["check_id"] == "check.http.tests" and evidence["status"] == "failed"
    assert dumped["rounds"][1]["claude"]["subtype"] == "success"


def test_read_record_takes_the_worktree_given_and_names_the_runtime_directory_pattern() -> None:
    fs = fs_with_parent()
    layout = write_finished_run(fs, rounds=1)
    fs.remove(layout.status)
    record = read_record(fs, RUN_DIR, worktree="/elsewhere/.claude/worktrees/t")
    assert isinstance(record, RunRecord), record
    assert record.worktree == "/elsewhere/.claude/worktrees/t"
    assert record.runtime_directory == "concorde-a1b2c3-*"
    assert record.stderr_tail == ""


def test_read_record_of_a_run_without_rounds() -> None:
    fs = fs_with_parent()
    write_finished_run(fs, rounds=0, transcript=None, tools=None)
    record = read_record(fs, RUN_DIR)
    assert isinstance(record, RunRecord), record
    assert record.rounds == () and record.tools is None and record.transcript is None


def refused(result: RunRecord | Refusal) -> Refusal:
    assert isinstance(result, Refusal), result
    assert result.code == RECORD_UNREADABLE
    return result


def test_a_missing_run_node_is_refused_naming_the_file() -> None:
    fs = fs_with_parent()
    created(fs)
    refusal = refused(read_record(fs, RUN_DIR))
    assert refusal.file == f"{RUN_DIR}/trace.json"
    assert refusal.message == f"{RUN_DIR}/trace.json: missing"


def test_a_run_node_that_is_not_json_is_refused_naming_the_file() -> None:
    fs = fs_with_parent()
    layout = created(fs)
    fs.write(layout.trace, "{not json")
    refusal = refused(read_record(fs, RUN_DIR))
    assert refusal.file == layout.trace and "not JSON" in refusal.message


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"kind": "worker-round"}, "not a worker-run node"),
        ({"status": "bogus"}, "status"),
        ({"content": {"task_type": "implement"}}, "content"),
    ],
)
def test_a_malformed_run_node_is_refused_with_what_is_wrong(
    change: dict[str, Any], problem: str
) -> None:
    fs = fs_with_parent()
    layout = created(fs)
    data = {**copy.deepcopy(load("contract.tracing.node").example), **change}
    fs.write(layout.trace, json.dumps(data))
    refusal = refused(read_record(fs, RUN_DIR))
    assert refusal.file == layout.trace and problem in refusal.message


def test_a_run_still_running_is_refused() -> None:
    fs = fs_with_parent()
    tracer = writer(fs)
    layout = created(fs, tracer)
    tracer.write_run_node(layout, running_run_node(), "start")
    assert "status running" in refused(read_record(fs, RUN_DIR)).message


def test_a_missing_round_node_is_refused_naming_it() -> None:
    fs = fs_with_parent()
    layout = write_finished_run(fs)
    fs.remove(layout.round_trace(2))
    refusal = refused(read_record(fs, RUN_DIR))
    assert refusal.file == layout.round_trace(2) and refusal.message.endswith("missing")


def test_a_round_node_holding_another_round_is_refused() -> None:
    fs = fs_with_parent()
    layout = write_finished_run(fs)
    fs.write(layout.round_trace(2), node_json(round_node(1)))
    refusal = refused(read_record(fs, RUN_DIR))
    assert refusal.file == layout.round_trace(2) and "not 2" in refusal.message


_parsed = parse_grant({"task_type": "implement", "context_identity": "sha256:ctx",
                       "entries": [{"path": "src/", "level": "rw"}]})
assert isinstance(_parsed, Grant)
BRIEF_GRANT: Grant = _parsed


def with_brief(fs: FakeFileSystem, layout: RunLayout, worktree: str = WORKTREE,
               digest: str | None = None) -> None:
    """brief.md as the host writes it, and the run node's brief_digest (its digest, or
    `digest`)."""
    brief = compose_brief(backend="pi", task_type="implement", worktree=worktree,
                          grant=BRIEF_GRANT, instructions="Do it.")
    fs.write(layout.brief, brief)
    data = json.loads(fs.read_text(layout.trace))
    data["metadata"]["brief_digest"] = digest or digest_text(brief)
    fs.write(layout.trace, json.dumps(data))


DAMAGES: list[Any] = [
    pytest.param(lambda fs, layout: fs.remove(layout.status), id="missing"),
    pytest.param(lambda fs, layout: fs.write(layout.status, '{"run_id": "w-2026'), id="cut off"),
    pytest.param(lambda fs, layout: fs.write(layout.status, b"\xff\xfe"), id="not UTF-8"),
    pytest.param(lambda fs, layout: fs.write(layout.status, '{"phase": "nowhere"}'),
                 id="not a progress file"),
    pytest.param(lambda fs, layout: fs.write(layout.status, fs.read_text(layout.status).replace(
        RUN_ID, "w-20991231T235959-ffffff")), id="another run's"),
]


@pytest.mark.req("Every run leaves a final record")
@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_progress_file_does_not_keep_the_record_from_being_read(
        damage: Callable[[FakeFileSystem, RunLayout], None]) -> None:
    fs = fs_with_parent()
    layout = write_finished_run(fs)
    with_brief(fs, layout, worktree="/repo/.claude/worktrees/t; odd name")
    damage(fs, layout)
    record = read_record(fs, RUN_DIR)
    assert isinstance(record, RunRecord), record
    assert record.worktree == "/repo/.claude/worktrees/t; odd name"  # from the brief as sent
    assert [r.round for r in record.rounds] == [1, 2] and record.error is not None


def test_without_a_progress_file_or_the_brief_as_sent_the_worktree_is_said_unknown() -> None:
    fs = fs_with_parent()
    layout = write_finished_run(fs)
    with_brief(fs, layout, digest="sha256:" + "0" * 64)  # brief.md is not the brief as sent
    fs.remove(layout.status)
    record = read_record(fs, RUN_DIR)
    assert isinstance(record, RunRecord), record
    assert record.worktree == WORKTREE_UNKNOWN
    assert validator("contract.workers.worker-run-record").is_valid(record.to_json())


def test_a_readable_progress_file_still_names_the_worktree() -> None:
    fs = fs_with_parent()
    layout = write_finished_run(fs)
    with_brief(fs, layout, worktree="/elsewhere/.claude/worktrees/x")
    record = read_record(fs, RUN_DIR)
    assert isinstance(record, RunRecord) and record.worktree == WORKTREE


def test_the_brief_names_its_worktree_and_nothing_else_does() -> None:
    brief = compose_brief(backend="claude", task_type="review", worktree="/r/.claude/worktrees/a",
                          grant=BRIEF_GRANT, instructions="x")
    assert worktree_of_brief(brief) == "/r/.claude/worktrees/a"
    assert worktree_of_brief("The task worktree is /r; your working directory") is None
    assert worktree_of_brief("") is None


def test_a_relative_run_directory_is_refused() -> None:
    refused(read_record(FakeFileSystem(), "runs/r-1/workers/x"))
