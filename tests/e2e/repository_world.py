"""The repository world the pi and Codex end-to-end worlds are made of, declared once (issue 34
§6): a test's own primary worktree with the project committed and a real
`.claude/worktrees/task` worktree, its HOME, the Git environment that keeps the user's
configuration out, a temp root of its own under /tmp, and the request each run makes. Each
backend's world adds its model server, its program and what reaches it (conftest_pi.py,
conftest_codex.py). The grant is the Claude Code world's (e2e/conftest.py), the same for every
backend.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from e2e.conftest import GRANT

from concorde_workers.domain.configuration.request import Limits, RunRequest

__all__ = [
    "GRANT",
    "PROJECT_FILES",
    "WORKTREE_NAME",
    "RepositoryWorld",
    "commit_project",
    "remove_temp_root",
    "repository_parts",
]

WORKTREE_NAME = "task"

PROJECT_FILES: dict[str, str] = {
    "README.md": "# app\n",
    "src/app/main.py": "print('main')\n",
    "src/app/util.py": "def util():\n    return 1\n",
    "src/app/old.py": "# to be deleted\n",
    "docs/notes.md": "# notes\n",
    "secrets/token.txt": "not for workers\n",
    ".gitignore": "__pycache__/\n",
}


@dataclass(kw_only=True)
class RepositoryWorld:
    """One test's repository and host environment; `backend` and `local_model` are the world's
    (its runs' request)."""

    backend: ClassVar[str]
    local_model: ClassVar[str]

    root: Path
    primary: Path
    worktree: Path
    home: Path
    git_env: dict[str, str]
    temp_root: Path
    environ: dict[str, str] = field(default_factory=dict)

    def git(self, cwd: Path, *args: str) -> str:
        proc = subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=cwd,
            env=self.git_env,
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise AssertionError(f"git {args} failed: {proc.stderr}")
        return proc.stdout

    def request(
        self,
        limits: Limits,
        grant: dict[str, Any] | None = None,
        resources: dict[str, int] | None = None,
    ) -> RunRequest:
        parent = self.root / "trace" / "op-1"
        parent.mkdir(parents=True, exist_ok=True)
        return RunRequest.model_validate(
            {
                "backend": self.backend,
                "worktree": str(self.worktree),
                "parent": str(parent),
                "task_type": "implement",
                "grant": grant or GRANT,
                "instructions": "Do the scripted task.",
                "limits": limits.model_dump(),
                "local_model": self.local_model,
                "resources": resources,
            }
        )


def repository_parts(root: Path, prefix: str) -> dict[str, Any]:
    """A world's folders and Git environment (its fields but the environment): `root`
    resolved, HOME with an empty `.config`, the primary worktree's and the task worktree's
    paths, and the test's own temp root: a short path under /tmp (`prefix`), so the sandbox's
    sockets below a runtime directory stay under 108 bytes, holding nothing but this test's
    runtime directories."""
    root = root.resolve()
    home = root / "home"
    (home / ".config").mkdir(parents=True)
    git_env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    git_env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        GIT_CONFIG_NOSYSTEM="1",
        LANG="C.UTF-8",
    )
    primary = root / "repo"
    return {
        "root": root,
        "primary": primary,
        "worktree": primary / ".claude" / "worktrees" / WORKTREE_NAME,
        "home": home,
        "git_env": git_env,
        "temp_root": Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp")),
    }


def commit_project(world: RepositoryWorld) -> None:
    """The primary worktree with `PROJECT_FILES` committed on main, and the task worktree."""
    world.primary.mkdir()
    world.git(world.primary, "init", "-q", "-b", "main")
    for rel, text in PROJECT_FILES.items():
        target = world.primary / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    world.git(world.primary, "add", "-A")
    world.git(world.primary, "commit", "-q", "-m", "initial")
    world.git(world.primary, "worktree", "add", "-q", "-b", WORKTREE_NAME, str(world.worktree))


def remove_temp_root(temp_root: Path) -> None:
    """The test's temp root and a failing run's leftovers (made unwritable by the host)."""
    for path in [temp_root, *temp_root.rglob("*")]:
        if path.is_dir() and not path.is_symlink():
            os.chmod(path, 0o700)
    shutil.rmtree(temp_root, ignore_errors=True)
