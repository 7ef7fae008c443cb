"""The returned run record read back from a run's node folder over the fakes: rebuilt from the
nodes, every missing or malformed file refused by name, the worktree from the progress file or
the brief as sent."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from fakes.filesystem import FakeFileSystem
from trace_nodes import (
    RUN_DIR,
    RUN_ID,
    WORKTREE,
    created,
    fs_with_parent,
    round_node,
    running_run_node,
    writer,
)

from concorde_workers.application.tracing.reader import (
    RECORD_UNREADABLE,
    WORKTREE_UNKNOWN,
    read_record,
)
from concorde_workers.application.tracing.writer import node_json
from concorde_workers.container import PROFILES
from concorde_workers.contracts import load, validator
from concorde_workers.domain.boundary.grant import Grant, parse_grant
from concorde_workers.domain.evidence.records import RunRecord, TraceNode
from concorde_workers.domain.ground.errors import Refusal
from concorde_workers.domain.ground.layout import RunLayout
from concorde_workers.domain.ground.text import digest_text
from concorde_workers.domain.run.brief import compose_brief, worktree_of_brief


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
    fs.write(
        layout.status,
        json.dumps(
            {
                "run_id": RUN_ID,
                "task_type": "implement",
                "backend": "pi",
                "worktree": WORKTREE,
                "operation_run_id": None,
                "phase": "finished",
                "round": max(1, rounds),
                "last_action": None,
                "status": "failed",
                "host_pid": 7,
                "started_at": "2026-10-02T10:15:00Z",
                "updated_at": "2026-10-02T10:21:40Z",
            }
        ),
    )
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


_parsed = parse_grant(
    {
        "task_type": "implement",
        "context_identity": "sha256:ctx",
        "entries": [{"path": "src/", "level": "rw"}],
    }
)
assert isinstance(_parsed, Grant)
BRIEF_GRANT: Grant = _parsed


def with_brief(
    fs: FakeFileSystem, layout: RunLayout, worktree: str = WORKTREE, digest: str | None = None
) -> None:
    """brief.md as the host writes it, and the run node's brief_digest (its digest, or
    `digest`)."""
    brief = compose_brief(
        variant=PROFILES["pi"].brief,
        task_type="implement",
        worktree=worktree,
        grant=BRIEF_GRANT,
        instructions="Do it.",
    )
    fs.write(layout.brief, brief)
    data = json.loads(fs.read_text(layout.trace))
    data["metadata"]["brief_digest"] = digest or digest_text(brief)
    fs.write(layout.trace, json.dumps(data))


DAMAGES: list[Any] = [
    pytest.param(lambda fs, layout: fs.remove(layout.status), id="missing"),
    pytest.param(lambda fs, layout: fs.write(layout.status, '{"run_id": "w-2026'), id="cut off"),
    pytest.param(lambda fs, layout: fs.write(layout.status, b"\xff\xfe"), id="not UTF-8"),
    pytest.param(
        lambda fs, layout: fs.write(layout.status, '{"phase": "nowhere"}'), id="not a progress file"
    ),
    pytest.param(
        lambda fs, layout: fs.write(
            layout.status, fs.read_text(layout.status).replace(RUN_ID, "w-20991231T235959-ffffff")
        ),
        id="another run's",
    ),
]


@pytest.mark.req("Every run leaves a final record")
@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_progress_file_does_not_keep_the_record_from_being_read(
    damage: Callable[[FakeFileSystem, RunLayout], None],
) -> None:
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
    brief = compose_brief(
        variant=PROFILES["claude"].brief,
        task_type="review",
        worktree="/r/.claude/worktrees/a",
        grant=BRIEF_GRANT,
        instructions="x",
    )
    assert worktree_of_brief(brief) == "/r/.claude/worktrees/a"
    assert worktree_of_brief("The task worktree is /r; your working directory") is None
    assert worktree_of_brief("") is None


def test_a_relative_run_directory_is_refused() -> None:
    refused(read_record(FakeFileSystem(), "runs/r-1/workers/x"))


def test_a_round_node_of_another_run_is_refused() -> None:
    fs = fs_with_parent()
    layout = write_finished_run(fs)
    fs.write(layout.round_trace(2), node_json(round_node(2).model_copy(update={"parent": "w-x"})))
    refusal = refused(read_record(fs, RUN_DIR))
    assert refusal.file == layout.round_trace(2)
    assert refusal.message.endswith(f"its parent is 'w-x', not {RUN_ID!r}")


def without_backend(fs: FakeFileSystem, layout: RunLayout) -> None:
    """The run node as an older host wrote it: its metadata names no backend."""
    data = json.loads(fs.read_text(layout.trace))
    data["metadata"]["backend"] = None
    fs.write(layout.trace, json.dumps(data))


def test_a_run_node_naming_no_backend_takes_the_progress_files() -> None:
    fs = fs_with_parent()
    layout = write_finished_run(fs)
    without_backend(fs, layout)
    record = read_record(fs, RUN_DIR, worktree="/given/.claude/worktrees/w")
    assert isinstance(record, RunRecord), record
    assert (record.backend, record.worktree) == ("pi", "/given/.claude/worktrees/w")


def test_a_run_node_naming_no_backend_needs_the_progress_file_of_its_run() -> None:
    fs = fs_with_parent()
    layout = write_finished_run(fs)
    without_backend(fs, layout)
    other = "w-20991231T235959-ffffff"
    fs.write(layout.status, fs.read_text(layout.status).replace(RUN_ID, other))
    refusal = refused(read_record(fs, RUN_DIR))
    assert refusal.file == layout.status
    assert refusal.message == f"{layout.status}: names the run {other}, not {RUN_ID}"
    fs.remove(layout.status)
    assert refused(read_record(fs, RUN_DIR)).message == f"{layout.status}: missing"
