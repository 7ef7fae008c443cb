"""What must survive a power loss, and what need not (docs/decisions.md "What is durable"): the
record's end and the credentials' removal are made durable; every other write of a run (the
progress file, the trace's start and update writes, the brief, the credential copies) is
atomic for readers only, with no fsync (issue 12 item 4: a run made 40 fsyncs)."""

from __future__ import annotations

import posixpath

import pytest
from fakes.agent import Round
from fakes.host_world import RUN_ID, RUNTIME_DIR, TRACE_PARENT, HostWorld, ok_result
from fakes.world import TEMP_ROOT

RUN_DIR = f"{TRACE_PARENT}/workers/{RUN_ID}"


@pytest.mark.req("Every run leaves a final record")
def test_only_the_records_end_is_written_durably() -> None:
    world = HostWorld()
    world.run([Round.transient(), Round.ok(ok_result())])
    assert world.fs.durable == [
        f"{RUN_DIR}/rounds/1/trace.json",
        f"{RUN_DIR}/rounds/2/trace.json",
        f"{RUN_DIR}/trace.json",
        f"{RUN_DIR}/attestation.json",  # the statement, after the record (issue 30 §4)
    ]
    written = {path for op, path in world.fs.ops if op == "write_atomic"}
    assert f"{RUN_DIR}/status.json" in written  # written, but not durably
    assert len(written) > len(world.fs.durable)


def test_the_credentials_removal_is_made_durable_after_the_runtime_directory_went() -> None:
    world = HostWorld()
    world.run([Round.ok(ok_result())])
    assert not world.fs.lexists(RUNTIME_DIR)
    assert world.fs.synced == [posixpath.dirname(RUNTIME_DIR)] == [TEMP_ROOT]
    removed = [
        i for i, (op, path) in enumerate(world.fs.ops) if op == "rmtree" and path == RUNTIME_DIR
    ]
    synced = [i for i, (op, _) in enumerate(world.fs.ops) if op == "sync_directory"]
    assert removed and synced and removed[-1] < synced[0]
