"""One run at a time in a worktree (issue 19 §3): a person at a shell has no Concorde lock, and
two runs at once would change and audit the same files, each blaming the other's changes on its
worker. The lock lies beside the worktree's Git administrative files (`.git/worktrees/<name>/`,
hidden from every worker), is held for as long as the run changes and audits the worktree, and
is the kernel's (flock): the host's death, SIGKILL included, frees it at once, so a dead host's
lock is simply taken over. A run that finds it held is refused, naming the holder."""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterator
from contextlib import contextmanager

from concorde_workers.application.preparation import Prepared
from concorde_workers.domain.evidence.codes import Code
from concorde_workers.domain.evidence.errors import Reason, Refusal
from concorde_workers.ports.filesystem import FileSystem, FileSystemError, HeldLock

__all__ = ["HOLDER_SHOWN_CHARS", "WORKTREE_LOCK", "hold_worktree", "worktree_held"]

WORKTREE_LOCK = "concorde-workers.lock"
HOLDER_SHOWN_CHARS = 1000


def hold_worktree(fs: FileSystem, prepared: Prepared, holder: str) -> HeldLock | Refusal:
    """The worktree's lock with `holder` written in it, or the refusal (launch_failed, the
    nearest code: the run cannot start) naming who holds it or why it cannot be taken."""
    path = posixpath.join(prepared.repository.git_dir, WORKTREE_LOCK)
    try:
        held = fs.hold_lock(path, holder)
    except FileSystemError as failed:
        return Refusal(
            code=Code.LAUNCH_FAILED,
            reason=Reason.ENVIRONMENT,
            message=f"the worktree's lock {path} could not be taken: {failed.os_error_text}",
        )
    if isinstance(held, str):
        return Refusal(
            code=Code.LAUNCH_FAILED,
            reason=Reason.ENVIRONMENT,
            message=f"another run works in the worktree {prepared.placement.worktree} now (its "
            f"lock {path} says: {held[:HOLDER_SHOWN_CHARS]}); two runs at once would "
            "change and audit the same files: wait until it has ended, or end it",
        )
    return held


@contextmanager
def worktree_held(
    fs: FileSystem, prepared: Prepared, run_id: str, host_pid: int, run_dir: str
) -> Iterator[Refusal | None]:
    """Holds the worktree's lock for the body (None), or yields the refusal; released however
    the body ends."""
    held = hold_worktree(
        fs, prepared, json.dumps({"run_id": run_id, "host_pid": host_pid, "run_dir": run_dir})
    )
    if isinstance(held, Refusal):
        yield held
        return
    try:
        yield None
    finally:
        held.release()
