"""The Git metadata a worker left (issue 8 §1, docs/decisions.md): each `.git` entry the last
round created is moved out of the worktree into a tar archive in the run directory (bounded), or
left where it is with why; one that was there at the snapshot is the user's, and stays."""

from __future__ import annotations

import posixpath

from concorde_workers.application.preparation.prepared import Prepared
from concorde_workers.application.runtime.run_state import RunState
from concorde_workers.domain.gitview.git_metadata import GitMetadata
from concorde_workers.ports.machine.filesystem import (
    ARCHIVE_END_BYTES,
    FileSystemError,
    Rearranging,
    tar_member_cost,
)

__all__ = ["PLANTED_GIT_CAP_BYTES", "PLANTED_GIT_DIR", "leave_git_metadata", "move_git_metadata"]

PLANTED_GIT_DIR = "planted-git"
"""The run directory's folder of the Git metadata the host moved out of the worktree."""
PLANTED_GIT_CAP_BYTES = 16 * 1024 * 1024
"""The most the planted-git archives of one run hold together, so that what a worker plants
cannot fill the disk of the trace: what does not fit is left out and said."""


def leave_git_metadata(state: RunState, why: str) -> None:
    """Each `.git` entry the last round created stays where it is, and why."""
    if state.rounds:
        last = state.rounds[-1]
        last.git_metadata = tuple(
            item.model_copy(update={"left": why}) for item in last.git_metadata
        )


def move_git_metadata(fs: Rearranging, state: RunState, prepared: Prepared) -> None:
    """Move each `.git` entry the last round created out of the worktree, into a tar
    archive in the run directory: left there, it would run its configuration for whoever
    next uses Git in the worktree (a plain `git status` recurses into a submodule path).
    One that was there at the snapshot is the user's, and stays."""
    if not state.rounds:
        return
    last = state.rounds[-1]
    moved: list[GitMetadata] = []
    budget = PLANTED_GIT_CAP_BYTES
    for number, item in enumerate(last.git_metadata, start=1):
        if not item.created:
            moved.append(item.model_copy(update={"left": "it was there before the run"}))
            continue
        item, used = _move_one(
            fs, item, number, state.layout.run_dir, prepared.placement.worktree, budget
        )
        moved.append(item)
        budget -= used
    last.git_metadata = tuple(moved)


def _move_one(
    fs: Rearranging, item: GitMetadata, number: int, run_dir: str, worktree: str, budget: int
) -> tuple[GitMetadata, int]:
    """Archive the entry within `budget` bytes (none at all when not even an empty archive
    fits), then remove it from the worktree; the item as moved, and the bytes archived."""
    source = posixpath.join(worktree, item.path)
    folder = posixpath.join(run_dir, PLANTED_GIT_DIR)
    archive = posixpath.join(folder, f"{number}.tar")
    archived: str | None = archive
    used = 0
    try:
        if budget >= ARCHIVE_END_BYTES + tar_member_cost(item.path):
            fs.makedirs(folder, 0o700)
            left = fs.archive(source, archive, budget)
            used = fs.stat(archive).size
            if left.entries_left_out:
                n = left.entries_left_out
                item = item.model_copy(
                    update={
                        "left_out": (
                            f"{n} entr{'y' if n == 1 else 'ies'} ({left.bytes_left_out} bytes), "
                            "over "
                            f"the {PLANTED_GIT_CAP_BYTES // (1024 * 1024)} MiB the run's archives "
                            "may hold"
                        )
                    }
                )
        else:
            archived = None
            item = item.model_copy(
                update={
                    "left_out": (
                        f"all of it: the {PLANTED_GIT_CAP_BYTES // (1024 * 1024)} MiB the run's "
                        "archives may hold were used up"
                    )
                }
            )
        if fs.is_dir(source) and not fs.is_symlink(source):
            fs.rmtree(source)
        else:
            fs.remove(source)
    except FileSystemError as error:
        return item.model_copy(
            update={
                "left": f"the host could not move it: {error.op} {error.path}: "
                f"{error.os_error_text}"
            }
        ), used
    if archived is None:
        return item.model_copy(update={"removed": True}), used
    return item.model_copy(update={"moved_to": archived}), used
