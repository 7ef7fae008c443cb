"""A preparation's values: the host's facts it judges with (`HostFacts`), the run ready to launch
(`Prepared`: the frozen grant and everything generated from it) and what a preparation settled
before it stopped (`Progress`, shown beside a refusal). application/preparation/preparation.py
makes them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from concorde_workers.domain.boundary.grant import Grant
from concorde_workers.domain.boundary.policy import Policy
from concorde_workers.domain.configuration.discovery import Installation
from concorde_workers.domain.configuration.program_versions import ProgramVersion
from concorde_workers.domain.gitview.git_status import GitRepository
from concorde_workers.domain.gitview.placement import (
    AdminPath,
    Placement,
)
from concorde_workers.domain.ground.text import digest_text
from concorde_workers.domain.isolation.confinement import Confinement
from concorde_workers.domain.isolation.launch import LaunchCommand
from concorde_workers.ports.agents.agent import AgentBackend, BackendContext, Generated, RoundKind

__all__ = ["HostFacts", "Prepared", "Progress"]


@dataclass(frozen=True)
class HostFacts:
    """What the host knows of itself: its environment, its own interpreter (which runs the write
    hook), whether it runs as root, and the operating system."""

    environ: Mapping[str, str]
    interpreter: str
    user_home: str
    as_root: bool
    linux: bool = True
    interpreter_roots: tuple[str, ...] = ()
    """Where the host interpreter really runs from (its resolved executable, sys.prefix,
    sys.base_prefix): the confinement keeps them visible, or the hooks could not start."""
    installations: tuple[Installation, ...] = ()
    """The node_modules this copy pinned its agent programs in, searched after the variables
    and PATH (domain/configuration/discovery.py)."""
    control_groups: tuple[str, ...] = ()
    """Where the host's control group filesystems are mounted (its /proc/self/mountinfo): a
    round and a check see none of them whole (domain/isolation/control_groups.py)."""


@dataclass(frozen=True)
class Prepared:
    """A run ready to launch: the frozen grant and everything generated from it."""

    run_id: str
    runtime_dir: str
    backend: AgentBackend
    context: BackendContext
    grant: Grant
    placement: Placement
    admin_paths: tuple[AdminPath, ...]
    generated: Generated
    command: LaunchCommand
    environment: dict[str, str]
    repository: GitRepository
    git_entries: tuple[str, ...] = ()
    """Every `.git` entry the placement walk found, relative to the worktree (`.git` itself
    for the worktree's own): the audit measures each, and walks the repository each one opens
    below the top level as Git never does."""
    confinement: Confinement | None = None
    programs: tuple[ProgramVersion, ...] = ()
    """The agent programs the backend runs, with their versions
    (ports/processes/program_versions.py)."""
    key_variables: tuple[str, ...] = ()
    """The credential variables the backend's machine file names (the Codex CLI's key_env, or
    OPENAI_API_KEY without codex.json; Claude Code's endpoint token): by name only, as doctor
    says them."""

    def round_command(
        self,
        kind: RoundKind,
        session: str | None,
        own_groups: Sequence[str] = (),
        join: Sequence[str] = (),
    ) -> LaunchCommand:
        """A round's command line, inside the confinement when the backend is confined, which
        shows the round its own control group folders (`own_groups`) alone, behind `join`
        (it enters the run's writable space)."""
        command = self.backend.command(self.context, kind, session)
        if self.confinement is None:
            return command
        return self.confinement.wrap(command, own_groups, join)

    @property
    def policy(self) -> Policy:
        return self.context.policy

    @property
    def brief(self) -> str:
        return self.context.brief

    @property
    def result_schema(self) -> str:
        return self.context.result_schema

    @property
    def control_files(self) -> dict[str, str]:
        """The backend's generated files, and the confinement's own: the empty file it masks
        hidden and names-only files with, and the waiter that reports the agent's exit status."""
        if self.confinement is None:
            return self.generated.files
        return {**self.generated.files, **self.confinement.control_files()}

    @property
    def settings_digest(self) -> str | None:
        return self.generated.settings_digest

    @property
    def program(self) -> str:
        return self.generated.program

    @property
    def program_found(self) -> bool:
        return self.generated.program_found

    @property
    def tools(self) -> tuple[str, ...]:
        return self.command.tools

    @property
    def grant_digest(self) -> str:
        return self.grant.digest()

    @property
    def brief_digest(self) -> str:
        return digest_text(self.brief)


@dataclass
class Progress:
    """What the preparation settled before it stopped: shown beside a refusal."""

    grant: Grant | None = None
    placement: Placement | None = None
    admin_paths: tuple[AdminPath, ...] = ()
    policy: Policy | None = None
    tools: tuple[str, ...] = ()  # the backend's tool set for the grant, with the policy
    programs: tuple[ProgramVersion, ...] = ()
    notes: list[str] = field(default_factory=list)
