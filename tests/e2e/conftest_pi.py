"""Helpers of the pi end-to-end tests: a real Git repository with a real `.claude/worktrees/`
worktree, the scripted model server on 127.0.0.1, a user's pi configuration directory that
reaches it (models.json + auth.json, as a user's own local model proxy), and whole
`WorkerHost.run` calls through `production(environ)` with the real pi and sandbox-runtime.

Nothing here changes what the host generates: the backend is the production `PiBackend`
(its generated `control/permission.ts` included), only observed - its `BackendContext` is kept so a
test can ask the domain's tables for the reason a denial must give.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from dependency_injector import providers
from e2e.conftest import RecordedRun, checked_record
from e2e.run_world import RUN_FILES, RunWorld, run_parts
from servers.openai_server import (
    DEFAULT_MODEL,
    DEFAULT_PROVIDER,
    Reply,
    ScriptedModelServer,
    Step,
    ToolCall,
    Usage,
    write_pi_config,
)
from timing import SLOW, Deadline
from worlds.repository import remove_temp_root

from concorde_workers.adapters.machine.filesystem import LocalFileSystem
from concorde_workers.adapters.pi import layout as pi_layout
from concorde_workers.adapters.pi.backend import PiBackend
from concorde_workers.adapters.sandboxes.space import SpacedFileSystem
from concorde_workers.application.runtime.validation import RoundValidation
from concorde_workers.domain.configuration.request import Limits
from concorde_workers.ports.agents.agent import BackendContext, Generated
from concorde_workers.ports.agents.events import RunEvents

__all__ = [
    "MODEL",
    "PI",
    "SANDBOX_RUNTIME",
    "PiRun",
    "PiWorld",
    "build_world",
    "call",
    "pi_world",
    "result_call",
    "runtime_of",
]

CHECKOUT = Path(__file__).resolve().parents[2]
# The programs under test: `$CONCORDE_PI` and `$CONCORDE_SANDBOX_RUNTIME` of the test process
# when set (run the end-to-end tests against any installed pi, README "Development"), else the
# pinned ones ./scripts/setup installs.
PI = Path(os.environ.get("CONCORDE_PI") or CHECKOUT / "node_modules" / ".bin" / "pi")
SANDBOX_RUNTIME = Path(
    os.environ.get("CONCORDE_SANDBOX_RUNTIME")
    or CHECKOUT / "node_modules" / "@anthropic-ai" / "sandbox-runtime"
)
MODEL = f"{DEFAULT_PROVIDER}/{DEFAULT_MODEL}"


def require_programs() -> None:
    """The pinned pi and sandbox-runtime, bwrap and socat: never skipped, a clear failure."""
    missing = [str(p) for p in (PI, SANDBOX_RUNTIME / "dist" / "index.js") if not p.exists()]
    missing += [name for name in ("bwrap", "socat", "rg", "git") if shutil.which(name) is None]
    if shutil.which("fd") is None and shutil.which("fdfind") is None:
        missing.append("fd (fdfind)")
    if missing:
        pytest.fail(
            f"the pi end-to-end tests need {', '.join(missing)}: run ./scripts/setup "
            "(or set CONCORDE_PI and CONCORDE_SANDBOX_RUNTIME to installed ones)",
            pytrace=False,
        )


# --- what a scripted model says -------------------------------------------------------------------


def call(name: str, call_id: str, **arguments: Any) -> ToolCall:
    return ToolCall(name=name, arguments=arguments, id=call_id)


def result_call(
    call_id: str = "call_result",
    *deletions: str,
    status: str = "ok",
    summary: str = "done",
    output: dict[str, Any] | None = None,
) -> ToolCall:
    return call(
        "concorde_result",
        call_id,
        status=status,
        summary=summary,
        error=None,
        proposed_deletions=list(deletions),
        output=output or {},
    )


def runtime_of(body: dict[str, Any]) -> str:
    """The runtime directory, from the working directory pi names in its system prompt."""
    for message in body.get("messages", []):
        content = message.get("content") if isinstance(message, dict) else None
        text = content if isinstance(content, str) else ""
        for line in text.splitlines():
            if line.startswith("Current working directory: "):
                return str(Path(line.removeprefix("Current working directory: ").strip()).parent)
    raise AssertionError("pi's system prompt names no working directory")


# --- the observed production backend --------------------------------------------------------------


class ObservedPiBackend(PiBackend):
    """The production PiBackend, with its context kept for the test's assertions."""

    contexts: list[BackendContext]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.contexts = []

    def generate(self, context: BackendContext) -> Generated:
        self.contexts.append(context)
        generated = super().generate(context)
        # The real permission extension, generated by the host: never a stand-in.
        assert pi_layout.permission_extension(context.policy.runtime) in generated.files
        return generated


