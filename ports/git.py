"""The Git port: the read-only questions the host asks a repository.

Every method is a question; none changes the repository, its index or its configuration, and
none runs code the repository configures (hooks, fsmonitor). Paths given and returned are
absolute and real (symbolic links resolved), except the relative paths of status entries and
`rel` arguments, which are relative to the worktree's top level. Path text follows
`domain.git_status` (UTF-8 with surrogateescape, so non-UTF-8 names round-trip).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.git_status import HeadState, StatusEntry, WorktreeInfo

__all__ = [
    "GitCommandFailed",
    "GitReader",
    "HeadBlob",
    "HeadState",
    "StatusEntry",
    "WorktreeInfo",
]


class GitCommandFailed(Exception):
    """A Git command could not answer: the snapshot or placement check reports it as evidence.

    `argv` is the command as run, `output` its stderr (or the reason it could not start),
    `returncode` its exit status (None when it never ran or was stopped for its timeout).
    """

    def __init__(self, argv: Sequence[str], output: str, returncode: int | None) -> None:
        self.argv = tuple(argv)
        self.output = output
        self.returncode = returncode
        super().__init__(f"{' '.join(self.argv)} failed ({returncode}): {output.strip()}")


class HeadBlob(BaseModel):
    """A file as HEAD records it: Git's mode ("100644", "100755", "120000", "160000"), the
    object id, and `digest` "sha256:<hex>" of the blob's bytes, computed as
    `FileSystem.file_digest` computes it for a worktree file (a symbolic link's blob is its
    target), so the two compare directly. A submodule (gitlink) has no blob: digest None."""

    model_config = ConfigDict(frozen=True)

    mode: str
    oid: str
    digest: str | None

    @property
    def executable(self) -> bool:
        return self.mode == "100755"


@runtime_checkable
class GitReader(Protocol):
    """Read-only Git: placement facts, administrative paths, and the state the audit compares.

    Raises `GitCommandFailed` when Git cannot answer (not a repository, a broken one, a
    missing `git` program).
    """

    def worktrees(self, path: str) -> list[WorktreeInfo]:
        """Every worktree of the repository containing `path`, primary first, each `path`
        real (`git worktree list --porcelain -z`); `bare` marks a bare primary."""
        ...

    def worktree_list(self, path: str) -> list[str]:
        """The real paths of `worktrees(path)`, primary first."""
        ...

    def toplevel(self, path: str) -> str:
        """The real top-level directory of the worktree containing `path`."""
        ...

    def git_dirs(self, worktree: str) -> tuple[str, str]:
        """(the worktree's own Git directory, the common Git directory), absolute and real
        (`git rev-parse --path-format=absolute --git-dir` / `--git-common-dir`)."""
        ...

    def head(self, worktree: str) -> HeadState:
        """The branch HEAD names (full ref, None when detached) and its commit (None when
        the branch is unborn)."""
        ...

    def index_digest(self, worktree: str) -> str:
        """ "sha256:<hex>" of the index's staged entries (`git ls-files --stage -v -z`): mode,
        object id, stage, path and the assume-unchanged/skip-worktree tags. A stat refresh of
        the index file by `git status` does not change it; staging anything does."""
        ...

    def status(self, worktree: str) -> tuple[StatusEntry, ...]:
        """`git status --porcelain=v2 -z --untracked-files=all --no-renames`, ignored files
        not listed; paths relative to the worktree's top level, in Git's order."""
        ...

    def config_digest(self, worktree: str) -> str:
        """"sha256:<hex>" of what decides which files Git lists and how: the common directory's
        `config` and `info/exclude` and the worktree's `config.worktree` (each file's bytes, or
        its absence). A worker that changed them could hide a file from the audit."""
        ...

    def head_blob(self, worktree: str, rel: str) -> HeadBlob | None:
        """The file `rel` as HEAD records it; None when HEAD has no such file (or no commit)."""
        ...

    def head_blob_digest(self, worktree: str, rel: str) -> str | None:
        """`head_blob(worktree, rel).digest`, None when HEAD has no such blob: what the audit
        compares a file's `FileSystem.file_digest` with to tell "equal to HEAD again"."""
        ...
