"""Contract-test worlds: the same scenario on a real adapter and on its fake.

Each `*_world` fixture is parametrized ["real", "fake"], so every test that uses one runs once
per implementation and asserts the same observable behaviour.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

# The fakes are the package `fakes` in tests/. Until tests/conftest.py puts tests/ on sys.path
# for every test directory, this conftest does it for the contract tests.
_TESTS_DIR = str(Path(__file__).resolve().parent.parent)
if _TESTS_DIR not in sys.path:
    sys.path.insert(0, _TESTS_DIR)

from fakes.filesystem import FakeFileSystem  # noqa: E402
from fakes.git import FakeGit  # noqa: E402

from concorde_workers.adapters.machine.filesystem import LocalFileSystem  # noqa: E402
from concorde_workers.adapters.repository.git import GitCliReader  # noqa: E402
from concorde_workers.domain.gitview.git_status import GitRepository  # noqa: E402

TASK = "task"

# The committed starting point of every Git world: rel -> (content, executable) or a link.
INITIAL_FILES: dict[str, tuple[bytes, bool]] = {
    "a.txt": (b"alpha\n", False),
    "run.sh": (b"#!/bin/sh\necho run\n", True),
    "dir/b.txt": (b"beta\n", False),
    "with space.txt": (b"space\n", False),
    "del.txt": (b"to be deleted\n", False),
    ".gitignore": (b"*.log\nbuild/\n", False),
}
INITIAL_LINKS: dict[str, str] = {"link": "a.txt"}


def _git_env(home: Path) -> dict[str, str]:
    """An environment for the test's own git commands that never reads or writes the user's
    configuration: HOME is a temporary directory, the system config is skipped."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="Test",
        GIT_AUTHOR_EMAIL="test@example.invalid",
        GIT_COMMITTER_NAME="Test",
        GIT_COMMITTER_EMAIL="test@example.invalid",
    )
    return env


class RealGitWorld:
    """A real repository at <tmp>/repo with a linked worktree at .claude/worktrees/task."""

    kind = "real"

    def __init__(self, tmp: Path) -> None:
        tmp = tmp.resolve()
        self.home = tmp / "home"
        self.home.mkdir()
        self.env = _git_env(self.home)
        self.primary = str(tmp / "repo")
        self.fs = LocalFileSystem()
        subprocess.run(["git", "init", "-q", "-b", "main", self.primary], env=self.env, check=True)
        for rel, (data, exe) in INITIAL_FILES.items():
            self._write(self.primary, rel, data, exe)
        for rel, target in INITIAL_LINKS.items():
            os.symlink(target, os.path.join(self.primary, rel))
        self.run_in(self.primary, "add", "-A")
        self.run_in(self.primary, "commit", "-q", "-m", "initial")
        self.worktree = os.path.join(self.primary, ".claude", "worktrees", TASK)
        self.run_in(self.primary, "worktree", "add", "-q", "-b", TASK, self.worktree)
        self.common_dir = os.path.join(self.primary, ".git")
        self.worktree_git_dir = os.path.join(self.common_dir, "worktrees", TASK)
        # The adapter gets the test's environment, as the container would pass the host's.
        self.git = GitCliReader(environ=self.env)

    @property
    def repo(self) -> GitRepository:
        """The task worktree's repository, as placement finds it."""
        return GitRepository(
            worktree=self.worktree, git_dir=self.worktree_git_dir, common_dir=self.common_dir
        )

    @property
    def primary_repo(self) -> GitRepository:
        return GitRepository(
            worktree=self.primary, git_dir=self.common_dir, common_dir=self.common_dir
        )

    def run_in(self, cwd: str, *args: str, check: bool = True) -> str:
        proc = subprocess.run(
            ["git", "-c", "user.name=Test", "-c", "user.email=test@example.invalid", *args],
            cwd=cwd,
            env=self.env,
            capture_output=True,
            check=False,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"git {args} failed: {proc.stderr!r}")
        return proc.stdout.decode("utf-8", "surrogateescape")

    @staticmethod
    def _write(root: str, rel: str, data: bytes, executable: bool) -> None:
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        os.chmod(path, 0o755 if executable else 0o644)

    # -- what a worker (or a test) does to the worktree ------------------------------------

    def write(self, rel: str, data: bytes, executable: bool = False) -> None:
        self._write(self.worktree, rel, data, executable)

    def set_executable(self, rel: str, executable: bool) -> None:
        os.chmod(os.path.join(self.worktree, rel), 0o755 if executable else 0o644)

    def delete(self, rel: str) -> None:
        os.unlink(os.path.join(self.worktree, rel))

    def symlink(self, target: str, rel: str) -> None:
        os.symlink(target, os.path.join(self.worktree, rel))

    def touch(self, rel: str) -> None:
        """Change the file's stat data, not its content (what makes Git refresh the index)."""
        path = os.path.join(self.worktree, rel)
        st = os.stat(path)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))

    def refresh(self) -> None:
        """An ordinary `git status`, which takes the lock and rewrites the index's stat data."""
        self.run_in(self.worktree, "status")

    def stage(self, *rels: str) -> None:
        self.run_in(self.worktree, "add", "--", *rels)

    def commit(self, message: str = "commit") -> None:
        self.run_in(self.worktree, "commit", "-q", "-m", message)

    def switch(self, branch: str, create: bool = False) -> None:
        self.run_in(self.worktree, "switch", "-q", *(["-c"] if create else []), branch)

    def detach(self) -> None:
        self.run_in(self.worktree, "switch", "-q", "--detach")

    def conflict(self, rel: str, base: bytes, ours: bytes, theirs: bytes) -> None:
        """Leave `rel` unmerged: a merge of two branches that both changed it."""
        self.write(rel, base)
        self.stage(rel)
        self.commit("base")
        self.run_in(self.worktree, "branch", "side")
        self.write(rel, ours)
        self.stage(rel)
        self.commit("ours")
        self.switch("side")
        self.write(rel, theirs)
        self.stage(rel)
        self.commit("theirs")
        self.switch(TASK)
        self.run_in(self.worktree, "merge", "-q", "side", check=False)