# --- a run and its evidence -----------------------------------------------------------------------


@dataclass
class PiRun(RecordedRun):
    """One finished pi run, with the backend context it was generated from."""

    context: BackendContext
    server: ScriptedModelServer
    first_request: int

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.server.requests[self.first_request :]

    def tool_result(self, call_id: str) -> str:
        results = self.server.tool_results()
        assert call_id in results, f"the model was never sent the result of {call_id}"
        return results[call_id]

    def round_pi(self, n: int = -1) -> dict[str, Any]:
        return dict(self.data["rounds"][n]["pi"])

    def explain(self) -> str:
        """What to print when an assertion fails."""
        stderr = [p.read_text()[-1500:] for p in sorted(self.run_dir.glob("rounds/*/stderr.log"))]
        return json.dumps(
            {
                "error": self.data["error"],
                "rounds": self.data["rounds"],
                "served": [r["served"] for r in self.requests],
                "stderr": stderr,
            },
            indent=1,
        )[:8000]


@dataclass(kw_only=True)
class PiWorld(RunWorld):
    """One test's repository, model server and host environment."""

    backend = "pi"
    local_model = MODEL

    pi_dir: Path
    server: ScriptedModelServer
    runs: list[PiRun] = field(default_factory=list)

    def path(self, rel: str) -> str:
        """An absolute path in the task worktree (tools take absolute paths)."""
        return str(self.worktree / rel)

    def run(
        self,
        *script: Step,
        limits: Limits | None = None,
        validation: RoundValidation | None = None,
        deadline: Deadline | None = None,
        resources: dict[str, int] | None = None,
        events: RunEvents | None = None,
        grant: dict[str, Any] | None = None,
    ) -> PiRun:
        """One run; `deadline` (tests/timing.py) decides when a round's timeout passes."""
        self.server.add(*script)
        first = len(self.server.requests)
        container = self.container(deadline)
        backend = ObservedPiBackend(fs=SpacedFileSystem(LocalFileSystem()), environ=self.environ)
        container.backends.override(providers.Dict(pi=providers.Object(backend)))
        host = container.worker_host()
        record = checked_record(
            host.run(
                self.request(
                    limits
                    or Limits(
                        timeout_seconds=SLOW,
                        max_turns=30,
                        rounds=0,
                        retries=0,
                        retry_delay_seconds=0,
                    ),
                    grant=grant,
                    resources=resources,
                ),
                validation,
                events=events,
            )
        )
        assert backend.contexts, record.error
        run = PiRun(
            record=record, context=backend.contexts[-1], server=self.server, first_request=first
        )
        self.runs.append(run)
        # Nothing but the trace outlives a worker: the runtime directory (credential copies
        # first) is gone whatever ended the run.
        assert not run.runtime_dir.exists(), f"{run.runtime_dir} outlived its run"
        return run

    def porcelain(self) -> list[str]:
        proc = subprocess.run(
            ["git", "--no-optional-locks", "status", "--porcelain", "--untracked-files=all"],
            cwd=self.worktree,
            env=self.git_env,
            capture_output=True,
            text=True,
            check=True,
        )
        return sorted(proc.stdout.splitlines())


def build_world(root: Path) -> PiWorld:
    server = ScriptedModelServer().start()
    parts = run_parts(root, "cpe-")
    world = PiWorld(server=server, pi_dir=parts["home"] / "pi-agent", **parts)
    world.commit_project(RUN_FILES)
    write_pi_config(world.pi_dir, server.base_url)
    world.environ = {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "HOME": str(world.home),
        "PI_CODING_AGENT_DIR": str(world.pi_dir),
        "CONCORDE_PI": str(PI),
        "CONCORDE_SANDBOX_RUNTIME": str(SANDBOX_RUNTIME),
    }
    return world


@pytest.fixture
def pi_world(tmp_path: Path) -> Iterator[PiWorld]:
    require_programs()
    world = build_world(tmp_path)
    try:
        yield world
    finally:
        world.server.stop()
        remove_temp_root(world.temp_root)


def usage(prompt: int = 1000, completion: int = 50) -> Usage:
    return Usage(prompt_tokens=prompt, completion_tokens=completion)


def reply(*calls: ToolCall, text: str | None = None, tokens: tuple[int, int] = (1000, 50)) -> Reply:
    return Reply(text=text, tool_calls=calls, usage=usage(*tokens))


def texts(results: Sequence[str]) -> str:
    return "\n".join(results)
