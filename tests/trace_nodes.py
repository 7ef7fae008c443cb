"""The trace nodes the tracing tests write and read back: a run's node folder below a caller's
trace node, the contract's example run node and round nodes of it (tests/unit/evidence/test_trace_writer.py,
test_progress_writer.py, test_record_reader.py)."""

from __future__ import annotations

import copy
from typing import Any

from fakes.filesystem import FakeFileSystem
from fakes.system import FakeClock

from concorde_workers.application.tracing.writer import TraceWriter
from concorde_workers.contracts import load
from concorde_workers.domain.evidence.records import TraceNode
from concorde_workers.domain.ground.layout import RunLayout

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
    round_content = {
        **copy.deepcopy(load("contract.workers.worker-round-trace").example),
        "round": n,
        **content,
    }
    return TraceNode.model_validate(
        {
            "kind": "worker-round",
            "id": f"{RUN_ID}/{n}",
            "parent": RUN_ID,
            "started_at": "2026-10-02T10:15:01Z",
            "ended_at": "2026-10-02T10:21:00Z",
            "status": "ok",
            "outcome": "ok",
            "error": None,
            "files": [],
            "metadata": {},
            "usage": {
                "tokens_in": 120,
                "tokens_out": 3400,
                "tokens_cache_read": 210400,
                "tokens_cache_write": 18200,
                "cost_usd": 0.12,
                "turns": 9,
                "duration_seconds": 359.0,
            },
            "content": round_content,
        }
    )
