"""`run … --events` (issue 21 §5): stdout holds the run's events and nothing else, one JSON
object a line, each valid against the stream's schema; the account goes to stderr."""

from __future__ import annotations

import json

import jsonschema
from fakes.agent import Round
from unit.cli.test_cli_run import RESULT, world

from concorde_workers.domain.evidence.events import EVENT_SCHEMA


def test_stdout_holds_the_events_and_stderr_the_account() -> None:
    made = world(Round.ok(RESULT))
    result = made.run("--events")
    assert result.status == 0, result.err
    events = [json.loads(line) for line in result.out.splitlines()]
    validator = jsonschema.Draft202012Validator(EVENT_SCHEMA)
    assert all(not list(validator.iter_errors(e)) for e in events), events
    assert events[0]["event"] == "run_started"
    assert events[-1]["event"] == "run_ended" and events[-1]["status"] == "ok"
    run_id = events[0]["run_id"]
    assert f"\nrun {run_id}: ok\n" in result.err  # the account, on stderr
    assert "rounds (1)" in result.err and "rounds (1)" not in result.out


def test_with_json_the_record_goes_to_stderr_too() -> None:
    made = world(Round.ok(RESULT))
    result = made.run("--events", "--json")
    assert result.status == 0
    assert all(
        json.loads(line)["schema"] == "concorde-workers.event" for line in result.out.splitlines()
    )
    assert json.loads(result.err[result.err.index("{") :])["status"] == "ok"


def test_an_event_s_worker_text_is_bounded_and_its_schema_holds_it() -> None:
    from concorde_workers.domain.evidence.events import TEXT_LIMIT, EventKind, bounded, event

    long = "x" * (TEXT_LIMIT + 500)
    assert bounded(long) == "x" * TEXT_LIMIT + " …"
    made = event(
        EventKind.TOOL_CALL,
        "w-1",
        "2026-12-04T10:00:00Z",
        round=1,
        tool="Bash",
        target=bounded(long),
        decision="allowed",
        reason="",
    )
    assert not list(jsonschema.Draft202012Validator(EVENT_SCHEMA).iter_errors(made))
    too_long = {**made, "target": long}
    assert list(jsonschema.Draft202012Validator(EVENT_SCHEMA).iter_errors(too_long))
