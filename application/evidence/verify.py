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
   signature holds for that public key (attestation_check.py).
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from concorde_workers.application.evidence.attestation_check import AttestationCheck
from concorde_workers.application.evidence.trace_reads import (
    MAX_PATCH_BYTES,
    digest_of,
    read_bounded,
)
from concorde_workers.application.tracing.reader import read_node, read_progress, read_record
from concorde_workers.domain.attestation.patches import ParsedPatch, parse_patch
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
from concorde_workers.domain.run.changes import CHANGES_FILE
from concorde_workers.ports.machine.attestation import Sealer
from concorde_workers.ports.machine.filesystem import FileSystemError, TreeReading
from concorde_workers.ports.repository.git import GitCommandFailed, GitReader
from concorde_workers.ports.repository.replay import PatchReplay

__all__ = ["Verification", "Verifier"]


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
        self, fs: TreeReading, sealer: Sealer, git: GitReader, replay: PatchReplay | None
    ) -> None:
        self._fs, self._git, self._replay = fs, git, replay
        self._attestation = AttestationCheck(fs, sealer)

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
        signature, found = self._attestation.check(layout, public_key)
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

    def _files(self, layout: RunLayout, run: TraceNode, rounds: list[TraceNode]) -> list[Finding]:
        listed = listed_files(run, rounds)
        found = {
            path: digest_of(self._fs, posixpath.join(layout.run_dir, path)) for path, _ in listed
        }
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

    def _patches(self, layout: RunLayout, rounds: list[TraceNode]) -> dict[int, ParsedPatch]:
        patches: dict[int, ParsedPatch] = {}
        for node in rounds:
            n = node.round_content().round
            if not any(f.path == CHANGES_FILE for f in node.files):
                continue
            data = self._patch_bytes(layout, n)
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
            data = self._patch_bytes(layout, n) or b""
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
        return compare_trees(chain, replayed.base, replayed.trees, replayed.stopped)

    def _patch_bytes(self, layout: RunLayout, n: int) -> bytes | None:
        """Round n's changes.patch, when it is a regular file within verify's bound."""
        path = posixpath.join(layout.round_dir(n), CHANGES_FILE)
        return read_bounded(self._fs, path, MAX_PATCH_BYTES)


def compare_trees(
    chain: Sequence[tuple[int, bytes, str]],
    base: str,
    trees: Sequence[str],
    stopped: str | None,
) -> tuple[str, list[Finding]]:
    """What Git's replay says of the chain (pure): each round's tree after its patch against the
    tree its node records, from the starting commit's tree `base`; `trees` are the trees Git
    made, one a patch applied, until it `stopped`."""
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
