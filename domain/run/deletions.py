"""The worker's proposed deletions: normalized, deduplicated and judged; the host performs them.

Seed 000 "Proposed deletions". Each proposed path is read relative to the worktree (an absolute
path as the same path in the worktree), normalized, and dropped when an earlier entry already named
it. Each remaining path is judged with its directories' symbolic links resolved, by the level the
audit reads (the exact grant entry, else the longest directory entry above it):

| the proposed path                                          | outcome                       |
|------------------------------------------------------------|-------------------------------|
| outside the worktree, outside rw, or an existing non-file  | refused, as the worker gave it|
| in rw and absent                                           | absent, relative              |
| an existing file (or a final symbolic link) in rw          | to delete, relative           |

A final symbolic link is removed itself, never its target. The application performs the planned
deletions (removing `PlannedDeletion.target`) and hands the failures back to `outcome`.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.boundary.grant import Grant, Level
from concorde_workers.domain.ground.paths import is_within, relative_to

Kind = Literal["file", "symlink", "directory", "other", "absent"]
ResolveParent = Callable[[str], str]
"""The real path of an absolute path's parent directory joined with its final name."""
KindOf = Callable[[str], Kind]
"""What lies at an absolute path, without following a final symbolic link."""

DELETABLE_KINDS: frozenset[str] = frozenset({"file", "symlink"})


class PlannedDeletion(BaseModel):
    """A deletion to perform: the path relative to the worktree and the absolute path to remove
    (its directories' links resolved, its final name kept, so a final link goes, not its target)."""

    model_config = ConfigDict(frozen=True)

    path: str
    target: str


class DeletionPlan(BaseModel):
    model_config = ConfigDict(frozen=True)

    to_delete: tuple[PlannedDeletion, ...] = ()
    refused: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()


class DeletionOutcome(BaseModel):
    """The four lists of the run record (deleted, deletions_refused, deletions_absent,
    deletions_failed), the operating system's error of each failed deletion, and the planned
    deletions an interruption left unperformed (no field of the record: its error names them)."""

    model_config = ConfigDict(frozen=True)

    deleted: tuple[str, ...] = ()
    refused: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()
    failed: tuple[str, ...] = ()
    errors: Mapping[str, str] = {}
    not_performed: tuple[str, ...] = ()

    @property
    def any_failed(self) -> bool:
        return bool(self.failed)


def normalize(proposed: str, worktree: str) -> str | None:
    """The proposed path as a normalized absolute path, or None when it is not a path at all
    (empty or with a NUL character). A relative path is read relative to the worktree."""
    if proposed == "" or "\x00" in proposed:
        return None
    joined = proposed if proposed.startswith("/") else posixpath.join(worktree, proposed)
    normalized = posixpath.normpath(joined)
    if normalized.startswith("//"):
        normalized = "/" + normalized.lstrip("/")
    return normalized


def dedupe(proposed: Sequence[str], worktree: str) -> tuple[tuple[str, str | None], ...]:
    """Each entry, as given and normalized, but for an entry naming a path an earlier one named."""
    seen: set[str] = set()
    kept: list[tuple[str, str | None]] = []
    for entry in proposed:
        normalized = normalize(entry, worktree)
        key = normalized if normalized is not None else "\x00" + entry
        if key in seen:
            continue
        seen.add(key)
        kept.append((entry, normalized))
    return tuple(kept)


def _judge(
    normalized: str | None, worktree: str, grant: Grant, resolve_parent: ResolveParent, kind: KindOf
) -> tuple[Kind, str, str] | None:
    """(kind, relative path, real target) of a path that may be deleted or is absent in rw,
    or None when it is refused."""
    if normalized is None or not is_within(normalized, worktree) or normalized == worktree:
        return None
    real = posixpath.normpath(resolve_parent(normalized))
    if real == worktree or not is_within(real, worktree):
        return None
    rel = relative_to(real, worktree)
    if ".git" in rel.split("/") or grant.level_of(rel) is not Level.RW:
        return None
    found = kind(real)
    if found != "absent" and found not in DELETABLE_KINDS:
        return None
    return found, rel, real


