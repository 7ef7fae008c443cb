"""The audit: what a round changed since the run's one snapshot, judged against the grant.

Seed 000 "Audit". The application takes the snapshot before the first round and an observation
after each round with read-only Git (`git status --porcelain=v2 -z --untracked-files=all` and the
digests of the listed files); this module compares the two. Both have the same shape: HEAD (branch
and commit), the index digest and a state per path. A path Git lists as deleted, or a snapshot path
that is gone when measured where it lies, has the state `None`. Paths Git ignores are never listed,
so they are never observed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.boundary.grant import Grant, Level


class FileState(BaseModel):
    """One file as Git sees it: the digest of its content and its executable bit. `gitlink`
    marks the state of a submodule path itself: the commit its repository has checked out,
    read from the repository's administrative directory (a change of it is Git metadata).
    `git_dir` marks a directory Git takes for a Git directory though it is not named `.git`
    (a "bare" repository, found by the host's walk): Git metadata too."""

    model_config = ConfigDict(frozen=True)

    digest: str
    executable: bool
    gitlink: bool = False
    git_dir: bool = False

    @property
    def git_metadata(self) -> bool:
        """The state of Git metadata by what it is, whatever its path."""
        return self.gitlink or self.git_dir


class WorktreeState(BaseModel):
    """HEAD, the index digest and the state of every path Git lists (`None`: the file is gone).

    As a snapshot it holds every tracked change and untracked file (a tracked deletion already
    present is kept as `None`, so it is not attributed to the worker). As an observation it holds
    every path Git lists after the round plus every snapshot path Git no longer lists, measured
    where it lies (see `observe`).
    """

    model_config = ConfigDict(frozen=True)

    head_branch: str | None
    head_commit: str | None
    index_digest: str
    files: Mapping[str, FileState | None]
    config_digest: str = ""


Snapshot = WorktreeState
"""The worktree before the first round."""

Observation = WorktreeState
"""The worktree after a round, in the snapshot's shape."""


def observe(
    snapshot: Snapshot,
    head_branch: str | None,
    head_commit: str | None,
    index_digest: str,
    listed: Mapping[str, FileState | None],
    measure: Callable[[str], FileState | None],
    config_digest: str = "",
) -> Observation:
    """The observation after a round: what Git lists, completed by every snapshot path Git no
    longer lists, measured where it lies by `measure` (a `FileState`, e.g. equal to HEAD again,
    or `None` when the file is gone)."""
    files: dict[str, FileState | None] = dict(listed)
    for path in snapshot.files:
        if path not in files:
            files[path] = measure(path)
    return WorktreeState(
        head_branch=head_branch,
        head_commit=head_commit,
        index_digest=index_digest,
        files=files,
        config_digest=config_digest,
    )


class Verdict(StrEnum):
    CLEAN = "clean"
    VIOLATION = "violation"


class ViolationKind(StrEnum):
    """What a violation concerns: HEAD, the index, the Git configuration, or a path."""

    HEAD = "head"
    INDEX = "index"
    CONFIG = "config"
    PATH = "path"


HEAD_VIOLATION = "HEAD"
INDEX_VIOLATION = "index"
# Beyond the spec's Git state (docs/decisions.md): what decides which files Git lists. A worker
# that changed info/exclude or the repository's config could hide a file from the audit.
CONFIG_VIOLATION = "Git configuration"
DELETED_SUFFIX = " (deleted)"
_GIT_STATE_TEXTS: Mapping[ViolationKind, str] = {
    ViolationKind.HEAD: HEAD_VIOLATION,
    ViolationKind.INDEX: INDEX_VIOLATION,
    ViolationKind.CONFIG: CONFIG_VIOLATION,
}


@dataclass(frozen=True)
class Violation:
    """One violation of a round's audit: HEAD, the index or the Git configuration changed, or a
    path (`deleted` when the round deleted it) changed outside the grant's rw paths. Its text
    (`str`) is what the round trace records (contract.workers.worker-round-trace `audit`)."""

    kind: ViolationKind
    path: str = ""
    deleted: bool = False

    @classmethod
    def of_path(cls, path: str, deleted: bool = False) -> Violation:
        return cls(ViolationKind.PATH, path, deleted)

    @classmethod
    def parse(cls, text: str) -> Violation:
        """The violation a recorded text names (the inverse of `str`)."""
        for kind, said in _GIT_STATE_TEXTS.items():
            if text == said:
                return cls(kind)
        if text.endswith(DELETED_SUFFIX):
            return cls.of_path(text[: -len(DELETED_SUFFIX)], deleted=True)
        return cls.of_path(text)

    def __str__(self) -> str:
        if self.kind is not ViolationKind.PATH:
            return _GIT_STATE_TEXTS[self.kind]
        return self.path + DELETED_SUFFIX if self.deleted else self.path

    def explanation(self) -> str:
        """What the violation means, for an error's detail."""
        if self.kind is ViolationKind.HEAD:
            return "HEAD names another branch or commit than at the snapshot"
        if self.kind is ViolationKind.INDEX:
            return "the index changed"
        if self.kind is ViolationKind.CONFIG:
            return (
                "the Git configuration that decides which files Git lists (the repository's "
                "config or info/exclude) changed"
            )
        if self.deleted:
            return f"{self.path} was deleted"
        return f"{self.path} was created or changed outside the grant's rw paths"


class Audit(BaseModel):
    """The audit object a round records (contract.workers.worker-round-trace `audit`)."""

    model_config = ConfigDict(frozen=True)

    verdict: Verdict
    changed: tuple[str, ...]
    violations: tuple[Violation, ...]

    @property
    def clean(self) -> bool:
        return self.verdict is Verdict.CLEAN

    @property
    def violation_texts(self) -> tuple[str, ...]:
        """Every violation as the round trace records it."""
        return tuple(str(v) for v in self.violations)

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict.value,
            "changed": list(self.changed),
            "violations": list(self.violation_texts),
        }


