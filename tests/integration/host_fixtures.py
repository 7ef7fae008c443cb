"""A harness for whole `WorkerHost.run` calls with the real adapters and the ProgramBackend.

`HostHarness.run(*scenarios, ...)` runs one worker run in the integration `project` (a real Git
repository with a real `.claude/worktrees/task` worktree): the production container (real Git,
real filesystem, real SubprocessRunner, real clock and randomness) with its agent backend
swapped for a `ProgramBackend` that plays one JSON scenario per round with
tests/fakes/agent_programs/agent.py. The runtime directory goes below the project's own
temporary directory, so a test can see that nothing of it is left.

The returned `HostRun` holds the run record (checked against contract.workers.worker-run-record)
and every trace.json of the run directory (checked against contract.tracing.node).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dependency_injector import providers
from fakes.program_backend import ProgramBackend, Scenario
from timing import SLOW, Deadline, wait_dead
from worlds.repository import GRANT

from concorde_workers.adapters.processes.process import SubprocessRunner
from concorde_workers.application.runtime.cancellation import Cancellation
from concorde_workers.application.runtime.validation import RoundValidation
from concorde_workers.container import PROFILES, production
from concorde_workers.contracts import validator
from concorde_workers.domain.configuration.request import Limits, RunRequest
from concorde_workers.domain.evidence.records import RunRecord
from concorde_workers.domain.ground.backends import contract_for
from concorde_workers.ports.agents.agent import BackendContext, CompiledCache
from concorde_workers.ports.agents.events import RunEvents

__all__ = ["CREDENTIALS", "HostHarness", "HostRun", "alive", "ok_result", "porcelain", "wait_gone"]

CREDENTIALS = '{"claudeAiOauth": {"accessToken": "sk-test-secret"}}\n'


def ok_result(
    *deletions: str, status: str = "ok", summary: str = "done", error: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A valid worker result."""
    return {
        "status": status,
        "summary": summary,
        "error": error,
        "proposed_deletions": list(deletions),
        "output": {},
    }


def alive(pid: int) -> bool:
    """The process exists and is no zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True


def wait_gone(pids: Iterable[int], seconds: float = SLOW) -> bool:
    """Every process has ended (waited on its pidfd; `seconds` only ends a failure)."""
    return wait_dead(pids, seconds)


def kill_left(pids: Iterable[int]) -> None:
    """Kill (each by its id) what a failing test left running."""
    for pid in pids:
        if alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def porcelain(git_env: dict[str, str], worktree: Path) -> list[str]:
    """`git status --porcelain --ignored` of the worktree (read-only: no optional locks)."""
    proc = subprocess.run(
        [
            "git",
            "--no-optional-locks",
            "status",
            "--porcelain",
            "--ignored",
            "--untracked-files=all",
        ],
        cwd=worktree,
        env=git_env,
        capture_output=True,
        text=True,
        check=True,
    )
    return sorted(proc.stdout.splitlines())


@dataclass
class HostRun:
    """One finished run: the record, the backend that played it, the run directory's traces."""

    record: RunRecord
    backend: ProgramBackend
    run_dir: Path
    runtime_dir: Path
    traces: dict[str, Any] = field(default_factory=dict)

    @property
    def data(self) -> dict[str, Any]:
        return self.record.model_dump(mode="json")

    @property
    def context(self) -> BackendContext:
        context = self.backend.context
        assert context is not None
        return context

    @property
    def code(self) -> str | None:
        return self.record.error.code if self.record.error is not None else None

    def audit(self, n: int = -1) -> dict[str, Any]:
        audit = self.data["rounds"][n]["audit"]
        assert audit is not None
        return dict(audit)

    def trace(self, rel: str = "trace.json") -> dict[str, Any]:
        return dict(self.traces[rel])

    def status(self) -> dict[str, Any]:
        return dict(json.loads((self.run_dir / "status.json").read_text()))


