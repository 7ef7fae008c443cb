"""The trace writer: one run's node folder, its trace nodes and their artifacts.

Seed 000 "Run directory and runtime directory"; seed 002 (contract.workers.worker-run-trace,
worker-round-trace). `TraceWriter` writes one run's node folder `<parent>/workers/<run-id>/`:
its trace.json at the moments start, update and end, each round's trace.json and stderr.log,
grant.json, brief.md and programs.json (the journal of deletions is `journal`'s). Tracing is
best-effort for the work: a write the operating system refuses is never raised. A refused
trace.json write is never silent either (seed 000): it is recorded in `failures`, which the host
reports as the run's trace_failures. A refused write of another file is kept in
`artifact_failures`, which seed 000 does not count among the trace failures and the host does
not report; the file is then absent from its node's `files`.
"""

from __future__ import annotations

import errno as errno_codes
import json
import posixpath
from dataclasses import dataclass
from typing import Any, Literal

from concorde_workers.domain.evidence.links import trace_write_evidence
from concorde_workers.domain.evidence.records import WORKER_ROUND, WORKER_RUN, NodeFile, TraceNode
from concorde_workers.domain.ground.errors import Evidence
from concorde_workers.domain.ground.layout import (
    BRIEF_FILE,
    DELETIONS_FILE,
    GRANT_FILE,
    PROGRAMS_FILE,
    RESOURCES_FILE,
    STATUS_FILE,
    STDERR_TAIL_BYTES,
    TRANSCRIPT_FILE,
    RunLayout,
)
from concorde_workers.domain.ground.run_id import is_run_id
from concorde_workers.domain.run.changes import CHANGES_FILE
from concorde_workers.ports.machine.clock import Clock
from concorde_workers.ports.machine.filesystem import FileKeeping, FileSystemError

__all__ = ["NODE_FILES", "Moment", "RefusedWrites", "TraceFailure", "TraceWriter", "node_json"]

Moment = Literal["start", "update", "end"]
"""When a trace.json is written (seed 002, trace_failures): at the start, an update, the end."""

NODE_FILES: tuple[str, ...] = (
    STATUS_FILE,
    GRANT_FILE,
    BRIEF_FILE,
    PROGRAMS_FILE,
    TRANSCRIPT_FILE,
    DELETIONS_FILE,
)
"""The files a worker run's node lists with their digests (contract.workers.worker-run-trace;
programs.json and the journal of deletions besides the contract's four)."""


