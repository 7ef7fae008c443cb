"""The returned run record of a worker-run node (seed 000 "Run record"; seed 002,
contract.workers.worker-run-record): the host's returned record and `read_record`'s both come
from `record_of_node`.

Each field of the record is taken by its name from where the run's state keeps it (issue 34 §5:
no hand copy of the fields): the host's own facts the node does not hold (`GIVEN`), the few the
record says otherwise than the node (`RESHAPED`), else the node's content, its metadata or the
node itself, the first that has a field of that name (`record_sources`). A field added to the
record that none of them holds is refused by name, so it cannot be forgotten.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from concorde_workers.domain.evidence.records import (
    RoundRecord,
    RunMetadata,
    RunRecord,
    RunTraceContent,
    TraceNode,
)

__all__ = ["GIVEN", "RESHAPED", "record_of_node", "record_sources"]

GIVEN = (
    "backend",
    "worktree",
    "stderr_tail",
    "run_directory",
    "runtime_directory",
    "rounds",
)
"""The record's fields the host gives, which no trace node holds (seed 000 "Run record")."""
RESHAPED = ("run_id", "tools", "transcript", "trace_failures")
"""The record's fields said otherwise than the node says them: the node's id, tools as the
comma-separated list, the transcript absolute in the run directory, trace_failures with the
failures of the final write."""
_PARTS: tuple[tuple[str, type[BaseModel]], ...] = (
    ("content", RunTraceContent),
    ("metadata", RunMetadata),
    ("node", TraceNode),
)


def record_sources(record: type[BaseModel] = RunRecord) -> dict[str, str]:
    """Where each field of the run record comes from: `given`, `reshaped`, or the part of the
    worker-run node (`content`, `metadata`, `node`) holding a field of its name. Refuses a
    record field that none of them holds (ValueError naming it)."""
    sources: dict[str, str] = {}
    for name in record.model_fields:
        if name in GIVEN:
            sources[name] = "given"
        elif name in RESHAPED:
            sources[name] = "reshaped"
        else:
            part = next((p for p, model in _PARTS if name in model.model_fields), None)
            if part is None:
                raise ValueError(f"the run record's field {name} has no source in the run's state")
            sources[name] = part
    return sources


_SOURCES = record_sources()


def record_of_node(
    node: TraceNode,
    *,
    worktree: str,
    backend: str,
    run_directory: str,
    runtime_directory: str,
    stderr_tail: str,
    rounds: Sequence[RoundRecord],
    final_failures: Sequence[str] = (),
) -> RunRecord:
    """The returned run record of a worker-run node (seed 000 "Run record"): the node's identity,
    status, error, times, metadata and content, with tools as the comma-separated list, the
    transcript absolute in `run_directory` and the rounds' records in place of their number;
    `final_failures` completes trace_failures with any failure of the final write itself. The
    host's returned record and `read_record` both come from here."""
    content = node.run_content()
    parts: dict[str, BaseModel] = {
        "content": content,
        "metadata": node.run_metadata(),
        "node": node,
    }
    given: dict[str, Any] = {
        "backend": backend,
        "worktree": worktree,
        "stderr_tail": stderr_tail,
        "run_directory": run_directory,
        "runtime_directory": runtime_directory,
        "rounds": tuple(rounds),
        "run_id": node.id,
        "tools": ",".join(content.tools) if content.tools else None,
        "transcript": (
            None
            if content.transcript is None
            else posixpath.join(run_directory, content.transcript)
        ),
        "trace_failures": (*content.trace_failures, *final_failures),
    }
    return RunRecord(
        **{
            name: given[name] if name in given else getattr(parts[source], name)
            for name, source in _SOURCES.items()
        }
    )
