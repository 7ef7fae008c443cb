"""`verify`'s fourth check (issue 30 §4): the statement in attestation.json is the one the
trace gives (application/evidence/attestation.py makes it the way the host made it), each node or
patch changed after the statement named, and, with `--key`, its signature holds for that public
key. The envelope is read within its bound; the sealer opens it."""

from __future__ import annotations

import json
import posixpath
from typing import Any

from concorde_workers.application.evidence.attestation import trace_facts
from concorde_workers.application.evidence.trace_reads import (
    MAX_ENVELOPE_BYTES,
    digest_of,
    read_bounded,
)
from concorde_workers.domain.attestation.statement import (
    ATTESTATION_FILE,
    PAYLOAD_TYPE,
    statement,
    statement_bytes,
)
from concorde_workers.domain.attestation.verification import Finding
from concorde_workers.domain.ground.errors import Refusal
from concorde_workers.domain.ground.layout import RunLayout
from concorde_workers.ports.machine.attestation import Sealer
from concorde_workers.ports.machine.filesystem import TreeReading


class AttestationCheck:
    """Checks one run directory's attestation.json against its trace."""

    def __init__(self, fs: TreeReading, sealer: Sealer) -> None:
        self._fs, self._sealer = fs, sealer

    def check(self, layout: RunLayout, public_key: bytes | None) -> tuple[str, list[Finding]]:
        """What verify says of the signature, and the findings of the statement and its
        signature."""
        path = posixpath.join(layout.run_dir, ATTESTATION_FILE)
        asked = public_key is not None
        if not self._fs.lexists(path):
            said = "the run has no attestation (its host ended before it wrote one)"
            return said, [Finding(ATTESTATION_FILE, said, discrepancy=asked)]
        data = read_bounded(self._fs, path, MAX_ENVELOPE_BYTES)
        if data is None:
            return "unreadable", [Finding(ATTESTATION_FILE, "cannot be read as a regular file")]
        opened = self._sealer.open(data, public_key)
        if opened.problem is not None and opened.verified is None:
            return "unreadable", [Finding(ATTESTATION_FILE, opened.problem)]
        findings = self._statement(layout, opened.payload, opened.payload_type)
        if not opened.key_ids:
            said = "unsigned: no signing key was configured when the run ended"
            findings.append(Finding(ATTESTATION_FILE, said, discrepancy=asked))
            return said, findings
        if not asked:
            ids = ", ".join(opened.key_ids)
            return f"signed by key {ids}, not checked (give --key PUBKEY)", findings
        if not opened.verified:
            findings.append(Finding(ATTESTATION_FILE, opened.problem or "the signature fails"))
            return "the signature does not hold", findings
        return f"signed by key {', '.join(opened.key_ids)}: the signature holds", findings

    def _statement(self, layout: RunLayout, payload: bytes, payload_type: str) -> list[Finding]:
        if payload_type != PAYLOAD_TYPE:
            problem = f"holds a payload of type {payload_type!r}, not {PAYLOAD_TYPE}"
            return [Finding(ATTESTATION_FILE, problem)]
        facts = trace_facts(self._fs, layout.run_dir)
        if isinstance(facts, Refusal):
            return [
                Finding(ATTESTATION_FILE, f"no statement can be made of the trace: {facts.message}")
            ]
        wanted = statement(facts)
        if payload == statement_bytes(wanted):
            return []
        return [
            *self._named(layout, payload),
            Finding(ATTESTATION_FILE, _difference(wanted, payload)),
        ]

    def _named(self, layout: RunLayout, payload: bytes) -> list[Finding]:
        """Each trace node and patch whose bytes are not what the statement gives for it: the
        file a change after the statement was made is in."""
        try:
            found = json.loads(payload)
            pairs = [(t["path"], t["digest"]) for t in found["predicate"]["trace"]]
            pairs += [
                (s["name"], "sha256:" + s["digest"]["sha256"])
                for s in found["subject"]
                if "sha256" in s.get("digest", {})
            ]
        except (ValueError, KeyError, TypeError):
            return []
        findings: list[Finding] = []
        for path, digest in pairs:
            if not isinstance(path, str) or ".." in path.split("/") or path.startswith("/"):
                continue
            now = digest_of(self._fs, posixpath.join(layout.run_dir, path))
            if now != digest:
                what = "is missing" if now is None else f"has {now}"
                said = f"is not what the statement gives: it gives {digest}, the file {what}"
                findings.append(Finding(path, said))
        return findings


def _difference(wanted: dict[str, Any], payload: bytes) -> str:
    """Which parts of the statement the trace does not give."""
    try:
        found = json.loads(payload)
    except ValueError:
        return "its statement is not JSON"
    if not isinstance(found, dict):
        return "its statement is no JSON object"
    parts: list[str] = []
    for key in ("_type", "subject", "predicateType"):
        if found.get(key) != wanted.get(key):
            parts.append(key)
    predicate = found.get("predicate")
    if isinstance(predicate, dict):
        parts += [
            f"predicate.{key}"
            for key in sorted(set(predicate) | set(wanted["predicate"]))
            if predicate.get(key) != wanted["predicate"].get(key)
        ]
    else:
        parts.append("predicate")
    named = ", ".join(parts) or "its bytes (the same values, written otherwise)"
    return f"its statement does not match the trace: {named} differ(s) from what the trace gives"
