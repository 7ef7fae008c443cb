"""What a run's report shows (issue 21 §3), gathered from its run directory alone: a report
works on a trace copied to another machine.

Everything is read bounded through application/tracing/reader.py; what cannot be read is said
(`problems`), never raised: a damaged trace still gets a report of what is left.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Any

from concorde_workers.application.preparation.request_notes import read_grant
from concorde_workers.application.tracing.calls import ToolCall, tool_calls
from concorde_workers.application.tracing.reader import (
    digest_failures,
    read_patch,
    read_programs,
    read_record,
    read_resources,
)
from concorde_workers.domain.configuration.profile import Profiles, programs_of
from concorde_workers.domain.configuration.program_versions import ProgramVersion
from concorde_workers.domain.evidence.records import RunRecord
from concorde_workers.domain.ground.json_limits import MAX_TRANSCRIPT_BYTES
from concorde_workers.domain.ground.layout import TRANSCRIPT_FILE
from concorde_workers.domain.ground.paths import EntryKind
from concorde_workers.ports.machine.filesystem import BoundedReading, FileSystemError

__all__ = ["MAX_TRANSCRIPT_BYTES", "ReportInput", "gather"]


@dataclass
class ReportInput:
    run_dir: str
    record: RunRecord | None
    problems: list[str] = field(default_factory=list)
    programs: tuple[ProgramVersion, ...] = ()
    resources: dict[int, dict[str, Any]] = field(default_factory=dict)
    patches: dict[int, str | None] = field(default_factory=dict)
    grant: dict[str, Any] | None = None
    calls: list[ToolCall] = field(default_factory=list)
    check_logs: dict[tuple[int, str], str] = field(default_factory=dict)
    """The tail of each check's log, by (round, check id), read in the run directory itself
    (`rounds/<n>/checks/<id>/output.log`: the evidence's absolute path may name another
    machine's)."""


LOG_TAIL_BYTES = 4096
MAX_LOG_BYTES = 64 * 1024 * 1024


def _check_logs(fs: BoundedReading, run_dir: str, record: RunRecord) -> dict[tuple[int, str], str]:
    found: dict[tuple[int, str], str] = {}
    for r in record.rounds:
        for item in r.evidence or ():
            check = item.get("check")
            if not isinstance(check, str) or "/" in check or check in ("", ".", ".."):
                continue
            path = posixpath.join(run_dir, "rounds", str(r.round), "checks", check, "output.log")
            try:
                stat = fs.stat(path)
                if stat.kind is not EntryKind.FILE or stat.size > MAX_LOG_BYTES:
                    continue
                data = fs.read_bytes(path)[-LOG_TAIL_BYTES:]
            except FileSystemError:
                continue
            found[(r.round, check)] = data.decode("utf-8", "replace")
    return found


def _transcript(fs: BoundedReading, run_dir: str, problems: list[str]) -> list[str]:
    path = posixpath.join(run_dir, TRANSCRIPT_FILE)
    try:
        found = fs.stat(path)
        if found.kind is not EntryKind.FILE:
            problems.append(f"{path} is not a regular file: its tool calls are not shown")
            return []
        if found.size > MAX_TRANSCRIPT_BYTES:
            problems.append(
                f"{path} holds {found.size} bytes, past the {MAX_TRANSCRIPT_BYTES} "
                "a report reads: its tool calls are not shown"
            )
            return []
        data = fs.read_regular(path, MAX_TRANSCRIPT_BYTES)  # as opened: no link, no FIFO
    except FileSystemError as error:
        if not error.not_found:
            problems.append(f"{path} cannot be read: {error.os_error_text}")
        return []
    return data.decode("utf-8", "replace").splitlines()


def gather(fs: BoundedReading, run_dir: str, profiles: Profiles) -> ReportInput:
    """Everything the report shows of the run in `run_dir`, as the registered backends'
    `profiles` read it (their programs, their transcripts)."""
    record = read_record(fs, run_dir)
    if not isinstance(record, RunRecord):
        return ReportInput(
            run_dir=run_dir, record=None, problems=[f"the trace is damaged: {record.message}"]
        )
    made = ReportInput(run_dir=run_dir, record=record)
    rounds = len(record.rounds)
    made.programs = read_programs(fs, run_dir, programs_of(profiles))
    made.resources = read_resources(fs, run_dir, rounds)
    made.patches = {n: read_patch(fs, run_dir, n) for n in range(1, rounds + 1)}
    made.problems += [
        f"not as the host wrote it: {failure}" for failure in digest_failures(fs, run_dir)
    ]
    made.grant = read_grant(fs, run_dir, made.problems)
    profile = profiles.get(record.backend)
    if profile is None:
        made.problems.append(
            f"the run's backend {record.backend} is none this installation "
            "knows: its tool calls are not shown"
        )
    else:
        made.calls = tool_calls(_transcript(fs, run_dir, made.problems), profile)
    made.check_logs = _check_logs(fs, run_dir, record)
    return made
