"""The StreamReader's watch (issue 34 §5: the events fed by the backend's reader, one parse a
line): Claude Code's, pi's and Codex's readers and the test reader alike give the watcher each
line they take that is a JSON object, as they parsed it, and nothing else; before `watch`, no
one is given anything."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from fakes.agent_stream import TestStreamReader

from concorde_workers.adapters.claude.stream import ClaudeStreamReader
from concorde_workers.adapters.codex.stream import CodexStreamReader
from concorde_workers.adapters.pi.stream import PiStreamReader
from concorde_workers.ports.agents.agent import StreamReader

READERS: dict[str, Callable[[], StreamReader]] = {
    "claude": ClaudeStreamReader,
    "pi": PiStreamReader,
    "codex": CodexStreamReader,
    "test": TestStreamReader,
}
OBJECTS = [{"type": "system", "subtype": "init"}, {"type": "an unknown kind", "n": [1, {}]}]
LINES = [
    json.dumps(OBJECTS[0]),
    "not JSON",
    "[1, 2]",
    '"a string"',
    "",
    json.dumps(OBJECTS[1]),
]


@pytest.mark.parametrize("name", list(READERS))
def test_the_watcher_is_given_each_json_object_line_as_parsed(name: str) -> None:
    reader = READERS[name]()
    assert isinstance(reader, StreamReader)
    given: list[Mapping[str, Any]] = []
    reader.feed(json.dumps({"type": "before the watch"}))
    reader.watch(given.append)
    for line in LINES:
        reader.feed(line)
    assert given == OBJECTS
