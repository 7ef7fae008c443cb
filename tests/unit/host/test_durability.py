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


def test_the_credentials_removal_is_made_durable_before_the_final_record_and_the_root_after() -> (
    None
):
    world = HostWorld()
    world.run([Round.ok(ok_result())])
    assert not world.fs.lexists(RUNTIME_DIR)
    # The runtime directory emptied but for its owner record (synced: the copies' removal
    # survives a power loss before the record says the run ended), then the record, then the
    # owner record and the root with the runtime parent synced (decisions.md "The end of a run").
    assert (
        world.fs.synced
        == [RUNTIME_DIR, posixpath.dirname(RUNTIME_DIR)]
        == [
            RUNTIME_DIR,
            TEMP_ROOT,
        ]
    )
    ops = world.fs.ops
    copies = [i for i, (op, path) in enumerate(ops) if op == "remove" and "/config/" in path]
    synced = [i for i, (op, _) in enumerate(ops) if op == "sync_directory"]
    final = max(  # the last write (the attestation reads it afterwards)
        i
        for i, (op, path) in enumerate(ops)
        if op == "write_atomic" and path == f"{RUN_DIR}/trace.json"
    )
    removed = [i for i, (op, path) in enumerate(ops) if op == "rmtree" and path == RUNTIME_DIR]
    assert copies and max(copies) < synced[0] < final < removed[-1] < synced[1]
