"""The command line's lock on a worktree (issue 19 §3, issue 31 §4): a person at a shell has no
Concorde workspace lock, and two runs at once would change and audit the same files, each
blaming the other's changes on its worker. Seed 000 leaves that isolation to the caller ("The
host takes no lock of its own for this") and lets readers go on: so `WorkerHost.run` takes no
lock, and the command line, the shell user's caller, takes this one around its run — exclusive
for a run whose grant has `rw`, shared for one that writes nothing (readers go on together; a
writer waits for them, they for it). The lock lies beside the worktree's Git administrative
files (`.git/worktrees/<name>/`, hidden from every worker) and is the kernel's (flock): the
holder's death, SIGKILL included, frees it at once. A run that finds it held is refused before
it exists, naming the holder."""

from __future__ import annotations

import posixpath

from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.ground.errors import Reason, Refusal
from concorde_workers.ports.machine.filesystem import FileSystemError, HeldLock, Locking

__all__ = ["HOLDER_SHOWN_CHARS", "WORKTREE_LOCK", "hold_worktree", "writes"]

WORKTREE_LOCK = "concorde-workers.lock"
HOLDER_SHOWN_CHARS = 1000


def writes(grant: object) -> bool:
    """Whether the grant input gives any path `rw` (a malformed one counts as writing: the run
    refuses it itself, and the lock is then the stricter)."""
    if not isinstance(grant, dict) or not isinstance(grant.get("entries"), list):
        return True
    return any(isinstance(e, dict) and e.get("level") == "rw" for e in grant["entries"])


def hold_worktree(
    fs: Locking, git_dir: str, worktree: str, holder: str, shared: bool
) -> HeldLock | Refusal:
    """The worktree's lock (its Git directory `git_dir`) with `holder` written in it, or the
    refusal (worktree_busy, the command line's own) naming who holds it or why it cannot be
    taken."""
    path = posixpath.join(git_dir, WORKTREE_LOCK)
    try:
        held = fs.hold_lock(path, holder, shared)
    except FileSystemError as failed:
        return Refusal(
            code=Code.WORKTREE_BUSY,
            reason=Reason.ENVIRONMENT,
            message=f"the command line could not take the worktree's lock {path}: "
            f"{failed.os_error_text}; make its folder writable, or run through a caller that "
            "keeps other writers away itself",
        )
    if isinstance(held, str):
        kind = "reads" if shared else "would change"
        return Refusal(
            code=Code.WORKTREE_BUSY,
            reason=Reason.ENVIRONMENT,
            message=f"this run {kind} the worktree {worktree}, where another run works now (the "
            f"lock {path} says: {held[:HOLDER_SHOWN_CHARS]}); a run that writes needs the "
            "worktree alone, runs that only read share it: wait until the other has ended, "
            "or end it",
        )
    return held
