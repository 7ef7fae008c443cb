"""`verify RUN_DIR [--key PUBKEY]` (issue 30 §4): a run's trace checked, from its run directory
alone, wherever it was copied.

What is checked, each by the domain (domain/attestation/verification.py) from what is read
here, every read bounded:

1. every file every node lists is there with its digest;
2. the record agrees with the nodes (the run node, status.json, each round's node);
3. the rounds' patches follow on from one another and leave changed only what the last audit
   lists; with the repository at hand (the run's worktree, found through the record, still a
   Git worktree holding the run's starting commit), Git applies them in order onto the starting
   state and each round's tree must be the tree its node records;
4. the statement in attestation.json is the one the trace gives, and, with `--key`, its
   signature holds for that public key.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from concorde_workers.application.evidence.attestation import trace_facts
from concorde_workers.application.tracing.reader import read_node, read_progress, read_record
from concorde_workers.domain.attestation.patches import ParsedPatch, parse_patch
from concorde_workers.domain.attestation.statement import (
    ATTESTATION_FILE,
    PAYLOAD_TYPE,
    statement,
    statement_bytes,
)
from concorde_workers.domain.attestation.verification import (
    Finding,
    chain_findings,
    file_findings,
    listed_files,
    record_findings,
)
from concorde_workers.domain.evidence.records import (
    WORKER_ROUND,
    WORKER_RUN,
    ProgressFile,
    TraceNode,
)
from concorde_workers.domain.gitview.git_status import GitRepository
from concorde_workers.domain.ground.codes import Code, Reason
from concorde_workers.domain.ground.errors import Refusal
from concorde_workers.domain.ground.layout import TRACE_FILE, RunLayout
from concorde_workers.domain.ground.paths import EntryKind
from concorde_workers.domain.run.changes import CHANGES_FILE
from concorde_workers.ports.machine.attestation import Sealer
from concorde_workers.ports.machine.filesystem import FileSystem, FileSystemError
from concorde_workers.ports.repository.git import GitCommandFailed, GitReader
from concorde_workers.ports.repository.replay import PatchReplay

__all__ = ["Verification", "Verifier"]

MAX_PATCH_BYTES = 2 * 1024 * 1024
"""The most of a changes.patch verify reads (the host's bound is 1 MiB and its header)."""
MAX_ENVELOPE_BYTES = 16 * 1024 * 1024
"""The most of attestation.json verify reads (the host's is kilobytes)."""


@dataclass(frozen=True)
class Verification:
    """verify's answer: what it found, whether the repository was at hand, who signed."""

    run_dir: str
    findings: tuple[Finding, ...] = ()
    git: str = ""
    """How the chain of patches was checked: with Git, or from the patches alone (and why)."""
    signature: str = ""
    """What verify says of the signature: by which key, unsigned, or not asked for."""
    refusal: Refusal | None = None

    @property
    def holds(self) -> bool:
        return self.refusal is None and not any(f.discrepancy for f in self.findings)

    def to_json(self) -> dict[str, Any]:
        return {
            "run_directory": self.run_dir,
            "verified": self.holds,
            "chain": self.git,
            "signature": self.signature,
            "findings": [f.to_json() for f in self.findings],
        }


@dataclass
class _Read:
    run: TraceNode | None = None
    rounds: list[TraceNode] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


class Verifier:
    """Checks one run directory; `replay` is the host's Git when there is one."""

    def __init__(
        self, fs: FileSystem, sealer: Sealer, git: GitReader, replay: PatchReplay | None
    ) -> None:
        self._fs, self._sealer, self._git, self._replay = fs, sealer, git, replay

    def verify(self, run_dir: str, public_key: bytes | None = None) -> Verification:
        layout = RunLayout(run_dir=run_dir)
        if not self._fs.lexists(layout.trace):
            return Verification(
                run_dir=run_dir,
                refusal=Refusal(
                    code=Code.RECORD_UNREADABLE,
                    reason=Reason.INPUT,
                    file=layout.trace,
                    message=f"{run_dir} holds no {TRACE_FILE}: give the run directory "
                    "<parent>/workers/<run-id>/ of a run",
                ),
            )
        read = self._nodes(layout)
        if read.run is None:
            return Verification(run_dir=run_dir, findings=tuple(read.findings))
        findings = list(read.findings)
        findings += self._files(layout, read.run, read.rounds)
        findings += record_findings(
            read.run, read.rounds, self._progress(layout), self._round_folders(layout)
        )
        patches = self._patches(layout, read.rounds)
        findings += chain_findings(read.rounds, patches)
        git, found = self._with_git(layout, read.run, read.rounds, patches)
        findings += found
        signature, found = self._attestation(layout, public_key)
        findings += found
        return Verification(run_dir=run_dir, findings=tuple(findings), git=git, signature=signature)

    # -- the nodes and their files ------------------------------------------------------

    def _nodes(self, layout: RunLayout) -> _Read:
        read = _Read()
        run = read_node(self._fs, layout.trace, WORKER_RUN)
        if isinstance(run, Refusal):
            read.findings.append(Finding(TRACE_FILE, run.message.removeprefix(layout.trace + ": ")))
            return read
        read.run = run
        for n in range(1, run.run_content().rounds + 1):
            node = read_node(self._fs, layout.round_trace(n), WORKER_ROUND)
            if isinstance(node, Refusal):
                where = f"rounds/{n}/{TRACE_FILE}"
                read.findings.append(
                    Finding(where, node.message.removeprefix(layout.round_trace(n) + ": "))
                )
                continue
            read.rounds.append(node)
        return read

    def _digest(self, path: str) -> str | None:
        if not self._fs.lexists(path):
            return None
        try:
            if self._fs.stat(path).kind is not EntryKind.FILE:
                return "unreadable: not a regular file"
            return self._fs.file_digest(path)
        except FileSystemError as error:
            return f"unreadable: {error.os_error_text}"

    def _files(self, layout: RunLayout, run: TraceNode, rounds: list[TraceNode]) -> list[Finding]:
        listed = listed_files(run, rounds)
        found = {path: self._digest(posixpath.join(layout.run_dir, path)) for path, _ in listed}
        return file_findings(listed, found)

    def _progress(self, layout: RunLayout) -> ProgressFile | str | None:
        if not self._fs.lexists(layout.status):
            return None  # an observation aid: its absence says nothing of the record
        progress = read_progress(self._fs, layout.status)
        if isinstance(progress, Refusal):
            return progress.message.removeprefix(layout.status + ": ")
        return progress

    def _round_folders(self, layout: RunLayout) -> list[int]:
        try:
            names = self._fs.listdir(layout.rounds)
        except FileSystemError:
            return []
        return [
            int(entry.name)
            for entry in names
            if entry.name.isdigit()
            and self._fs.lexists(posixpath.join(layout.rounds, entry.name, TRACE_FILE))
        ]

    # -- the chain of patches -----------------------------------------------------------

    def _patch_bytes(self, path: str) -> bytes | None:
        try:
            found = self._fs.stat(path)
            if found.kind is not EntryKind.FILE or found.size > MAX_PATCH_BYTES:
                return None
            return self._fs.read_bytes(path)
        except FileSystemError:
            return None

    def _patches(self, layout: RunLayout, rounds: list[TraceNode]) -> dict[int, ParsedPatch]:
        patches: dict[int, ParsedPatch] = {}
        for node in rounds:
            n = node.round_content().round
            if not any(f.path == CHANGES_FILE for f in node.files):
                continue
            data = self._patch_bytes(posixpath.join(layout.round_dir(n), CHANGES_FILE))
            if data is not None:
                patches[n] = parse_patch(data)
        return patches

    def _repository(self, layout: RunLayout) -> GitRepository | str:
        record = read_record(self._fs, layout.run_dir)
        if isinstance(record, Refusal):
            return f"the record names no worktree ({record.message})"
        worktree = record.worktree
        if not worktree.startswith("/") or not self._fs.is_dir(worktree):
            return f"the run's worktree {worktree} is not on this machine"
        try:
            git_dir, common = self._git.git_dirs(worktree)
        except GitCommandFailed as failed:
            return f"{worktree} is no Git worktree here ({failed.output.strip()[:200]})"
        return GitRepository(worktree=worktree, git_dir=git_dir, common_dir=common)

    def _with_git(
        self,
        layout: RunLayout,
        run: TraceNode,
        rounds: list[TraceNode],
        patches: dict[int, ParsedPatch],
    ) -> tuple[str, list[Finding]]:
        meta = run.run_metadata()
        if meta.start_tree is None:
            return "the run's host kept no trees: the patches alone were checked", []
        if self._replay is None:
            return "no Git here: the patches alone were checked", []
        repo = self._repository(layout)
        if isinstance(repo, str):
            return f"{repo}: the patches alone were checked", []
        chain: list[tuple[int, bytes, str]] = []
        for node in rounds:
            n, tree = node.round_content().round, node.round_metadata().tree
            patch = patches.get(n)
            if patch is None or tree is None or patch.cut or patch.no_patch is not None:
                break
            data = self._patch_bytes(posixpath.join(layout.round_dir(n), CHANGES_FILE)) or b""
            chain.append((n, data if patch.sections else b"", tree))
        replayed = self._replay.replay(
            repo, meta.head_commit, [data for _, data, _ in chain if data]
        )
        if replayed.base is None:
            return f"Git could not read the starting commit ({replayed.stopped})", []
        if replayed.base != meta.start_tree:
            return (
                "the worktree's rw state at the start was not its commit's (uncommitted "
                "changes): the start tree is in no repository, the patches alone were checked",
                [],
            )
        return self._compare(chain, replayed.base, replayed.trees, replayed.stopped)

    @staticmethod
    def _compare(
        chain: Sequence[tuple[int, bytes, str]],
        base: str,
        trees: Sequence[str],
        stopped: str | None,
    ) -> tuple[str, list[Finding]]:
        findings: list[Finding] = []
        applied = iter(trees)
        tree_now: str | None = base
        for n, data, recorded in chain:
            if data:
                tree_now = next(applied, None)
                if tree_now is None:
                    findings.append(
                        Finding(f"rounds/{n}/{CHANGES_FILE}", f"Git could not apply it: {stopped}")
                    )
                    break
            if tree_now is not None and tree_now != recorded:
                findings.append(
                    Finding(
                        f"rounds/{n}/{TRACE_FILE}",
                        f"records the tree {recorded}; its patch applied onto the tree before "
                        f"gives {tree_now}",
                    )
                )
        rounds = len(chain)
        return f"Git applied the patches of {rounds} round(s) onto the starting commit", findings

    # -- the attestation ----------------------------------------------------------------

    def _attestation(
        self, layout: RunLayout, public_key: bytes | None
    ) -> tuple[str, list[Finding]]:
        path = posixpath.join(layout.run_dir, ATTESTATION_FILE)
        asked = public_key is not None
        if not self._fs.lexists(path):
            said = "the run has no attestation (its host ended before it wrote one)"
            return said, [Finding(ATTESTATION_FILE, said, discrepancy=asked)]
        data = self._patch_bytes_bounded(path)
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

    def _patch_bytes_bounded(self, path: str) -> bytes | None:
        try:
            found = self._fs.stat(path)
            if found.kind is not EntryKind.FILE or found.size > MAX_ENVELOPE_BYTES:
                return None
            return self._fs.read_bytes(path)
        except FileSystemError:
            return None

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
            now = self._digest(posixpath.join(layout.run_dir, path))
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
