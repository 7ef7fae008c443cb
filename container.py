"""The composition root: the dependency-injector container, the only module that names concrete
adapters, imported only by the entry points (adapters/cli/) and the tests.

`Container` declares every port as a `providers.Dependency` checked against its Protocol; the
use cases are factories over them. `production()` wires the real adapters and the host's own
facts (its environment, interpreter, home, whether it runs as root); tests build a `Container`
with fakes instead, or override single providers. The host environment comes in from the entry
point; `production()` reads os.environ itself only when it is given none — nothing below the
entry points and this module reads it.

`example_repository()` and `demo_world()` make the demo's world (adapters/demo/); they import it
when called, as it needs GitPython, the optional `demo` extra.
"""

from __future__ import annotations

import os
import pwd
import shutil
import sys
import tempfile
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from dependency_injector import containers, providers

from concorde_workers.adapters import claude, codex, pi
from concorde_workers.adapters.machine.attestation import DsseSealer
from concorde_workers.adapters.machine.filesystem import LocalFileSystem
from concorde_workers.adapters.machine.system import SecretsRandom, SystemClock
from concorde_workers.adapters.processes.cgroups import CgroupGroups
from concorde_workers.adapters.processes.liveness import ProcTable
from concorde_workers.adapters.processes.process import SubprocessRunner
from concorde_workers.adapters.processes.program_versions import InstalledProgramVersions
from concorde_workers.adapters.repository.git import GitCliReader
from concorde_workers.adapters.sandboxes.checks import SandboxedCheckRunner
from concorde_workers.adapters.sandboxes.sandbox_probe import SrtSandboxProbe
from concorde_workers.adapters.sandboxes.space import KeeperSpaces, SpacedFileSystem
from concorde_workers.application.checks.checks import ChecksValidation
from concorde_workers.application.preparation.planner import Planner
from concorde_workers.application.preparation.preparation import Preparer
from concorde_workers.application.preparation.prepared import HostFacts
from concorde_workers.application.preparation.requests import RequestBuilder
from concorde_workers.application.runtime.cancellation import Cancellation
from concorde_workers.application.runtime.validation import RoundValidation as RoundValidation
from concorde_workers.application.runtime.validation import ValidationInput as ValidationInput
from concorde_workers.application.runtime.validation import ValidationOutcome as ValidationOutcome
from concorde_workers.application.setup.config import ConfigurationReader, committed_through
from concorde_workers.application.setup.resources import read_machine_resources
from concorde_workers.application.setup.signing_key import SigningKey
from concorde_workers.domain.configuration.credentials import credential_origins
from concorde_workers.domain.configuration.discovery import installations
from concorde_workers.domain.configuration.profile import example_ids_of
from concorde_workers.domain.ground.errors import Refusal
from concorde_workers.domain.isolation.check_layer import LayerTools
from concorde_workers.domain.isolation.control_groups import (
    CGROUP_ROOT,
    MAX_MOUNTINFO_BYTES,
    cgroup_mounts,
)
from concorde_workers.ports.agents.agent import BackendPorts, BackendProfile
from concorde_workers.ports.machine.clock import Clock
from concorde_workers.ports.machine.filesystem import FileSystem
from concorde_workers.ports.machine.random import Random
from concorde_workers.ports.processes.liveness import ProcessTable
from concorde_workers.ports.processes.process import ProcessRunner
from concorde_workers.ports.processes.program_versions import ProgramVersions
from concorde_workers.ports.processes.resources import ResourceGroups
from concorde_workers.ports.repository.git import GitReader
from concorde_workers.ports.sandboxes.checks import CheckRunner
from concorde_workers.ports.sandboxes.sandbox_probe import SandboxProbe
from concorde_workers.ports.sandboxes.space import RuntimeSpaces

if TYPE_CHECKING:
    from concorde_workers.adapters.demo.example_repository import DemoWorld, Example
    from concorde_workers.adapters.repository.git_replay import GitPatchReplay
    from concorde_workers.application.evidence.attestation import Attestor
    from concorde_workers.application.evidence.verify import Verifier
    from concorde_workers.application.run.host import RequestRefused, WorkerHost
    from concorde_workers.application.setup.agent_install import AgentInstaller
    from concorde_workers.application.setup.doctor import Doctor
    from concorde_workers.application.setup.starter import Starter
    from concorde_workers.application.sweep.sweep import Sweeper
    from concorde_workers.domain.evidence.records import RunRecord


__all__ = [
    "PACKAGE_ROOT",
    "Cancellation",
    "Container",
    "RequestRefused",
    "RoundValidation",
    "ValidationInput",
    "ValidationOutcome",
    "WorkerHost",
    "check_runner",
    "checkout_root",
    "demo_world",
    "example_repository",
    "host_facts",
    "interpreter_roots",
    "layer_tools",
    "production",
    "read_run",
    "runtime_parent",
    "shipped_pins",
]

