"""Where Codex keeps a thread's rollout, the run's transcript (issue 33 §1): below CODEX_HOME,
`sessions/YYYY/MM/DD/rollout-<time>-<thread>.jsonl`, found by its thread's suffix three
folders down (adapters/codex/transcript.py reads its lines)."""

from __future__ import annotations

import posixpath

from concorde_workers.adapters.codex import layout
from concorde_workers.domain.ground.layout import RuntimeLayout
from concorde_workers.domain.ground.paths import EntryKind
from concorde_workers.ports.machine.filesystem import FileSystemError, TreeReading

__all__ = ["find_rollout", "rollout_text"]

_DEPTH = 3  # YYYY/MM/DD


def find_rollout(fs: TreeReading, runtime: RuntimeLayout, thread: str | None) -> str | None:
    """The thread's rollout in the run's CODEX_HOME; None while there is none (or no thread)."""
    if not thread:
        return None
    return _walk(fs, layout.sessions(runtime), _DEPTH, f"-{thread}.jsonl")


def rollout_text(fs: TreeReading, runtime: RuntimeLayout, thread: str) -> str | None:
    """The thread's rollout as text; None when there is none or it cannot be read."""
    path = find_rollout(fs, runtime, thread)
    if path is None:
        return None
    try:
        return fs.read_text(path)
    except (FileSystemError, UnicodeDecodeError):
        return None


def _walk(fs: TreeReading, folder: str, depth: int, suffix: str) -> str | None:
    try:
        entries = sorted(fs.listdir(folder), key=lambda e: e.name)
    except FileSystemError:
        return None
    for entry in entries:
        path = posixpath.join(folder, entry.name)
        if depth == 0:
            if entry.kind is EntryKind.FILE and entry.name.endswith(suffix):
                return path
        elif entry.kind is EntryKind.DIRECTORY:
            found = _walk(fs, path, depth - 1, suffix)
            if found is not None:
                return found
    return None
