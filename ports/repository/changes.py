"""The capability of keeping a worktree's content as trees and telling two apart (issue 21
§1): a round's change as evidence.

A `ChangeTrees` hashes the named paths of a worktree into a store of the run's own (an index
and an object directory; never the repository's) and gives the tree, and gives the binary-safe
patch between two of its trees. The real one is the host's Git (adapters/repository/git.py, the
table's `changes_*` commands, in its sandbox); a world without it keeps no patch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from concorde_workers.domain.gitview.committed_rules import EvidenceRules
from concorde_workers.domain.gitview.git_status import GitRepository

__all__ = ["ChangeTrees"]


@runtime_checkable
class ChangeTrees(Protocol):
    def open_store(self, repo: GitRepository, store: str) -> None:
        """Make the run's store at `store`, which must not exist: a bare repository of the
        host's own (of `repo`'s object format, `repo`'s objects read behind it), where the
        audit compares content and the rounds' trees are kept (issue 30 §1). Raises
        `GitCommandFailed`."""
        ...

    def change_tree(
        self,
        repo: GitRepository,
        store: str,
        paths: Sequence[str],
        base: bool = False,
        rules: EvidenceRules | None = None,
        head: str | None = None,
    ) -> str:
        """The tree of the store's index after hashing `paths` (worktree-relative; a missing
        one removed) into it, content converted by `rules` alone (by default asked anew; never
        an attribute of the working tree); `base`: the index starts over as HEAD's tree (empty
        on an unborn branch), HEAD's commit being `head` when the caller has read it already
        (the snapshot's: not asked again, issue 32 §3), else asked. The store is the one
        `open_store` made. Raises `GitCommandFailed`."""
        ...

    def change_patch(self, repo: GitRepository, store: str, old: str, new: str) -> bytes:
        """Git's binary-safe patch from tree `old` to tree `new`, by no attribute at all (a
        text file is diffed as text). Raises `GitCommandFailed`."""
        ...
