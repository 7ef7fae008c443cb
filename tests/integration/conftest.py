"""Integration fixtures: a real Git repository with a real `.claude/worktrees/` worktree, a
committed worker configuration, a model map and an isolated host environment.

`project` builds, below pytest's tmp_path:

    home/                       HOME and XDG_CONFIG_HOME (home/.config) of every process
    home/.config/concorde/models.json   the model map, at its default XDG location
    home/.pi/agent/models.json  pi's provider `local`, which the map's pi id names
    bin/                        stub programs: claude, pi, rg, fd, bwrap, socat (never run);
                                claude and pi link into their npm packages under
                                npm/node_modules/, whose package.json says the pinned version
                                (the host reads a version there, it never runs the program)
    srt/dist/index.js           the sandbox-runtime package CONCORDE_SANDBOX_RUNTIME names
                                (srt/package.json: the pinned version)
    repo/                       the primary worktree (branch main), files committed
    repo/.claude/worktrees/task a linked worktree made by `git worktree add`
    grant.json, request.json    a grant input and a request file (no operation: flags add it)
    tmp/                        TMPDIR (and tempfile.tempdir) of the test process

and isolates the test process's own environment with monkeypatch (the CLI reads os.environ):
no inherited GIT_*, CONCORDE_*, proxy or *_API_KEY variable reaches it. Git commands of the
fixture run with HOME in the temporary directory and the system configuration off, so the
user's own ~/.gitconfig is never read or written.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from worlds.repository import GRANT, PROJECT_FILES, DiskRepository, disk_parts

WORKERS_JSON: dict[str, Any] = {
    "schema_version": 2,
    "enabled_models": {"m-claude": {"reasoning": "high"}, "m-local": {}},
    "default": {"model": "m-local"},
    "operations": {
        "implement": {
            "default": {"model": "m-local", "reasoning": "medium"},
            "workers": {"reviewer": {"backend": "claude", "model": "m-claude"}},
        },
    },
    "limits": {"timeout_seconds": 600, "max_turns": 25, "rounds": 2},
}

MODEL_MAP: dict[str, Any] = {
    "schema_version": 1,
    "models": {
        "m-local": {"pi": "local/m-local"},
        "m-claude": {"claude": "claude-x-1", "pi": "anthropic/claude-x-1"},
    },
}

PI_MODELS: dict[str, Any] = {
    "providers": {
        "local": {
            "baseUrl": "http://127.0.0.1:8000/v1",
            "api": "openai-completions",
            "apiKey": "none",
            "models": [{"id": "m-local"}],
        }
    }
}
"""The user's pi models.json (home/.pi/agent): the provider the model map's pi id local/m-local
names, as pi 0.73.1 reads it (a run refuses an id pi would not find, issue 31 §1)."""

INSTRUCTIONS = "Add a greeting to main.py; leave util.py as it is."

STUB_PROGRAMS = ("claude", "pi", "rg", "fd", "bwrap", "socat")

# The npm packages of the stub agent programs: (package, the program's file in it). Their
# package.json says the version package-lock.json pins (tests read it there).
STUB_PACKAGES: dict[str, tuple[str, str]] = {
    "claude": ("@anthropic-ai/claude-code", "bin/claude.exe"),
    "pi": ("@mariozechner/pi-coding-agent", "dist/cli.js"),
}

# Variables of the developer's own environment that must not reach a test of the planner.
_DROPPED_PREFIXES = ("GIT_", "CONCORDE_")
_DROPPED_SUFFIXES = ("_PROXY", "_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD")


def project_files() -> dict[str, str]:
    """The integration project: the common one (tests/worlds/repository.py), a folder beside the
    grant's, a .gitignore and the committed worker configuration."""
    return {
        **PROJECT_FILES,
        "src/other/lib.py": "X = 1\n",
        ".gitignore": "__pycache__/\n",
        ".concorde/workers.json": json.dumps(WORKERS_JSON, indent=2) + "\n",
    }


@dataclass(kw_only=True)
class Project(DiskRepository):
    """The repository, its worktree and the files a plan request needs."""

    bin: Path
    tmp: Path
    model_map: Path
    grant_file: Path
    request_file: Path
    sandbox_runtime: Path

    # The fixture's data, for tests (a test module cannot import this conftest).
    grant = GRANT
    workers_json = WORKERS_JSON
    models = MODEL_MAP
    instructions = INSTRUCTIONS

    @property
    def config_file(self) -> Path:
        """The worktree's committed worker configuration."""
        return self.worktree / ".concorde" / "workers.json"

    def commit_configuration(self) -> None:
        """Commits the worktree's `.concorde/` as it is now: a run reads the worker
        configuration as committed, never the working copy (issue 18 §4)."""
        self.git(self.worktree, "add", "-A", ".concorde")
        self.git(self.worktree, "commit", "-q", "--allow-empty", "-m", "configuration")

    def write_json(self, path: Path, data: Any) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2) + "\n")
        return path

    def request(self, name: str = "request.json", **fields: Any) -> Path:
        """A request file holding the base request with `fields` replaced (None drops one)."""
        data: dict[str, Any] = {
            "worktree": str(self.worktree),
            "task_type": "implement",
            "grant": GRANT,
            "instructions": INSTRUCTIONS,
        }
        for key, value in fields.items():
            if value is None:
                data.pop(key, None)
            else:
                data[key] = value
        return self.write_json(self.root / name, data)

    def add_worktree(self, path: Path, branch: str) -> Path:
        """Another real linked worktree of the repository, wherever `path` lies."""
        self.git(self.primary, "worktree", "add", "-q", "-b", branch, str(path))
        return path