@dataclass
class HostHarness:
    """Runs the host over the integration project (see the module's docstring)."""

    root: Path
    worktree: Path
    primary: Path
    tmp: Path
    home: Path
    git_env: dict[str, str]
    backend_name: str = "claude"

    @property
    def parent(self) -> Path:
        """The trace node folder the caller gives (outside the repository)."""
        path = self.root / "trace" / "op-1"
        path.mkdir(parents=True, exist_ok=True)
        return path

    @property
    def credentials_file(self) -> Path:
        path = self.home / ".claude" / ".credentials.json"
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(CREDENTIALS)
        return path

    def credentials(self, context: BackendContext) -> Sequence[tuple[str, str]]:
        return ((str(self.credentials_file), context.policy.runtime.copy_of(".credentials.json")),)

    def request(
        self, *, grant: dict[str, Any] | None = None, limits: Limits | None = None, **fields: Any
    ) -> RunRequest:
        return RunRequest.model_validate(
            {
                "backend": self.backend_name,
                "worktree": str(self.worktree),
                "parent": str(self.parent),
                "task_type": (grant or GRANT)["task_type"],
                "grant": grant or GRANT,
                "instructions": "do the task",
                "limits": (
                    limits
                    or Limits(timeout_seconds=SLOW, rounds=1, retries=0, retry_delay_seconds=0)
                ).model_dump(),
                **fields,
            }
        )

    def run(
        self,
        *scenarios: Scenario,
        grant: dict[str, Any] | None = None,
        limits: Limits | None = None,
        validation: RoundValidation | None = None,
        cancel: Cancellation | None = None,
        interpreter: str | None = None,
        deadline: Deadline | None = None,
        confined: bool = False,
        runtime_paths: Sequence[Path] = (),
        events: RunEvents | None = None,
        environ: dict[str, str] | None = None,
        scratch: Callable[[BackendContext], Sequence[str]] | None = None,
        compiled: Callable[[BackendContext], CompiledCache] | None = None,
    ) -> HostRun:
        """One run; `deadline` (tests/timing.py) decides when a round's timeout passes, instead
        of the seconds of `limits`, which then only bound a test that never expires it;
        `confined` runs agent.py inside the production confinement; `runtime_paths` are the
        request's (read-only inside the confinement: a place for the tests' named pipes);
        `environ` adds to the host's environment (such as `CONCORDE_SIGNING_KEY`)."""
        backend = ProgramBackend(
            name=self.backend_name,  # type: ignore[arg-type]
            scenarios=list(scenarios),
            credentials=self.credentials,
            confined=confined,
            compiled=compiled,
            **({"interpreter": interpreter} if interpreter else {}),
        )
        if scratch is not None:
            backend.round_scratch = scratch  # type: ignore[method-assign]
        container = production({**os.environ, **(environ or {})})
        container.temp_root.override(providers.Object(str(self.tmp)))
        if deadline is not None:
            container.processes.override(providers.Object(SubprocessRunner(wait_timeout=deadline)))
        container.backends.override(
            providers.Dict(**{name: providers.Object(backend) for name in PROFILES})
        )
        host = container.worker_host()
        request = self.request(
            grant=grant, limits=limits, runtime_paths=[str(p) for p in runtime_paths]
        )
        record = host.run(request, validation, cancel, events=events)
        data = record.model_dump(mode="json")
        # the seed's contract, or for a codex run its extension (issue 33 §4)
        contract = contract_for("contract.workers.worker-run-record", data)
        errors = sorted(validator(contract).iter_errors(data), key=str)
        assert not errors, [e.message for e in errors]
        run_dir = Path(record.run_directory)
        traces: dict[str, Any] = {}
        node = validator("contract.tracing.node")
        for trace in sorted(run_dir.rglob("trace.json")):
            data = json.loads(trace.read_text())
            problems = [e.message for e in node.iter_errors(data)]
            assert not problems, (trace, problems)
            traces[str(trace.relative_to(run_dir))] = data
        return HostRun(
            record=record,
            backend=backend,
            run_dir=run_dir,
            runtime_dir=Path(record.runtime_directory),
            traces=traces,
        )
