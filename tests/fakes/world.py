"""PlanWorld: a repository with a linked `.claude/worktrees/<name>` worktree in FakeGit over a
FakeFileSystem, the host's programs, and a `Container` wired with the fakes.

For the application's unit tests (preparation, planner): everything the production container
would find on a machine, in memory, with every port call recorded (`fs.ops`, `git.calls`).
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from worlds.repository import PROJECT_FILES, TASK_WORKTREE, make_repository

from concorde_workers.application.preparation.prepared import HostFacts
from concorde_workers.container import Container
from fakes.filesystem import FakeFileSystem
from fakes.git import FakeGit
from fakes.liveness import FakeProcessTable
from fakes.program_versions import FakeProgramVersions
from fakes.system import FakeClock, FakeRandom

__all__ = [
    "BIN",
    "INTERPRETER",
    "PI_MODELS",
    "PRIMARY",
    "PROGRAMS",
    "READING_GIT_CALLS",
    "SANDBOX_RUNTIME",
    "SPACE_PROGRAMS",
    "TEMP_ROOT",
    "USER_HOME",
    "WORKTREE",
    "PlanWorld",
]

PRIMARY = "/work/repo"
WORKTREE = f"{PRIMARY}/{TASK_WORKTREE}"
USER_HOME = "/home/dev"
BIN = "/usr/bin"
SANDBOX_RUNTIME = "/opt/sandbox-runtime"
INTERPRETER = "/usr/bin/python3"
TEMP_ROOT = "/tmp"
SPACE_PROGRAMS = ("unshare", "nsenter", "mount", "mkdir", "setpriv", "sleep")
"""What makes and enters a confined run's writable space (domain/isolation/runtime_space.py)."""
PROGRAMS = ("claude", "pi", "rg", "fd", "bwrap", "socat", "env", "umount", *SPACE_PROGRAMS)

FILES: dict[str, str] = {**PROJECT_FILES, "src/other/lib.py": "X = 1\n"}
"""The world's project: the common one (tests/worlds/repository.py) and a folder beside the
grant's."""

HOST_ENVIRON: dict[str, str] = {
    "PATH": f"{BIN}:/bin",
    "HOME": USER_HOME,
    "LANG": "C.UTF-8",
    "CONCORDE_SANDBOX_RUNTIME": SANDBOX_RUNTIME,
}

PI_MODELS: dict[str, Any] = {
    "providers": {
        "local": {
            "baseUrl": "http://127.0.0.1:8000/v1",
            "api": "openai-completions",
            "apiKey": "none",
            "models": [{"id": "m"}, {"id": "m-local"}],
        }
    }
}
"""The user's pi models.json: the provider the tests' pi ids `local/m` and `local/m-local` name
(a run refuses an id pi would not find, issue 31 §1)."""

# Port calls that change something: none may appear when the planner runs.
WRITING_FS_OPS = frozenset({"write_atomic", "makedirs", "remove", "rmtree", "chmod"})
READING_GIT_CALLS = frozenset(
    {"worktrees", "toplevel", "git_dirs", "status", "index", "committed_config", "config_digest"}
)


@dataclass(frozen=True)
class _FakeProjectGit:
    """The repository world's maker (tests/worlds/repository.py `ProjectGit`) in FakeGit."""

    fs: FakeFileSystem
    git: FakeGit

    def init_main(self, primary: str) -> None:
        self.git.init(primary, branch="main")

    def write(self, path: str, text: str) -> None:
        self.fs.write(path, text)

    def commit_all(self, primary: str, message: str) -> None:
        self.git.add_all(primary)
        self.git.commit(primary, message)

    def add_worktree(self, primary: str, worktree: str, branch: str) -> None:
        self.git.worktree_add(primary, worktree, new_branch=branch)


@dataclass
class PlanWorld:
    """The repository at PRIMARY with the worktree WORKTREE, programs in BIN, a user home."""

    programs: tuple[str, ...] = PROGRAMS
    environ: dict[str, str] = field(default_factory=lambda: dict(HOST_ENVIRON))
    sandbox_runtime: bool = True
    fs: FakeFileSystem = field(default_factory=FakeFileSystem)
    process_table: FakeProcessTable = field(default_factory=FakeProcessTable)
    versions: FakeProgramVersions = field(default_factory=FakeProgramVersions)

    def __post_init__(self) -> None:
        self.git = FakeGit(self.fs)
        make_repository(_FakeProjectGit(self.fs, self.git), PRIMARY, FILES)
        for name in self.programs:
            self.fs.write(posixpath.join(BIN, name), "#!/bin/sh\n", 0o755)
        if self.sandbox_runtime:
            self.fs.write(posixpath.join(SANDBOX_RUNTIME, "dist", "index.js"), "// stub\n")
        self.fs.mkdir(USER_HOME)
        self.fs.write(f"{USER_HOME}/.pi/agent/models.json", json.dumps(PI_MODELS))
        self.fs.mkdir(TEMP_ROOT)
        self.clock = FakeClock()
        self.random = FakeRandom.scripted(tokens=["abc123", "0badcafe"])

    def commit_config(self, workers: Mapping[str, Any]) -> str:
        """Commit `.concorde/workers.json` in the worktree; returns its path."""
        path = posixpath.join(WORKTREE, ".concorde", "workers.json")
        self.fs.write(path, json.dumps(workers))
        self.git.add(WORKTREE, ".concorde/workers.json")
        self.git.commit(WORKTREE, "worker configuration")
        return path

    def write_model_map(self, models: Mapping[str, Any]) -> str:
        """The model map at its default place, ~/.config/concorde/models.json."""
        path = posixpath.join(USER_HOME, ".config", "concorde", "models.json")
        self.fs.write(path, json.dumps(models))
        return path

    def host(self, as_root: bool = False) -> HostFacts:
        return HostFacts(
            environ=self.environ,
            interpreter=INTERPRETER,
            user_home=USER_HOME,
            as_root=as_root,
            linux=True,
        )

    def container(self, temp_root: str = TEMP_ROOT, as_root: bool = False) -> Container:
        return Container(
            filesystem=self.fs,
            git=self.git,
            clock=self.clock,
            random=self.random,
            host=self.host(as_root),
            temp_root=temp_root,
            cwd=PRIMARY,
            process_table=self.process_table,
            versions=self.versions,
        )

    def forget_calls(self) -> None:
        """Clear the recorded port calls (setup made some)."""
        self.fs.ops.clear()
        self.git.calls.clear()

    def fs_writes(self) -> list[tuple[str, str]]:
        return [op for op in self.fs.ops if op[0] in WRITING_FS_OPS]

    def git_methods(self) -> list[str]:
        return [call[0] for call in self.git.calls]
