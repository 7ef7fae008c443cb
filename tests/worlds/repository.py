"""The repository world every test world is made of, declared once (issue 34 §6).

A world is a primary worktree on branch `main` with a project committed ("initial"), and the
task worktree `.claude/worktrees/task` on its own branch `task`, under the one grant the tests
run with. Two makers build it: real Git on a disk (`DiskGit`: the integration project, the
Claude Code, pi and Codex end-to-end worlds, below a root of the test's own, with HOME and the
Git environment keeping the user's configuration out) and FakeGit over a FakeFileSystem
(tests/fakes/world.py). Each world adds what is its own: its files beside the common project,
its programs, its server, its host environment (docs/decisions.md "The test world declared
once").
"""

from __future__ import annotations

import os
import posixpath
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

__all__ = [
    "GRANT",
    "PROJECT_FILES",
    "TASK_WORKTREE",
    "WORKTREE_NAME",
    "DiskGit",
    "DiskRepository",
    "ProjectGit",
    "disk_parts",
    "git_environment",
    "make_repository",
    "make_temp_root",
    "remove_temp_root",
    "run_git",
]

WORKTREE_NAME = "task"
TASK_WORKTREE = f".claude/worktrees/{WORKTREE_NAME}"
"""The task worktree, relative to the primary worktree (the spec's `.claude/worktrees/<name>`)."""

PROJECT_FILES: dict[str, str] = {
    "README.md": "# app\n",
    "src/app/main.py": "print('main')\n",
    "src/app/util.py": "def util():\n    return 1\n",
    "docs/notes.md": "# notes\n",
    "secrets/token.txt": "not for workers\n",
}
"""The project every world commits; a world adds its own files beside it."""

GRANT: dict[str, Any] = {
    "task_type": "implement",
    "entries": [
        {"path": "src/app/", "level": "rw"},
        {"path": "src/app/util.py", "level": "ro"},
        {"path": "docs/notes.md", "level": "ro"},
        {"path": "README.md", "level": "names"},
    ],
    "context_identity": "sha256:" + "1" * 64,
}
"""The grant of every world's runs: src/app/ written, util.py and the notes read, the README
only named, the secrets not at all."""


class ProjectGit(Protocol):
    """What makes a world's repository: real Git on a disk or FakeGit in memory."""

    def init_main(self, primary: str) -> None: ...

    def write(self, path: str, text: str) -> None: ...

    def commit_all(self, primary: str, message: str) -> None: ...

    def add_worktree(self, primary: str, worktree: str, branch: str) -> None: ...


def make_repository(git: ProjectGit, primary: str, files: Mapping[str, str]) -> str:
    """The primary worktree on branch main with `files` committed, and the task worktree on
    branch `task`; returns the task worktree's path."""
    git.init_main(primary)
    for rel, text in files.items():
        git.write(posixpath.join(primary, rel), text)
    git.commit_all(primary, "initial")
    worktree = posixpath.join(primary, TASK_WORKTREE)
    git.add_worktree(primary, worktree, WORKTREE_NAME)
    return worktree


# --- real Git on a disk ------------------------------------------------------------------------


def git_environment(home: Path) -> dict[str, str]:
    """The environment of a world's own git commands: no inherited GIT_* variable, HOME in the
    test's directory, no system configuration (the user's ~/.gitconfig is never read)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        GIT_CONFIG_NOSYSTEM="1",
        LANG="C.UTF-8",
    )
    return env


def run_git(git_env: Mapping[str, str], cwd: Path | str, *args: str) -> str:
    """One git command of the world's (an identity of its own); its stdout, or the test fails
    with git's stderr."""
    proc = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        env=dict(git_env),
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise AssertionError(f"git {args} failed: {proc.stderr}")
    return proc.stdout


@dataclass(frozen=True)
class DiskGit:
    """`ProjectGit` with real Git on a disk."""

    git_env: Mapping[str, str]

    def init_main(self, primary: str) -> None:
        Path(primary).mkdir()
        run_git(self.git_env, primary, "init", "-q", "-b", "main")

    def write(self, path: str, text: str) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)

    def commit_all(self, primary: str, message: str) -> None:
        run_git(self.git_env, primary, "add", "-A")
        run_git(self.git_env, primary, "commit", "-q", "-m", message)

    def add_worktree(self, primary: str, worktree: str, branch: str) -> None:
        run_git(self.git_env, primary, "worktree", "add", "-q", "-b", branch, worktree)


@dataclass(kw_only=True)
class DiskRepository:
    """A world's repository on a disk, below the test's own `root`."""

    root: Path
    primary: Path
    worktree: Path
    home: Path
    git_env: dict[str, str]

    def git(self, cwd: Path, *args: str) -> str:
        return run_git(self.git_env, cwd, *args)

    def commit_project(self, files: Mapping[str, str]) -> None:
        """The primary worktree with `files` committed, and the task worktree."""
        make_repository(DiskGit(self.git_env), str(self.primary), files)


def disk_parts(root: Path) -> dict[str, Any]:
    """A `DiskRepository`'s fields below `root` (resolved): HOME with an empty `.config`, its
    Git environment, the primary worktree `repo/` and the task worktree's path (nothing made
    there yet: `commit_project`)."""
    root = root.resolve()
    home = root / "home"
    (home / ".config").mkdir(parents=True)
    primary = root / "repo"
    return {
        "root": root,
        "primary": primary,
        "worktree": primary / TASK_WORKTREE,
        "home": home,
        "git_env": git_environment(home),
    }


def make_temp_root(prefix: str) -> Path:
    """A temp root of the test's own: a short path under /tmp (`prefix`), so a sandbox's sockets
    below a runtime directory stay under 108 bytes, holding nothing but this test's runtime
    directories."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))


def remove_temp_root(temp_root: Path) -> None:
    """The test's temp root and a failing run's leftovers (made unwritable by the host)."""
    for path in [temp_root, *temp_root.rglob("*")]:
        if path.is_dir() and not path.is_symlink():
            os.chmod(path, 0o700)
    shutil.rmtree(temp_root, ignore_errors=True)
