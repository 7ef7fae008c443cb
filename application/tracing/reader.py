"""The record read back: a run's returned record rebuilt from its node folder.

Seed 000 "Run record"; seed 002 (`runs.read_record`; contract.workers.worker-run-trace,
worker-round-trace, worker-run-record). `read_record` reads the run's node and its rounds' nodes
and gives the record, or a refusal (code `record_unreadable`) naming the file that is missing or
malformed. `read_node` and `read_progress` serve the sweep, which finishes the record of a run
whose host died; `read_programs` the account that `run` and `show` print.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from concorde_workers.application.tracing.record import record_of_node
from concorde_workers.domain.configuration.program_versions import (
    Programs,
    ProgramVersion,
    parse_programs_document,
)
from concorde_workers.domain.evidence.records import (
    WORKER_ROUND,
    WORKER_RUN,
    ProgressFile,
    RoundRecord,
    RunRecord,
    TraceNode,
)
from concorde_workers.domain.ground import json_limits
from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.ground.errors import Reason, Refusal
from concorde_workers.domain.ground.layout import (
    PROGRAMS_FILE,
    RESOURCES_FILE,
    STDERR_TAIL_BYTES,
    RunLayout,
)
from concorde_workers.domain.ground.paths import EntryKind
from concorde_workers.domain.ground.run_id import is_run_id, runtime_directory_prefix
from concorde_workers.domain.ground.text import digest_text
from concorde_workers.domain.run.brief import worktree_of_brief
from concorde_workers.domain.run.changes import CHANGES_FILE, MAX_PATCH_BYTES
from concorde_workers.ports.machine.filesystem import (
    BoundedReading,
    FileReading,
    FileSystemError,
    PathFacts,
    read_regular_text,
)

__all__ = [
    "RECORD_UNREADABLE",
    "WORKTREE_UNKNOWN",
    "digest_failures",
    "listed_digest",
    "read_node",
    "read_patch",
    "read_programs",
    "read_progress",
    "read_record",
    "read_resources",
]

WORKTREE_UNKNOWN = "(unknown: neither status.json nor brief.md of the run directory names it)"
"""`read_record`'s worktree when nothing the run directory keeps names it."""

RECORD_UNREADABLE = Code.RECORD_UNREADABLE
"""The code of `read_record`'s refusal: a trace.json (or status.json) missing or malformed."""


def _refusal(path: str, problem: str) -> Refusal:
    return Refusal(
        code=RECORD_UNREADABLE, reason=Reason.ENVIRONMENT, message=f"{path}: {problem}", file=path
    )


def _first_problem(error: ValidationError) -> str:
    first = error.errors(include_url=False)[0]
    location = ".".join(str(part) for part in first["loc"])
    message = str(first["msg"]).removeprefix("Value error, ")
    return f"{location}: {message}" if location else message


MAX_READ_BYTES = 16 * 1024 * 1024
"""The most of a trace node, progress file, brief or programs.json `show` and `status` read
(issue 19 §4): what the host writes is kilobytes (a node's largest part, its error chain and
evidence, is bounded by the writer), but a run directory copied from elsewhere may hold
anything. A round's stderr is read from its end only (`STDERR_TAIL_BYTES`)."""


def _bounded_text(fs: BoundedReading, path: str) -> str:
    """The text of a regular file of at most MAX_READ_BYTES (`read_regular_text`)."""
    return read_regular_text(fs, path, MAX_READ_BYTES)


def _read_json(fs: BoundedReading, path: str) -> Any | Refusal:
    try:
        text = _bounded_text(fs, path)
    except FileSystemError as error:
        if error.not_found:
            return _refusal(path, "missing")
        return _refusal(path, f"cannot be read: {error.os_error_text}")
    try:
        return json_limits.loads(text)
    except ValueError as error:  # not JSON (JSONDecodeError), or nested too deeply
        return _refusal(path, f"not JSON: {error}")


def _read_node(fs: BoundedReading, path: str, kind: str) -> TraceNode | Refusal:
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


def _read_progress(fs: BoundedReading, path: str) -> ProgressFile | Refusal:
    data = _read_json(fs, path)
    if isinstance(data, Refusal):
        return data
    try:
        return ProgressFile.model_validate(data)
    except ValidationError as error:
        return _refusal(path, f"not a valid progress file: {_first_problem(error)}")


def _worktree_of_brief(fs: BoundedReading, layout: RunLayout, digest: str | None) -> str | None:
    """The worktree brief.md names, when it is the brief as sent (its digest is the run's)."""
    if digest is None:
        return None
    try:
        brief = _bounded_text(fs, layout.brief)
    except FileSystemError:
        return None
    return worktree_of_brief(brief) if digest_text(brief) == digest else None


