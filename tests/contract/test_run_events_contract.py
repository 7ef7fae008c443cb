"""The RunEvents contract (issue 21 §5): the CLI's JSON Lines writer and the recording fake hand
over the same events, in order, whole; a watcher that is gone raises OSError, which ends the
stream and never the run (application/runtime/events.py)."""

from __future__ import annotations

import io
import json
import threading
from typing import Any

import pytest
from fakes.events import RecordedEvents

from concorde_workers.adapters.cli.views.events import JsonLinesEvents
from concorde_workers.application.runtime.events import EventEmitter
from concorde_workers.container import PROFILES
from concorde_workers.domain.evidence.events import EventKind, event


class Closed(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


class World:
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.stream = io.StringIO()
        self.fake = RecordedEvents()
        self.sink: Any = JsonLinesEvents(self.stream) if kind == "jsonl" else self.fake

    def told(self) -> list[dict[str, Any]]:
        if self.kind == "jsonl":
            return [json.loads(line) for line in self.stream.getvalue().splitlines()]
        return self.fake.events

    def close(self) -> None:
        if self.kind == "jsonl":
            self.sink = JsonLinesEvents(Closed())
        else:
            self.fake.gone()


@pytest.fixture(params=["jsonl", "fake"])
def world(request: pytest.FixtureRequest) -> World:
    return World(request.param)


EVENTS = [
    event(EventKind.ROUND_STARTED, "w-1", "2026-12-04T10:00:00Z", round=1, prompt="initial"),
    event(
        EventKind.TOOL_CALL,
        "w-1",
        "2026-12-04T10:00:01Z",
        round=1,
        tool="Bash",
        target="printf '\x1b]0;x\x07'",
        decision="allowed",
        reason="",
    ),
]


def test_events_are_handed_over_whole_and_in_order(world: World) -> None:
    for item in EVENTS:
        world.sink.emit(item)
    assert world.told() == EVENTS


def test_many_threads_never_interleave_an_event(world: World) -> None:
    def tell(n: int) -> None:
        for i in range(50):
            world.sink.emit({**EVENTS[1], "target": f"{n}-{i}" * 50})

    threads = [threading.Thread(target=tell, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(world.told()) == 200


def test_a_watcher_that_is_gone_raises_an_os_error(world: World) -> None:
    world.close()
    with pytest.raises(OSError):
        world.sink.emit(EVENTS[0])


def test_the_emitter_stops_telling_a_watcher_that_is_gone_and_goes_on(world: World) -> None:
    class Clock:
        def now_utc(self) -> Any:
            import datetime

            return datetime.datetime(2026, 12, 4, tzinfo=datetime.UTC)

    world.close()
    emitter = EventEmitter(world.sink, Clock(), "w-1", PROFILES["pi"])  # type: ignore[arg-type]
    emitter.output_line(1, "{}")
    emitter._tell(EventKind.ROUND_STARTED, round=1, prompt="initial")  # raises nothing
    assert emitter._sink is None


def test_the_jsonl_writer_keeps_a_line_a_terminal_cannot_be_steered_by() -> None:
    stream = io.StringIO()
    JsonLinesEvents(stream).emit(EVENTS[1])
    line = stream.getvalue()
    assert line.count("\n") == 1 and "\x1b" not in line and "\\u001b" in line
