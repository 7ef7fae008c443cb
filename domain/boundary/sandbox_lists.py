"""The sandbox filesystem lists (notes/harness.md §1.2, §5; notes/pi.md §9): one function for
Claude Code's sandbox and pi's sandbox-runtime, from the one frozen grant.

Decision where the spec is silent: what the backends' programs keep in the runtime directory for
themselves (their profiles' `RuntimeEntries`: pi's hardening of notes/pi.md §9) sits in the
SHARED lists: denyRead and denyWrite what belongs to the host (`<rt>/tmp/jiti`), denyWrite what
is not writable (`<rt>/work/.pi`). One list for every backend keeps "the same code"; Claude Code
has no jiti cache and no `.pi`, so the entries are inert there.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.boundary.grant import READABLE, Grant, GrantEntry, Level
from concorde_workers.domain.boundary.hidden import Hidden
from concorde_workers.domain.gitview.placement import AdminPath
from concorde_workers.domain.ground.layout import RuntimeLayout, host_paths
from concorde_workers.domain.ground.layout import not_writable as backends_not_writable
from concorde_workers.domain.ground.paths import dedupe, is_within, outermost

__all__ = ["SandboxFilesystem", "sandbox_filesystem"]


class SandboxFilesystem(BaseModel):
    """The sandbox filesystem lists, shared by Claude Code and pi (notes/harness.md §1.2)."""

    model_config = ConfigDict(frozen=True)

    deny_read: tuple[str, ...]
    allow_read: tuple[str, ...]
    allow_write: tuple[str, ...]
    deny_write: tuple[str, ...]

    def to_json(self) -> dict[str, list[str]]:
        return {
            "denyRead": list(self.deny_read),
            "allowRead": list(self.allow_read),
            "allowWrite": list(self.allow_write),
            "denyWrite": list(self.deny_write),
        }


def _abs(worktree: str, entry: GrantEntry) -> str:
    return posixpath.join(worktree, entry.bare)


def _below_dir_of(grant: Grant, entry: GrantEntry, levels: frozenset[Level]) -> bool:
    return grant.index().under_directory(entry.bare, levels)


def sandbox_filesystem(
    grant: Grant,
    worktree: str,
    primary: str,
    user_home: str,
    runtime: RuntimeLayout,
    runtime_paths: Sequence[str],
    git: Sequence[AdminPath],
    boundaries: Sequence[str] = (),
    hidden: Hidden | None = None,
    other_runs: Sequence[str] = (),
) -> SandboxFilesystem:
    """The four lists, one function for both backends. The sandbox lists are fixed when the
    sandbox starts, so they cannot name a run that starts later: the temp root itself is denied
    (commands see an empty one, with the worker's own directories bound back), unless it is `/`,
    when only the other runs that exist now are listed (docs/decisions.md)."""
    readable = [_abs(worktree, e) for e in grant.entries if e.level in READABLE]
    writable = [_abs(worktree, e) for e in grant.entries if e.level is Level.RW]
    names_apart = [
        _abs(worktree, e)
        for e in grant.entries
        if e.level is Level.NAMES and _below_dir_of(grant, e, READABLE)
    ]
    not_writable = [
        _abs(worktree, e)
        for e in grant.entries
        if e.level is not Level.RW and _below_dir_of(grant, e, frozenset({Level.RW}))
    ]
    runtime_in_writable = [r for r in runtime_paths if any(is_within(r, w) for w in writable)]
    deny_read = [worktree, user_home]
    if primary != user_home:
        deny_read.append(primary)
    deny_read += [g.path for g in git]
    deny_read += [*host_paths(runtime), *names_apart]
    deny_read += outermost(boundaries, done=(user_home, primary))
    if hidden is not None:
        deny_read += [*hidden.credentials, *hidden.run_directories]
        if hidden.runtime_root != "/":
            deny_read.append(hidden.runtime_root)
        else:
            deny_read += other_runs
    return SandboxFilesystem(
        deny_read=dedupe(deny_read),
        allow_read=tuple(sorted({*readable, *runtime.worker_dirs, *runtime_paths})),
        allow_write=tuple(sorted({*writable, *runtime.worker_dirs})),
        deny_write=dedupe([*not_writable, *runtime_in_writable, *backends_not_writable(runtime)]),
    )
