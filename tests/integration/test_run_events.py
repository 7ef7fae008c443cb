"""The event stream of a run (issue 21 §5) over every ending, for real: `WorkerHost.run` with the
real Git and the test agent program, its events recorded. Every event validates against the
stream's schema (domain/evidence/events.py), the stream opens with `run_started` and closes with
`run_ended` telling the record's status and code, each round is told once when it starts and its
audit once, however often its node is written."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from fakes.events import RecordedEvents
from fakes.program_backend import Step
from integration.host_fixtures import HostHarness, HostRun, ok_result
from integration.test_host_real import OPEN, cancel_here, harness, timeout_here
from timing import SLOW

from concorde_workers.application.runtime.cancellation import Cancellation
from concorde_workers.application.runtime.validation import ValidationInput, ValidationOutcome
from concorde_workers.domain.evidence.events import EVENT_SCHEMA

pytestmark = pytest.mark.integration
__all__ = ["harness"]

MAIN = "{worktree}/src/app/main.py"
VALIDATOR = jsonschema.Draft202012Validator(EVENT_SCHEMA)


def told(run: HostRun, events: RecordedEvents) -> list[str]:
    for item in events.events:
        problems = [e.message for e in VALIDATOR.iter_errors(item)]
        assert not problems, (item, problems)
        assert item["run_id"] == run.record.run_id
    kinds = events.kinds()
    assert kinds[0] == "run_started" and kinds[-1] == "run_ended", kinds
    end = events.events[-1]
    assert end["status"] == run.record.status and end["code"] == run.code
    assert end["rounds"] == len(run.record.rounds)
    assert kinds.count("round_started") == len(run.record.rounds)
    return kinds


def limits(**fields: Any) -> Any:
    from concorde_workers.domain.configuration.request import Limits

    return Limits(
        **{"timeout_seconds": SLOW, "rounds": 0, "retries": 0, "retry_delay_seconds": 0, **fields}
    )


def test_an_ok_run_tells_its_round_audit_and_deletion(harness: HostHarness) -> None:
    events = RecordedEvents()
    run = harness.run(
        [
            *OPEN,
            Step.write("{worktree}/src/app/scratch.py", "x\n"),
            Step.write(MAIN, "changed\n"),
            Step.result(ok_result("src/app/scratch.py")),
        ],
        events=events,
    )
    assert run.record.status == "ok", run.record.error
    assert told(run, events) == [
        "run_started",
        "round_started",
        "resources",
        "audit",
        "deletion",
        "run_ended",
    ]
    audit = events.events[3]
    assert audit["verdict"] == "clean" and audit["changed"] == [
        "src/app/main.py",
        "src/app/scratch.py",
    ]
    assert events.events[4]["path"] == "src/app/scratch.py"
    assert events.events[4]["outcome"] == "deleted"


def test_the_limits_in_force_and_each_round_s_peaks_are_told_as_the_record_keeps_them(
    harness: HostHarness,
) -> None:
    """Issue 31 §5: run_started carries the limits in force; each round's resources event what
    its rounds/<n>/resources.json (listed in the round's node with its digest) says of them."""
    events = RecordedEvents()
    run = harness.run([*OPEN, Step.result(ok_result())], events=events)
    assert run.record.status == "ok", run.record.error
    told(run, events)
    kept = json.loads((run.run_dir / "rounds" / "1" / "resources.json").read_text())
    started = events.events[0]
    assert (
        started["limits"]
        == kept["limits"]
        == {
            "processes": 512,
            "memory_mib": 1024,
            "cpu_weight": 100,
            "space_mib": 512,
        }
    )
    said = next(e for e in events.events if e["event"] == "resources")
    assert said["round"] == 1 and said["enforced"] is kept["enforced"] is True
    for key in ("memory_peak_bytes", "processes_peak", "cpu_seconds", "oom_kills"):
        assert said[key] == kept[key], key
    assert said["processes_peak"] >= 1 and said["limits_reached"] == []


def test_a_violation_is_told_in_the_audit_and_the_end(harness: HostHarness) -> None:
    events = RecordedEvents()
    run = harness.run(
        [*OPEN, Step.write("{worktree}/src/app/util.py", "x\n"), Step.result(ok_result())],
        events=events,
        limits=limits(),
    )
    assert run.code == "audit_violation"
    told(run, events)
    audit = next(e for e in events.events if e["event"] == "audit")
    assert audit["verdict"] == "violation" and audit["violations"] == ["src/app/util.py"]


def test_a_retry_and_a_repair_are_told_once_each(harness: HostHarness) -> None:
    events = RecordedEvents()

    def validation(given: ValidationInput) -> ValidationOutcome:
        return ValidationOutcome(repair="again" if given.round == 2 else None)

    run = harness.run(
        [*OPEN, Step.error("API Error: 529 Overloaded"), Step.exit(1)],
        [*OPEN, Step.write(MAIN, "a\n"), Step.result(ok_result())],
        [*OPEN, Step.write(MAIN, "b\n"), Step.result(ok_result())],
        validation=validation,
        events=events,
        limits=limits(rounds=1, retries=1),
    )
    assert run.record.status == "ok", run.record.error
    kinds = told(run, events)
    assert kinds.count("retry") == 1 and kinds.count("audit") == 3
    assert [e["prompt"] for e in events.events if e["event"] == "round_started"] == [
        "initial",
        "retry",
        "repair",
    ]
    retry = next(e for e in events.events if e["event"] == "retry")
    assert retry["round"] == 1 and "529" in retry["error"] and retry["retried"] is True


@pytest.mark.parametrize(
    "ending",
    ["worker_failed", "worker_timeout", "claude_failed", "worker_result_invalid", "interrupted"],
)
def test_every_ending_closes_the_stream_with_its_code(harness: HostHarness, ending: str) -> None:
    events = RecordedEvents()
    cancel = Cancellation()
    deadline = None
    steps: list[Any] = {
        "worker_failed": [
            Step.result(
                ok_result(
                    status="failed",
                    error={
                        "code": "cannot",
                        "detail": "it cannot",
                        "evidence": [],
                        "attempts": [],
                        "unhandled": {"reason": "capability", "explanation": "no"},
                        "options": [],
                        "recommendation": "",
                    },
                )
            )
        ],
        "claude_failed": [Step.crash("raise")],
        "worker_result_invalid": [Step.line("text", text="I am done")],
        "interrupted": [
            cancel_here(harness, cancel, "the operation run was cancelled"),
            Step.sleep(3600),
        ],
    }.get(ending, [])
    if ending == "worker_timeout":
        deadline, at = timeout_here(harness)
        steps = [at, Step.sleep(3600)]
    run = harness.run(
        [*OPEN, *steps], events=events, cancel=cancel, deadline=deadline, limits=limits()
    )
    assert run.code == ending
    told(run, events)
    assert events.events[-1]["detail"] == run.record.error.detail  # type: ignore[union-attr]


def test_a_watcher_that_goes_away_ends_the_stream_and_not_the_run(harness: HostHarness) -> None:
    events = RecordedEvents()
    events.gone()
    run = harness.run([*OPEN, Step.write(MAIN, "x\n"), Step.result(ok_result())], events=events)
    assert run.record.status == "ok", run.record.error
    assert events.events == []
