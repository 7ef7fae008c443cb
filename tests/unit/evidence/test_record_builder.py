"""One typed value per fact (issue 34 §5): the returned run record is built from the worker-run
node by the record's own field list (no hand copy of its fields), and the caller reads the
worker result it keeps as its model."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from fakes.agent import Round
from fakes.host_world import HostWorld, ok_result

from concorde_workers.application.runtime.validation import ValidationInput, ValidationOutcome
from concorde_workers.application.tracing.record import (
    GIVEN,
    RESHAPED,
    record_of_node,
    record_sources,
)
from concorde_workers.contracts import load
from concorde_workers.domain.evidence.records import (
    RunMetadata,
    RunRecord,
    RunTraceContent,
    TraceNode,
    WorkerResult,
)

NODE = "contract.tracing.node"
RUN_RECORD = "contract.workers.worker-run-record"


def example(contract_id: str) -> Any:
    return copy.deepcopy(load(contract_id).example)


def built(node: TraceNode, final_failures: tuple[str, ...] = ()) -> RunRecord:
    return record_of_node(
        node,
        worktree="/repo/wt",
        backend="pi",
        run_directory="/repo/.concorde/runs/r",
        runtime_directory="/tmp/concorde-r",
        stderr_tail="tail",
        rounds=(),
        final_failures=final_failures,
    )


def test_every_record_field_has_one_source() -> None:
    """Issue 34 §5 "the record built from the run's state without a hand copy of its fields":
    each field of the record comes from the host's facts or the node part of its name."""
    sources = record_sources()
    assert list(sources) == list(RunRecord.model_fields)
    parts = {"content": RunTraceContent, "metadata": RunMetadata, "node": TraceNode}
    for name, source in sources.items():
        if source == "given":
            assert name in GIVEN
        elif source == "reshaped":
            assert name in RESHAPED
        else:
            assert name in parts[source].model_fields, name


def test_a_record_field_without_a_source_is_refused_by_name() -> None:
    class Grown(RunRecord):
        a_new_fact: str

    with pytest.raises(ValueError, match="a_new_fact has no source"):
        record_sources(Grown)


def test_the_record_takes_each_field_from_its_node_part() -> None:
    node = TraceNode.model_validate(example(NODE))
    record = built(node, ("the final write failed",))
    parts = {"content": node.run_content(), "metadata": node.run_metadata(), "node": node}
    for name, source in record_sources().items():
        if source in parts:
            assert getattr(record, name) == getattr(parts[source], name), name
    assert record.run_id == node.id and record.backend == "pi" and record.stderr_tail == "tail"
    assert record.trace_failures[-1] == "the final write failed"


def test_the_caller_reads_the_worker_result_as_its_model() -> None:
    """Issue 34 §5 "the worker result typed through to the caller's face": `result` is the
    validated model, the record's JSON keeps the object unchanged."""
    data = example(RUN_RECORD)
    record = RunRecord.model_validate(data)
    assert isinstance(record.result, WorkerResult)
    assert record.result == WorkerResult.model_validate(data["worker_result"])
    assert record.result.model_dump(mode="json") == data["worker_result"]
    assert record.to_json()["worker_result"] == data["worker_result"]
    assert RunRecord.model_validate({**data, "worker_result": None}).result is None


def test_a_record_read_back_with_no_valid_worker_result_says_so() -> None:
    data = {**example(RUN_RECORD), "worker_result": {"summary": "no status"}}
    record = RunRecord.model_validate(data)  # the contract keeps any object
    assert record.worker_result == {"summary": "no status"}
    with pytest.raises(ValueError, match=r"worker_result is not valid: status"):
        _ = record.result


def test_the_host_gives_the_caller_the_worker_result_as_its_model() -> None:
    """Issue 34 §5: the round validation is given the result the host judged, as its model
    beside the contract's object, and the returned record gives the same model."""
    world = HostWorld()
    given: list[ValidationInput] = []

    def validate(validation_input: ValidationInput) -> ValidationOutcome:
        given.append(validation_input)
        return ValidationOutcome()

    record = world.run([Round.ok(ok_result(summary="typed"))], validate)
    assert record.status == "ok" and len(given) == 1
    assert isinstance(given[0].worker_result, WorkerResult)
    assert given[0].worker_result.model_dump(mode="json") == given[0].result
    assert record.result == given[0].worker_result and record.result.summary == "typed"
    assert record.worker_result == given[0].result  # the contract's object, unchanged
