"""The record models serialize exactly to the contracts and refuse what the contracts refuse:
the worker result (with its error/status rule), the run and round traces, the returned run record
(rounds without the keys of steps that did not happen), the trace node and the progress file."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from concorde_workers.contracts import load, validator
from concorde_workers.domain.evidence.records import (
    LAST_ACTION_TARGET_LIMIT,
    AuditRecord,
    LastAction,
    ProgressFile,
    RoundRecord,
    RoundTraceContent,
    RunRecord,
    RunTraceContent,
    TraceNode,
    Transient,
    Usage,
    WorkerResult,
    cut_target,
    result_problem,
)
from concorde_workers.domain.ground.errors import Reason

RESULT = "contract.workers.worker-result"
RUN_TRACE = "contract.workers.worker-run-trace"
ROUND_TRACE = "contract.workers.worker-round-trace"
RUN_RECORD = "contract.workers.worker-run-record"
NODE = "contract.tracing.node"
ERROR = "contract.tracing.error"


def example(contract_id: str) -> Any:
    return copy.deepcopy(load(contract_id).example)


def ok_result() -> dict[str, Any]:
    return {
        "status": "ok",
        "summary": "Done.",
        "error": None,
        "proposed_deletions": [],
        "output": {},
    }


def usage(**change: Any) -> dict[str, Any]:
    return {
        "tokens_in": 120,
        "tokens_out": 3400,
        "tokens_cache_read": 210400,
        "tokens_cache_write": 18200,
        "cost_usd": 0.12,
        "turns": 9,
        "duration_seconds": 401.2,
        **change,
    }


# --- every model gives its contract's example back --------------------------------------------


@pytest.mark.parametrize(
    ("model", "contract_id"),
    [
        (WorkerResult, RESULT),
        (RunTraceContent, RUN_TRACE),
        (RoundTraceContent, ROUND_TRACE),
        (RunRecord, RUN_RECORD),
        (TraceNode, NODE),
    ],
)
def test_the_model_serializes_the_contract_example_back_exactly(
    model: type[BaseModel], contract_id: str
) -> None:
    value = example(contract_id)
    dumped = model.model_validate(value).model_dump(mode="json")
    assert dumped == value
    assert list(dumped) == list(value)  # the schema's key order
    assert validator(contract_id).is_valid(dumped)


def test_the_run_records_to_json_is_the_contract_example() -> None:
    value = example(RUN_RECORD)
    record = RunRecord.model_validate(value)
    assert record.to_json() == value
    assert record.rounds[0].to_json() == value["rounds"][0]


def test_the_round_trace_parts_give_their_example_objects_back() -> None:
    content = example(ROUND_TRACE)
    assert AuditRecord.model_validate(content["audit"]).model_dump(mode="json") == content["audit"]
    transient = {"error": "overloaded_error", "retried": True, "delay_seconds": 15}
    dumped = Transient.model_validate(transient).model_dump(mode="json")
    assert dumped == transient
    assert isinstance(dumped["delay_seconds"], int)  # an integer stays an integer


def test_the_worker_error_reasons_are_the_domains_reasons() -> None:
    schema = load(RESULT).schema["properties"]["error"]["anyOf"][1]
    assert schema["properties"]["unhandled"]["properties"]["reason"]["enum"] == [
        reason.value for reason in Reason
    ]
    error_schema = load(ERROR).schema["properties"]["unhandled"]["properties"]["reason"]
    assert error_schema["enum"] == [reason.value for reason in Reason]


# --- the worker result -------------------------------------------------------------------------


def test_a_valid_result_has_no_problem() -> None:
    assert result_problem(ok_result()) is None
    assert result_problem(example(RESULT)) is None


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"error": example(RESULT)["error"]}, "error must be null when status is ok"),
        ({"status": "blocked"}, "error must be an object when status is blocked"),
        ({"status": "failed"}, "error must be an object when status is failed"),
    ],
)
def test_a_result_whose_error_does_not_match_its_status_is_invalid(
    change: dict[str, Any], expected: str
) -> None:
    data = {**ok_result(), **change}
    assert result_problem(data) == expected
    with pytest.raises(ValidationError):
        WorkerResult.model_validate(data)


@pytest.mark.parametrize("field", ["status", "summary", "error", "proposed_deletions", "output"])
def test_a_result_missing_a_field_is_invalid(field: str) -> None:
    data = ok_result()
    del data[field]
    assert result_problem(data) == f"{field}: Field required"
    assert not validator(RESULT).is_valid(data)


def with_error(**change: Any) -> dict[str, Any]:
    data: dict[str, Any] = example(RESULT)
    data["error"].update(change)
    return data


@pytest.mark.parametrize(
    ("data", "location"),
    [
        ({**ok_result(), "confidence": 0.9}, "confidence"),
        ({**ok_result(), "summary": ""}, "summary"),
        ({**ok_result(), "summary": 7}, "summary"),
        ({**ok_result(), "status": "OK"}, "status"),
        ({**ok_result(), "status": "done"}, "status"),
        ({**ok_result(), "output": []}, "output"),
        ({**ok_result(), "proposed_deletions": [""]}, "proposed_deletions.0"),
        ({**ok_result(), "proposed_deletions": "src/a.py"}, "proposed_deletions"),
        (with_error(code="Spec-Gap"), "error.code"),
        (with_error(detail=""), "error.detail"),
        (
            with_error(evidence=[{"kind": "audit", "ref": "1", "detail": ""}]),
            "error.evidence.0.kind",
        ),
        (with_error(evidence=[{"kind": "file", "ref": "", "detail": ""}]), "error.evidence.0.ref"),
        (with_error(evidence=[{"kind": "file", "ref": "a.py"}]), "error.evidence.0.detail"),
        (with_error(attempts=[""]), "error.attempts.0"),
        (
            with_error(unhandled={"reason": "laziness", "explanation": "x"}),
            "error.unhandled.reason",
        ),
        (
            with_error(unhandled={"reason": "decision", "explanation": ""}),
            "error.unhandled.explanation",
        ),
        (with_error(options=[""]), "error.options.0"),
        (with_error(recommendation=None), "error.recommendation"),
        (with_error(level="worker"), "error.level"),
    ],
)
def test_a_result_the_schema_refuses_is_refused_with_its_location(
    data: dict[str, Any], location: str
) -> None:
    problem = result_problem(data)
    assert problem is not None and problem.startswith(f"{location}: "), problem
    assert not validator(RESULT).is_valid(data)


def test_a_result_that_is_not_an_object_is_invalid() -> None:
    assert result_problem(["ok"]) == "the worker result must be a JSON object, not list"
    assert result_problem(None) == "the worker result must be a JSON object, not NoneType"


def test_the_output_schemas_problem_is_reported_once_the_rest_is_valid() -> None:
    assert result_problem(ok_result(), "'findings' is a required property") == (
        "output: 'findings' is a required property"
    )
    bad = {**ok_result(), "summary": ""}
    assert result_problem(bad, "'findings' is a required property") == (
        "summary: String should have at least 1 character"
    )


def test_the_workers_error_becomes_the_workers_link_unchanged() -> None:
    result = WorkerResult.model_validate(example(RESULT))
    assert result.error is not None
    link = result.error.to_link("Workers run w-20261002T101500-a1b2c3, session s-1").to_json()
    assert link["level"] == "worker"
    assert link["actor"] == "Workers run w-20261002T101500-a1b2c3, session s-1"
    assert link["causes"] == []
    assert {key: link[key] for key in example(RESULT)["error"]} == example(RESULT)["error"]
    assert validator(ERROR).is_valid(link)


def test_a_result_keeps_the_callers_output_verbatim() -> None:
    data = {**ok_result(), "output": {"findings": [{"line": 3, "ok": False, "note": None}]}}
    assert WorkerResult.model_validate(data).model_dump(mode="json") == data


# --- run and round trace contents ------------------------------------------------------------


@pytest.mark.parametrize("transcript", ["../transcript.jsonl", "/tmp/rt/transcript.jsonl", ""])
def test_the_transcript_lies_in_the_nodes_folder(transcript: str) -> None:
    content = {**example(RUN_TRACE), "transcript": transcript}
    with pytest.raises(ValidationError):
        RunTraceContent.model_validate(content)
    assert not validator(RUN_TRACE).is_valid(content)


@pytest.mark.parametrize(
    "change",
    [
        {"rounds": -1},
        {"rounds": True},
        {"rounds": "2"},
        {"tools": [""]},
        {"deleted": ["src/a.py", ""]},
        {"worker_result": []},
        {"task_type": ""},
    ],
)
def test_a_run_trace_the_schema_refuses_is_refused(change: dict[str, Any]) -> None:
    content = {**example(RUN_TRACE), **change}
    with pytest.raises(ValidationError):
        RunTraceContent.model_validate(content)
    assert not validator(RUN_TRACE).is_valid(content)


@pytest.mark.parametrize(
    "change",
    [
        {"round": 0},
        {"prompt": "resume"},
        {"session": ""},
        {"exit": 0.5},
        {"audit": {"verdict": "dirty", "changed": [], "violations": []}},
        {"audit": {"verdict": "clean", "changed": []}},
        {"transient": {"error": "overloaded", "retried": "yes", "delay_seconds": None}},
        {"transient": {"error": "overloaded", "retried": False, "delay_seconds": -1}},
        {"evidence": [1]},
        {"agent": None},
    ],
)
def test_a_round_trace_the_schema_refuses_is_refused(change: dict[str, Any]) -> None:
    content = {**example(ROUND_TRACE), **change}
    with pytest.raises(ValidationError):
        RoundTraceContent.model_validate(content)
    assert not validator(ROUND_TRACE).is_valid(content)


def test_a_round_that_ended_before_its_audit_records_nulls() -> None:
    content = {
        **example(ROUND_TRACE),
        "session": None,
        "exit": None,
        "audit": None,
        "evidence": [],
        "validation": None,
        "agent": {},
        "transient": {"error": "529 overloaded", "retried": False, "delay_seconds": None},
    }
    dumped = RoundTraceContent.model_validate(content).model_dump(mode="json")
    assert dumped == content
    assert validator(ROUND_TRACE).is_valid(dumped)


# --- the returned run record and its rounds --------------------------------------------------


def test_a_round_without_steps_has_only_its_round_prompt_and_usage() -> None:
    record = RoundRecord(round=1, prompt="initial", usage=Usage.model_validate(usage()))
    assert record.to_json() == {"round": 1, "prompt": "initial", "usage": usage()}


def test_a_round_keeps_a_null_session_exit_and_duration_it_was_given() -> None:
    record = RoundRecord(
        round=2,
        prompt="retry",
        session=None,
        exit=None,
        duration=None,
        usage=Usage.model_validate(usage()),
    )
    assert record.to_json() == {
        "round": 2,
        "prompt": "retry",
        "session": None,
        "exit": None,
        "duration": None,
        "usage": usage(),
    }


@pytest.mark.parametrize("key", ["claude", "pi", "audit", "evidence", "validation", "transient"])
def test_a_step_that_did_not_happen_has_no_key_never_null(key: str) -> None:
    data = {"round": 1, "prompt": "initial", "usage": usage(), key: None}
    with pytest.raises(ValidationError):
        RoundRecord.model_validate(data)
    item_schema = load(RUN_RECORD).schema["properties"]["rounds"]["items"]
    assert "null" not in str(item_schema["properties"][key].get("type", ""))


def test_a_round_record_round_trips_every_optional_key() -> None:
    data = {
        "round": 2,
        "prompt": "repair",
        "session": "s-1",
        "exit": 1,
        "duration": 3,
        "usage": usage(duration_seconds=3),
        "claude": {"subtype": "success"},
        "audit": {"verdict": "clean", "changed": ["a.py"], "violations": []},
        "evidence": [{"log": "/abs/checks/c/output.log"}],
        "validation": "clean",
        "transient": {"error": "overloaded", "retried": True, "delay_seconds": 12.5},
    }
    assert RoundRecord.model_validate(data).to_json() == data


def round_content(**change: Any) -> RoundTraceContent:
    return RoundTraceContent.model_validate({**example(ROUND_TRACE), **change})


def test_a_round_record_from_a_round_without_validation() -> None:
    record = RoundRecord.of_round(round_content(), Usage.model_validate(usage()))
    content = example(ROUND_TRACE)
    assert record.to_json() == {
        "round": 1,
        "prompt": "initial",
        "session": content["session"],
        "exit": 0,
        "duration": 401.2,
        "usage": usage(),
        "claude": content["agent"]["claude"],
        "audit": content["audit"],
    }


def test_a_round_record_from_a_validated_round_carries_its_evidence_made_absolute() -> None:
    absolute = ({"check_id": "check.http.tests", "log": "/run/rounds/1/checks/c/output.log"},)
    record = RoundRecord.of_round(
        round_content(validation="tests failed: test_retry"),
        Usage.model_validate(usage()),
        evidence=absolute,
    )
    dumped = record.to_json()
    assert dumped["validation"] == "tests failed: test_retry"
    assert dumped["evidence"] == list(absolute)
    without = RoundRecord.of_round(round_content(validation="clean"), Usage.model_validate(usage()))
    assert without.to_json()["evidence"] == example(ROUND_TRACE)["evidence"]


def test_a_round_record_from_an_unaudited_round_ended_by_a_transient_error() -> None:
    transient = {"error": "overloaded", "retried": True, "delay_seconds": 15}
    record = RoundRecord.of_round(
        round_content(audit=None, agent={"pi": {"stop_reason": "error"}}, transient=transient),
        Usage.model_validate(usage()),
    )
    dumped = record.to_json()
    assert "audit" not in dumped and "claude" not in dumped and "evidence" not in dumped
    assert dumped["pi"] == {"stop_reason": "error"}
    assert dumped["transient"] == transient


def test_a_run_record_with_every_kind_of_round_validates_against_its_contract() -> None:
    value = example(RUN_RECORD)
    value["rounds"].append(
        RoundRecord.of_round(
            round_content(round=2, prompt="repair", validation="clean"),
            Usage.model_validate(usage(tokens_in=None, cost_usd=None)),
        ).to_json()
    )
    dumped = RunRecord.model_validate(value).to_json()
    assert dumped == value
    assert validator(RUN_RECORD).is_valid(dumped)


@pytest.mark.parametrize(
    "change",
    [
        {"status": "ok"},  # ok with an error
        {"error": None},  # failed without one
    ],
)
def test_a_run_records_error_matches_its_status(change: dict[str, Any]) -> None:
    with pytest.raises(ValidationError, match="error is null exactly when status is ok"):
        RunRecord.model_validate({**example(RUN_RECORD), **change})


def test_an_ok_run_record_has_no_error() -> None:
    value = {**example(RUN_RECORD), "status": "ok", "error": None}
    assert RunRecord.model_validate(value).to_json() == value


@pytest.mark.parametrize(
    "change",
    [
        {"runtime_directory": ""},
        {"extra": 1},
        {"rounds": [{"round": 1, "prompt": "initial"}]},
        {"tools": ["read"]},
        {"stderr_tail": None},
    ],
)
def test_a_run_record_the_schema_refuses_is_refused(change: dict[str, Any]) -> None:
    value = {**example(RUN_RECORD), **change}
    with pytest.raises(ValidationError):
        RunRecord.model_validate(value)
    assert not validator(RUN_RECORD).is_valid(value)


@pytest.mark.parametrize("field", ["run_id", "worktree", "rounds", "trace_failures"])
def test_a_run_record_missing_a_field_is_refused(field: str) -> None:
    value = example(RUN_RECORD)
    del value[field]
    with pytest.raises(ValidationError):
        RunRecord.model_validate(value)


# --- usage -----------------------------------------------------------------------------------


def test_usage_keeps_integers_and_nulls_as_reported() -> None:
    data = usage(cost_usd=0, tokens_in=None, duration_seconds=None)
    dumped = Usage.model_validate(data).model_dump(mode="json")
    assert dumped == data
    assert isinstance(dumped["cost_usd"], int)


@pytest.mark.parametrize(
    "change",
    [
        {"tokens_in": True},
        {"tokens_out": "5"},
        {"turns": -1},
        {"cost_usd": -0.1},
        {"tokens_in": 1.5},
    ],
)
def test_usage_refuses_what_is_not_a_count_or_amount(change: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Usage.model_validate(usage(**change))


# --- the trace node --------------------------------------------------------------------------


def round_node(**change: Any) -> dict[str, Any]:
    return {
        "kind": "worker-round",
        "id": "w-20261002T101500-a1b2c3/1",
        "parent": "w-20261002T101500-a1b2c3",
        "started_at": "2026-10-02T10:15:02Z",
        "ended_at": "2026-10-02T10:21:40Z",
        "status": "ok",
        "outcome": "ok",
        "error": None,
        "files": [{"path": "stderr.log", "digest": "sha256:" + "e" * 64}],
        "metadata": {},
        "usage": usage(),
        "content": example(ROUND_TRACE),
        **change,
    }


def test_a_round_node_types_its_usage_and_content() -> None:
    node = TraceNode.model_validate(round_node())
    assert node.round_usage().turns == 9
    assert node.round_content().audit is not None
    assert node.model_dump(mode="json") == round_node()
    assert validator(NODE).is_valid(node.model_dump(mode="json"))
    with pytest.raises(TypeError):
        node.run_content()
    with pytest.raises(TypeError):
        node.run_metadata()


def test_a_run_node_types_its_metadata_and_content() -> None:
    node = TraceNode.model_validate(example(NODE))
    assert node.run_metadata().backend == "pi"
    assert node.run_content().rounds == 1
    assert node.error is not None and node.error.code == "audit_violation"
    with pytest.raises(TypeError):
        node.round_usage()


@pytest.mark.parametrize(
    ("node", "message"),
    [
        ({**example(NODE), "metadata": {}}, "metadata of a worker-run node"),
        ({**example(NODE), "usage": usage()}, "usage of a worker-run node must be empty"),
        ({**example(NODE), "content": example(ROUND_TRACE)}, "content of a worker-run node"),
        (round_node(usage={}), "usage of a worker-round node"),
        (round_node(metadata={"round": 1}), "metadata of a worker-round node: round"),
        (round_node(metadata={"tree": "HEAD"}), "metadata of a worker-round node: tree"),
        (round_node(content=example(RUN_TRACE)), "content of a worker-round node"),
    ],
)
def test_a_node_of_our_kinds_must_have_their_shape(node: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        TraceNode.model_validate(node)
    assert not validator(NODE).is_valid(node)


@pytest.mark.parametrize(
    "change",
    [
        {"status": "running"},  # running, yet ended with an outcome
        {"ended_at": None},  # ended without an end time
        {"status": "failed", "outcome": "ok"},
        {"status": "ok", "outcome": "ok", "error": example(ERROR)},
        {"parent": None},
        {"started_at": "2026-10-02T10:15:02+00:00"},
        {"files": [{"path": "/abs/stderr.log", "digest": "sha256:" + "e" * 64}]},
    ],
)
def test_a_node_with_inconsistent_uniform_fields_is_refused(change: dict[str, Any]) -> None:
    node = round_node(**change)
    with pytest.raises(ValidationError):
        TraceNode.model_validate(node)
    assert not validator(NODE).is_valid(node)


def test_a_worker_run_that_did_not_end_ok_needs_its_error() -> None:
    node = {**example(NODE), "error": None}
    with pytest.raises(ValidationError, match="did not end ok has an error"):
        TraceNode.model_validate(node)


def test_an_interrupted_node_keeps_its_final_status() -> None:
    node = round_node(status="failed", outcome="interrupted")
    assert TraceNode.model_validate(node).model_dump(mode="json") == node
    assert validator(NODE).is_valid(node)


def test_a_running_run_node_validates_and_serializes() -> None:
    node = {
        **example(NODE),
        "ended_at": None,
        "status": "running",
        "outcome": None,
        "error": None,
        "files": [],
    }
    node["metadata"].update(model=None, grant_digest=None, settings_digest=None, brief_digest=None)
    assert TraceNode.model_validate(node).model_dump(mode="json") == node
    assert validator(NODE).is_valid(node)


def test_a_node_of_another_kind_keeps_plain_objects() -> None:
    node = round_node(
        kind="check", metadata={"check_id": "check.http.tests"}, usage={}, content={"exit_code": 1}
    )
    parsed = TraceNode.model_validate(node)
    assert parsed.model_dump(mode="json") == node
    assert validator(NODE).is_valid(node)


# --- the progress file -----------------------------------------------------------------------


def progress(**change: Any) -> dict[str, Any]:
    return {
        "run_id": "w-20261002T101500-a1b2c3",
        "task_type": "implement",
        "backend": "pi",
        "worktree": "/repo/.claude/worktrees/discounts",
        "operation_run_id": "r-1",
        "phase": "worker",
        "round": 1,
        "last_action": {"tool": "Edit", "target": "src/shop/cart.py", "at": "2026-10-02T10:16:00Z"},
        "status": None,
        "host_pid": 4242,
        "started_at": "2026-10-02T10:15:00Z",
        "updated_at": "2026-10-02T10:16:00Z",
        **change,
    }


def test_the_progress_file_serializes_its_fields_in_order() -> None:
    data = progress()
    dumped = ProgressFile.model_validate(data).model_dump(mode="json")
    assert dumped == data and list(dumped) == list(data)
    finished = progress(phase="finished", status="failed", last_action=None, operation_run_id=None)
    assert ProgressFile.model_validate(finished).model_dump(mode="json") == finished


@pytest.mark.parametrize(
    "change",
    [
        {"status": "ok"},  # a final status while running
        {"phase": "finished"},  # finished without a status
        {"phase": "resuming"},
        {"round": 0},
        {"host_pid": "4242"},
        {
            "last_action": {
                "tool": "Bash",
                "target": "x" * (LAST_ACTION_TARGET_LIMIT + 1),
                "at": "2026-10-02T10:16:00Z",
            }
        },
        {"extra": 1},
    ],
)
def test_a_progress_file_breaking_the_table_is_refused(change: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        ProgressFile.model_validate(progress(**change))


def test_an_interrupted_run_finishes_with_interrupted() -> None:
    data = progress(phase="finished", status="interrupted")
    assert ProgressFile.model_validate(data).model_dump(mode="json") == data


def test_the_target_is_cut_at_200_characters() -> None:
    assert LAST_ACTION_TARGET_LIMIT == 200
    exact = "a" * 200
    assert cut_target(exact) == exact
    assert cut_target("b" * 201) == "b" * 200
    assert cut_target("é" * 300) == "é" * 200  # characters, not bytes
    assert cut_target("src/a.py") == "src/a.py"


def test_a_commands_target_is_its_first_line() -> None:
    assert cut_target("pytest -q\nrm -rf build") == "pytest -q"
    assert cut_target("make test\r\nexit 1") == "make test"
    assert cut_target(("x" * 250) + "\nsecond") == "x" * 200


def test_a_last_action_cuts_its_target() -> None:
    action = LastAction.of("Bash", "echo " + "y" * 400, "2026-10-02T10:16:00Z")
    assert len(action.target) == 200 and action.target.startswith("echo y")
    data = progress(last_action=action.model_dump(mode="json"))
    assert ProgressFile.model_validate(data).last_action == action


def test_a_round_record_takes_the_agent_s_report_only_under_its_backend_s_key() -> None:
    """The model keeps the report as `agent`, which is no key of the contract's round: given as
    one, it is refused like any unknown key (issue 22 §1: the backends' keys are the contract's)."""
    data = {"round": 1, "prompt": "initial", "usage": usage(), "agent": {"pi": {}}}
    with pytest.raises(ValidationError, match="under its backend's key"):
        RoundRecord.model_validate(data)
    kept = {"round": 1, "prompt": "initial", "usage": usage(), "pi": {"turns": 2}}
    assert RoundRecord.model_validate(kept).to_json() == kept