def node_json(node: TraceNode) -> str:
    """A node's trace.json text: the contract's object, indented, UTF-8, ending in a newline."""
    return json.dumps(node.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"


@dataclass(frozen=True)
class TraceFailure:
    """A write of a trace.json the operating system refused: the file, the moment, the error."""

    file: str
    moment: str
    error: str

    def __str__(self) -> str:
        return f"{self.file} ({self.moment}): {self.error}"

    def evidence(self) -> Evidence:
        """The failure as trace-write evidence of the run's error."""
        return trace_write_evidence(self.file, self.moment, self.error)


class RefusedWrites:
    """The account of a run's node folder writes the operating system refused (`TraceWriter`'s).

    `failures` lists the refused writes of the run's and the rounds' trace.json, as the run
    content's `trace_failures` and the returned record's take them ("<file> (<moment>): <error>");
    `final_failures` those of the run node's last `end` write, which only the returned record can
    carry; `failure_evidence()` the same failures as trace-write evidence for a run that does not
    end ok. `artifact_failures` lists the refused writes of grant.json, brief.md, programs.json
    and stderr.log and the node files that could not be digested: not trace failures, and not
    reported (the node's `files` lists only what exists and could be digested).
    """

    def __init__(self) -> None:
        self._failures: list[TraceFailure] = []
        self._final: list[TraceFailure] = []
        self._artifacts: list[str] = []

    @property
    def failures(self) -> list[str]:
        """Every refused trace.json write so far, in order (a copy)."""
        return [str(f) for f in self._failures]

    @property
    def trace_failures(self) -> tuple[TraceFailure, ...]:
        """The same failures as values."""
        return tuple(self._failures)

    @property
    def final_failures(self) -> list[str]:
        """The failure of the run node's latest `end` write, if it was refused (0 or 1 item)."""
        return [str(f) for f in self._final]

    @property
    def artifact_failures(self) -> list[str]:
        """Refused writes of the other files of the node folder, and undigestable node files."""
        return list(self._artifacts)

    def failure_evidence(self) -> tuple[Evidence, ...]:
        """Every refused trace.json write as trace-write evidence."""
        return tuple(f.evidence() for f in self._failures)

    def artifact_failed(self, path: str, error: FileSystemError) -> str:
        """Keep a refused write of another file of the node folder (the journal of deletions,
        a round's artifact) in `artifact_failures`; its text."""
        failure = f"{path}: {error.os_error_text}"
        self._artifacts.append(failure)
        return failure


class TraceWriter(RefusedWrites):
    """Writes one worker run's node folder; records, never raises, every refused write (in
    `RefusedWrites`, the account it keeps).

    The writer writes each node exactly as it is given: the host puts `failures` into the run
    content's `trace_failures` before each write of the run node.
    """

    def __init__(self, fs: FileKeeping, clock: Clock) -> None:
        super().__init__()
        self._fs = fs
        self._clock = clock

    # -- the run directory --------------------------------------------------------------

    def create_run(self, parent: str, run_id: str) -> RunLayout | FileSystemError:
        """Create the run's node folder `<parent>/workers/<run-id>/` with its `rounds/`.

        The parent is the caller's trace node folder and must already be a directory: a missing
        parent is refused, never created. `run_id` must be a run id of the host's form, and its
        folder must not exist yet (a run directory is never reused).
        """
        op = "create_run"
        if not is_run_id(run_id):
            return FileSystemError(parent, op, f"not a run id: {run_id!r}", errno_codes.EINVAL)
        if not posixpath.isabs(parent):
            return FileSystemError(
                parent,
                op,
                "the parent trace node folder must be an absolute path",
                errno_codes.EINVAL,
            )
        if not self._fs.is_dir(parent):
            if self._fs.lexists(parent):
                return FileSystemError(parent, op, "Not a directory", errno_codes.ENOTDIR)
            return FileSystemError(parent, op, "No such file or directory", errno_codes.ENOENT)
        layout = RunLayout.below(parent, run_id)
        if self._fs.lexists(layout.run_dir):
            return FileSystemError(layout.run_dir, op, "File exists", errno_codes.EEXIST)
        try:
            self._fs.makedirs(layout.run_dir)
            self._fs.makedirs(layout.rounds)
        except FileSystemError as error:
            return error
        return layout

    def write_text(self, path: str, text: str) -> str | None:
        """Write a file of the node folder atomically (grant.json, brief.md, programs.json); the
        failure text when the operating system refused it (also kept in `artifact_failures`),
        else None."""
        try:
            self._fs.write_atomic(path, text)
        except FileSystemError as error:
            return self.artifact_failed(path, error)
        return None

    # -- trace nodes --------------------------------------------------------------------

    def write_run_node(self, layout: RunLayout, node: TraceNode, moment: Moment) -> str | None:
        """Write the run's trace.json atomically at `moment`; the failure text when refused
        (recorded in `failures`; for `end` also as `final_failures`), else None."""
        if node.kind != WORKER_RUN:
            raise ValueError(f"the run's trace.json holds a {WORKER_RUN} node, not {node.kind}")
        failure = self._write_node(layout.trace, node, moment)
        if moment == "end":
            self._final = [] if failure is None else [failure]
        return None if failure is None else str(failure)

    def write_round_node(
        self, layout: RunLayout, n: int, node: TraceNode, moment: Moment
    ) -> str | None:
        """Write round `n`'s trace.json atomically at `moment` (its folder `rounds/<n>/` made
        when missing); the failure text when refused (recorded in `failures`), else None."""
        if node.kind != WORKER_ROUND:
            raise ValueError(f"a round's trace.json holds a {WORKER_ROUND} node, not {node.kind}")
        if node.round_content().round != n:
            raise ValueError(f"the node of round {node.round_content().round} is not round {n}")
        path = layout.round_trace(n)
        try:
            self._fs.makedirs(layout.round_dir(n))
        except FileSystemError as error:
            failure = TraceFailure(path, moment, error.os_error_text)
            self._failures.append(failure)
            return str(failure)
        written = self._write_node(path, node, moment)
        return None if written is None else str(written)

    def _write_node(self, path: str, node: TraceNode, moment: Moment) -> TraceFailure | None:
        if moment not in ("start", "update", "end"):
            raise ValueError(f"a trace write's moment is start, update or end, not {moment!r}")
        try:
            # A node that has ended is the record (the run's, or its round's part of it):
            # durable, as the record must survive a power loss; a running node's writes are
            # atomic only (docs/decisions.md "What is durable").
            self._fs.write_atomic(path, node_json(node), durable=node.status != "running")
        except FileSystemError as error:
            failure = TraceFailure(path, moment, error.os_error_text)
            self._failures.append(failure)
            return failure
        return None

    # -- round artifacts ----------------------------------------------------------------

    def write_stderr(self, layout: RunLayout, n: int, data: bytes) -> str | None:
        """Keep round `n`'s standard error, its last 80,000 bytes, as `rounds/<n>/stderr.log`:
        each round its own file, so no round overwrites another's. The failure text when
        refused (also kept in `artifact_failures`), else None."""
        path = layout.round_stderr(n)
        tail = data[-STDERR_TAIL_BYTES:] if len(data) > STDERR_TAIL_BYTES else data
        try:
            self._fs.makedirs(layout.round_dir(n))
            self._fs.write_atomic(path, tail)
        except FileSystemError as error:
            return self.artifact_failed(path, error)
        return None

    def write_resources(self, layout: RunLayout, n: int, use: dict[str, Any] | None) -> str | None:
        """Keep round `n`'s resource use (issue 20) as `rounds/<n>/resources.json`: the node
        contract has no field for it, so it is an artifact of the round, listed in its files."""
        if use is None:
            return None
        path = posixpath.join(layout.round_dir(n), RESOURCES_FILE)
        try:
            self._fs.write_atomic(path, (json.dumps(use, indent=2) + "\n").encode())
        except FileSystemError as error:
            return self.artifact_failed(path, error)
        return None

    def write_round_file(self, layout: RunLayout, n: int, name: str, data: bytes) -> str | None:
        """Keep `data` as round `n`'s artifact `name` (`changes.patch`, issue 21), listed in
        its node's files; the failure text when refused (also in `artifact_failures`)."""
        path = posixpath.join(layout.round_dir(n), name)
        try:
            self._fs.makedirs(layout.round_dir(n))
            self._fs.write_atomic(path, data)
        except FileSystemError as error:
            return self.artifact_failed(path, error)
        return None

    def round_files(self, layout: RunLayout, n: int) -> tuple[NodeFile, ...]:
        """Round `n`'s artifact `stderr.log`, when it exists, with its sha256 digest, its path
        relative to the round's folder (seed 002: the round's standard error is the artifact
        stderr.log). One that cannot be digested is left out and noted in `artifact_failures`."""
        files: list[NodeFile] = []
        for path in (
            layout.round_stderr(n),
            *(posixpath.join(layout.round_dir(n), name) for name in (RESOURCES_FILE, CHANGES_FILE)),
        ):
            if not self._fs.lexists(path):
                continue
            try:
                files.append(
                    NodeFile(path=posixpath.basename(path), digest=self._fs.file_digest(path))
                )
            except FileSystemError as error:
                self.artifact_failed(path, error)
        return tuple(files)

    def run_files(self, layout: RunLayout) -> tuple[NodeFile, ...]:
        """status.json, grant.json, brief.md, programs.json, transcript.jsonl and
        deletions.jsonl, those that exist, with their sha256 digests, paths relative to the node
        folder. A file that exists but cannot be digested is left out and noted in
        `artifact_failures`."""
        files: list[NodeFile] = []
        for name in NODE_FILES:
            path = posixpath.join(layout.run_dir, name)
            if not self._fs.lexists(path):
                continue
            try:
                files.append(NodeFile(path=name, digest=self._fs.file_digest(path)))
            except FileSystemError as error:
                self.artifact_failed(path, error)
        return tuple(files)