def plan_deletions(
    proposed: Sequence[str],
    worktree: str,
    grant: Grant,
    resolve_parent: ResolveParent,
    kind: KindOf,
) -> DeletionPlan:
    """Seed 000 "Proposed deletions": the plan for the worker's `proposed_deletions`.

    `worktree` is the worktree's real absolute path. A second entry whose directories resolve to
    a path already planned is dropped too, so one file is deleted once.
    """
    worktree = posixpath.normpath(worktree)
    to_delete: list[PlannedDeletion] = []
    refused: list[str] = []
    absent: list[str] = []
    planned: set[str] = set()
    for entry, normalized in dedupe(proposed, worktree):
        judged = _judge(normalized, worktree, grant, resolve_parent, kind)
        if judged is None:
            refused.append(entry)
            continue
        found, rel, real = judged
        if real in planned:
            continue
        planned.add(real)
        if found == "absent":
            absent.append(rel)
        else:
            to_delete.append(PlannedDeletion(path=rel, target=real))
    return DeletionPlan(to_delete=tuple(to_delete), refused=tuple(refused), absent=tuple(absent))


def outcome(
    plan: DeletionPlan, failures: Mapping[str, str], attempted: Sequence[str] | None = None
) -> DeletionOutcome:
    """What became of the plan once performed: `failures` maps a planned relative path to the
    operating system's error of its failed deletion; every other planned path `attempted` names
    (all of them when None) was deleted, and the planned paths it does not name were not
    performed (an interruption stopped the deletions before them)."""
    unknown = set(failures) - {d.path for d in plan.to_delete}
    if unknown:
        raise ValueError(f"failures for paths the plan does not delete: {sorted(unknown)}")
    done = {d.path for d in plan.to_delete} if attempted is None else set(attempted)
    deleted = tuple(d.path for d in plan.to_delete if d.path in done and d.path not in failures)
    failed = tuple(d.path for d in plan.to_delete if d.path in done and d.path in failures)
    return DeletionOutcome(
        deleted=deleted,
        refused=plan.refused,
        absent=plan.absent,
        failed=failed,
        errors={p: failures[p] for p in failed},
        not_performed=tuple(d.path for d in plan.to_delete if d.path not in done),
    )


SHOWN = 10
"""At most this many paths of each list an interruption's detail names (the record's lists are
whole; the paths not performed are in no list but this detail's)."""


def _some(paths: Sequence[str]) -> str:
    shown = ", ".join(paths[:SHOWN])
    more = len(paths) - SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


def describe_interruption(result: DeletionOutcome) -> str:
    """What an interruption of the host's deletions left (seed 000: "Interruption leaves the
    worktree as the interruption found it"): how many of the planned deletions were done, the
    paths deleted and failed, and those not performed; empty when nothing was left unperformed."""
    if not result.not_performed:
        return ""
    planned = len(result.deleted) + len(result.failed) + len(result.not_performed)
    parts = [
        f"the host had performed {len(result.deleted) + len(result.failed)} of the "
        f"{planned} deletions it was to perform when the run was interrupted",
        "deleted: " + (_some(result.deleted) or "none"),
    ]
    if result.failed:
        parts.append(
            "failed: " + _some([f"{p} ({result.errors.get(p, '')})" for p in result.failed])
        )
    parts.append(
        "not performed, left as the interruption found them: " + _some(result.not_performed)
    )
    return "; ".join(parts)


def describe_outcome(result: DeletionOutcome) -> str:
    """The detail of deletion_failed: what was deleted, what failed and why, refused, absent."""
    parts = [
        "deleted: " + (", ".join(result.deleted) or "none"),
        "failed: "
        + (", ".join(f"{p} ({result.errors.get(p, '')})" for p in result.failed) or "none"),
        "refused: " + (", ".join(result.refused) or "none"),
        "already absent: " + (", ".join(result.absent) or "none"),
    ]
    return "; ".join(parts)
