"""The in-toto statement of a run (issue 30 §4): what the host signs at the end of every run.

An in-toto Statement v1 (`_type`, `subject`, `predicateType`, `predicate`) whose subjects are
each round's `changes.patch` (by its sha256, as its round node lists it) and the final tree of
the worktree's `rw` state (by its Git tree id, the `gitTree` of in-toto's digest set), and whose
predicate is ours: contract.attestation.worker-run, version `PREDICATE_VERSION`. The predicate
carries what a reviewer asks of a run — the grant's digest, task type, backend, the agent
programs' versions, the model, each round's prompt, exit, audit verdict, checks, limits in force
and peaks, the deletions and the ending — and the digest of every trace node's `trace.json`,
which lists every other file of its folder with its digest: a valid signature over the statement
vouches for the whole trace.

Built from the trace as read back (`TraceFacts`), by the host right after its final record and
by `verify` from a copy anywhere: the same function of the same files gives the same bytes
(`statement_bytes`: sorted keys, compact, UTF-8), so "the statement matches the trace" is an
equality.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from concorde_workers.domain.evidence.records import TraceNode

__all__ = [
    "ATTESTATION_FILE",
    "PAYLOAD_TYPE",
    "PREDICATE_TYPE",
    "PREDICATE_VERSION",
    "STATEMENT_TYPE",
    "TraceFacts",
    "final_tree",
    "predicate",
    "statement",
    "statement_bytes",
]

ATTESTATION_FILE = "attestation.json"
"""The run directory's DSSE envelope of the statement, written after the final record."""
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
"""The DSSE payload type of an in-toto statement."""
PREDICATE_VERSION = 1
PREDICATE_TYPE = f"urn:concorde:contract.attestation.worker-run:v{PREDICATE_VERSION}"
"""Our predicate's type: its contract's id and version."""

RESOURCE_KEYS = (
    "limits",
    "enforced",
    "memory_peak_bytes",
    "processes_peak",
    "cpu_seconds",
    "oom_kills",
    "forks_refused",
    "limits_reached",
)
"""What of a round's resources.json the predicate carries: the limits in force, whether the
kernel enforced them, the peaks and what was reached (issue 31 §5)."""

CHECK_KEYS = ("check", "judgement", "status", "exit_code")
"""What of each check's evidence the predicate carries (its log is an artifact of the trace)."""


@dataclass(frozen=True)
class TraceFacts:
    """A run directory as read back: the run node, its round nodes in order, the digest of each
    node's trace.json by its path in the run directory, each round's resources.json (None when
    the round has none or it cannot be read) and programs.json (None likewise)."""

    run: TraceNode
    rounds: tuple[TraceNode, ...]
    node_digests: Mapping[str, str]
    resources: Mapping[int, Mapping[str, Any]] = field(default_factory=dict)
    programs: Any = None


def _listed(node: TraceNode, name: str) -> str | None:
    for listed in node.files:
        if listed.path == name:
            return listed.digest
    return None


def final_tree(facts: TraceFacts) -> str | None:
    """The tree of the `rw` state after the last round whose store made one; the start tree
    when none did; None when the run's store made no tree at all."""
    for node in reversed(facts.rounds):
        tree = node.round_metadata().tree
        if tree is not None:
            return tree
    return facts.run.run_metadata().start_tree


def _subjects(facts: TraceFacts) -> list[dict[str, Any]]:
    subjects: list[dict[str, Any]] = []
    for node in facts.rounds:
        n = node.round_content().round
        digest = _listed(node, "changes.patch")
        if digest is not None:
            subjects.append(
                {
                    "name": f"rounds/{n}/changes.patch",
                    "digest": {"sha256": digest.removeprefix("sha256:")},
                }
            )
    tree = final_tree(facts)
    if tree is not None:
        subjects.append({"name": "tree", "digest": {"gitTree": tree}})
    return subjects


def _programs(data: Any) -> list[dict[str, Any]]:
    """programs.json's programs and versions (its paths are this machine's, not the run's)."""
    if not isinstance(data, dict) or not isinstance(data.get("programs"), list):
        return []
    return [
        {"program": entry.get("program"), "version": entry.get("version")}
        for entry in data["programs"]
        if isinstance(entry, dict)
    ]


def _round(node: TraceNode, resources: Mapping[str, Any] | None) -> dict[str, Any]:
    content = node.round_content()
    audit = content.audit
    checks = [
        {key: item.get(key) for key in CHECK_KEYS}
        for item in content.evidence
        if isinstance(item, dict) and "check" in item and "judgement" in item
    ]
    return {
        "round": content.round,
        "prompt": content.prompt,
        "status": node.status,
        "outcome": node.outcome,
        "exit": content.exit,
        "audit": None
        if audit is None
        else {
            "verdict": audit.verdict,
            "changed_count": len(audit.changed),
            "violations": list(audit.violations),
        },
        "checks": checks,
        "validation": None if content.validation is None else bool(content.validation == "clean"),
        "transient": None if content.transient is None else content.transient.error,
        "resources": None
        if resources is None
        else {key: resources[key] for key in RESOURCE_KEYS if key in resources},
        "tree": node.round_metadata().tree,
        "patch": _listed(node, "changes.patch"),
    }


def predicate(facts: TraceFacts) -> dict[str, Any]:
    """The predicate (contract.attestation.worker-run) of the run the facts describe."""
    run = facts.run
    meta = run.run_metadata()
    content = run.run_content()
    error = run.error
    return {
        "version": PREDICATE_VERSION,
        "run_id": run.id,
        "started_at": run.started_at,
        "ended_at": run.ended_at,
        "ending": {
            "status": run.status,
            "outcome": run.outcome,
            "code": None if error is None else str(error.code),
        },
        "task_type": meta.task_type,
        "backend": meta.backend,
        "model": meta.model,
        "local_model": content.local_model,
        "reasoning": meta.reasoning,
        "context_identity": meta.context_identity,
        "grant_digest": meta.grant_digest,
        "settings_digest": meta.settings_digest,
        "brief_digest": meta.brief_digest,
        "programs": _programs(facts.programs),
        "repository": {
            "head_commit": meta.head_commit,
            "start_tree": meta.start_tree,
            "final_tree": final_tree(facts),
        },
        "rounds": [
            _round(node, facts.resources.get(node.round_content().round)) for node in facts.rounds
        ],
        "deletions": {
            "deleted": list(content.deleted),
            "refused": list(content.deletions_refused),
            "absent": list(content.deletions_absent),
            "failed": list(content.deletions_failed),
        },
        "trace": [
            {"path": path, "digest": digest} for path, digest in sorted(facts.node_digests.items())
        ],
    }


def statement(facts: TraceFacts) -> dict[str, Any]:
    """The in-toto Statement v1 of the run."""
    return {
        "_type": STATEMENT_TYPE,
        "subject": _subjects(facts),
        "predicateType": PREDICATE_TYPE,
        "predicate": predicate(facts),
    }


def statement_bytes(value: Mapping[str, Any] | Sequence[Any]) -> bytes:
    """The statement's bytes as signed: sorted keys, compact separators, UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
