"""What `verify` finds in a run directory (issue 30 §4), decided from what the application read.

Each finding names the file (relative to the run directory) and what is wrong; a finding is a
discrepancy (verify exits 1) or a note (said, exit 0: a run that has no attestation because its
host died before it, a statement that is unsigned when no key was asked for, a chain that
cannot be followed past a patch cut at its bound). Pure: the facts come in as values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from concorde_workers.domain.attestation.patches import ParsedPatch, chain_breaks, changed_net
from concorde_workers.domain.evidence.records import ProgressFile, TraceNode
from concorde_workers.domain.ground.layout import BRIEF_FILE, TRACE_FILE
from concorde_workers.domain.run.changes import CHANGES_FILE

__all__ = [
    "Finding",
    "chain_findings",
    "file_findings",
    "listed_files",
    "record_findings",
]


@dataclass(frozen=True)
class Finding:
    """One thing verify says: the file it is about (relative to the run directory; empty for
    the run as a whole), what it found, and whether it is a discrepancy (else a note)."""

    file: str
    problem: str
    discrepancy: bool = True

    def to_json(self) -> dict[str, object]:
        return {"file": self.file, "problem": self.problem, "discrepancy": self.discrepancy}


def _folder(n: int | None) -> str:
    return "" if n is None else f"rounds/{n}/"


def listed_files(run: TraceNode, rounds: Sequence[TraceNode]) -> list[tuple[str, str]]:
    """Every file a node lists, by its path relative to the run directory, with its digest."""
    listed = [(f.path, f.digest) for f in run.files]
    for node in rounds:
        folder = _folder(node.round_content().round)
        listed += [(folder + f.path, f.digest) for f in node.files]
    return listed


def file_findings(
    listed: Sequence[tuple[str, str]], found: Mapping[str, str | None]
) -> list[Finding]:
    """A listed file that is missing, unreadable or whose bytes are not what its node lists.
    `found`: each listed path's digest now, None when it is missing, or a text starting with
    `unreadable:` when it cannot be digested."""
    findings: list[Finding] = []
    for path, digest in listed:
        now = found.get(path)
        if now is None:
            findings.append(Finding(path, f"is missing; its node lists it with {digest}"))
        elif now.startswith("unreadable:"):
            findings.append(Finding(path, f"cannot be read ({now.removeprefix('unreadable: ')})"))
        elif now != digest:
            findings.append(
                Finding(path, f"fails its digest: its node lists {digest}, it has {now}")
            )
    return findings


def _round_findings(run: TraceNode, node: TraceNode, n: int) -> list[Finding]:
    where = f"rounds/{n}/{TRACE_FILE}"
    findings: list[Finding] = []
    if node.id != f"{run.id}/{n}" or node.parent != run.id:
        findings.append(Finding(where, f"is the node {node.id} of {node.parent}, not round {n}"))
    if node.status == "running":
        findings.append(Finding(where, "still says running though its run has ended"))
    content = node.round_content()
    listed = {f.path for f in node.files}
    store = run.run_metadata().start_tree is not None
    if store and content.audit is not None and CHANGES_FILE not in listed:
        findings.append(
            Finding(where, f"was audited but lists no {CHANGES_FILE}: the round's patch is missing")
        )
    return findings


def record_findings(
    run: TraceNode,
    rounds: Sequence[TraceNode],
    progress: ProgressFile | str | None,
    round_folders: Sequence[int],
) -> list[Finding]:
    """Where the record (the run node and status.json) disagrees with the round nodes: a run
    still running, a count of rounds that is not the folders', a round node of another run or
    number, an audited round of a run with a change store that keeps no patch, a progress
    file of another run or ending. `progress`: status.json read, or why it cannot be."""
    findings: list[Finding] = []
    if run.status == "running":
        findings.append(
            Finding(TRACE_FILE, "still says running: the run's record was not finished")
        )
    count = run.run_content().rounds
    extra = sorted(n for n in round_folders if n > count)
    if extra:
        findings.append(
            Finding(TRACE_FILE, f"counts {count} round(s), but rounds/{extra[0]}/ holds a node")
        )
    for n, node in enumerate(rounds, start=1):
        findings += _round_findings(run, node, n)
    if isinstance(progress, str):
        findings.append(Finding("status.json", progress))
    elif progress is not None:
        said = run.outcome or run.status
        if progress.run_id != run.id:
            findings.append(
                Finding("status.json", f"names the run {progress.run_id}, not {run.id}")
            )
        elif progress.phase != "finished" or progress.status != said:
            findings.append(
                Finding(
                    "status.json",
                    f"says {progress.phase} {progress.status}, the record {said}",
                )
            )
    brief = next((f.digest for f in run.files if f.path == BRIEF_FILE), None)
    meant = run.run_metadata().brief_digest
    if brief is not None and meant is not None and brief != meant:
        findings.append(Finding(BRIEF_FILE, f"is not the brief the record names ({meant})"))
    return findings


def chain_findings(
    rounds: Sequence[TraceNode], patches: Mapping[int, ParsedPatch]
) -> list[Finding]:
    """Whether the rounds' patches follow on from one another (each path's blob), and whether
    every path they leave changed is one the last audit lists as changed since the snapshot:
    the chain checked from the patches alone."""
    findings: list[Finding] = []
    ordered = sorted(patches.items())
    for n, patch in ordered:
        if patch.problem is not None:
            findings.append(Finding(f"rounds/{n}/{CHANGES_FILE}", patch.problem))
        elif patch.round is not None and patch.round != n:
            findings.append(
                Finding(f"rounds/{n}/{CHANGES_FILE}", f"is the patch of round {patch.round}")
            )
    breaks, stopped = chain_breaks(ordered)
    findings += [Finding(CHANGES_FILE, problem) for problem in breaks]
    if stopped is not None:
        patch = patches[stopped]
        why = "was cut at its bound" if patch.cut else f"holds no patch ({patch.no_patch})"
        findings.append(
            Finding(
                f"rounds/{stopped}/{CHANGES_FILE}",
                f"{why}: the chain of patches is checked up to round {stopped - 1}",
                discrepancy=False,
            )
        )
        return findings
    audited = [node.round_content().audit for node in rounds]
    last = next((a for a in reversed(audited) if a is not None), None)
    if last is not None and ordered:
        unlisted = sorted(set(changed_net([p for _, p in ordered])) - set(last.changed))
        if unlisted:
            findings.append(
                Finding(
                    CHANGES_FILE,
                    f"the patches change {', '.join(unlisted[:10])}, which the last audit "
                    "does not list as changed",
                )
            )
    return findings