def _absolute_evidence(
    fs: PathFacts, round_dir: str, evidence: Sequence[dict[str, Any]]
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


def _stderr_tail(fs: FileReading, layout: RunLayout, rounds: int) -> str:
    if rounds < 1:
        return ""
    try:
        data = fs.read_bytes(layout.round_stderr(rounds))
    except FileSystemError:
        return ""  # a round that kept no standard error: nothing to show
    return data[-STDERR_TAIL_BYTES:].decode("utf-8", errors="replace")


def read_record(
    fs: BoundedReading,
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
    node = _ended_run_node(fs, layout)
    if isinstance(node, Refusal):
        return node
    rounds = _round_records(fs, layout, node)
    if isinstance(rounds, Refusal):
        return rounds
    named = _backend_and_worktree(fs, layout, node, worktree)
    if isinstance(named, Refusal):
        return named
    backend, worktree = named
    if runtime_directory is None:
        runtime_directory = _runtime_directory_pattern(node.id)
    try:
        return record_of_node(
            node,
            worktree=worktree,
            backend=backend,
            run_directory=layout.run_dir,
            runtime_directory=runtime_directory,
            stderr_tail=_stderr_tail(fs, layout, node.run_content().rounds),
            rounds=rounds,
        )
    except ValidationError as error:
        return _refusal(layout.trace, f"gives no valid run record: {_first_problem(error)}")


def _ended_run_node(fs: BoundedReading, layout: RunLayout) -> TraceNode | Refusal:
    """The run's node, refused while it still says `running`."""
    node = _read_node(fs, layout.trace, WORKER_RUN)
    if not isinstance(node, Refusal) and node.status == "running":
        return _refusal(layout.trace, "the run has not ended: its record still has status running")
    return node


def _round_records(
    fs: BoundedReading, layout: RunLayout, node: TraceNode
) -> list[RoundRecord] | Refusal:
    """The records of the run's rounds 1 to `rounds`, in order; the first refusal."""
    rounds: list[RoundRecord] = []
    for n in range(1, node.run_content().rounds + 1):
        record = _round_record(fs, layout, node.id, n)
        if isinstance(record, Refusal):
            return record
        rounds.append(record)
    return rounds


def _round_record(
    fs: BoundedReading, layout: RunLayout, run_id: str, n: int
) -> RoundRecord | Refusal:
    """Round `n`'s record from its node, which must be round `n` of the run `run_id`; its
    evidence's artifact paths made absolute when the round was validated."""
    round_node = _read_node(fs, layout.round_trace(n), WORKER_ROUND)
    if isinstance(round_node, Refusal):
        return round_node
    round_content = round_node.round_content()
    if round_content.round != n:
        return _refusal(layout.round_trace(n), f"holds round {round_content.round}, not {n}")
    if round_node.parent != run_id:
        return _refusal(
            layout.round_trace(n), f"its parent is {round_node.parent!r}, not {run_id!r}"
        )
    evidence = None
    if round_content.validation is not None:
        evidence = _absolute_evidence(fs, layout.round_dir(n), round_content.evidence)
    return RoundRecord.of_round(round_content, round_node.round_usage(), evidence)


def _backend_and_worktree(
    fs: BoundedReading, layout: RunLayout, node: TraceNode, worktree: str | None
) -> tuple[str, str] | Refusal:
    """The run's backend (its node's, else its progress file's) and worktree (as given, else
    its progress file's, else the brief's as sent, else `WORKTREE_UNKNOWN`)."""
    backend: str | None = node.run_metadata().backend
    if worktree is None or backend is None:
        progress = _progress_of_run(fs, layout, node.id)
        if isinstance(progress, ProgressFile):
            worktree = worktree if worktree is not None else progress.worktree
            backend = backend if backend is not None else progress.backend
        elif backend is None:  # the run node names no backend: only the progress file did
            return progress
    if worktree is None:
        brief_digest = node.run_metadata().brief_digest
        worktree = _worktree_of_brief(fs, layout, brief_digest) or WORKTREE_UNKNOWN
    return backend, worktree


def _progress_of_run(fs: BoundedReading, layout: RunLayout, run_id: str) -> ProgressFile | Refusal:
    """The run's progress file; refused when it cannot be read or names another run."""
    progress = _read_progress(fs, layout.status)
    if isinstance(progress, Refusal) or progress.run_id == run_id:
        return progress
    return _refusal(layout.status, f"names the run {progress.run_id}, not {run_id}")


def _runtime_directory_pattern(run_id: str) -> str:
    """The runtime directory's name pattern: its folder and random part are not recorded."""
    return f"{runtime_directory_prefix(run_id)}*" if is_run_id(run_id) else "concorde-*"


def read_node(fs: BoundedReading, path: str, kind: str) -> TraceNode | Refusal:
    """The trace node at `path` of kind `kind` (worker-run, worker-round), or a refusal (code
    `record_unreadable`) naming the file and what is wrong with it. For the sweep, which finishes
    the record of a run whose host died."""
    return _read_node(fs, path, kind)


def read_progress(fs: BoundedReading, path: str) -> ProgressFile | Refusal:
    """The progress file at `path`, or a refusal naming what is wrong with it."""
    return _read_progress(fs, path)


def read_resources(fs: BoundedReading, run_dir: str, rounds: int) -> dict[int, dict[str, Any]]:
    """Each round's resources.json (issue 20), by round number: what an account shows of the
    round's resource use. A round without one (no groups on this host) or whose file cannot be
    read is left out: nothing decides by it."""
    found: dict[int, dict[str, Any]] = {}
    for n in range(1, rounds + 1):
        path = posixpath.join(run_dir, "rounds", str(n), RESOURCES_FILE)
        try:
            data = json_limits.loads(_bounded_text(fs, path)) if fs.is_file(path) else None
        except (FileSystemError, ValueError):
            continue
        if isinstance(data, dict):
            found[n] = data
    return found


def read_programs(
    fs: BoundedReading, run_dir: str, programs: Programs
) -> tuple[ProgramVersion, ...]:
    """The agent programs a run was prepared with, from its programs.json (issue 11), as the
    registered `programs` know them; none when the run has none (a test backend's, a run refused
    before its preparation ended), names one no registered backend runs, or the file cannot be
    read: an account shows them, nothing decides by them."""
    path = posixpath.join(run_dir, PROGRAMS_FILE)
    try:
        data = json_limits.loads(_bounded_text(fs, path)) if fs.is_file(path) else None
    except (FileSystemError, ValueError):
        return ()
    return parse_programs_document(data, programs) or ()


MAX_PATCH_READ_BYTES = MAX_PATCH_BYTES + 64 * 1024
"""The most a round's changes.patch read back may hold: the patch's own bound, its header and
named lines besides."""


def read_patch(fs: BoundedReading, run_dir: str, n: int) -> str | None:
    """Round `n`'s changes.patch (issue 21), None when the round kept none (a run from before
    the patches, a host without them); a file that cannot be read is said in its place. Bytes
    that are not UTF-8 (a patch of a Latin-1 file) come back as lone surrogates, which every
    printer escapes."""
    path = posixpath.join(run_dir, "rounds", str(n), CHANGES_FILE)
    listed = listed_digest(fs, run_dir, n, CHANGES_FILE)
    if not fs.lexists(path):
        if listed is None:
            return None
        # The node lists a patch that is gone: never shown as "kept no patch" (issue 30 §4).
        return (
            f"# WARNING: {path} is missing, though its round's node lists it with {listed}: "
            "the patch was removed after the run\n"
        )
    try:
        found = fs.stat(path)
        if found.kind is not EntryKind.FILE or found.size > MAX_PATCH_READ_BYTES:
            return (
                f"# {path} cannot be read: not a regular file of at most "
                f"{MAX_PATCH_READ_BYTES} bytes\n"
            )
        data = fs.read_bytes(path)
    except FileSystemError as error:
        return f"# {path} cannot be read: {error.os_error_text}\n"
    text = data.decode("utf-8", "surrogateescape")
    now = "sha256:" + hashlib.sha256(data).hexdigest()
    if listed is not None and now != listed:
        return (
            f"# WARNING: {path} fails its digest: its round's node lists {listed}, the file "
            f"has {now}; what follows is not the patch the host wrote\n{text}"
        )
    return text


def listed_digest(fs: BoundedReading, run_dir: str, n: int, name: str) -> str | None:
    """The digest round `n`'s node lists for its file `name`, None when it lists none (or the
    node cannot be read: nothing then says what the file should be)."""
    node = _read_node(fs, posixpath.join(run_dir, "rounds", str(n), "trace.json"), WORKER_ROUND)
    if isinstance(node, Refusal):
        return None
    return next((f.digest for f in node.files if f.path == name), None)


def digest_failures(fs: BoundedReading, run_dir: str) -> list[str]:
    """Each file a node of the run lists that is missing or fails its digest, said in a line
    (`show` and the report say it; `verify` checks everything)."""
    run = _read_node(fs, posixpath.join(run_dir, "trace.json"), WORKER_RUN)
    if isinstance(run, Refusal):
        return []
    listed = [(f.path, f.digest) for f in run.files]
    for n in range(1, run.run_content().rounds + 1):
        node = _read_node(fs, posixpath.join(run_dir, "rounds", str(n), "trace.json"), WORKER_ROUND)
        if not isinstance(node, Refusal):
            listed += [(f"rounds/{n}/{f.path}", f.digest) for f in node.files]
    failures: list[str] = []
    for rel, digest in listed:
        path = posixpath.join(run_dir, rel)
        try:
            now = fs.file_digest(path) if fs.is_file(path) else None
        except FileSystemError:
            now = None
        if now is None:
            failures.append(f"{rel} is missing or unreadable (its node lists {digest})")
        elif now != digest:
            failures.append(f"{rel} fails its digest (its node lists {digest}, it has {now})")
    return failures
