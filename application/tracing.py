"""The run's trace on disk: its run directory, trace nodes, progress file, and the record read back.

Seed 000 "Run directory and runtime directory", "Progress file" and "Run record"; seed 002
(contract.workers.worker-run-trace, worker-round-trace, worker-run-record). Every read and write
goes through the `FileSystem` port.

* `TraceWriter` writes one run's node folder `<parent>/workers/<run-id>/`: its trace.json at the
  moments start, update and end, each round's trace.json and stderr.log, grant.json and brief.md.
  Tracing is best-effort for the work and never silent: a write the operating system refuses is
  never raised, it is recorded (`failures` for trace.json writes, the run's trace_failures;
  `artifact_failures` for the other files) for the host to report.
* `ProgressWriter` keeps status.json current: at once at every phase change, at most once a
  second for worker activity. A refused progress write never fails the run.
* `read_record` rebuilds the returned run record from the run's node and its rounds' nodes
  (`runs.read_record` of seed 002).
"""

from __future__ import annotations

import errno as errno_codes
import json
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import ValidationError

from concorde_workers.domain.brief import worktree_of_brief
from concorde_workers.domain.claude_settings import digest_text
from concorde_workers.domain.codes import trace_write_evidence
from concorde_workers.domain.errors import Evidence, Reason, Refusal
from concorde_workers.domain.layout import (
    BRIEF_FILE,
    GRANT_FILE,
    PROGRAMS_FILE,
    STATUS_FILE,
    STDERR_TAIL_BYTES,
    TRANSCRIPT_FILE,
    RunLayout,
)
from concorde_workers.domain.program_versions import ProgramVersion, parse_programs_document
from concorde_workers.domain.records import (
    WORKER_ROUND,
    WORKER_RUN,
    LastAction,
    NodeFile,
    Phase,
    ProgressFile,
    ProgressStatus,
    RoundRecord,
    RunRecord,
    TraceNode,
)
from concorde_workers.domain.run_id import is_run_id, runtime_directory_prefix
from concorde_workers.ports.clock import Clock
from concorde_workers.ports.filesystem import FileSystem, FileSystemError

__all__ = [
    "ACTIVITY_INTERVAL_SECONDS",
    "NODE_FILES",
    "RECORD_UNREADABLE",
    "WORKTREE_UNKNOWN",
    "Moment",
    "ProgressWriter",
    "TraceFailure",
    "TraceWriter",
    "node_json",
    "read_node",
    "read_programs",
    "read_progress",
    "read_record",
    "record_of_node",
    "utc_text",
]

Moment = Literal["start", "update", "end"]
"""When a trace.json is written (seed 002, trace_failures): at the start, an update, the end."""

NODE_FILES: tuple[str, ...] = (STATUS_FILE, GRANT_FILE, BRIEF_FILE, PROGRAMS_FILE,
                               TRANSCRIPT_FILE)
"""The files a worker run's node lists with their digests (contract.workers.worker-run-trace)."""

ACTIVITY_INTERVAL_SECONDS = 1.0
"""Worker activity rewrites the progress file at most once a second (seed 000 "Progress file")."""

WORKTREE_UNKNOWN = "(unknown: neither status.json nor brief.md of the run directory names it)"
"""`read_record`'s worktree when nothing the run directory keeps names it."""

RECORD_UNREADABLE = "record_unreadable"
"""The code of `read_record`'s refusal: a trace.json (or status.json) missing or malformed."""