def pinned_version(package: str) -> str:
    """The version package-lock.json pins for `package`."""
    lock = json.loads((Path(__file__).resolve().parents[2] / "package-lock.json").read_text())
    version: str = lock["packages"][f"node_modules/{package}"]["version"]
    return version


def write_package_json(directory: Path, package: str, version: str) -> None:
    (directory / "package.json").write_text(json.dumps({"name": package, "version": version}))


def _write_program(path: Path) -> None:
    path.write_text("#!/bin/sh\necho 'a stub: the planner never starts a program' >&2\nexit 99\n")
    path.chmod(0o755)


def build_project(root: Path) -> Project:
    parts = disk_parts(root)
    root, home = parts["root"], parts["home"]
    binary = root / "bin"
    binary.mkdir()
    for name in STUB_PROGRAMS:
        if name not in STUB_PACKAGES:
            _write_program(binary / name)
            continue
        package, entry = STUB_PACKAGES[name]
        directory = root / "npm" / "node_modules" / package
        (directory / entry).parent.mkdir(parents=True)
        _write_program(directory / entry)
        write_package_json(directory, package, pinned_version(package))
        (binary / name).symlink_to(directory / entry)
    sandbox_runtime = root / "srt"
    (sandbox_runtime / "dist").mkdir(parents=True)
    (sandbox_runtime / "dist" / "index.js").write_text("// stub\n")
    write_package_json(
        sandbox_runtime,
        "@anthropic-ai/sandbox-runtime",
        pinned_version("@anthropic-ai/sandbox-runtime"),
    )
    tmp = root / "tmp"
    tmp.mkdir()
    project = Project(
        bin=binary,
        tmp=tmp,
        model_map=home / ".config" / "concorde" / "models.json",
        grant_file=root / "grant.json",
        request_file=root / "request.json",
        sandbox_runtime=sandbox_runtime,
        **parts,
    )
    project.commit_project(project_files())
    project.write_json(project.model_map, MODEL_MAP)
    project.write_json(home / ".pi" / "agent" / "models.json", PI_MODELS)
    project.write_json(project.grant_file, GRANT)
    project.request()
    return project


def isolate_environment(monkeypatch: pytest.MonkeyPatch, project: Project) -> None:
    """The test process's environment as the CLI should see it: only what the test sets."""
    for name in list(os.environ):
        upper = name.upper()
        if (
            upper.startswith(_DROPPED_PREFIXES)
            or upper.endswith(_DROPPED_SUFFIXES)
            or upper == "NO_PROXY"
        ):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(project.home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(project.home / ".config"))
    monkeypatch.setenv("PATH", f"{project.bin}:/usr/local/bin:/usr/bin:/bin")
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.setenv("TMPDIR", str(project.tmp))
    monkeypatch.setenv("CONCORDE_CLAUDE", str(project.bin / "claude"))
    monkeypatch.setenv("CONCORDE_PI", str(project.bin / "pi"))
    monkeypatch.setenv("CONCORDE_SANDBOX_RUNTIME", str(project.sandbox_runtime))
    # tempfile caches the temporary directory on first use: point it at ours too.
    monkeypatch.setattr(tempfile, "tempdir", str(project.tmp))
    monkeypatch.chdir(project.root)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    built = build_project(tmp_path)
    isolate_environment(monkeypatch, built)
    return built


# --- snapshots: "plan writes nothing" ------------------------------------------------------------

Snapshot = dict[str, tuple[str, bytes, int]]


def snapshot(roots: Iterable[Path]) -> Snapshot:
    """Every entry below `roots` (directories, files, links) by path: kind, bytes, mode."""
    found: Snapshot = {}
    for root in roots:
        for directory, dirs, files in os.walk(root, followlinks=False):
            for name in [*dirs, *files]:
                path = os.path.join(directory, name)
                info = os.lstat(path)
                if stat.S_ISLNK(info.st_mode):
                    found[path] = ("link", os.readlink(path).encode(), info.st_mode)
                elif stat.S_ISDIR(info.st_mode):
                    found[path] = ("dir", b"", info.st_mode)
                else:
                    found[path] = ("file", Path(path).read_bytes(), info.st_mode)
    return found


@pytest.fixture
def take_snapshot() -> Any:
    """`snapshot` as a fixture, for test modules."""
    return snapshot
