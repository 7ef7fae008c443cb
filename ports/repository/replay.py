"""The capability of applying a run's patches to Git trees again (issue 30 §4): `verify` with
the repository at hand.

A `PatchReplay` starts from a commit's tree in a store of its own (a temporary index and object
directory, the repository's objects read behind them, never written), applies each patch in
order to that index and gives the tree after each. The real one is the host's Git
(adapters/repository/git_replay.py, the table's `verify_*` commands, in its sandbox).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from concorde_workers.domain.gitview.git_status import GitRepository

__all__ = ["PatchReplay", "Replayed"]


@dataclass(frozen=True)
class Replayed:
    """The tree of the starting commit (None when it could not be read), the tree after each
    patch applied, in order, and why the replay stopped early (None when every patch applied)."""

    base: str | None
    trees: tuple[str, ...] = ()
    stopped: str | None = None


@runtime_checkable
class PatchReplay(Protocol):
    def replay(
        self, repo: GitRepository, base_commit: str | None, patches: Sequence[bytes]
    ) -> Replayed:
        """`base_commit`'s tree (the empty tree when None), then each patch applied in order;
        never raises: what stopped it is in the answer."""
        ...
