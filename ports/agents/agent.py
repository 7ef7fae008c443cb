"""The AgentBackend port: one agent program (Claude Code, pi, or a test program) behind one
interface.

The host owns the run: its directories, rounds, audit, records and cleanup. A backend owns what
differs per program: the control files generated from the shared policy, the credential copies,
each round's command line, the reading of the program's output stream, and where the session's
transcript lies.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.boundary.policy import Policy
from concorde_workers.domain.configuration.discovery import Installation
from concorde_workers.domain.configuration.profile import BackendProfile
from concorde_workers.domain.configuration.program_versions import ProgramLocation
from concorde_workers.domain.configuration.request import RunRequest
from concorde_workers.domain.ground.errors import Refusal
from concorde_workers.domain.isolation.launch import LaunchCommand
from concorde_workers.domain.run.agent_report import RoundReport
from concorde_workers.domain.run.stdout import IgnoredLines, OutputObject
from concorde_workers.ports.machine.filesystem import TreeReading

if TYPE_CHECKING:
    from concorde_workers.domain.evidence.records import LastAction

__all__ = [
    "AgentBackend",
    "BackendContext",
    "BackendPorts",
    "BackendProfile",
    "BackendRegistration",
    "Generated",
    "LimitedReader",
    "RoundKind",
    "StreamReader",
]


class RoundKind(StrEnum):
    """What a round's prompt is (contract.workers.worker-round-trace `prompt`)."""

    INITIAL = "initial"
    REPAIR = "repair"
    RETRY = "retry"


class BackendContext(BaseModel):
    """What a backend generates from: the request, the run's identity, the one frozen policy,
    the brief and the worker result schema text, and the host's own facts."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    request: RunRequest
    run_id: str
    policy: Policy
    brief: str
    result_schema: str
    environ: Mapping[str, str]
    interpreter: str
    as_root: bool
    machine: Mapping[str, str] = {}
    """What the backend's own machine file configures for its generated settings, as its
    profile's judge read it (`MachineFileAnswer.settings`: Codex's endpoint and prices); never a
    secret."""


class CompiledCache(BaseModel):
    """What the agent program compiles at every round that the host can compile once a run
    instead (pi's permission extension, issue 32 §4): `argv` is run by the host once, in the
    background from the end of round 1's program (application/rounds/compiled_cache.py), with
    nothing of the host's environment; it writes `folder`, in control/ (the host's: no round
    writes it).
    Before every later round, after `round_scratch` is cleared, the host copies the regular
    files of `folder` into `cache`. A command that fails leaves the rounds as they were: the
    program compiles for itself."""

    model_config = ConfigDict(frozen=True)

    argv: tuple[str, ...]
    folder: str
    cache: str
    timeout_seconds: float = 120.0


class Generated(BaseModel):
    """The files a backend generates before round 1 (absolute path -> text), the digest of the
    worker settings or permission extension the run record keeps, the tool set, and the agent
    program its rounds run with whether it was found (the planner says so; a round whose program
    is missing ends without starting it)."""

    model_config = ConfigDict(frozen=True)

    files: dict[str, str]
    settings_digest: str | None
    tools: tuple[str, ...]
    program: str
    program_found: bool
    shown_settings: dict[str, Any] = {}
    """What of the generated settings beyond the policy's lists `plan` shows (Claude Code: the
    sandbox's network, credentials and switches, the settings' env)."""


@runtime_checkable
class StreamReader(Protocol):
    """Reads one round's standard output as it arrives."""

    def watch(self, sink: OutputObject) -> None:
        """From now on, give `sink` each line `feed` takes that is a JSON object, as parsed here
        (issue 34 §5: the events read the tool calls from the reader's parse, not a second)."""
        ...

    def feed(self, line: str) -> LastAction | None:
        """Take one stdout line; return the worker's latest tool call when the line shows one."""
        ...

    @property
    def ignored(self) -> IgnoredLines:
        """The lines the reader could not use: all counted, only the last few kept (what a
        reader keeps must not grow with what the program prints)."""
        ...

    def finish(self, exit_status: int | None, timed_out: bool, stderr_tail: str) -> RoundReport:
        """The round as the program reported it, once its output ended."""
        ...


