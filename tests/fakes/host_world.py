"""HostWorld: PlanWorld plus what the run host needs - a ScriptedBackend per backend, the trace
parent folder, a FakeProcessRunner, and readers of what a run left on the fake filesystem.

    world = HostWorld()
    record = world.run([Round.ok(world.result())], validation=..., limits={"rounds": 1})
    world.run_node()          # the run's trace.json as a dict
    world.round_node(1)       # rounds/1/trace.json
    world.status()            # status.json
    world.stderr(1)           # rounds/1/stderr.log (bytes)

`run` builds the runner from the rounds given (each round's `effects` runs when it starts, with
the FakeStart: argv, env, cwd, stdin_text), wires a Container with the fakes and calls
`WorkerHost.run`. `world.runner` keeps the runner of the latest run (starts, kills).
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dependency_injector import providers
from worlds.repository import GRANT

from concorde_workers.application.runtime.cancellation import Cancellation
from concorde_workers.application.runtime.validation import RoundValidation
from concorde_workers.container import Container
from concorde_workers.domain.configuration.request import Limits, RunRequest
from concorde_workers.domain.evidence.records import RunRecord
from concorde_workers.domain.ground.errors import Refusal
from fakes.agent import Round, ScriptedBackend
from fakes.process import FakeProcessRunner, FakeStart
from fakes.space import FakeSpaces
from fakes.world import PRIMARY, TEMP_ROOT, WORKTREE, PlanWorld

TRACE_PARENT = "/work/trace"
"""The caller's trace node folder, below which each run's node workers/<run-id>/ is made."""

RUN_ID = "w-20260101T000000-abc123"
"""The run id of the first run of a world (FakeClock's start, FakeRandom's first token)."""

RUNTIME_DIR = f"{TEMP_ROOT}/concorde-abc123-0badcafe"
"""The runtime directory of the first run of a world."""

CREDENTIALS_SOURCE = "/home/dev/.claude/.credentials.json"


def ok_result(**overrides: Any) -> dict[str, Any]:
    """A valid worker result with status ok."""
    return {
        "status": "ok",
        "summary": "did it",
        "error": None,
        "proposed_deletions": [],
        "output": {},
        **overrides,
    }


def worker_error_result(
    status: str, code: str = "spec_gap", detail: str = "the spec says nothing about X"
) -> dict[str, Any]:
    """A valid worker result with status blocked or failed and its error."""
    return {
        "status": status,
        "summary": f"{status}",
        "proposed_deletions": [],
        "output": {},
        "error": {
            "code": code,
            "detail": detail,
            "evidence": [],
            "attempts": [],
            "unhandled": {"reason": "capability", "explanation": "the worker cannot decide this"},
            "options": ["write the spec"],
            "recommendation": "write the spec",
        },
    }


def write_file(world: PlanWorld, rel: str, text: str = "x = 1\n") -> Callable[[FakeStart], None]:
    """An `effects` callable: the worker writes `rel` in the worktree."""

    def effect(_: FakeStart) -> None:
        world.fs.write(posixpath.join(WORKTREE, rel), text)

    return effect


@dataclass
class HostWorld(PlanWorld):
    """A PlanWorld with the trace parent folder, the user's credentials file and backends."""

    credentials: bool = True
    temp_root: str = TEMP_ROOT
    backends: dict[str, ScriptedBackend] = field(default_factory=dict)
    runner: FakeProcessRunner = field(default_factory=FakeProcessRunner)
    records: list[RunRecord] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.fs.mkdir(TRACE_PARENT)
        self.fs.write(CREDENTIALS_SOURCE, '{"token": "secret"}\n', 0o600)
        self.fs.mkdir(self.temp_root)

    # -- running ---------------------------------------------------------------------------------

    def request(self, backend: str = "pi", **overrides: Any) -> RunRequest:
        limits = overrides.pop("limits", None)
        fields: dict[str, Any] = {
            "backend": backend,
            "worktree": WORKTREE,
            "parent": TRACE_PARENT,
            "task_type": "implement",
            "grant": GRANT,
            "instructions": "Implement the thing.",
        }
        if isinstance(limits, dict):
            fields["limits"] = Limits(**{"retry_delay_seconds": 15, **limits})
        elif limits is not None:
            fields["limits"] = limits
        fields.update(overrides)
        return RunRequest(**fields)

    def run(
        self,
        rounds: Sequence[Round] = (),
        validation: RoundValidation | None = None,
        cancel: Cancellation | None = None,
        *,
        backend: str = "pi",
        credentials: Sequence[tuple[str, str]] | None = None,
        refusal: Refusal | None = None,
        scratch: Sequence[str] = (),
        confined: bool = False,
        spaces: FakeSpaces | None = None,
        **request_overrides: Any,
    ) -> RunRecord:
        """Run the host over `rounds` with the request's fields overridden; returns the record.
        `refusal` is what the backend's prerequisite check answers (pi_runtime_missing);
        `confined` plans the production confinement around each round (the fake runner starts
        its command line as any other), `spaces` makes a confined run's writable space."""
        scripted = ScriptedBackend(
            backend,
            self.fs,
            rounds=list(rounds),  # type: ignore[arg-type]
            refusal=refusal,
            scratch=tuple(scratch),
            confined=confined,
        )
        if credentials is not None:
            scripted.credentials = list(credentials)
        elif self.credentials:
            scripted.credentials = self._default_credentials
        self.backends[backend] = scripted
        self.runner = scripted.runner()
        container = Container(
            filesystem=self.fs,
            git=self.git,
            clock=self.clock,
            random=self.random,
            host=self.host(),
            temp_root=self.temp_root,
            cwd=PRIMARY,
            processes=self.runner,
            host_pid=42,
            process_table=self.process_table,
            versions=self.versions,
        )
        container.backends.override(
            providers.Dict(pi=providers.Object(scripted), claude=providers.Object(scripted))
        )
        if spaces is not None:
            container.runtime_spaces.override(providers.Object(spaces))
        record = container.worker_host().run(
            self.request(backend, **request_overrides), validation, cancel
        )
        self.records.append(record)
        return record

    @staticmethod
    def _default_credentials(context: Any) -> list[tuple[str, str]]:
        return [
            (CREDENTIALS_SOURCE, posixpath.join(context.policy.runtime.config, ".credentials.json"))
        ]

    @property
    def backend(self) -> ScriptedBackend:
        return next(reversed(self.backends.values()))

    # -- reading what the run left ---------------------------------------------------------------

    @property
    def run_dir(self) -> str:
        return self.records[-1].run_directory if self.records else self.latest_run_dir()

    def latest_run_dir(self) -> str:
        workers = posixpath.join(TRACE_PARENT, "workers")
        names = sorted(e.name for e in self.fs.listdir(workers))
        return posixpath.join(workers, names[-1])

    def read_json(self, path: str) -> Any:
        return json.loads(self.fs.nodes[path].data.decode("utf-8"))

    def run_node(self, run_dir: str | None = None) -> dict[str, Any]:
        return dict(self.read_json(posixpath.join(run_dir or self.run_dir, "trace.json")))

    def round_node(self, n: int, run_dir: str | None = None) -> dict[str, Any]:
        return dict(
            self.read_json(posixpath.join(run_dir or self.run_dir, "rounds", str(n), "trace.json"))
        )

    def status(self, run_dir: str | None = None) -> dict[str, Any]:
        return dict(self.read_json(posixpath.join(run_dir or self.run_dir, "status.json")))

    def stderr(self, n: int, run_dir: str | None = None) -> bytes:
        return self.fs.nodes[
            posixpath.join(run_dir or self.run_dir, "rounds", str(n), "stderr.log")
        ].data

    def text(self, path: str) -> str:
        return self.fs.nodes[path].data.decode("utf-8")

    def exists(self, path: str) -> bool:
        return posixpath.normpath(path) in self.fs.nodes

    def under(self, folder: str) -> list[str]:
        """Every path of the fake filesystem below `folder`."""
        prefix = folder.rstrip("/") + "/"
        return sorted(p for p in self.fs.nodes if p.startswith(prefix))

    def runtime_dirs(self) -> list[str]:
        """The runtime directories left in the temporary root."""
        return [e.name for e in self.fs.listdir(self.temp_root) if e.name.startswith("concorde-")]

    def writes_under(self, folder: str) -> list[tuple[str, str]]:
        prefix = folder.rstrip("/") + "/"
        return [op for op in self.fs_writes() if op[1] == folder or op[1].startswith(prefix)]


__all__ = [
    "CREDENTIALS_SOURCE",
    "RUNTIME_DIR",
    "RUN_ID",
    "TRACE_PARENT",
    "HostWorld",
    "ok_result",
    "worker_error_result",
    "write_file",
]
