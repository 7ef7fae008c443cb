"""Every ending told truly, over the fakes (seed 000 "Errors", "Retries", "Run record"; seed 002
worker round trace): an exception from outside ends the run interrupted and goes on; a round
validation whose answer the record cannot keep could not validate; a retry continues the session
a round named; the error's evidence names only files that exist; a round node lists its
stderr.log and says when it was interrupted.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable
from typing import Any

import pytest
from fakes.agent import Round
from fakes.agent_stream import TestStreamReader, error_line, session_line, tool_line
from fakes.host_world import (
    RUN_ID,
    RUNTIME_DIR,
    TRACE_PARENT,
    HostWorld,
    ok_result,
    write_file,
)
from fakes.process import FakeStart

from concorde_workers.application.preparation.preparation import Preparer
from concorde_workers.application.runtime.cancellation import Cancellation
from concorde_workers.application.runtime.validation import (
    LinkAnswer,
    ValidationInput,
    ValidationOutcome,
)
from concorde_workers.application.tracing.reader import read_record
from concorde_workers.contracts import validator as contract_validator
from concorde_workers.domain.evidence.records import RunRecord
from concorde_workers.domain.ground.errors import Refusal
from concorde_workers.domain.ground.text import digest_text

RUN_DIR = f"{TRACE_PARENT}/workers/{RUN_ID}"
CREDENTIAL_COPY = f"{RUNTIME_DIR}/config/.credentials.json"
NODE = contract_validator("contract.tracing.node")
RECORD = contract_validator("contract.workers.worker-run-record")
MARK = "tool-call-the-signal-arrives-during"


def assert_node(node: dict[str, Any]) -> None:
    errors = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in NODE.iter_errors(node)]
    assert not errors, errors


class CallerSignal(Exception):
    """What a caller's own signal handler raises in the thread running WorkerHost.run."""