@runtime_checkable
class LimitedReader(Protocol):
    """A reader that judges the run's turn and budget limits itself, for a program that has no
    such limit of its own (the Codex CLI): the host ends the round once it says one is passed."""

    @property
    def limit_reached(self) -> str | None:
        """The limit passed, with its value and maximum; None while within them."""
        ...


@runtime_checkable
class AgentBackend(Protocol):
    """One agent program."""

    @property
    def name(self) -> str:
        """`claude` or `pi` (the trace's backend key), or a test backend's name."""
        ...

    @property
    def profile(self) -> BackendProfile:
        """What is this program's, as values (`BackendProfile`)."""
        ...

    def check(self, primary: str) -> Refusal | None:
        """The backend's prerequisites, checked before anything is generated (on pi:
        pi_runtime_missing naming every missing program); None when all are there."""
        ...

    def programs(self, environ: Mapping[str, str], primary: str) -> Sequence[ProgramLocation]:
        """The agent programs this backend runs whose versions the generated settings rely on
        (domain/configuration/program_versions.py), where they were found; one that was not found is
        left
        out (its absence is refused where it always was); none for a test backend."""
        ...

    def generate(self, context: BackendContext) -> Generated:
        """The run's control files, settings digest, tool set and program, from the one frozen
        policy."""
        ...

    def credential_copies(self, context: BackendContext) -> Sequence[tuple[str, str]]:
        """(the user's file, its copy in the runtime directory) for every credential file the
        program needs; the host copies the ones that exist before round 1 and removes every copy
        first when the run ends."""
        ...

    def confinement_needs(self, context: BackendContext) -> Sequence[str] | None:
        """What the agent program itself runs from, besides the host interpreter and the
        sandbox programs: its program and what it loads (node, sandbox-runtime). The host runs
        the whole agent process tree confined (domain/isolation/confinement.py) and keeps these
        visible
        read-only wherever they lie; None when this backend's rounds run unconfined (the test
        backends' programs)."""
        ...

    def round_scratch(self, context: BackendContext) -> Sequence[str]:
        """Paths in the runtime directory the host removes before every round: what a worker
        could have planted there for the agent program's own process, which runs outside the
        sandbox (pi's compiled-extension cache and project settings, notes/pi.md §9)."""
        ...

    def compiled_cache(self, context: BackendContext) -> CompiledCache | None:
        """What the host compiles once a run for the program's own cache (`CompiledCache`);
        None: nothing."""
        ...

    def command(
        self, context: BackendContext, kind: RoundKind, session: str | None
    ) -> LaunchCommand:
        """The round's command line; `session` is the latest session for resume and retry rounds
        (None: start with the brief)."""
        ...

    def environment(self, context: BackendContext) -> dict[str, str]:
        """The round's whole environment (nothing else is inherited)."""
        ...

    def reader(self, context: BackendContext) -> StreamReader:
        """A fresh reader for one round's output."""
        ...

    def transcript(self, context: BackendContext, session: str | None) -> str | None:
        """Where the session's transcript lies in the runtime directory, None when unknown."""
        ...


@dataclass(frozen=True)
class BackendPorts:
    """What the composition root gives every backend it makes: the file system, the host's
    environment, whether the host is Linux, and where the agent programs are installed."""

    fs: TreeReading
    environ: dict[str, str]
    linux: bool
    installations: Sequence[Installation]


@dataclass(frozen=True)
class BackendRegistration:
    """A backend package's one registration (issue 34 §4): its profile, from which the
    composition root lists the backends (doctor, `--backend`, the configuration reader), and how
    a backend is made from the host's ports."""

    profile: BackendProfile
    make: Callable[[BackendPorts], AgentBackend]
