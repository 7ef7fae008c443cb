"""Where a run's worktree lies, as Git and the disk say: its placement (seed 000 "Placement"),
its repository and every Git administrative path a worker must never touch, found by asking the
host's read-only Git (each answer kept for the run's preparation: `PlacementAnswers`) and by
walking the worktree for nested `.git` entries."""

from __future__ import annotations

import posixpath

from concorde_workers.application.preparation.placement_answers import PlacementAnswers
from concorde_workers.domain.gitview.git_status import GitRepository
from concorde_workers.domain.gitview.placement import (
    AdminPath,
    Placement,
    check_placement,
    collect_admin_paths,
    find_git_entries,
    parse_commondir_file,
    parse_gitdir_file,
)
from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.ground.errors import Reason, Refusal
from concorde_workers.domain.ground.paths import Subdirs, relative_to
from concorde_workers.domain.ground.text import control_problem
from concorde_workers.ports.machine.filesystem import FileSystemError, TreeReading
from concorde_workers.ports.repository.git import GitCommandFailed, GitReader

__all__ = ["GitFound", "PlacementReader", "misplaced"]

GitFound = tuple[GitRepository, tuple[AdminPath, ...], tuple[str, ...]]
"""What placement found of Git: the repository, the administrative paths, the `.git` entries."""


class PlacementReader:
    """Settles a worktree's placement and Git administrative paths over the Git and filesystem
    ports; `kept` holds Git's answers from the host's first question to the end of the
    preparation."""

    def __init__(self, git: GitReader, fs: TreeReading) -> None:
        self._git = git
        self._fs = fs
        self.kept = PlacementAnswers()

    def placement(self, worktree: str) -> Placement | Refusal:
        problem = control_problem(worktree)
        if problem is not None:
            return Refusal(
                code=Code.REQUEST_INVALID,
                reason=Reason.INPUT,
                message=f"the worktree {worktree!r} {problem}; give the absolute path "
                "of a worktree in .claude/worktrees/ whose name holds no control "
                "character",
            )
        if not posixpath.isabs(worktree):
            return misplaced(
                f"the worktree {worktree!r} is not an absolute path; give the "
                "absolute path of a worktree in .claude/worktrees/"
            )
        if not self._fs.is_dir(worktree):
            return misplaced(
                f"the worktree {worktree} does not exist or is no directory; "
                "create it with git worktree add under .claude/worktrees/ of the "
                "primary worktree"
            )
        real = self._fs.realpath(worktree)
        try:
            toplevel = self.kept.ask("toplevel", real, self._git.toplevel)
            if toplevel != real:
                return misplaced(
                    f"the worktree {real} is not the top level of a Git worktree "
                    f"(Git's top level is {toplevel}); give the worktree's own "
                    "directory in .claude/worktrees/"
                )
            # Found from the worktree itself, no directory above it (GIT_CEILING_DIRECTORIES).
            worktrees = self.kept.ask("worktrees", real, self._git.worktrees)
        except GitCommandFailed as failed:
            return check_placement(real, None, failed.output or str(failed))
        primary = worktrees[0] if worktrees and not worktrees[0].bare else None
        said = "the repository is bare" if worktrees and worktrees[0].bare else ""
        return check_placement(real, primary.path if primary else None, said)

    def admin_paths(self, worktree: str, runtime_paths: tuple[str, ...]) -> GitFound | Refusal:
        """The repository every later Git call names, the administrative paths, and the `.git`
        entries of the walk (relative to the worktree)."""
        try:
            git_dir, common_dir = self.kept.ask("git_dirs", worktree, self._git.git_dirs)
        except GitCommandFailed as failed:
            return misplaced(
                f"Git could not name the Git directories of {worktree}: "
                f"{failed.output.strip() or failed}"
            )
        entries: list[AdminPath] = []
        targets: list[str] = []
        walked = find_git_entries(worktree, self._list_subdirs, runtime_paths)
        for found in walked:
            directory = self._fs.is_dir(found.path) and not self._fs.is_symlink(found.path)
            real = self._fs.realpath(found.path)
            entries += [
                AdminPath(path=found.path, directory=directory),
                AdminPath(path=real, directory=self._fs.is_dir(real)),
            ]
            if not directory:
                targets += self._gitdir_targets(found.path)
        repository = GitRepository(worktree=worktree, git_dir=git_dir, common_dir=common_dir)
        return (
            repository,
            collect_admin_paths(git_dir, common_dir, entries, targets),
            tuple(relative_to(found.path, worktree) for found in walked),
        )

    def _gitdir_targets(self, git_file: str) -> list[str]:
        """The Git directory a `.git` file names, and that directory's commondir target."""
        text = self._read(git_file)
        target = parse_gitdir_file(text, posixpath.dirname(git_file)) if text else None
        if target is None:
            return []
        target = self._fs.realpath(target)
        common_text = self._read(posixpath.join(target, "commondir"))
        common = parse_commondir_file(common_text, target) if common_text else None
        return [target] + ([self._fs.realpath(common)] if common else [])

    def _list_subdirs(self, path: str, wanted: frozenset[str]) -> Subdirs:
        try:
            return self._fs.subdirectories(path, wanted)
        except FileSystemError:
            return [], {}, {}

    def _read(self, path: str) -> str | None:
        try:
            return self._fs.read_text(path)
        except FileSystemError:
            return None


def misplaced(message: str) -> Refusal:
    """worktree_misplaced: where the worktree is and why it is not where a run can be."""
    return Refusal(code=Code.WORKTREE_MISPLACED, reason=Reason.ENVIRONMENT, message=message)