class FakeGitWorld:
    """The same repository modelled by FakeGit over a FakeFileSystem."""

    kind = "fake"

    def __init__(self) -> None:
        self.fs = FakeFileSystem()
        self.git = FakeGit(self.fs)
        self.primary = "/work/repo"
        self.git.init(self.primary, branch="main")
        for rel, (data, exe) in INITIAL_FILES.items():
            self.fs.write(f"{self.primary}/{rel}", data, 0o755 if exe else 0o644)
        for rel, target in INITIAL_LINKS.items():
            self.fs.symlink(target, f"{self.primary}/{rel}")
        self.git.add_all(self.primary)
        self.git.commit(self.primary, "initial")
        self.worktree = f"{self.primary}/.claude/worktrees/{TASK}"
        self.git.worktree_add(self.primary, self.worktree, new_branch=TASK)
        self.common_dir = f"{self.primary}/.git"
        self.worktree_git_dir = f"{self.common_dir}/worktrees/{TASK}"

    @property
    def repo(self) -> GitRepository:
        return GitRepository(
            worktree=self.worktree, git_dir=self.worktree_git_dir, common_dir=self.common_dir
        )

    @property
    def primary_repo(self) -> GitRepository:
        return GitRepository(
            worktree=self.primary, git_dir=self.common_dir, common_dir=self.common_dir
        )

    def write(self, rel: str, data: bytes, executable: bool = False) -> None:
        self.fs.write(f"{self.worktree}/{rel}", data, 0o755 if executable else 0o644)

    def set_executable(self, rel: str, executable: bool) -> None:
        node = self.fs.node_at(f"{self.worktree}/{rel}")
        assert node is not None
        node.mode = 0o755 if executable else 0o644

    def delete(self, rel: str) -> None:
        del self.fs.nodes[f"{self.worktree}/{rel}"]

    def symlink(self, target: str, rel: str) -> None:
        self.fs.symlink(target, f"{self.worktree}/{rel}")

    def touch(self, rel: str) -> None:
        pass  # the fake keeps no stat data: a refresh cannot change anything

    def refresh(self) -> None:
        pass

    def stage(self, *rels: str) -> None:
        self.git.add(self.worktree, *rels)

    def commit(self, message: str = "commit") -> None:
        self.git.commit(self.worktree, message)

    def switch(self, branch: str, create: bool = False) -> None:
        self.git.switch(self.worktree, branch, create=create)

    def detach(self) -> None:
        self.git.detach(self.worktree)

    def conflict(self, rel: str, base: bytes, ours: bytes, theirs: bytes) -> None:
        self.git.set_unmerged(
            self.worktree, rel, ("100644", base), ("100644", ours), ("100644", theirs)
        )
        self.write(rel, b"<<<<<<< conflict\n")


@pytest.fixture(params=["real", "fake"])
def git_world(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "real":
        return RealGitWorld(tmp_path)
    return FakeGitWorld()


@pytest.fixture
def real_git_world(tmp_path: Path) -> RealGitWorld:
    return RealGitWorld(tmp_path)


class RealFsWorld:
    kind = "real"

    def __init__(self, tmp: Path) -> None:
        self.root = str(tmp.resolve() / "fsroot")
        os.mkdir(self.root)
        self.fs = LocalFileSystem()
        self.uid = os.getuid()

    def symlink(self, target: str, link: str) -> None:
        os.symlink(target, link)

    def now(self) -> float:
        return time.time()


class FakeFsWorld:
    kind = "fake"

    def __init__(self) -> None:
        self.fs = FakeFileSystem()
        self.root = "/tmp/fsroot"
        self.fs.mkdir(self.root)
        self.uid = self.fs.uid

    def symlink(self, target: str, link: str) -> None:
        self.fs.symlink(target, link)

    def now(self) -> float:
        return self.fs.now


@pytest.fixture(params=["real", "fake"])
def fs_world(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "real":
        return RealFsWorld(tmp_path)
    return FakeFsWorld()


@pytest.fixture
def fake_git_world() -> FakeGitWorld:
    return FakeGitWorld()


@pytest.fixture
def git_env(tmp_path: Path) -> dict[str, str]:
    """An environment for git commands with a temporary HOME and no system config."""
    home = tmp_path / "git-home"
    home.mkdir(exist_ok=True)
    return _git_env(home)