def path_order(path: str) -> bytes:
    """Git's path order: the bytes of the UTF-8 path, a path decoded with surrogateescape (as
    `git_status.decode_path` does) giving back its own bytes."""
    try:
        return path.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return path.encode("utf-8", "surrogatepass")


def changed_paths(snapshot: Snapshot, observed: Observation) -> tuple[str, ...]:
    """Every path created, changed or deleted since the snapshot, in path order.

    A path Git lists now but not at the snapshot changed (it was equal to HEAD, or absent); a
    snapshot path changed when its state differs. A snapshot path the observation lacks counts as
    gone: an incomplete observation can only make the audit stricter.
    """
    new = (p for p in observed.files if p not in snapshot.files)
    differ = (p for p, before in snapshot.files.items() if observed.files.get(p) != before)
    return tuple(sorted({*new, *differ}, key=path_order))


def git_state_violations(snapshot: Snapshot, observed: Observation) -> tuple[Violation, ...]:
    """`HEAD` when HEAD names another branch or commit, then `index` for a changed index, then
    `Git configuration` when what decides which files Git lists changed."""
    found: list[Violation] = []
    if (snapshot.head_branch, snapshot.head_commit) != (observed.head_branch, observed.head_commit):
        found.append(Violation(ViolationKind.HEAD))
    if snapshot.index_digest != observed.index_digest:
        found.append(Violation(ViolationKind.INDEX))
    if snapshot.config_digest != observed.config_digest:
        found.append(Violation(ViolationKind.CONFIG))
    return tuple(found)


def is_git_metadata(path: str) -> bool:
    """A path with a `.git` segment: Git metadata, never a worker's."""
    return ".git" in path.rstrip("/").split("/")


def path_violation(
    grant: Grant, path: str, after: FileState | None, before: FileState | None = None
) -> Violation | None:
    """The violation a changed path makes, or None when it is allowed (changed or new in rw).
    Git metadata (a `.git` segment, the commit a submodule path has checked out, a directory
    Git takes for a Git directory) is never the worker's, whatever the level around it."""
    if after is None:
        return Violation.of_path(path, deleted=True)
    if is_git_metadata(path) or after.git_metadata or (before is not None and before.git_metadata):
        return Violation.of_path(path)
    if grant.level_of(path) is Level.RW:
        return None
    return Violation.of_path(path)


def audit(grant: Grant, snapshot: Snapshot, observed: Observation) -> Audit:
    """Seed 000 "Audit": compare the observation with the snapshot, each path by its level."""
    changed = changed_paths(snapshot, observed)
    found: list[Violation] = list(git_state_violations(snapshot, observed))
    for path in changed:
        violation = path_violation(grant, path, observed.files.get(path), snapshot.files.get(path))
        if violation is not None:
            found.append(violation)
    verdict = Verdict.VIOLATION if found else Verdict.CLEAN
    return Audit(verdict=verdict, changed=changed, violations=tuple(found))


def worktree_unchanged(snapshot: Snapshot, observed: Observation) -> bool:
    """True when nothing (HEAD, index or any file) differs from the snapshot."""
    return not changed_paths(snapshot, observed) and not git_state_violations(snapshot, observed)


def describe_violations(result: Audit | Iterable[Violation | str]) -> str:
    """One line for an error's detail naming every violation, or an empty string when none. A
    text is a violation as a record holds it (`Violation.parse`)."""
    found = result.violations if isinstance(result, Audit) else result
    violations = tuple(v if isinstance(v, Violation) else Violation.parse(v) for v in found)
    if not violations:
        return ""
    listed = "; ".join(v.explanation() for v in violations)
    count = len(violations)
    return f"the audit found {count} violation{'s' if count != 1 else ''}: {listed}"
