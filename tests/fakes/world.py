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

from concorde_workers.application.prepared import HostFacts
from concorde_workers.container import Container
from fakes.filesystem import FakeFileSystem
from fakes.git import FakeGit
from fakes.liveness import FakeProcessTable
from fakes.program_versions import FakeProgramVersions
from fakes.system import FakeClock, FakeRandom

PRIMARY = "/work/repo"
WORKTREE_NAME = "task"
WORKTREE = f"{PRIMARY}/.claude/worktrees/{WORKTREE_NAME}"
USER_HOME = "/home/dev"
BIN = "/usr/bin"
SANDBOX_RUNTIME = "/opt/sandbox-runtime"
INTERPRETER = "/usr/bin/python3"
TEMP_ROOT = "/tmp"
SPACE_PROGRAMS = ("unshare", "nsenter", "mount", "mkdir", "setpriv", "sleep")
"""What makes and enters a confined run's writable space (domain/isolation/runtime_space.py)."""
PROGRAMS = ("claude", "pi", "rg", "fd", "bwrap", "socat", "env", "umount", *SPACE_PROGRAMS)

PROJECT_FILES: dict[str, str] = {
    "README.md": "# app\n",
    "src/app/main.py": "print('main')\n",
    "src/app/util.py": "def util():\n    return 1\n",
    "src/other/lib.py": "X = 1\n",
    "docs/notes.md": "# notes\n",
    "secrets/token.txt": "not for workers\n",
}

GRANT: dict[str, Any] = {
    "task_type": "implement",
    "entries": [
        {"path": "src/app/", "level": "rw"},
        {"path": "src/app/util.py", "level": "ro"},
        {"path": "docs/notes.md", "level": "ro"},
        {"path": "README.md", "level": "names"},
    ],
    "context_identity": "sha256:" + "2" * 64,
}

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
        self.git.init(PRIMARY, branch="main")
        for rel, text in PROJECT_FILES.items():
            self.fs.write(posixpath.join(PRIMARY, rel), text)
        self.git.add_all(PRIMARY)
        self.git.commit(PRIMARY, "initial")
        self.git.worktree_add(PRIMARY, WORKTREE, new_branch=WORKTREE_NAME)
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
