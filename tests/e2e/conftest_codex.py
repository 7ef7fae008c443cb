"""Helpers of the Codex CLI end-to-end tests: the pi world's project (tests/e2e/run_world.py: a
real Git repository with a real `.claude/worktrees/task` worktree), the scripted Responses API
server on 127.0.0.1 (adapters/demo/scripted_responses_server.py), the machine's `codex.json`
that reaches it (a base URL and the name of the key's variable, as a user's own local
Responses-compatible endpoint), and whole `WorkerHost.run` calls through `production(environ)`
with the real, pinned codex.

Nothing here changes what the host generates: the backend is the production one, its
`config.toml`, confinement and brief included.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from e2e.conftest import RecordedRun
from e2e.run_world import RUN_FILES, RunWorld, run_parts
from servers.codex_exec import KEY, KEY_ENV, MODEL, find_codex
from servers.responses_server import Call, ResponsesStep, ScriptedResponsesServer, Turn
from timing import SLOW, Deadline
from worlds.repository import remove_temp_root

from concorde_workers.application.runtime.validation import RoundValidation
from concorde_workers.domain.configuration.request import Limits
from concorde_workers.ports.agents.events import RunEvents

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


@dataclass(kw_only=True)
class CodexWorld(RunWorld):
    """One test's repository, Responses server and host environment."""

    backend = "codex"
    local_model = MODEL

    server: ScriptedResponsesServer
    credential: Path
    """The user's own codex credential at its origin (`~/.codex/auth.json`), never copied for a
    provider whose key is in a variable, never readable to the worker."""
    runs: list[CodexRun] = field(default_factory=list)

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
        record = self.recorded(
            self.container(deadline),
            limits
            or Limits(
                timeout_seconds=SLOW, max_turns=30, rounds=0, retries=0, retry_delay_seconds=0
            ),
            grant=grant,
            resources=resources,
            validation=validation,
            events=events,
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
    server = ScriptedResponsesServer().start()
    parts = run_parts(root, "cxe-")
    world = CodexWorld(server=server, credential=parts["home"] / ".codex" / "auth.json", **parts)
    world.credential.parent.mkdir()
    world.credential.write_text(json.dumps({"OPENAI_API_KEY": "sk-codex-origin-u7w3z9"}) + "\n")
    world.credential.chmod(0o600)
    world.commit_project(RUN_FILES)
    machine = world.root / "machine"
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
        "HOME": str(world.home),
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
