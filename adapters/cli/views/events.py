"""`run … --events` (issue 21 §5): each event of the run as one JSON line on stdout, written
whole and flushed as it comes (a lock: the host tells events from its round and reader
threads), every control or format character of worker text a JSON escape."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, TextIO

from concorde_workers.domain.ground.text import json_document

__all__ = ["JsonLinesEvents"]


class JsonLinesEvents:
    """The real `RunEvents`: JSON Lines on a text stream."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._lock = threading.Lock()

    def emit(self, event: Mapping[str, Any]) -> None:
        line = json_document(dict(event), indent=None) + "\n"
        with self._lock:
            self._out.write(line)
            self._out.flush()
