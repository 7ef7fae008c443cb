"""The attestation of a run (issue 30 §4): the in-toto statement built from the trace read back,
sealed in a DSSE envelope (signed with the machine's key when there is one) and written as the
run directory's attestation.json, durably, right after the final record.

`trace_facts` reads what the statement is made of (the run node, its round nodes, every
trace.json's digest, each round's resources.json, programs.json), bounded; the host and `verify`
both build the statement from it (domain/attestation/statement.py), so the same trace gives the
same bytes. `SigningKey.load` (signing_key.py) reads the machine's key once: absent, the
statements are unsigned; present but unusable, every run is refused before it starts (a setting
is honoured or refused, never dropped).
"""

from __future__ import annotations

import posixpath
from typing import Any

from concorde_workers.application.setup.signing_key import SigningKey
from concorde_workers.application.tracing.reader import read_node, read_resources
from concorde_workers.domain.attestation.statement import (
    ATTESTATION_FILE,
    PAYLOAD_TYPE,
    TraceFacts,
    statement,
    statement_bytes,
)
from concorde_workers.domain.evidence.records import WORKER_ROUND, WORKER_RUN, TraceNode
from concorde_workers.domain.ground import json_limits
from concorde_workers.domain.ground.codes import Code, Reason
from concorde_workers.domain.ground.errors import Refusal
from concorde_workers.domain.ground.layout import PROGRAMS_FILE, TRACE_FILE, RunLayout
from concorde_workers.ports.machine.attestation import Sealer, SealFailed
from concorde_workers.ports.machine.filesystem import (
    BoundedReading,
    FileKeeping,
    FileSystemError,
    read_regular_text,
)

__all__ = ["Attestor", "SigningKey", "trace_facts"]

MAX_PROGRAMS_BYTES = 1024 * 1024


def _programs(fs: BoundedReading, run_dir: str) -> Any:
    path = posixpath.join(run_dir, PROGRAMS_FILE)
    try:
        return json_limits.loads(read_regular_text(fs, path, MAX_PROGRAMS_BYTES))
    except (FileSystemError, ValueError):
        return None


def trace_facts(fs: BoundedReading, run_dir: str) -> TraceFacts | Refusal:
    """The run directory as the statement is built from it; a refusal naming the node that is
    missing or malformed."""
    layout = RunLayout(run_dir=run_dir)
    run = read_node(fs, layout.trace, WORKER_RUN)
    if isinstance(run, Refusal):
        return run
    rounds: list[TraceNode] = []
    digests: dict[str, str] = {}
    count = run.run_content().rounds
    for n in range(1, count + 1):
        node = read_node(fs, layout.round_trace(n), WORKER_ROUND)
        if isinstance(node, Refusal):
            return node
        rounds.append(node)
    try:
        digests[TRACE_FILE] = fs.file_digest(layout.trace)
        for n in range(1, count + 1):
            digests[f"rounds/{n}/{TRACE_FILE}"] = fs.file_digest(layout.round_trace(n))
    except FileSystemError as error:
        return Refusal(
            code=Code.RECORD_UNREADABLE,
            reason=Reason.ENVIRONMENT,
            message=f"{error.path}: cannot be digested: {error.os_error_text}",
            file=error.path,
        )
    return TraceFacts(
        run=run,
        rounds=tuple(rounds),
        node_digests=digests,
        resources=read_resources(fs, run_dir, count),
        programs=_programs(fs, run_dir),
    )


class Attestor:
    """Writes a run's attestation.json after its final record."""

    def __init__(self, fs: FileKeeping, sealer: Sealer, key: SigningKey) -> None:
        self._fs, self._sealer, self._key = fs, sealer, key

    @property
    def key(self) -> SigningKey:
        return self._key

    def attest(self, layout: RunLayout) -> str | None:
        """Build, seal and write the run's statement; the failure text, else None. Written
        durably: it is part of the record, and only after the record it describes."""
        facts = trace_facts(self._fs, layout.run_dir)
        if isinstance(facts, Refusal):
            return facts.message
        payload = statement_bytes(statement(facts))
        try:
            envelope = self._sealer.seal(payload, PAYLOAD_TYPE, self._key.key)
        except SealFailed as failed:
            return f"the statement could not be signed: {failed}"
        path = posixpath.join(layout.run_dir, ATTESTATION_FILE)
        try:
            self._fs.write_atomic(path, envelope, durable=True)
        except FileSystemError as error:
            return f"{path}: {error.os_error_text}"
        return None
