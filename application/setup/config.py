"""The configuration reader: settles and checks workers before any run exists.

Seed 000 "Refusals before a run"; seed 002 "Worker configuration" and "Model map". It reads the
worktree's `.concorde/workers.json` and the machine's model map through a file-system port and
takes the host environment as a mapping (never `os.environ`). Each file is strict JSON
(`json_text`) checked against its contract's schema by jsonschema, the one authority on the
files' shape (`contract_problems` words the first problem); the domain
(`domain/configuration/config.py`)
decides the rest. Every outcome is a `ResolvedWorker` or a `Refusal` naming the file it concerns.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

from concorde_workers.application.setup.contract_problems import first_problem
from concorde_workers.application.setup.json_text import decode_json
from concorde_workers.domain.configuration import config as domain
from concorde_workers.domain.configuration import machine
from concorde_workers.domain.configuration.config import (
    ResolvedWorker,
    WorkerChoice,
    WorkerConfiguration,
)
from concorde_workers.domain.configuration.discovery import Found, Installation, locate
from concorde_workers.domain.configuration.machine import ModelMap
from concorde_workers.domain.configuration.profile import Profiles, levels_of, placeholders_of
from concorde_workers.domain.configuration.program_versions import ProgramLocation, version_problem
from concorde_workers.domain.configuration.worker_choice import (
    choose,
    runtime_paths,
    unnamed_notice,
)
from concorde_workers.domain.gitview.committed_config import (
    MAX_WORKING_COPY_BYTES,
    NOT_OPENED,
    committed_source,
)
from concorde_workers.domain.gitview.git_status import GitRepository
from concorde_workers.domain.ground.backends import contract_for
from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.ground.errors import Reason, Refusal
from concorde_workers.domain.ground.layout import CONFIG_PATH
from concorde_workers.domain.ground.paths import EntryKind
from concorde_workers.ports.machine.filesystem import FileStat, FileSystemError
from concorde_workers.ports.processes.program_versions import ProgramVersions
from concorde_workers.ports.repository.git import GitCommandFailed, GitReader

__all__ = ["CommittedFile", "ConfigFiles", "ConfigurationReader", "committed_through"]

CommittedFile = Callable[[str], bytes | None]
"""A worktree -> the bytes of its `.concorde/workers.json` committed at HEAD (None: not
committed); raises `GitCommandFailed` when Git cannot say."""


def committed_through(git: GitReader) -> CommittedFile:
    """The committed configuration of a worktree, read with the host's Git table (issue 18 §4):
    the worktree's own Git directories, then the blob at HEAD."""

    def read(worktree: str) -> bytes | None:
        git_dir, common_dir = git.git_dirs(worktree)
        return git.committed_config(
            GitRepository(worktree=worktree, git_dir=git_dir, common_dir=common_dir)
        )

    return read


_DEFAULT_MAP_TEXT = "concorde/models.json of your XDG configuration directory"
MAX_MAP_BYTES = 1024 * 1024
"""The most of a model map read (a map of a thousand models is some tens of KiB)."""
CONFIGURATION_CONTRACT = "contract.workers.worker-configuration"
MODEL_MAP_CONTRACT = "contract.workers.model-map"


class ConfigFiles(Protocol):
    """What the reader needs of the FileSystem port (`ports.machine.filesystem.FileSystem` fits)."""

    def read_text(self, path: str) -> str:
        """UTF-8 text; raises `FileSystemError` (or `OSError` / `ValueError`) when it cannot."""
        ...

    def exists(self, path: str) -> bool: ...

    def which(self, program: str, search_path: str) -> str | None: ...

    def is_file(self, path: str) -> bool: ...

    def stat(self, path: str) -> FileStat: ...

    def realpath(self, path: str) -> str: ...


@dataclass(frozen=True)
class _Unreadable:
    why: str


