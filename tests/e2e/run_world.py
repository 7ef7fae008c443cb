"""What the end-to-end worlds share beyond their repository (tests/worlds/repository.py): a temp
root of the test's own, the host's environment, the request each run makes and the production
container each run goes through. Each backend's world adds its model server, its program, what
reaches it and its project's files (conftest.py for Claude Code, conftest_pi.py,
conftest_codex.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from dependency_injector import providers
from timing import Deadline
from worlds.repository import GRANT, PROJECT_FILES, DiskRepository, disk_parts, make_temp_root

from concorde_workers.adapters.processes.process import SubprocessRunner
from concorde_workers.application.runtime.cancellation import Cancellation
from concorde_workers.application.runtime.validation import RoundValidation
from concorde_workers.container import Container, production
from concorde_workers.contracts import validator
from concorde_workers.domain.configuration.request import Limits, RunRequest
from concorde_workers.domain.evidence.records import RunRecord
from concorde_workers.domain.ground.backends import contract_for
from concorde_workers.ports.agents.events import RunEvents

__all__ = ["RUN_FILES", "RunWorld", "checked_record", "run_parts"]

RUN_FILES: dict[str, str] = {
    **PROJECT_FILES,
    "src/app/old.py": "# to be deleted\n",
    ".gitignore": "__pycache__/\n",
}
"""The pi and Codex worlds' project: the common one, a file a worker may propose to delete, and a
.gitignore."""


def checked_record(record: RunRecord) -> RunRecord:
    """The run record, after checking it against its contract."""
    data = record.model_dump(mode="json")
    # the seed's contract, or for a codex run its extension (issue 33 §4)
    contract = contract_for("contract.workers.worker-run-record", data)
    problems = sorted(validator(contract).iter_errors(data), key=str)
    assert not problems, [p.message for p in problems]
    return record


@dataclass(kw_only=True)
class RunWorld(DiskRepository):
    """One test's repository and host environment; `backend`, `local_model` and `instructions`
    are the world's (its runs' request)."""

    backend: ClassVar[str]
    local_model: ClassVar[str]
    instructions: ClassVar[str] = "Do the scripted task."

    temp_root: Path
    """The host's temp root (tests/worlds/repository.py `make_temp_root`)."""
    environ: dict[str, str] = field(default_factory=dict)

    @property
    def parent(self) -> Path:
        """The trace parent every run of this world is recorded under."""
        path = self.root / "trace" / "op-1"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def request(
        self,
        limits: Limits,
        grant: dict[str, Any] | None = None,
        resources: dict[str, int] | None = None,
    ) -> RunRequest:
        grant = grant or GRANT
        return RunRequest.model_validate(
            {
                "backend": self.backend,
                "worktree": str(self.worktree),
                "parent": str(self.parent),
                "task_type": grant["task_type"],
                "grant": grant,
                "instructions": self.instructions,
                "limits": limits.model_dump(),
                "local_model": self.local_model,
                "resources": resources,
            }
        )

    def container(self, deadline: Deadline | None = None) -> Container:
        """The production container over the world's environment and temp root; `deadline`
        (tests/timing.py) decides when a round's timeout passes."""
        container = production(self.environ)
        container.temp_root.override(providers.Object(str(self.temp_root)))
        if deadline is not None:
            container.processes.override(providers.Object(SubprocessRunner(wait_timeout=deadline)))
        return container

    def recorded(
        self,
        container: Container,
        limits: Limits,
        *,
        grant: dict[str, Any] | None,
        resources: dict[str, int] | None,
        validation: RoundValidation | None,
        events: RunEvents | None,
        cancel: Cancellation | None = None,
    ) -> RunRecord:
        """One run of the world's request through `container`'s host; its record, checked."""
        return checked_record(
            container.worker_host().run(
                self.request(limits, grant=grant, resources=resources),
                validation,
                cancel,
                events=events,
            )
        )


def run_parts(root: Path, prefix: str) -> dict[str, Any]:
    """A `RunWorld`'s fields but the environment: the repository's below `root`
    (tests/worlds/repository.py `disk_parts`) and a temp root of the test's own (`prefix`)."""
    return {**disk_parts(root), "temp_root": make_temp_root(prefix)}
