"""What the host keeps of the lines an agent program prints but the host does not use, so its
memory follows what it needs, not what the agent prints (issue 9 §2; docs/decisions.md
"Memory that follows what the agent prints").

- An overlong line — longer than `MAX_LINE_BYTES` — is dropped by the process runner as it
  arrives and only counted (`Overlong`): no line the host reads (Claude Code's result envelope,
  pi's assistant messages and tool events) comes near the limit, and a line at the limit parses
  into at most a few tens of megabytes.
- An ignored line — one the backend's stream reader cannot use, such as text that is no JSON
  object — is counted, and only the last `IGNORED_KEPT` are kept, each cut to
  `IGNORED_KEPT_CHARS` characters (`IgnoredLines`).

What a reader parsed is given on once (`WatchedOutput`): each line that is a JSON object goes, as
the reader parsed it, to whoever watches the output (the run's events, which tell the tool calls
from it: issue 34 §5, one parse a line).

`stdout_note` turns both into the note the round's trace keeps under its content's `agent`
object, beside the backend's own report: `agent.stdout` (absent when nothing was dropped or
ignored). The `agent` object's schema is an open object and the run record copies only its
`claude` and `pi` keys, so the note widens no contract of seed 002.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "IGNORED_KEPT",
    "IGNORED_KEPT_CHARS",
    "MAX_LINE_BYTES",
    "STDOUT_NOTE_KEY",
    "IgnoredLines",
    "OutputObject",
    "Overlong",
    "WatchedOutput",
    "stdout_note",
]

OutputObject = Callable[[Mapping[str, Any]], None]
"""What takes each line of an agent's output that is a JSON object, as the reader parsed it."""


class WatchedOutput:
    """The part every stream reader shares: `watch` names who takes each JSON object line the
    reader parsed, and the reader gives it on with `_parsed` (StreamReader.watch)."""

    _watcher: OutputObject | None = None

    def watch(self, sink: OutputObject) -> None:
        self._watcher = sink

    def _parsed(self, value: object) -> None:
        if self._watcher is not None and isinstance(value, dict):
            self._watcher(value)


MAX_LINE_BYTES = 2 * 1024 * 1024
"""The longest stdout line the host reads, in bytes before its "\\n" (a "\\r" counts)."""

IGNORED_KEPT = 5
"""How many of the last ignored lines a round keeps."""

IGNORED_KEPT_CHARS = 300
"""How much of each kept ignored line is kept (its first characters)."""

STDOUT_NOTE_KEY = "stdout"
"""The key of the note in the round trace content's `agent` object."""


@dataclass(frozen=True)
class Overlong:
    """The stdout lines a process runner dropped because they were longer than `limit` bytes:
    how many, and how many bytes they held together."""

    lines: int = 0
    bytes: int = 0
    limit: int = MAX_LINE_BYTES

    def adding(self, size: int) -> Overlong:
        """This count with one more dropped line of `size` bytes."""
        return Overlong(lines=self.lines + 1, bytes=self.bytes + size, limit=self.limit)


class IgnoredLines:
    """The lines a stream reader did not use: all counted, the last `keep` kept (each cut to
    `chars` characters)."""

    def __init__(self, keep: int = IGNORED_KEPT, chars: int = IGNORED_KEPT_CHARS) -> None:
        if keep < 0 or chars < 0:
            raise ValueError("keep and chars must not be negative")
        self.count = 0
        self._chars = chars
        self._last: deque[str] = deque(maxlen=keep)

    def add(self, line: str) -> None:
        self.count += 1
        self._last.append(line[: self._chars])

    @property
    def last(self) -> list[str]:
        """The last ignored lines, oldest first, each cut."""
        return list(self._last)


def stdout_note(ignored: IgnoredLines, overlong: Overlong) -> dict[str, Any] | None:
    """The round trace's `agent.stdout` note: how many lines the host ignored (and the last of
    them, cut) and how many overlong lines it dropped (their bytes, and the limit), or None when
    it ignored and dropped nothing."""
    if ignored.count == 0 and overlong.lines == 0:
        return None
    return {
        "ignored": ignored.count,
        "ignored_last": ignored.last,
        "overlong": overlong.lines,
        "overlong_bytes": overlong.bytes,
        "line_limit_bytes": overlong.limit,
    }