class ConfigurationReader:
    """Resolves workers from a worktree's worker configuration and the machine's model map.

    `environ` is the host environment: HOME, XDG_CONFIG_HOME, CONCORDE_MODEL_MAP, PATH and each
    backend's program variable are read from it. `profiles` are the registered backends (their
    reasoning levels, programs and words). With `versions`, the worker's program is also refused
    when it is older than the policy relies on (domain/configuration/program_versions.py).
    """

    def __init__(
        self,
        fs: ConfigFiles,
        environ: Mapping[str, str],
        versions: ProgramVersions | None = None,
        installations: Sequence[Installation] = (),
        committed: CommittedFile | None = None,
        *,
        profiles: Profiles,
    ) -> None:
        # `committed`: the configuration is the file committed at HEAD (production, issue 18
        # §4); without it (tests over a fake file system) the file as it is on disk.
        self._committed = committed
        self._profiles = profiles
        self._levels = levels_of(profiles)
        self.placeholders = placeholders_of(profiles)
        """Each backend's placeholder in a model map's example (`machine.Placeholders`)."""
        self._fs = fs
        self._environ = environ
        self._versions = versions
        self._installations = tuple(installations)

    def resolve_worker(
        self, worktree: str, operation: str, worker: str, declared: Mapping[str, set[str]]
    ) -> ResolvedWorker | Refusal:
        """One worker of `operation`, which `declared` (Operation -> worker ids) must hold."""
        result = self.check_operation(worktree, operation, [worker], declared)
        return result[0] if isinstance(result, list) else result

    def check_operation(
        self,
        worktree: str,
        operation: str,
        workers: Sequence[str],
        declared: Mapping[str, set[str]],
    ) -> list[ResolvedWorker] | Refusal:
        """Every worker of one Operation at once: the first refusal of the configuration, else
        one model_unmapped naming every model and backend pair the map lacks, else the first
        backend_missing; otherwise the workers in the order asked."""
        _require_declared(operation, workers, declared)
        worktree = _absolute(worktree)
        config = self.configuration(worktree, declared)
        if isinstance(config, Refusal):
            return config
        choices: list[WorkerChoice] = []
        for worker in workers:
            choice = choose(config, operation, worker, self._levels)
            if isinstance(choice, Refusal):
                return choice
            choices.append(choice)
        runtime = runtime_paths(config, worktree, self._fs.exists)
        if isinstance(runtime, Refusal) or not choices:
            return runtime if isinstance(runtime, Refusal) else []
        return self._complete(config, choices, runtime)

    def check_all_workers(
        self, worktree: str, operation: str, declared: Mapping[str, set[str]]
    ) -> list[ResolvedWorker] | Refusal:
        """Every worker of `operation` that the file names under its workers or the caller
        declares, checked at once as `check_operation` checks them (`plan --operation NAME
        --all-workers`): the file's other names are still checked against `declared`."""
        config = self.configuration(worktree, None)
        if isinstance(config, Refusal):
            return config
        entries = config.operations.get(operation)
        workers = sorted({*(entries.workers if entries else ()), *declared.get(operation, ())})
        if not workers:
            return Refusal(
                code=Code.REQUEST_INVALID,
                reason=Reason.INPUT,
                file=config.file,
                message=f"{config.file} names no worker of Operation {operation} and none is "
                f"declared: give --declare {operation}:<worker id> for each worker the "
                "Operation may launch",
            )
        names = {op: set(ids) for op, ids in declared.items()}
        names.setdefault(operation, set()).update(workers)
        return self.check_operation(worktree, operation, workers, names)

    def configuration(
        self, worktree: str, declared: Mapping[str, set[str]] | None
    ) -> WorkerConfiguration | Refusal:
        """The worktree's worker configuration, checked against the caller's declarations
        (None: not checked, to learn which names the file holds)."""
        worktree = _absolute(worktree)
        file = posixpath.join(worktree, CONFIG_PATH)
        if self._committed is not None:
            return self._committed_configuration(worktree, file, declared)
        if not self._fs.exists(file):
            return self._config_missing(worktree, file)
        text = self._read(file)
        if isinstance(text, _Unreadable):
            return _config_unreadable(file, f"it is unreadable ({text.why})")
        return self._parse(file, text, declared)

    def _committed_configuration(
        self, worktree: str, file: str, declared: Mapping[str, set[str]] | None
    ) -> WorkerConfiguration | Refusal:
        """The configuration as committed at HEAD; the working copy only told about."""
        assert self._committed is not None
        try:
            blob = self._committed(worktree)
        except GitCommandFailed as exc:
            return _config_unreadable(file, f"its committed version cannot be read ({exc})")
        try:
            committed = None if blob is None else blob.decode("utf-8")
        except UnicodeDecodeError:
            return _config_unreadable(file, "its committed version is not UTF-8 text")
        source = committed_source(file, committed, self._working_copy(file))
        if source.text is None:
            missing = self._config_missing(worktree, file)
            if source.notice is None:
                return missing
            return missing.model_copy(update={"message": f"{missing.message} {source.notice}"})
        parsed = self._parse(file, source.text, declared)
        if isinstance(parsed, Refusal) or source.notice is None:
            return parsed
        return parsed.model_copy(update={"notice": source.notice})

    def _working_copy(self, file: str) -> str | object | None:
        """The working copy's text, only to compare: never opened unless a regular file (a
        final link not followed) within the bound (`MAX_WORKING_COPY_BYTES`)."""
        try:
            found = self._fs.stat(file)
        except (FileSystemError, OSError):
            return None
        if found.kind is not EntryKind.FILE or found.size > MAX_WORKING_COPY_BYTES:
            return NOT_OPENED
        text = self._read(file)
        return NOT_OPENED if isinstance(text, _Unreadable) else text

    def _parse(
        self, file: str, text: str, declared: Mapping[str, set[str]] | None
    ) -> WorkerConfiguration | Refusal:
        decoded = decode_json(text)
        if decoded.problem is not None:
            return _config_unreadable(file, decoded.problem)
        data = decoded.value
        if domain.is_version_one(data):
            return domain.version_one_refusal(file, self._map_text())
        if problem := first_problem(contract_for(CONFIGURATION_CONTRACT, data), data):
            return domain.config_invalid(file, problem)
        return domain.parse_configuration(_checked(data), file, declared, levels=self._levels)

    def model_map(self, needs: Sequence[WorkerChoice]) -> ModelMap | Refusal:
        """The machine's model map; `needs` are the choices a missing map's refusal shows."""
        words = self.placeholders
        file = machine.model_map_location(self._environ, needs, words)
        if isinstance(file, Refusal):
            return file
        if not self._fs.exists(file):
            return machine.model_map_missing(file, needs, words)
        text = self._read_map(file)
        if isinstance(text, _Unreadable):
            return machine.model_map_invalid(file, f"it is unreadable ({text.why})", words)
        decoded = decode_json(text)
        if decoded.problem is not None:
            return machine.model_map_invalid(file, decoded.problem, words)
        if problem := first_problem(contract_for(MODEL_MAP_CONTRACT, decoded.value), decoded.value):
            return machine.model_map_invalid(file, problem, words)
        return machine.parse_model_map(_checked(decoded.value), file, words)

    def _complete(
        self, config: WorkerConfiguration, choices: list[WorkerChoice], runtime: tuple[str, ...]
    ) -> list[ResolvedWorker] | Refusal:
        model_map = self.model_map(choices)
        if isinstance(model_map, Refusal):
            return model_map
        local_ids = machine.place(choices, model_map, self.placeholders)
        if isinstance(local_ids, Refusal):
            return local_ids
        resolved: list[ResolvedWorker] = []
        for choice, local_model in zip(choices, local_ids, strict=True):
            program = self._program(choice, config.file)
            if isinstance(program, Refusal):
                return program
            resolved.append(
                _resolved(
                    config,
                    choice,
                    local_model,
                    model_map.file,
                    runtime,
                    program.path,
                    program.origin,
                )
            )
        return resolved

    def _program(self, choice: WorkerChoice, file: str) -> Found | Refusal:
        """The worker's program where discovery finds it (domain/configuration/discovery.py: its
        variable,
        PATH, the pinned installations), new enough for the policy."""
        spec = self._profiles[choice.backend].program
        found = locate(spec, self._environ, self._installations, self._fs)
        if found is None:
            return machine.backend_missing(choice, spec, self._environ, file, list(self._profiles))
        if self._versions is not None:
            version = self._versions.version_of(ProgramLocation(spec=spec, path=found.path))
            problem = version_problem(version)
            if problem is not None:
                return machine.backend_unusable(choice, problem, file, list(self._profiles))
        return found

    def _config_missing(self, worktree: str, file: str) -> Refusal:
        retired = posixpath.join(worktree, domain.RETIRED_PATH)
        if self._fs.exists(retired):
            return domain.retired_refusal(retired, file, self._map_text())
        return domain.config_missing(file)

    def _map_text(self) -> str:
        location = machine.model_map_location(self._environ, [], self.placeholders)
        return location if isinstance(location, str) else _DEFAULT_MAP_TEXT

    def _read_map(self, path: str) -> str | _Unreadable:
        """The model map's text: a link followed to its final file (a map kept in a dotfiles
        folder), which must be a regular file within `MAX_MAP_BYTES` — a FIFO there hung plan,
        run, doctor and init alike (issue 31 §1)."""
        try:
            found = self._fs.stat(self._fs.realpath(path))
        except (FileSystemError, OSError) as exc:
            return _Unreadable(str(exc) or type(exc).__name__)
        if found.kind is not EntryKind.FILE:
            return _Unreadable("it is no regular file")
        if found.size > MAX_MAP_BYTES:
            return _Unreadable(f"it is {found.size} bytes, past the {MAX_MAP_BYTES} read")
        return self._read(path)

    def _read(self, path: str) -> str | _Unreadable:
        try:
            return self._fs.read_text(path)
        except (FileSystemError, OSError, ValueError) as exc:
            return _Unreadable(str(exc) or type(exc).__name__)