# --- the registry of backends (issue 22 §1, 34 §4): each backend package exports one registration,
# from which the profile list and `Container.backends` are built; nothing else names a backend.

REGISTRATIONS = (claude.REGISTRATION, pi.REGISTRATION, codex.REGISTRATION)
"""Every backend, in the order they are listed to a person (doctor, `--backend`)."""

PROFILES: Mapping[str, BackendProfile] = {r.profile.name: r.profile for r in REGISTRATIONS}
"""The backends' profiles, by the name the trace keeps."""


def _factories(ports: providers.Provider[BackendPorts]) -> dict[str, providers.Provider[Any]]:
    """Each registered backend's factory, by its name, over the host's ports."""
    return {r.profile.name: providers.Factory(r.make, ports) for r in REGISTRATIONS}


def replay_of(git: GitReader) -> GitPatchReplay | None:
    """The patches replayed by the host's own Git (a fake world's Git replays nothing)."""
    from concorde_workers.adapters.repository.git_replay import GitPatchReplay

    return GitPatchReplay(git) if isinstance(git, GitCliReader) else None


# --- the use cases a command may not need, imported when first made (issue 32 §2): `plan` loads
# no run's host, doctor, sweep, verification, project starter or installer, and no record reader.


def _worker_host(**ports: Any) -> WorkerHost:
    from concorde_workers.application.run.host import WorkerHost

    return WorkerHost(**ports)


def _attestor(**ports: Any) -> Attestor:
    from concorde_workers.application.evidence.attestation import Attestor

    return Attestor(**ports)


def _verifier(**ports: Any) -> Verifier:
    from concorde_workers.application.evidence.verify import Verifier

    return Verifier(**ports)


def _sweeper(**ports: Any) -> Sweeper:
    from concorde_workers.application.sweep.sweep import Sweeper

    return Sweeper(**ports)


def _agent_installer(**ports: Any) -> AgentInstaller:
    from concorde_workers.application.setup.agent_install import AgentInstaller

    return AgentInstaller(**ports)


def _starter(**ports: Any) -> Starter:
    from concorde_workers.application.setup.starter import Starter

    return Starter(**ports)


def _doctor(**ports: Any) -> Doctor:
    from concorde_workers.application.setup.doctor import Doctor

    return Doctor(**ports)


_LAZY_FACE = {
    "WorkerHost": "concorde_workers.application.run.host",
    "RequestRefused": "concorde_workers.application.run.host",
}
"""The face's names this module hands out without importing them at its own import."""


def __getattr__(name: str) -> Any:
    if name not in _LAZY_FACE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_LAZY_FACE[name]), name)


