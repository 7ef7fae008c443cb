"""Helpers of the Codex CLI end-to-end tests: the pi world's repository (a real Git repository with
a real `.claude/worktrees/task` worktree), the scripted Responses API server on 127.0.0.1
(adapters/demo/scripted_responses_server.py), the machine's `codex.json` that reaches it (a base
URL and the name of the key's variable, as a user's own local Responses-compatible endpoint), and
whole `WorkerHost.run` calls through `production(environ)` with the real, pinned codex.

Nothing here changes what the host generates: the backend is the production one, its
`config.toml`, confinement and brief included.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from dependency_injector import providers
from e2e.conftest import RecordedRun, checked_record
from e2e.conftest_pi import GRANT, PROJECT_FILES, WORKTREE_NAME, remove_temp_root
from servers.codex_exec import KEY, KEY_ENV, MODEL, find_codex
from servers.responses_server import Call, ResponsesStep, ScriptedResponsesServer, Turn
from timing import SLOW, Deadline

from concorde_workers.adapters.process import SubprocessRunner
from concorde_workers.application.runtime.validation import RoundValidation
from concorde_workers.container import production
from concorde_workers.domain.configuration.request import Limits, RunRequest
from concorde_workers.ports.events import RunEvents

__all__ = [
    "CodexRun",
    "CodexWorld",
    "build_codex_world",
    "codex_world",
    "exec_call",
    "result_text",
    "result_turn",
]


def require_codex() -> Path:
    """The pinned codex and bwrap: never skipped, a clear failure."""
    found = find_codex()
    if found is None or not found.exists():
        pytest.fail(
            "the Codex end-to-end tests need the pinned codex: run ./scripts/setup (or set "
            "CONCORDE_CODEX to an installed native codex binary)",
            pytrace=False,
        )
    return found


# --- what a scripted model says -------------------------------------------------------------------


def exec_call(command: str, call_id: str) -> Turn:
    """A model turn of one `exec_command` call running `command` (codex runs `/bin/bash -c
    '<command>'` in its own sandbox)."""
    return Turn(calls=[Call("exec_command", {"cmd": command, "yield_time_ms": 30000}, call_id)])


def result_text(result: dict[str, Any]) -> str:
    """A worker result as the model answers it on the wire: `output` as a JSON text (the strict
    schema the Codex backend sends; the host decodes it)."""
    return json.dumps({**result, "output": json.dumps(result.get("output") or {})})


def result_turn(
    *deletions: str, status: str = "ok", summary: str = "done", output: dict[str, Any] | None = None
) -> Turn:
    return Turn(
        text=result_text(
            {
                "status": status,
                "summary": summary,
                "error": None,
                "proposed_deletions": list(deletions),
                "output": output or {},
            }
        )
    )


# --- a run and its evidence -----------------------------------------------------------------------


@dataclass
class CodexRun(RecordedRun):
    """One finished codex run."""

    server: ScriptedResponsesServer
    first_request: int

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.server.requests[self.first_request :]

    def tool_result(self, call_id: str) -> str:
        outputs = self.server.outputs()
        assert call_id in outputs, f"the model was never sent the output of {call_id}"
        return outputs[call_id]


@dataclass
class CodexWorld:
    """One test's repository, Responses server and host environment."""

    root: Path
    primary: Path
    worktree: Path
    home: Path
    server: ScriptedResponsesServer
    git_env: dict[str, str]
    temp_root: Path
    credential: Path
    """The user's own codex credential at its origin (`~/.codex/auth.json`), never copied for a
    provider whose key is in a variable, never readable to the worker."""
    environ: dict[str, str] = field(default_factory=dict)
    runs: list[CodexRun] = field(default_factory=list)

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
                "backend": "codex",
                "worktree": str(self.worktree),
                "parent": str(parent),
                "task_type": "implement",
                "grant": grant or GRANT,
                "instructions": "Do the scripted task.",
                "limits": limits.model_dump(),
                "local_model": MODEL,
                "resources": resources,
            }
        )

    def run(
        self,
        *script: ResponsesStep,
        limits: Limits | None = None,
        validation: RoundValidation | None = None,
        deadline: Deadline | None = None,
        resources: dict[str, int] | None = None,
        events: RunEvents | None = None,
        grant: dict[str, Any] | None = None,
    ) -> CodexRun:
        """One run; `deadline` (tests/timing.py) decides when a round's timeout passes."""
        self.server.add(*script)
        first = len(self.server.requests)
        container = production(self.environ)
        container.temp_root.override(providers.Object(str(self.temp_root)))
        if deadline is not None:
            container.processes.override(providers.Object(SubprocessRunner(wait_timeout=deadline)))
        limits = limits or Limits(
            timeout_seconds=SLOW, max_turns=30, rounds=0, retries=0, retry_delay_seconds=0
        )
        record = checked_record(
            container.worker_host().run(
                self.request(limits, grant=grant, resources=resources),
                validation,
                events=events,
            )
        )
        run = CodexRun(record=record, server=self.server, first_request=first)
        self.runs.append(run)
        assert self.server.failures == [], self.server.failures
        # Nothing but the trace outlives a worker: the runtime directory (CODEX_HOME with its
        # rollout and logs first) is gone whatever ended the run.
        assert not run.runtime_dir.exists(), f"{run.runtime_dir} outlived its run"
        return run


def build_codex_world(root: Path) -> CodexWorld:
    program = require_codex()
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
    server = ScriptedResponsesServer().start()
    temp_root = Path(tempfile.mkdtemp(prefix="cxe-", dir="/tmp"))
    world = CodexWorld(
        root=root,
        primary=primary,
        worktree=primary / ".claude" / "worktrees" / WORKTREE_NAME,
        home=home,
        server=server,
        git_env=git_env,
        temp_root=temp_root,
        credential=home / ".codex" / "auth.json",
    )
    world.credential.parent.mkdir()
    world.credential.write_text(json.dumps({"OPENAI_API_KEY": "sk-codex-origin-u7w3z9"}) + "\n")
    world.credential.chmod(0o600)
    primary.mkdir()
    world.git(primary, "init", "-q", "-b", "main")
    for rel, text in PROJECT_FILES.items():
        target = primary / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    world.git(primary, "add", "-A")
    world.git(primary, "commit", "-q", "-m", "initial")
    world.git(primary, "worktree", "add", "-q", "-b", WORKTREE_NAME, str(world.worktree))
    machine = root / "machine"
    machine.mkdir()
    config = machine / "codex.json"
    config.write_text(
        json.dumps(
            {
                "schema_version": 1,
                "base_url": server.base_url,
                "key_env": KEY_ENV,
                "prices": {"input": 3.0, "cached_input": 0.3, "output": 15.0},
            }
        )
        + "\n"
    )
    world.environ = {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "HOME": str(home),
        "CONCORDE_CODEX": str(program),
        "CONCORDE_CODEX_CONFIG": str(config),
        KEY_ENV: KEY,
    }
    return world


@pytest.fixture
def codex_world(tmp_path: Path) -> Iterator[CodexWorld]:
    world = build_codex_world(tmp_path)
    try:
        yield world
    finally:
        world.server.stop()
        remove_temp_root(world.temp_root)
