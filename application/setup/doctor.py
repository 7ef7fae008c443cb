"""`concorde-workers doctor` (issue 12 §1): the facts of every prerequisite, gathered through the
ports, judged by `domain.setup.doctor.diagnose`.

The programs are found exactly as a run finds them (domain/configuration/discovery.py with the
host's
installations) and their versions read by the same port the preparation asks; the model map and
workers.json are read by the configuration reader a run uses; credentials are looked for by
their names and files only (a value never enters a fact); the sandbox is tried through the
SandboxProbe port.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping

from concorde_workers.application.setup.config import ConfigurationReader
from concorde_workers.application.setup.machine_files import (
    backend_machine_file,
    copies_problem,
    read_copies,
)
from concorde_workers.application.setup.resources import read_machine_resources
from concorde_workers.application.setup.signing_key import SigningKey
from concorde_workers.domain.configuration.config import WorkerConfiguration
from concorde_workers.domain.configuration.credentials import config_directory, copied_files
from concorde_workers.domain.configuration.discovery import Installation, locate, looked_at
from concorde_workers.domain.configuration.machine import MachineFileAnswer, ModelMap, model_ids
from concorde_workers.domain.configuration.profile import (
    USERNS_SWITCHES,
    BackendProfile,
    Profiles,
)
from concorde_workers.domain.configuration.program_versions import ProgramLocation, ProgramSpec
from concorde_workers.domain.configuration.signing import KeyFact
from concorde_workers.domain.ground.errors import Refusal
from concorde_workers.domain.ground.layout import CONFIG_PATH, RuntimeLayout
from concorde_workers.domain.setup.doctor import (
    CopiesFact,
    CredentialFact,
    Diagnosis,
    Facts,
    FileFact,
    ProgramFact,
    RunUses,
    SandboxFact,
    backends_in_use,
    diagnose,
    tools_of,
)
from concorde_workers.ports.machine.filesystem import BoundedReading, FileSystemError
from concorde_workers.ports.processes.program_versions import ProgramVersions
from concorde_workers.ports.processes.resources import ResourceGroups
from concorde_workers.ports.sandboxes.sandbox_probe import SandboxProbe

_RUNTIME = "/runtime-directory"
"""A runtime directory's stand-in: what a backend's round environment sets below it is said
relative to it."""


def worktree_of(cwd: str) -> str | None:
    """The worktree `cwd` lies in when it is one in `.claude/worktrees/` (seed 000 placement:
    `<primary>/.claude/worktrees/<name>`), else None."""
    parts = posixpath.normpath(cwd).split("/")
    for i in range(len(parts) - 2):
        if parts[i] == ".claude" and parts[i + 1] == "worktrees" and parts[i + 2]:
            return "/".join(parts[: i + 3])
    return None


class Doctor:
    """Gathers the facts and judges them."""

    def __init__(
        self,
        fs: BoundedReading,
        versions: ProgramVersions,
        probe: SandboxProbe,
        config_reader: ConfigurationReader,
        environ: Mapping[str, str],
        installations: tuple[Installation, ...],
        cwd: str,
        profiles: Profiles,
        groups: ResourceGroups | None = None,
        signing_key: SigningKey | None = None,
    ) -> None:
        self._groups = groups
        self._signing_key = signing_key
        self._profiles = tuple(profiles.values())
        self._fs = fs
        self._versions = versions
        self._probe = probe
        self._config = config_reader
        self._environ = environ
        self._installations = installations
        self._cwd = cwd

    def diagnose(self, backend: str | None = None) -> Diagnosis:
        """Every prerequisite; those only a backend no run here uses needs are said, not
        judged: `backend` (doctor's --backend), else the backends the worktree's workers.json
        names (issue 19 §2), else every backend."""
        return diagnose(self.facts(backend))

    def facts(self, backend: str | None = None) -> Facts:
        primary = None
        worktree = worktree_of(self._cwd)
        if worktree is not None:
            primary = posixpath.dirname(posixpath.dirname(posixpath.dirname(worktree)))
        programs = {
            spec.program: self._program(spec, primary)
            for profile in self._profiles
            for spec in profile.programs
        }
        path = self._environ.get("PATH", "")
        tools = {
            name: next(
                (
                    f
                    for n in (helper.executables if helper else (name,))
                    if (f := self._fs.which(n, path))
                ),
                None,
            )
            for name, helper in tools_of(self._profiles).items()
        }
        workers, config = (None, None) if worktree is None else self._workers_json(worktree)
        backends, source = _backends(backend, config, worktree is not None, self._profiles)
        model_map = self._config.model_map([])
        machine_files = {
            p.name: backend_machine_file(self._fs, self._environ, p) for p in self._profiles
        }
        return Facts(
            profiles=self._profiles,
            programs=programs,
            tools=tools,
            sandbox=self._sandbox(programs, tools),
            model_map=self._model_map(model_map),
            credentials=self._credentials(machine_files),
            machine_files=machine_files,
            copies={
                p.name: self._copies(p, model_map, machine_files.get(p.name))
                for p in self._profiles
            },
            userns={path: self._switch(path) for path, _ in USERNS_SWITCHES},
            workers_json=workers,
            backends=backends,
            backends_source=source,
            resources=self._groups.enforcement() if self._groups else None,
            machine_resources=read_machine_resources(self._fs, self._environ),
            signing_key=None
            if self._signing_key is None
            else KeyFact(
                location=self._signing_key.location,
                key_id=self._signing_key.key_id,
                problem=self._signing_key.problem,
            ),
        )

    def _switch(self, path: str) -> str | None:
        """A kernel switch's text (`USERNS_SWITCHES`), None when it is not there."""
        try:
            return self._fs.read_text(path) if self._fs.is_file(path) else None
        except (FileSystemError, UnicodeDecodeError):
            return None

    def _program(self, spec: ProgramSpec, primary: str | None) -> ProgramFact:
        found = locate(spec, self._environ, self._installations, self._fs, primary)
        looked = tuple(looked_at(spec, self._environ, self._installations, primary))
        if found is None:
            return ProgramFact(spec, None, None, None, looked)
        version = self._versions.version_of(
            ProgramLocation(spec=spec, path=found.path, origin=found.origin)
        )
        return ProgramFact(spec, found.path, found.origin, version, looked)

    def _sandbox(
        self, programs: Mapping[str, ProgramFact], tools: Mapping[str, str | None]
    ) -> SandboxFact | None:
        """The sandbox package's command run by node (pi's sandbox-runtime), when a backend has
        one and every program it needs is there."""
        package = next((p.sandbox_package for p in self._profiles if p.sandbox_package), None)
        runtime = programs.get(package) if package else None
        node = tools.get("node")
        if (
            runtime is None
            or runtime.path is None
            or node is None
            or not (tools.get("bwrap") and tools.get("socat"))
        ):
            return None
        return self._probe.network(node, runtime.path)

    def _model_map(self, found: ModelMap | Refusal) -> FileFact:
        named = self._environ.get("CONCORDE_MODEL_MAP")
        origin = "$CONCORDE_MODEL_MAP" if named else "the default place (XDG configuration)"
        if isinstance(found, Refusal):
            return FileFact(found.file, origin, found.message)
        return FileFact(found.file, origin, None)

    def _copies(
        self,
        profile: BackendProfile,
        model_map: ModelMap | Refusal,
        machine_file: MachineFileAnswer | None = None,
    ) -> CopiesFact:
        """The files a run of the backend copies (`copied_files`, which its backend's
        `credential_copies` takes too), through their one reader and its profile's judge
        (application/setup/machine_files.py), and each id the model map gives the backend
        judged against them as a run's `--model` is; for a backend that copies none, what its
        run takes instead, from the same sources as the run: the configuration directory its
        round environment sets, the generated settings, the key variable its machine file's
        judge names and the files hidden at their origin."""
        spec = profile.credentials
        pairs = list(copied_files(spec, self._environ))
        copies = read_copies(self._fs, pairs, spec, self._environ)
        ids = [] if isinstance(model_map, Refusal) else model_ids(model_map, profile.name)
        uses = self._uses(profile, machine_file)
        for model in [None, *ids]:
            problem = copies_problem(profile, copies, model, self._environ)
            if problem is not None:
                return CopiesFact(tuple(p for p, _ in pairs), problem[1], uses=uses)
        return CopiesFact(tuple(p for p, _ in pairs), None, tuple(ids), uses=uses)

    def _uses(self, profile: BackendProfile, machine_file: MachineFileAnswer | None) -> RunUses:
        spec = profile.credentials
        directory = config_directory(spec, self._environ)
        round_env = profile.environment({}, RuntimeLayout(root=_RUNTIME), None)
        home = round_env.get(spec.directory_variable)
        keys: tuple[str, ...] = ()
        origin = ""
        if machine_file is not None and machine_file.problem is None:
            keys, origin = machine_file.credentials, machine_file.credentials_origin
        return RunUses(
            directory_variable=spec.directory_variable,
            run_directory=None if home is None else posixpath.relpath(home, _RUNTIME),
            settings=profile.settings_file,
            keys=keys,
            keys_origin=origin,
            hidden=tuple(posixpath.join(directory, n) for n in spec.hidden_files)
            if directory
            else (),
        )

    def _credentials(
        self, machine_files: Mapping[str, MachineFileAnswer]
    ) -> tuple[CredentialFact, ...]:
        return tuple(
            self._credential(profile, machine_files.get(profile.name)) for profile in self._profiles
        )

    def _credential(
        self, profile: BackendProfile, machine_file: MachineFileAnswer | None
    ) -> CredentialFact:
        """Which of a backend's credential sources are present: its key variables (by name),
        its login file, and the token its machine file names (Claude Code's endpoint; the
        Codex CLI's key variable, codex.json's key_env or OPENAI_API_KEY, its only one)."""
        spec = profile.credentials
        directory = config_directory(spec, self._environ)
        login = (
            posixpath.join(directory, spec.login_file) if directory and spec.login_file else None
        )
        present = spec.keys_in(self._environ)
        if login and self._fs.is_file(login):
            present.append(login)
        named: list[str] = []
        if machine_file is not None and machine_file.problem is None:
            origin = machine_file.credentials_origin or f"the token {machine_file.file} names"
            named = [f"${name} ({origin})" for name in machine_file.credentials]
            present += [
                text
                for name, text in zip(machine_file.credentials, named, strict=True)
                if self._environ.get(name)
            ]
        # A backend that takes its key only by the variable its machine file names (the Codex
        # CLI) is looked for there; the others by their own key variables and login file.
        keys = named if named and not spec.key_variables and not spec.key_suffix else []
        looked = keys or [spec.key_text]
        if spec.login_file is not None:
            looked.append(login or f"~/{spec.default_directory}/{spec.login_file}")
        return CredentialFact(profile.name, tuple(present), tuple(looked), spec.repair)

    def _workers_json(self, worktree: str) -> tuple[FileFact, WorkerConfiguration | None]:
        """The worktree's workers.json as a run reads it, committed at HEAD (the configuration
        reader's one answer; its working copy only compared, within its bound): first for the
        names it holds, then judged with each of them declared, since doctor is no caller with
        declarations of its own."""
        file = posixpath.join(worktree, CONFIG_PATH)
        origin = "this worktree"
        names = self._config.configuration(worktree, None)
        declared: dict[str, set[str]] = {}
        if not isinstance(names, Refusal):
            for operation, entries in names.operations.items():
                declared[operation] = set(entries.workers)
        found = self._config.configuration(worktree, declared)
        if isinstance(found, Refusal):
            return FileFact(file, origin, found.message), None
        # A working copy that is not what a run reads (issue 18 §4) fails the line: its repair.
        return FileFact(file, origin, found.notice), found


def _backends(
    flag: str | None,
    config: WorkerConfiguration | None,
    in_worktree: bool,
    profiles: tuple[BackendProfile, ...],
) -> tuple[tuple[str, ...], str]:
    """The backends doctor judges, and what said so."""
    if flag is not None:
        return (flag,), f"--backend {flag}"
    if config is None:
        where = (
            "this worktree's configuration cannot be read"
            if in_worktree
            else "not run in a worktree"
        )
        return tuple(p.name for p in profiles), f"{where} and no --backend: every backend"
    used = backends_in_use(
        [entry.backend for entry in config.entries()],
        config.default is not None and config.default.backend is not None,
    )
    return used, f"those {config.file} can run a worker on"
