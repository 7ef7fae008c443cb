"""The real `PatchReplay` (issue 30 §4): the host's Git applies a run's patches again in a
store of verify's own — a bare repository of the host's own in a temporary directory, as a
run's change store is, the repository's objects read behind it and never written — through
the table's `verify_*` commands, in the same sandbox as every host Git call; the store is
removed afterwards.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Sequence

from concorde_workers.adapters.repository.git import GitCliReader
from concorde_workers.domain.gitview.git_status import GitRepository
from concorde_workers.ports.repository.git import GitCommandFailed
from concorde_workers.ports.repository.replay import Replayed

__all__ = ["GitPatchReplay"]


def _tree(out: bytes) -> str:
    return out.decode("ascii", "replace").strip()


class GitPatchReplay:
    """Replays patches with `git` over a repository the host can read."""

    def __init__(self, git: GitCliReader) -> None:
        self._git = git

    def replay(
        self, repo: GitRepository, base_commit: str | None, patches: Sequence[bytes]
    ) -> Replayed:
        scratch = tempfile.mkdtemp(prefix="concorde-verify-")
        store = os.path.join(scratch, "store")
        try:
            self._git.open_store(repo, store)
            return self._replay(repo, store, base_commit, patches)
        except GitCommandFailed as failed:
            return Replayed(base=None, stopped=f"the store: {failed.output.strip()}")
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def _replay(
        self, repo: GitRepository, store: str, base_commit: str | None, patches: Sequence[bytes]
    ) -> Replayed:
        run = self._git._run  # the adapter's one runner of its table's commands
        try:
            run("verify_base", repo, extra=[base_commit or "--empty"], store=store)
            base = _tree(run("verify_tree", repo, store=store)[1])
        except GitCommandFailed as failed:
            return Replayed(base=None, stopped=f"the starting commit: {failed.output.strip()}")
        trees: list[str] = []
        for index, patch in enumerate(patches):
            try:
                run("verify_apply", repo, stdin=patch, store=store)
                trees.append(_tree(run("verify_tree", repo, store=store)[1]))
            except GitCommandFailed as failed:
                why = f"patch {index + 1} does not apply: {failed.output.strip()}"
                return Replayed(base=base, trees=tuple(trees), stopped=why)
        return Replayed(base=base, trees=tuple(trees))