class Container(containers.DeclarativeContainer):
    """Ports in, use cases out."""

    filesystem = providers.Dependency(instance_of=FileSystem)
    git = providers.Dependency(instance_of=GitReader)
    clock = providers.Dependency(instance_of=Clock)
    random = providers.Dependency(instance_of=Random)
    host = providers.Dependency(instance_of=HostFacts)
    temp_root = providers.Dependency(instance_of=str)
    cwd = providers.Dependency(instance_of=str)
    versions = providers.Dependency(instance_of=ProgramVersions)

    environ = providers.Callable(lambda host: host.environ, host)
    installations = providers.Callable(lambda host: host.installations, host)
    profiles = providers.Object(PROFILES)
    config_reader = providers.Factory(
        ConfigurationReader,
        fs=filesystem,
        environ=environ,
        profiles=profiles,
        versions=versions,
        installations=installations,
        committed=providers.Callable(committed_through, git),
    )
    linux = providers.Callable(lambda host: host.linux, host)
    backend_ports = providers.Factory(
        BackendPorts, fs=filesystem, environ=environ, linux=linux, installations=installations
    )
    backends = providers.Dict(_factories(backend_ports))
    preparer = providers.Factory(
        Preparer,
        git=git,
        fs=filesystem,
        host=host,
        backends=backends,
        versions=versions,
        profiles=profiles,
    )
    sealer = providers.Singleton(DsseSealer)
    """DSSE envelopes and Ed25519 signatures (securesystemslib; issue 30 §4): no I/O of its own,
    so every world takes the real one."""
    signing_key = providers.Factory(SigningKey.load, fs=filesystem, environ=environ, sealer=sealer)
    """The machine's signing key ($CONCORDE_SIGNING_KEY, else beside the model map), read once."""
    planner = providers.Factory(
        Planner,
        preparer=preparer,
        config_reader=config_reader,
        clock=clock,
        random=random,
        temp_root=temp_root,
        fs=filesystem,
        signing_key=signing_key,
    )
    requests = providers.Factory(RequestBuilder, fs=filesystem, cwd=cwd)
    processes = providers.Dependency(instance_of=ProcessRunner)
    host_pid = providers.Dependency(instance_of=int)
    process_table = providers.Dependency(instance_of=ProcessTable)
    resource_groups: providers.Provider[ResourceGroups | None] = providers.Object(None)
    """Each round's control group (issue 20): adapters/processes/cgroups.py in production; None (no
    groups, said as limits not enforced) where a world gives none."""
    runtime_spaces: providers.Provider[RuntimeSpaces | None] = providers.Object(None)
    """A confined run's writable space (issue 30 §2): adapters/sandboxes/space.py in production;
    None where a world gives none (a confined run is then refused, never run unbounded)."""
    machine_resources = providers.Factory(read_machine_resources, fs=filesystem, environ=environ)
    """The machine's resources.json (issue 20): its default limits and what a machine without
    control groups does with a run."""
    attestor = providers.Factory(_attestor, fs=filesystem, sealer=sealer, key=signing_key)
    verifier = providers.Factory(
        _verifier,
        fs=filesystem,
        sealer=sealer,
        git=git,
        replay=providers.Callable(replay_of, git),
    )
    """`verify RUN_DIR`: the trace checked; with the host's real Git, the patches replayed."""
    worker_host = providers.Factory(
        _worker_host,
        git=git,
        fs=filesystem,
        clock=clock,
        random=random,
        processes=processes,
        preparer=preparer,
        temp_root=temp_root,
        host_pid=host_pid,
        process_table=process_table,
        profiles=profiles,
        groups=resource_groups,
        machine=machine_resources,
        attestor=attestor,
        spaces=runtime_spaces,
    )
    check_runner = providers.Dependency(instance_of=CheckRunner)
    checks_validation = providers.Factory(ChecksValidation, runner=check_runner, fs=filesystem)
    """`container.checks_validation(checks=..., place=...)`: the checks as a round validation."""
    sweeper = providers.Factory(
        _sweeper,
        fs=filesystem,
        table=process_table,
        clock=clock,
        runtime_parent=temp_root,
        profiles=profiles,
        groups=resource_groups,
    )
    agent_installer = providers.Factory(
        _agent_installer, fs=filesystem, processes=processes, environ=environ
    )
    starter = providers.Factory(
        _starter,
        fs=filesystem,
        git=git,
        processes=processes,
        environ=environ,
        installations=installations,
        cwd=cwd,
        profiles=profiles,
        config_reader=config_reader,
    )
    sandbox_probe = providers.Dependency(instance_of=SandboxProbe)
    doctor = providers.Factory(
        _doctor,
        fs=filesystem,
        versions=versions,
        probe=sandbox_probe,
        config_reader=config_reader,
        environ=environ,
        installations=installations,
        cwd=cwd,
        profiles=profiles,
        groups=resource_groups,
        signing_key=signing_key,
    )


def host_facts(environ: Mapping[str, str]) -> HostFacts:
    """The host's own facts, from the host environment the entry point read."""
    try:
        home = pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        home = environ.get("HOME", "/")
    return HostFacts(
        environ=dict(environ),
        interpreter=sys.executable,
        user_home=home,
        as_root=os.getuid() == 0,
        linux=sys.platform.startswith("linux"),
        interpreter_roots=interpreter_roots(),
        installations=installations(checkout_root(), environ),
        control_groups=control_group_mounts(),
    )


def control_group_mounts(mountinfo: str = "/proc/self/mountinfo") -> tuple[str, ...]:
    """Where this host's control group filesystems are mounted; a mount table that cannot be
    read proves nothing, so the usual place is named then, when it is there."""
    try:
        with open(mountinfo, encoding="utf-8", errors="surrogateescape") as table:
            text = table.read(MAX_MOUNTINFO_BYTES)
    except OSError:
        return (CGROUP_ROOT,) if os.path.isdir(CGROUP_ROOT) else ()
    return cgroup_mounts(text)


PACKAGE_ROOT = os.path.dirname(os.path.abspath(__file__))
"""This package's folder: in a checkout (an editable install) the repository itself."""


def checkout_root() -> str | None:
    """The checkout this copy of concorde-workers runs from, None for an installed package: the
    package's folder when it holds scripts/setup and package-lock.json (a wheel ships the
    lockfile but no scripts)."""
    marks = ("scripts/setup", "package-lock.json")
    if all(os.path.isfile(os.path.join(PACKAGE_ROOT, mark)) for mark in marks):
        return PACKAGE_ROOT
    return None