def _require_declared(
    operation: str, workers: Sequence[str], declared: Mapping[str, set[str]]
) -> None:
    """Asking for a worker one does not declare is the caller's bug, not a refusal."""
    undeclared = [w for w in workers if w not in declared.get(operation, set())]
    if undeclared:
        raise ValueError(f"Operation {operation!r} does not declare the workers {undeclared!r}")


def _absolute(worktree: str) -> str:
    if not worktree.startswith("/"):
        raise ValueError(f"the worktree must be an absolute path, not {worktree!r}")
    return posixpath.normpath(worktree)


def _checked(data: object) -> dict[str, Any]:
    """A value its contract's schema accepted: an object (both schemas say "type": "object")."""
    return cast(dict[str, Any], data)


def _config_unreadable(file: str, problem: str) -> Refusal:
    repair = f"Rewrite {file} as UTF-8 JSON following contract.workers.worker-configuration."
    return domain.config_invalid(file, problem, repair)


def _resolved(
    config: WorkerConfiguration,
    choice: WorkerChoice,
    local_model: str,
    model_map: str,
    runtime: tuple[str, ...],
    program: str,
    program_source: str,
) -> ResolvedWorker:
    return ResolvedWorker(
        **choice.model_dump(),
        configuration=config.file,
        local_model=local_model,
        model_map=model_map,
        limits=config.limits,
        runtime=runtime,
        program=program,
        program_source=program_source,
        notice=config.notice,
        unnamed=unnamed_notice(config, choice.operation, choice.worker),
    )