def raise_while_the_worker_runs(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    """The exception arrives while the host reads the worker's output (where a signal handler of
    the caller runs: the host's thread is blocked on the pipe)."""
    feed = TestStreamReader.feed

    def feeding(self: TestStreamReader, line: str) -> Any:
        if MARK in line:
            raise error
        return feed(self, line)

    monkeypatch.setattr(TestStreamReader, "feed", feeding)


def signalled_round(world: HostWorld, *effects: Callable[[FakeStart], None]) -> Round:
    def effect(start: FakeStart) -> None:
        for one in effects:
            one(start)

    return Round(
        lines=(session_line("s-1"), tool_line("Bash", MARK)),
        hang=True,
        transcript="s-1",
        effects=effect,
    )


# --- 1. an exception from outside ends the run interrupted, then goes on ------------------------


ENDINGS = [
    pytest.param(KeyboardInterrupt(), "KeyboardInterrupt was raised", id="KeyboardInterrupt"),
    pytest.param(SystemExit(3), "SystemExit(3) was raised", id="SystemExit"),
    pytest.param(
        CallerSignal("SIGHUP: reload"),
        "CallerSignal: SIGHUP: reload was raised",
        id="the caller's signal handler",
    ),
]


@pytest.mark.req("Every run leaves a final record")
@pytest.mark.req("Nothing but the trace outlives a worker")
@pytest.mark.parametrize(("error", "said"), ENDINGS)
def test_an_exception_while_the_worker_runs_ends_the_run_interrupted_and_goes_on(
    monkeypatch: pytest.MonkeyPatch, error: BaseException, said: str
) -> None:
    world = HostWorld()
    raise_while_the_worker_runs(monkeypatch, error)
    with pytest.raises(type(error)) as raised:
        world.run([signalled_round(world)], limits={"timeout_seconds": 60})
    assert raised.value is error  # the caller's own exception goes on, unchanged
    node = world.run_node(RUN_DIR)
    assert_node(node)
    assert (node["status"], node["outcome"]) == ("failed", "interrupted")
    link = node["error"]
    assert link["code"] == "interrupted" and link["unhandled"]["reason"] == "environment"
    assert link["detail"] == (
        f"round 1: {said} in the process running the run during its worker phase and ended it"
    )
    assert "could not be started" not in json.dumps(node)
    # the round ran: its node is closed as interrupted, its group killed, its audit done
    round_node = world.round_node(1, RUN_DIR)
    assert_node(round_node)
    assert (round_node["status"], round_node["outcome"]) == ("failed", "interrupted")
    assert round_node["ended_at"] is not None
    assert round_node["content"]["audit"]["verdict"] == "clean"
    assert world.runner.kills == [world.runner.handles[0].pid]
    # the cleanup ran: no credential copy, no runtime directory; the progress file finished
    assert not world.exists(CREDENTIAL_COPY) and world.runtime_dirs() == []
    assert (world.status(RUN_DIR)["phase"], world.status(RUN_DIR)["status"]) == (
        "finished",
        "interrupted",
    )
    # and `show` reads the same ending back
    rebuilt = read_record(world.fs, RUN_DIR)
    assert isinstance(rebuilt, RunRecord) and rebuilt.error is not None
    assert rebuilt.error.code == "interrupted" and rebuilt.transcript is not None


@pytest.mark.req("Every round is audited")
def test_an_interrupted_round_still_reports_its_write_outside_rw(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = HostWorld()
    raise_while_the_worker_runs(monkeypatch, KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        world.run(
            [signalled_round(world, write_file(world, "docs/notes.md"))],
            limits={"timeout_seconds": 60},
        )
    node = world.run_node(RUN_DIR)
    assert node["error"]["code"] == "interrupted"
    assert "docs/notes.md" in node["error"]["detail"]
    assert world.round_node(1, RUN_DIR)["content"]["audit"]["verdict"] == "violation"


@pytest.mark.req("Every run leaves a final record")
def test_a_round_validation_that_raises_what_is_no_exception_ends_the_run_interrupted() -> None:
    world = HostWorld()

    def validate(_: ValidationInput) -> ValidationOutcome:
        raise SystemExit(2)

    with pytest.raises(SystemExit):
        world.run([Round.ok(ok_result())], validate)
    node = world.run_node(RUN_DIR)
    assert (node["status"], node["outcome"]) == ("failed", "interrupted")
    assert node["error"]["detail"] == (
        "round 1: SystemExit(2) was raised in the process running "
        "the run during its validation phase and ended it"
    )
    assert world.round_node(1, RUN_DIR)["outcome"] == "interrupted"
    assert world.runtime_dirs() == []


@pytest.mark.req("Every run leaves a final record")
def test_an_exception_before_any_round_ends_the_run_interrupted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = HostWorld()

    def prepare(self: Preparer, *args: Any, **kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(Preparer, "prepare", prepare)
    with pytest.raises(KeyboardInterrupt):
        world.run([Round.ok(ok_result())])
    node = world.run_node(RUN_DIR)
    assert (node["outcome"], node["error"]["code"]) == ("interrupted", "interrupted")
    assert node["error"]["detail"] == (
        "KeyboardInterrupt was raised in the process running the "
        "run during its preparing phase and ended it"
    )
    assert node["content"]["rounds"] == 0 and world.runtime_dirs() == []


@pytest.mark.req("Nothing but the trace outlives a worker")
@pytest.mark.req("Every run leaves a final record")
@pytest.mark.parametrize("where", ["remove", "rmtree", "write_atomic"])
def test_a_second_exception_during_the_cleanup_does_not_stop_it(
    monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """A second KeyboardInterrupt (a second Ctrl-C, the caller's signal handler again) that
    arrives while the host cleans up after the first: the cleanup still finishes — the
    credential copy first, the runtime directory, the final record — and then it goes on."""
    world = HostWorld()
    raise_while_the_worker_runs(monkeypatch, KeyboardInterrupt())
    fs_type = type(world.fs)
    original = getattr(fs_type, where)
    raised: list[str] = []

    def interrupted_once(self: Any, path: str, *args: Any, **kwargs: Any) -> Any:
        hit = {
            "remove": path == CREDENTIAL_COPY,
            "rmtree": path == RUNTIME_DIR,
            "write_atomic": path.endswith(f"{RUN_ID}/trace.json"),
        }[where]
        if hit and not raised and world.runner.handles:
            raised.append(path)
            raise KeyboardInterrupt("the second one")
        return original(self, path, *args, **kwargs)

    monkeypatch.setattr(fs_type, where, interrupted_once)
    with pytest.raises(KeyboardInterrupt):
        world.run([signalled_round(world)], limits={"timeout_seconds": 60})
    assert raised  # the second exception did arrive mid-cleanup
    assert not world.exists(CREDENTIAL_COPY) and world.runtime_dirs() == []
    node = world.run_node(RUN_DIR)
    assert (node["status"], node["outcome"]) == ("failed", "interrupted")
    assert world.status(RUN_DIR)["phase"] == "finished"


@pytest.mark.req("Every retry is recorded")
def test_an_exception_during_the_retry_delay_records_no_retry() -> None:
    world = HostWorld()

    def interrupted(seconds: float, interrupt: Any = None) -> bool:
        raise KeyboardInterrupt

    world.clock.sleep = interrupted  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        world.run([Round.transient(), Round.ok(ok_result())])
    assert len(world.runner.starts) == 1
    node = world.round_node(1, RUN_DIR)
    assert node["content"]["transient"] == {
        "error": "API Error: 529 Overloaded",
        "retried": False,
        "delay_seconds": None,
    }
    assert node["outcome"] == "interrupted"
    assert "waiting phase" in world.run_node(RUN_DIR)["error"]["detail"]


# --- 2. an answer the record cannot keep: validation_unavailable --------------------------------


UNKEEPABLE = [
    pytest.param(
        ValidationOutcome(evidence=[{"check": "unit", "when": object()}]),
        "its evidence[0].when is a object, which JSON cannot hold",
        id="an object",
    ),
    pytest.param(
        ValidationOutcome(evidence=[{"at": datetime.datetime(2026, 1, 1)}]),
        "its evidence[0].at is a datetime, which JSON cannot hold",
        id="a datetime",
    ),
    pytest.param(
        ValidationOutcome(evidence=[{"ratio": float("nan")}]),
        "its evidence[0].ratio is nan, which JSON cannot hold",
        id="NaN",
    ),
    pytest.param(
        ValidationOutcome(evidence=[{"logs": [b"raw"]}]),
        "its evidence[0].logs[0] is a bytes, which JSON cannot hold",
        id="bytes",
    ),
    pytest.param(
        ValidationOutcome(evidence=[{1: "one"}]),
        "its evidence[0] has the key 1, which is no text",
        id="a number as key",
    ),
    pytest.param(
        ValidationOutcome(evidence=["passed"]),  # type: ignore[list-item]
        "its evidence[0] is a str, not an object",
        id="a text as evidence",
    ),
    pytest.param(
        ValidationOutcome(evidence={"check": "unit"}),  # type: ignore[arg-type]
        "its evidence is a dict, not a list of objects",
        id="one object",
    ),
    pytest.param(
        ValidationOutcome(repair=42),  # type: ignore[arg-type]
        "its repair is a int, not a text",
        id="a number as repair",
    ),
    pytest.param(
        ValidationOutcome(violation=LinkAnswer(code=None)),  # type: ignore[arg-type]
        "its violation names no code (code None)",
        id="a violation without a code",
    ),
    pytest.param(
        ValidationOutcome(unavailable=LinkAnswer("checks_unavailable", causes=["the runner died"])),  # type: ignore[list-item]
        "its unavailable has causes that are not error links",
        id="causes that are no links",
    ),
]


@pytest.mark.req("The round validation's answer is recorded")
@pytest.mark.req("Every run leaves a final record")
@pytest.mark.parametrize(("answer", "problem"), UNKEEPABLE)
def test_an_answer_the_record_cannot_keep_is_validation_unavailable(
    answer: ValidationOutcome, problem: str
) -> None:
    world = HostWorld()
    record = world.run([Round.ok(ok_result())], lambda _: answer)  # returned, never raised
    assert record.error is not None and record.error.code == "validation_unavailable"
    assert record.error.unhandled.reason.value == "capability"
    assert record.error.detail == (
        f"round 1: the round validation could not validate: it gave a malformed answer: {problem}"
    )
    assert RECORD.is_valid(record.to_json())
    node = world.run_node(RUN_DIR)
    assert_node(node)
    assert (node["status"], node["error"]["code"]) == ("failed", "validation_unavailable")
    round_node = world.round_node(1, RUN_DIR)
    assert_node(round_node)
    assert round_node["content"]["validation"] == (
        f"the round validation gave a malformed answer: {problem}"
    )
    assert round_node["content"]["evidence"] == []
    assert world.runtime_dirs() == []


# --- 4. a retry continues the session a round named ---------------------------------------------


@pytest.mark.req("A retry continues the session")
def test_a_retry_continues_the_named_session_even_before_its_transcript_is_written() -> None:
    world = HostWorld()
    record = world.run(
        [
            Round.transient("529 Overloaded", session="s-9", transcript=False),
            Round.ok(ok_result(), session="s-9"),
        ]
    )
    first, retry = world.runner.starts
    assert retry.argv[1:] == ("retry", "s-9")  # --resume s-9: the session the round named
    assert retry.stdin_text != first.stdin_text  # the retry prompt, not the brief again
    assert retry.stdin_text is not None and "529 Overloaded" in retry.stdin_text
    assert record.status == "ok" and [r.prompt for r in record.rounds] == ["initial", "retry"]


@pytest.mark.req("A retry continues the session")
def test_a_retry_continues_the_named_session_also_when_the_worktree_changed() -> None:
    world = HostWorld()
    record = world.run(
        [
            Round.transient(
                session="s-9", transcript=False, effects=write_file(world, "src/app/a.py")
            ),
            Round.ok(ok_result(), session="s-9"),
        ]
    )
    assert world.runner.starts[1].argv[1:] == ("retry", "s-9")
    assert record.status == "ok"


# --- 5. the error's evidence names only files that exist -------------------------------------


@pytest.mark.req("A failed run explains itself")
def test_a_run_that_kept_no_transcript_names_none_in_its_evidence() -> None:
    world = HostWorld()
    # pi prints its session header first and writes the session file only after its first
    # answer: a round that ends before it names a session that has no transcript
    record = world.run([Round(lines=(session_line("s-1"), error_line("400 bad request")), exit=1)])
    assert record.transcript is None
    assert record.error is not None and record.error.code == "pi_failed"
    kinds = [e.kind for e in record.error.evidence]
    assert "transcript" not in kinds and "trace" in kinds
    stored = world.run_node(RUN_DIR)["error"]
    assert [e["kind"] for e in stored["evidence"]] == kinds
    assert not world.exists(f"{RUN_DIR}/transcript.jsonl")


@pytest.mark.req("A failed run explains itself")
def test_a_run_that_kept_its_transcript_names_it() -> None:
    world = HostWorld()
    record = world.run([Round.failed("400 bad request", transcript="s-1")])
    assert record.transcript == f"{RUN_DIR}/transcript.jsonl"
    assert record.error is not None
    (named,) = [e for e in record.error.evidence if e.kind == "transcript"]
    assert named.ref == record.transcript and world.exists(named.ref)


# --- 6. a round node lists its stderr.log; an interrupted round says so -----------------------


@pytest.mark.req("Every round keeps its standard error")
def test_a_round_node_lists_its_stderr_log_with_its_digest() -> None:
    world = HostWorld()
    world.run([Round.failed("boom", stderr=b"warning: something\n", transcript="s-1")])
    node = world.round_node(1, RUN_DIR)
    assert_node(node)
    assert node["files"] == [{"path": "stderr.log", "digest": digest_text("warning: something\n")}]
    assert world.stderr(1, RUN_DIR) == b"warning: something\n"


def test_a_round_that_kept_an_empty_stderr_still_lists_it() -> None:
    world = HostWorld()
    world.run([Round.ok(ok_result())])
    assert [f["path"] for f in world.round_node(1, RUN_DIR)["files"]] == ["stderr.log"]


def test_a_round_whose_command_could_not_start_lists_no_file() -> None:
    world = HostWorld()
    world.run([Round(fail_to_start="No such file or directory")])
    assert world.round_node(1, RUN_DIR)["files"] == []


@pytest.mark.req("Every run leaves a final record")
def test_a_cancelled_rounds_node_says_interrupted() -> None:
    world = HostWorld()
    cancel = Cancellation()
    record = world.run(
        [Round.timeout(effects=lambda _: cancel.cancel("SIGTERM"))],
        cancel=cancel,
        limits={"timeout_seconds": 60},
    )
    assert record.error is not None and record.error.code == "interrupted"
    node = world.round_node(1, RUN_DIR)
    assert (node["status"], node["outcome"]) == ("failed", "interrupted")
    assert world.run_node(RUN_DIR)["outcome"] == "interrupted"


def test_a_refusal_is_no_interruption() -> None:
    world = HostWorld()
    refusal = Refusal(code="pi_runtime_missing", reason="environment", message="no pi")
    record = world.run([], refusal=refusal)
    assert record.error is not None and record.error.code == "pi_runtime_missing"
    assert world.run_node(RUN_DIR)["outcome"] == "failed"