def interpreter_roots() -> tuple[str, ...]:
    """Where this interpreter runs from: the hooks run it inside the confinement, which must
    keep its real installation visible (a virtual environment's python links into it)."""
    found = [sys.executable, sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    return tuple(dict.fromkeys(p for p in found if p))


def runtime_parent() -> str:
    """Where runtime directories go: /tmp when it is writable (short socket paths), else the
    system temporary directory, as inside a check boundary (seed 000)."""
    return "/tmp" if os.access("/tmp", os.W_OK | os.X_OK) else tempfile.gettempdir()


def production(environ: Mapping[str, str] | None = None) -> Container:
    """The production wiring with the real adapters."""
    env = dict(os.environ if environ is None else environ)
    # The host's files, and the runs' writable spaces reached where they are
    # (adapters/sandboxes/space.py)
    filesystem, processes, table = (
        SpacedFileSystem(LocalFileSystem()),
        SubprocessRunner(),
        ProcTable(),
    )
    facts = host_facts(env)
    groups = CgroupGroups()
    return Container(
        filesystem=filesystem,
        git=GitCliReader(environ=env),
        clock=SystemClock(),
        random=SecretsRandom(),
        host=facts,
        temp_root=runtime_parent(),
        cwd=os.getcwd(),
        processes=processes,
        versions=InstalledProgramVersions(filesystem, processes, env),
        host_pid=os.getpid(),
        process_table=table,
        check_runner=check_runner(processes, filesystem, facts, table, groups=groups),
        sandbox_probe=SrtSandboxProbe(processes, env),
        resource_groups=groups,
        runtime_spaces=KeeperSpaces(processes),
    )


def check_runner(
    processes: ProcessRunner,
    filesystem: FileSystem,
    facts: HostFacts,
    table: ProcessTable,
    copies_root: str | None = None,
    groups: ResourceGroups | None = None,
) -> SandboxedCheckRunner:
    """The checks' runner: copies in the runtime parent (`copies_root` when given), each with
    this host's owner record from `table` (the sweep's), every credential origin and home of
    the host hidden from the check (besides the temporary roots every check's sandbox hides)."""
    origins = credential_origins(
        facts.environ, facts.user_home, [profile.credentials for profile in PROFILES.values()]
    )
    hidden = (*origins.homes, *origins.directories, *origins.files)
    return SandboxedCheckRunner(
        processes,
        filesystem,
        shutil.which("bwrap"),
        facts.environ,
        hidden,
        copies_root or runtime_parent(),
        table,
        layer_tools(),
        groups,
        facts.control_groups,
    )


def layer_tools() -> LayerTools | None:
    """The programs a check's copy-on-write layer needs (domain/isolation/check_layer.py), on the
    host's
    PATH; None when one is missing (the checks then run over copies, and say so)."""
    found = {name: shutil.which(name) for name in ("unshare", "mount", "mkdir")}
    if any(path is None for path in found.values()):
        return None
    return LayerTools(
        unshare=found["unshare"] or "", mount=found["mount"] or "", mkdir=found["mkdir"] or ""
    )


def shipped_pins() -> tuple[str, str]:
    """The package.json and package-lock.json this package ships (package data; in a checkout,
    the repository's own): the pins `install-agents` installs."""
    from importlib import resources

    root = resources.files("concorde_workers")
    return (
        (root / "package.json").read_text(encoding="utf-8"),
        (root / "package-lock.json").read_text(encoding="utf-8"),
    )


def example_repository() -> tuple[Example, dict[str, str]]:
    """A throwaway example repository for `plan --example`, and the environment additions that
    point the planner at it: its model map and its own pi configuration (the agent programs are
    found as for any run)."""
    from concorde_workers.adapters.demo.example_repository import create_example

    example = create_example(example_ids_of(PROFILES))
    return example, {"CONCORDE_MODEL_MAP": example.model_map, "PI_CODING_AGENT_DIR": example.pi_dir}


def demo_world(parent: str | None = None, backend: str = pi.REGISTRATION.profile.name) -> DemoWorld:
    """`concorde-workers demo`'s throwaway repository with a `.claude/worktrees/demo` worktree,
    its scripted model server on 127.0.0.1 and the configuration of `backend` (DEMO_BACKENDS)
    that reaches it: pi's configuration directory, or the Codex CLI's codex.json."""
    if backend == codex.REGISTRATION.profile.name:
        from concorde_workers.adapters.demo.codex_demo import start_codex_demo

        return start_codex_demo(backend, parent)
    from concorde_workers.adapters.demo.example_repository import start_demo

    return start_demo(parent)


# --- the public face (concorde_workers/__init__.py takes the use cases a caller needs from
# here, the one place allowed to hand them out, and this reader) --------------------------------


def read_run(run_dir: str) -> RunRecord | Refusal:
    """The record of the run in `run_dir`, rebuilt from its trace on this machine's disk."""
    from concorde_workers.application.tracing.reader import read_record

    return read_record(LocalFileSystem(), run_dir)
