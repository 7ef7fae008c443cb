"""The trace writer over the fakes: the run directory, the nodes written at every moment (refused
writes recorded, never raised), stderr.log per round and the node files' digests."""

from __future__ import annotations

import hashlib
import json

import pytest
from fakes.filesystem import FakeFileSystem
from trace_nodes import (
    PARENT,
    RUN_DIR,
    RUN_ID,
    created,
    fs_with_parent,
    round_node,
    run_node,
    running_run_node,
    writer,
)

from concorde_workers.application.tracing.writer import TraceFailure, node_json
from concorde_workers.contracts import validator
from concorde_workers.domain.evidence.records import TraceNode
from concorde_workers.domain.ground.layout import STDERR_TAIL_BYTES, RunLayout

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


@pytest.mark.parametrize(
    "bad", ["", "..", "w-1", "x/../../etc", "w-20261002T101500-A1B2C3", "w-20261399T101500-a1b2c3"]
)
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
        "trace-write",
        layout.trace,
        f"{moment}: Permission denied",
    )
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
        TraceFailure(layout.round_trace(2), moment, "No space left on device"),
    )


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
