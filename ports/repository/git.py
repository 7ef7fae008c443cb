"""The Git port: the read-only questions the host asks a repository.

Every method is a question; none changes the repository, its index or its configuration, and
none runs a program the repository (or anything a worker can write) configures: no hook, no
fsmonitor, no filter, diff or merge driver, no Git inside a submodule's worktree (the command
table of `domain.gitview.git_commands` says how the real adapter guarantees it). Placement questions
(`worktrees`, `toplevel`, `git_dirs`) find the repository from a directory, before the first
round; the audit's questions (`status`, `index`, `config_digest`) take the `GitRepository`
placement found and never find it again. Paths given and returned are absolute and real
(symbolic links resolved), except the relative paths of status entries and gitlinks, which are
relative to the worktree's top level. Path text follows `domain.gitview.git_status` (UTF-8 with
surrogateescape, so non-UTF-8 names round-trip).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from concorde_workers.domain.gitview.committed_rules import EvidenceRules
from concorde_workers.domain.gitview.git_status import (
    GitRepository,
    HeadState,
    IndexState,
    StatusEntry,
    WorktreeInfo,
    WorktreeStatus,
)

__all__ = [
    "EvidenceRules",
    "GitCommandFailed",
    "GitReader",
    "GitRepository",
    "HeadState",
    "IndexState",
    "StatusEntry",
    "WorktreeInfo",
    "WorktreeStatus",
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

    def toplevel(self, path: str) -> str:
        """The real top-level directory of the worktree containing `path`."""
        ...

    def git_dirs(self, worktree: str) -> tuple[str, str]:
        """(the worktree's own Git directory, the common Git directory), absolute and real
        (`git rev-parse --path-format=absolute --git-dir` / `--git-common-dir`), found from
        `worktree` itself and no directory above it."""
        ...

    def status(
        self,
        repo: GitRepository,
        opaque: Sequence[str] = (),
        rules: EvidenceRules | None = None,
        store: str | None = None,
    ) -> WorktreeStatus:
        """HEAD (the branch it names as a full ref, None when detached; its commit, None on an
        unborn branch) and the audit's listing, in Git's path order: every tracked path whose
        file is not what the index records (content, executable bit or kind; gone; unmerged),
        then every untracked file, nested repositories as `dir/`; submodules ignored (neither
        their gitlinks nor anything in their paths is listed). Which content is the index's
        and which files are ignored follow `rules` alone (`evidence_rules`; by default asked
        anew), never a `.gitignore` or `.gitattributes` of the working tree (issue 30 §1).
        Paths are relative to the worktree's top level. `opaque` names the submodule paths
        (worktree-relative) Git need not look into at all: the host walks them itself, and
        Git's answer is the same without them. `store`: the run's store (`ChangeTrees`), where
        content is compared; without one, a store is made for the call and removed."""
        ...

    def evidence_rules(self, repo: GitRepository) -> EvidenceRules:
        """The rules the host's evidence takes (`domain.gitview.committed_rules`): the
        `.gitignore` and `.gitattributes` files committed at HEAD, the common directory's
        `info/exclude` and the excludes file the repository's own configuration names outside
        the worktree. Raises `GitCommandFailed`, also when the committed rule files are more
        than the host reads."""
        ...

    def index(self, repo: GitRepository) -> IndexState:
        """ "sha256:<hex>" of the index's staged entries (`git ls-files --stage -v -z`): mode,
        object id, stage, path and the assume-unchanged/skip-worktree tags; and its gitlinks.
        A stat refresh of the index file does not change the digest; staging anything does."""
        ...

    def committed_config(self, repo: GitRepository) -> bytes | None:
        """The bytes of `.concorde/workers.json` as committed at HEAD (issue 18 §4), never the
        working copy; None when HEAD has no commit or no such regular file. A committed file
        larger than the configuration bound raises `GitCommandFailed`."""
        ...

    def config_digest(self, repo: GitRepository) -> str:
        """ "sha256:<hex>" of what decides which files Git lists and what it runs: the common
        directory's `config`, `info/exclude`, `info/attributes` and hooks, and the worktree's
        `config.worktree` (each file's bytes, or its absence), read without running Git."""
        ...