def utc_text(moment: datetime) -> str:
    """A time as the records write it: UTC, ISO 8601 with the suffix Z, whole seconds."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError("a record time needs an aware datetime")
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def node_json(node: TraceNode) -> str:
    """A node's trace.json text: the contract's object, indented, UTF-8, ending in a newline."""
    return json.dumps(node.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"


# --- the trace ------------------------------------------------------------------------------


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


class TraceWriter:
    """Writes one worker run's node folder; records, never raises, every refused write.

    `failures` lists the refused writes of the run's and the rounds' trace.json, as the run
    content's `trace_failures` and the returned record's take them ("<file> (<moment>): <error>");
    `final_failures` those of the run node's last `end` write, which only the returned record can
    carry; `failure_evidence()` the same failures as trace-write evidence for a run that does not
    end ok. `artifact_failures` lists the refused writes of grant.json, brief.md and stderr.log
    and the node files that could not be digested: reported, but not trace failures.

    The writer writes each node exactly as it is given: the host puts `failures` into the run
    content's `trace_failures` before each write of the run node.
    """

    def __init__(self, fs: FileSystem, clock: Clock) -> None:
        self._fs = fs
        self._clock = clock
        self._failures: list[TraceFailure] = []
        self._final: list[TraceFailure] = []
        self._artifacts: list[str] = []

    # -- what was refused ---------------------------------------------------------------

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
                parent, op, "the parent trace node folder must be an absolute path",
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
        """Write a file of the node folder atomically (grant.json, brief.md); the failure text
        when the operating system refused it (also kept in `artifact_failures`), else None."""
        try:
            self._fs.write_atomic(path, text)
        except FileSystemError as error:
            return self._artifact_failure(path, error)
        return None

    def _artifact_failure(self, path: str, error: FileSystemError) -> str:
        """Keep a refused write of a node folder file in `artifact_failures`; its text."""
        failure = f"{path}: {error.os_error_text}"
        self._artifacts.append(failure)
        return failure

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
            self._fs.write_atomic(path, node_json(node))
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
            return self._artifact_failure(path, error)
        return None

    def round_files(self, layout: RunLayout, n: int) -> tuple[NodeFile, ...]:
        """Round `n`'s artifact `stderr.log`, when it exists, with its sha256 digest, its path
        relative to the round's folder (seed 002: the round's standard error is the artifact
        stderr.log). One that cannot be digested is left out and noted in `artifact_failures`."""
        path = layout.round_stderr(n)
        if not self._fs.lexists(path):
            return ()
        try:
            return (NodeFile(path=posixpath.basename(path), digest=self._fs.file_digest(path)),)
        except FileSystemError as error:
            self._artifact_failure(path, error)
            return ()

    def run_files(self, layout: RunLayout) -> tuple[NodeFile, ...]:
        """status.json, grant.json, brief.md and transcript.jsonl, those that exist, with their
        sha256 digests, paths relative to the node folder. A file that exists but cannot be
        digested is left out and noted in `artifact_failures`."""
        files: list[NodeFile] = []
        for name in NODE_FILES:
            path = posixpath.join(layout.run_dir, name)
            if not self._fs.lexists(path):
                continue
            try:
                files.append(NodeFile(path=name, digest=self._fs.file_digest(path)))
            except FileSystemError as error:
                self._artifact_failure(path, error)
        return tuple(files)


# --- the progress file ----------------------------------------------------------------------


class ProgressWriter:
    """Keeps status.json current (seed 000 "Progress file").

    `phase` rewrites the file at once; `activity` keeps the latest action and rewrites the file
    only when a second has passed (by the clock's monotonic time) since the last write, so the
    next write (a later `activity`, `flush`, or the next phase change) carries the action held
    back. A refused write never fails the run: it is recorded in `failures` (not trace failures;
    the progress file is an observation aid, not evidence) and the next write tries again.
    """

    def __init__(
        self,
        fs: FileSystem,
        clock: Clock,
        path: str,
        *,
        run_id: str,
        task_type: str,
        backend: str,
        worktree: str,
        operation_run_id: str | None,
        host_pid: int,
        started_at: datetime | str | None = None,
    ) -> None:
        self._fs = fs
        self._clock = clock
        self._path = path
        if started_at is None:
            started_at = clock.now_utc()
        started = started_at if isinstance(started_at, str) else utc_text(started_at)
        self._base: dict[str, Any] = {
            "run_id": run_id,
            "task_type": task_type,
            "backend": backend,
            "worktree": worktree,
            "operation_run_id": operation_run_id,
            "host_pid": host_pid,
            "started_at": started,
        }
        self._phase: Phase = "preparing"
        self._round = 1
        self._status: ProgressStatus | None = None
        self._last_action: LastAction | None = None
        self._pending = False
        self._last_write: float | None = None
        self.failures: list[str] = []
        self.current()  # refuse base fields the progress file cannot hold, at once

    @property
    def path(self) -> str:
        return self._path

    @property
    def phase_now(self) -> Phase:
        """The phase the run is in (the last one entered)."""
        return self._phase

    @property
    def pending(self) -> bool:
        """True when an action is held back for the next write."""
        return self._pending

    def due_in(self) -> float | None:
        """Seconds until a held-back action may be written (0 or less: now), None when no action
        is held back."""
        if not self._pending:
            return None
        if self._last_write is None:
            return 0.0
        return self._last_write + ACTIVITY_INTERVAL_SECONDS - self._clock.monotonic()

    def current(self) -> ProgressFile:
        """The progress file as the next write would write it."""
        return ProgressFile(
            **self._base,
            phase=self._phase,
            round=self._round,
            last_action=self._last_action,
            status=self._status,
            updated_at=utc_text(self._clock.now_utc()),
        )

    def phase(self, phase: Phase, round: int, status: ProgressStatus | None = None) -> bool:
        """Enter `phase` in round `round` and rewrite the file at once; `status` only with
        finished. True when the write succeeded."""
        ProgressFile.model_validate(  # refuse an impossible phase/status pair before keeping it
            {**self.current().model_dump(mode="json"), "phase": phase, "round": round,
             "status": status}
        )
        self._phase, self._round, self._status = phase, round, status
        return self._write(phase)

    def activity(self, action: LastAction) -> bool:
        """The worker's latest tool call: kept, and written when a second has passed since the
        last write. True when it was written now."""
        self._last_action = action
        self._pending = True
        return self.flush()

    def tool_use(self, tool: str, target: str) -> bool:
        """`activity` of a tool call made now, its target cut as the progress file shows it."""
        return self.activity(LastAction.of(tool, target, utc_text(self._clock.now_utc())))

    def flush(self, force: bool = False) -> bool:
        """Write a held-back action when a second has passed since the last write (or at once
        with `force`). True when it was written now."""
        due = self.due_in()
        if due is None or not (due <= 0 or force):
            return False
        return self._write("activity")

    def _write(self, moment: str) -> bool:
        self._last_write = self._clock.monotonic()
        self._pending = False
        try:
            self._fs.write_atomic(self._path, self.current().model_dump_json(indent=2) + "\n")
        except FileSystemError as error:
            self.failures.append(f"{self._path} ({moment}): {error.os_error_text}")
            return False
        return True


# --- the record read back -------------------------------------------------------------------


def _refusal(path: str, problem: str) -> Refusal:
    return Refusal(
        code=RECORD_UNREADABLE, reason=Reason.ENVIRONMENT, message=f"{path}: {problem}", file=path
    )


def _first_problem(error: ValidationError) -> str:
    first = error.errors(include_url=False)[0]
    location = ".".join(str(part) for part in first["loc"])
    message = str(first["msg"]).removeprefix("Value error, ")
    return f"{location}: {message}" if location else message


def _read_json(fs: FileSystem, path: str) -> Any | Refusal:
    try:
        text = fs.read_text(path)
    except FileSystemError as error:
        if error.not_found:
            return _refusal(path, "missing")
        return _refusal(path, f"cannot be read: {error.os_error_text}")
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        return _refusal(path, f"not JSON: {error}")


def _read_node(fs: FileSystem, path: str, kind: str) -> TraceNode | Refusal:
    data = _read_json(fs, path)
    if isinstance(data, Refusal):
        return data
    if not isinstance(data, dict):
        return _refusal(path, f"not a trace node: a JSON {type(data).__name__}, not an object")
    if data.get("kind") != kind:
        return _refusal(path, f"not a {kind} node: its kind is {data.get('kind')!r}")
    try:
        return TraceNode.model_validate(data)
    except ValidationError as error:
        return _refusal(path, f"not a valid {kind} node: {_first_problem(error)}")


def _read_progress(fs: FileSystem, path: str) -> ProgressFile | Refusal:
    data = _read_json(fs, path)
    if isinstance(data, Refusal):
        return data
    try:
        return ProgressFile.model_validate(data)
    except ValidationError as error:
        return _refusal(path, f"not a valid progress file: {_first_problem(error)}")


def _worktree_of_brief(fs: FileSystem, layout: RunLayout, digest: str | None) -> str | None:
    """The worktree brief.md names, when it is the brief as sent (its digest is the run's)."""
    if digest is None:
        return None
    try:
        brief = fs.read_text(layout.brief)
    except FileSystemError:
        return None
    return worktree_of_brief(brief) if digest_text(brief) == digest else None


def _absolute_evidence(
    fs: FileSystem, round_dir: str, evidence: Sequence[dict[str, Any]]
) -> tuple[dict[str, Any], ...]:
    """Each evidence value with its artifact paths absolute: a top-level string that is a path
    relative to the round's folder, naming an entry that exists there, becomes absolute."""
    made: list[dict[str, Any]] = []
    for item in evidence:
        copy = dict(item)
        for key, value in item.items():
            if not isinstance(value, str) or not value or "\n" in value or "\0" in value:
                continue
            if posixpath.isabs(value) or ".." in value.split("/"):
                continue
            joined = posixpath.normpath(posixpath.join(round_dir, value))
            if joined == posixpath.normpath(round_dir):
                continue
            if fs.lexists(joined):
                copy[key] = joined
        made.append(copy)
    return tuple(made)


def _stderr_tail(fs: FileSystem, layout: RunLayout, rounds: int) -> str:
    if rounds < 1:
        return ""
    try:
        data = fs.read_bytes(layout.round_stderr(rounds))
    except FileSystemError:
        return ""  # a round that kept no standard error: nothing to show
    return data[-STDERR_TAIL_BYTES:].decode("utf-8", errors="replace")


def record_of_node(
    node: TraceNode,
    *,
    worktree: str,
    backend: str,
    run_directory: str,
    runtime_directory: str,
    stderr_tail: str,
    rounds: Sequence[RoundRecord],
    final_failures: Sequence[str] = (),
) -> RunRecord:
    """The returned run record of a worker-run node (seed 000 "Run record"): the node's identity,
    status, error, times, metadata and content, with tools as the comma-separated list, the
    transcript absolute in `run_directory` and the rounds' records in place of their number;
    `final_failures` completes trace_failures with any failure of the final write itself. The
    host's returned record and `read_record` both come from here."""
    metadata = node.run_metadata()
    content = node.run_content()
    return RunRecord(
        run_id=node.id,
        status=node.status,
        error=node.error,
        started_at=node.started_at,
        ended_at=node.ended_at,
        task_type=content.task_type,
        operation=metadata.operation,
        worker=metadata.worker,
        backend=backend,
        backend_source=content.backend_source,
        model=metadata.model,
        local_model=content.local_model,
        model_map=content.model_map,
        reasoning=metadata.reasoning,
        worktree=worktree,
        context_identity=metadata.context_identity,
        grant_digest=metadata.grant_digest,
        settings_digest=metadata.settings_digest,
        brief_digest=metadata.brief_digest,
        tools=",".join(content.tools) if content.tools else None,
        transcript=(
            None if content.transcript is None
            else posixpath.join(run_directory, content.transcript)
        ),
        stderr_tail=stderr_tail,
        worker_result=content.worker_result,
        deleted=content.deleted,
        deletions_refused=content.deletions_refused,
        deletions_absent=content.deletions_absent,
        deletions_failed=content.deletions_failed,
        trace_failures=(*content.trace_failures, *final_failures),
        run_directory=run_directory,
        runtime_directory=runtime_directory,
        rounds=tuple(rounds),
    )


def read_record(
    fs: FileSystem,
    run_dir: str,
    *,
    worktree: str | None = None,
    runtime_directory: str | None = None,
) -> RunRecord | Refusal:
    """The returned run record rebuilt from a run's node folder (seed 002, runs.read_record).

    From the run node: its identity, status, error, times, metadata and content, with tools as
    the comma-separated list and transcript absolute; from the round nodes `rounds/1` to
    `rounds/<rounds>`, in order: each round's content and usage, its evidence's artifact paths
    made absolute against the round's folder. trace_failures is the run content's list: a
    failure of the final write itself is carried only by the record the host returned.

    The nodes do not keep the three other fields; this function gives them as follows:
    `worktree` as given, else the worktree the run's progress file (status.json) names, else the
    one the brief as sent (brief.md, its digest the run node's brief_digest) names, else
    `WORKTREE_UNKNOWN` - the progress file is an observation aid, never needed to read a
    record (seed 000 "Progress file"); `stderr_tail` the last round's stderr.log (the tail it
    kept), empty when there is none; `runtime_directory` as given, else `concorde-<6 hex>-*`,
    the runtime directory's name pattern, since its folder and random part are not recorded and
    it is removed by then.

    A refusal (code `record_unreadable`) names the file that is missing or malformed and what
    is wrong with it, also a run node still `running` (the run has not ended, or its final write
    was refused).
    """
    try:
        layout = RunLayout(run_dir=run_dir)
    except ValidationError:
        return _refusal(run_dir, "the run directory must be an absolute path")
    node = _read_node(fs, layout.trace, WORKER_RUN)
    if isinstance(node, Refusal):
        return node
    if node.status == "running":
        return _refusal(
            layout.trace, "the run has not ended: its record still has status running"
        )
    metadata = node.run_metadata()
    content = node.run_content()

    rounds: list[RoundRecord] = []
    for n in range(1, content.rounds + 1):
        round_node = _read_node(fs, layout.round_trace(n), WORKER_ROUND)
        if isinstance(round_node, Refusal):
            return round_node
        round_content = round_node.round_content()
        if round_content.round != n:
            return _refusal(layout.round_trace(n), f"holds round {round_content.round}, not {n}")
        if round_node.parent != node.id:
            return _refusal(
                layout.round_trace(n), f"its parent is {round_node.parent!r}, not {node.id!r}"
            )
        evidence = None
        if round_content.validation is not None:
            evidence = _absolute_evidence(fs, layout.round_dir(n), round_content.evidence)
        rounds.append(RoundRecord.of_round(round_content, round_node.round_usage(), evidence))

    backend: str | None = metadata.backend
    if worktree is None or backend is None:
        progress = _read_progress(fs, layout.status)
        if not isinstance(progress, Refusal) and progress.run_id == node.id:
            worktree = worktree if worktree is not None else progress.worktree
            backend = backend if backend is not None else progress.backend
        elif backend is None:  # the run node names no backend: only the progress file did
            return progress if isinstance(progress, Refusal) else _refusal(
                layout.status, f"names the run {progress.run_id}, not {node.id}")
    if worktree is None:
        worktree = _worktree_of_brief(fs, layout, metadata.brief_digest) or WORKTREE_UNKNOWN
    if runtime_directory is None:
        runtime_directory = (
            f"{runtime_directory_prefix(node.id)}*" if is_run_id(node.id) else "concorde-*"
        )

    try:
        return record_of_node(
            node, worktree=worktree, backend=backend, run_directory=layout.run_dir,
            runtime_directory=runtime_directory,
            stderr_tail=_stderr_tail(fs, layout, content.rounds), rounds=rounds,
        )
    except ValidationError as error:
        return _refusal(layout.trace, f"gives no valid run record: {_first_problem(error)}")


def read_node(fs: FileSystem, path: str, kind: str) -> TraceNode | Refusal:
    """The trace node at `path` of kind `kind` (worker-run, worker-round), or a refusal (code
    `record_unreadable`) naming the file and what is wrong with it. For the sweep, which finishes
    the record of a run whose host died."""
    return _read_node(fs, path, kind)


def read_progress(fs: FileSystem, path: str) -> ProgressFile | Refusal:
    """The progress file at `path`, or a refusal naming what is wrong with it."""
    return _read_progress(fs, path)


def read_programs(fs: FileSystem, run_dir: str) -> tuple[ProgramVersion, ...]:
    """The agent programs a run was prepared with, from its programs.json (issue 11); none when
    the run has none (a test backend's, a run refused before its preparation ended) or the file
    cannot be read: an account shows them, nothing decides by them."""
    path = posixpath.join(run_dir, PROGRAMS_FILE)
    try:
        data = json.loads(fs.read_text(path)) if fs.is_file(path) else None
    except (FileSystemError, ValueError):
        return ()
    return parse_programs_document(data) or ()
