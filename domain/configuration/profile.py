"""A backend's profile: what is one agent program's, as values the host's generic algorithms take
(issue 22 §1; docs/decisions.md 55).

Each backend's adapter package holds its own (adapters/claude/profile.py, adapters/pi/profile.py,
adapters/codex/profile.py) in its one registration (`REGISTRATION`, issue 34 §4), which the
composition root lists (container.py `REGISTRATIONS`, `PROFILES`). Nothing below the composition
root knows a backend by its name: what differs between programs reaches the domain as a
profile's fields, and the use cases get the registered profiles injected.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.boundary.grant import Grant
from concorde_workers.domain.boundary.task_types import BASH_TASK_TYPES, TaskType, writes_nothing
from concorde_workers.domain.configuration.credentials import CredentialSpec
from concorde_workers.domain.configuration.machine import MachineFileAnswer, MachineFileSpec
from concorde_workers.domain.configuration.program_versions import ProgramSpec
from concorde_workers.domain.configuration.starter import DefaultModel
from concorde_workers.domain.evidence.transcript import TranscriptDialect
from concorde_workers.domain.ground.backends import DEFAULT_BACKEND
from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.ground.layout import RuntimeEntries, RuntimeLayout
from concorde_workers.domain.run.brief import BriefVariant

RoundEnvironment = Callable[[Mapping[str, str], RuntimeLayout, str | None], dict[str, str]]
"""A round's whole environment from the host's, the runtime directory and the project
interpreter: nothing else is inherited (seed 000 "Launch", seed 001 "Launch")."""


@dataclass(frozen=True)
class ConfinementAsks:
    """What a backend's own sandbox, nested in the confinement, needs of the namespace (a
    profile's field): `placeholders` as in `PlanInputs`, `private` paths in which `{uid}` stands
    for the agent's uid inside."""

    placeholders: tuple[str, ...] = ()
    private: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    """Configuration sources the program reads whatever its settings say (Codex's
    `/etc/codex`): masked in its namespace."""
    nested: bool = False
    """Its own sandbox makes a user namespace inside the confinement's (Codex's bwrap): a
    machine that forbids nested user namespaces refuses the backend (`nested_problem`)."""
    files_alone: bool = False
    """It has no per-path layer of its own (no hook, no extension: Codex's commands and
    apply_patch write whatever the namespace leaves writable below their working folder): a rw
    file is bound itself, never its folder, and a rw entry that only a writable folder could
    make writable (one not there yet, a link) is refused before launch (`FILES_ALONE`)."""

    def resolved(self, uid: int) -> tuple[str, ...]:
        """The private paths with the agent's uid in them."""
        return tuple(p.replace("{uid}", str(uid)) for p in self.private)


FILES_ALONE = (
    "binds each rw file of the grant itself, never its folder, as its commands write "
    "whatever the confinement leaves writable"
)
"""What `plan` and `run` say of a backend whose `ConfinementAsks.files_alone` refuses a rw
entry, before the entry and its repair (application/preparation/confinement.py)."""


USERNS_SWITCHES = (
    ("/proc/sys/user/max_user_namespaces", "0"),
    ("/proc/sys/kernel/unprivileged_userns_clone", "0"),
    ("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1"),
)
"""The kernel's switches that forbid a nested user namespace, and the value that forbids it."""


def nested_problem(title: str, read: Mapping[str, str | None]) -> str | None:
    """Why the program's own sandbox cannot nest in the confinement here (`read`: each switch's
    text, None: not there), or None. Where it cannot, every command it runs fails closed and the
    model may report a false `blocked`: the run is refused instead, never run with the
    program's sandbox off."""
    for path, forbids in USERNS_SWITCHES:
        value = (read.get(path) or "").strip()
        if value == forbids:
            return (
                f"{title}'s own sandbox needs nested user namespaces, which this machine forbids "
                f"({path} is {value}); allow them (sysctl), or choose another backend for this "
                "worker: Workers never runs it with its sandbox off"
            )
    return None


@dataclass(frozen=True)
class ToolNames:
    """A backend's names of its tools by what they do: the read-only ones, the ones that change
    files, its shell, and those every set holds (pi's `concorde_result`)."""

    read: tuple[str, ...]
    change: tuple[str, ...]
    shell: tuple[str, ...]
    always: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    """Tools that run a command in the program's own sandbox whichever set holds them (Codex's
    exec_command, in its read-only set too): what the sandbox's walls refuse them is said like
    the shell's (application/tracing/calls.py)."""


def tool_set(names: ToolNames, task_type: TaskType, has_rw: bool) -> tuple[str, ...]:
    """The tool set of a task type (notes/harness.md §1.5): the read-only row for a task type
    that writes nothing or a grant with no rw entry; the shell only for the task types that run
    commands."""
    if writes_nothing(task_type) or not has_rw:
        chosen = names.read
    elif task_type in BASH_TASK_TYPES:
        chosen = (*names.read, *names.change, *names.shell)
    else:
        chosen = (*names.read, *names.change)
    return (*chosen, *names.always)


@dataclass(frozen=True)
class CopiedText:
    """A file a run copies from the user's program configuration, as its one reader found it:
    where, and its text (None: there is none)."""

    path: str
    text: str | None


MachineFileJudge = Callable[[str | None, str, Mapping[str, str]], MachineFileAnswer]
"""A backend's machine file judged: (its text, None when there is none; its path; the host
environment) -> what it adds to each round, or what is wrong with it, naming the file and the
repair."""

CopiesJudge = Callable[
    [Mapping[str, CopiedText], str | None, Mapping[str, str]], tuple[str, str] | None
]
"""The files a run copies judged as the program reads them: (each file by its name; the
round's `--model` id, None where no run is planned; the host environment) -> the file and what
the program would reject or misread in it, naming the entry and the repair; None: it takes
them."""

__all__ = [
    "FILES_ALONE",
    "USERNS_SWITCHES",
    "BackendProfile",
    "ConfinementAsks",
    "CopiedText",
    "CopiesJudge",
    "HelperTool",
    "MachineFileJudge",
    "Profiles",
    "RoundEnvironment",
    "copies_of",
    "entries_of",
    "levels_of",
    "nested_problem",
    "pins_of",
    "placeholders_of",
    "programs_of",
]


class HelperTool(BaseModel):
    """A program a backend's tools start by name from PATH (pi's search tools: rg, fd; the node
    pi runs on): doctor checks it, only for a run on that backend."""

    model_config = ConfigDict(frozen=True)

    name: str
    executables: tuple[str, ...]
    """The names it may have on PATH, in order (fd, or fdfind as Debian names it)."""
    provide: str
    """How a user provides it."""


class BackendProfile(BaseModel):
    """One agent program as the host's generic algorithms take it."""

    model_config = ConfigDict(frozen=True)

    name: str
    """The name the trace keeps (`backend`), the worker configuration sets and `--backend` takes."""
    title: str
    """How a person names the program."""
    failure_code: Code
    """What a round whose program failed ends with."""
    runtime_missing_code: Code
    """What a run is refused with when the machine lacks what the program runs from (pi:
    pi_runtime_missing; Claude Code has no such code: launch_failed)."""
    run_directory_code: Code
    """What a runtime directory the worker may not have is refused with (Claude Code:
    run_directory_denied, which also refuses a grant naming a run directory; pi has no such
    code: launch_failed)."""
    credentials: CredentialSpec
    brief: BriefVariant
    tools: ToolNames
    reasoning_levels: tuple[str, ...]
    """The levels `reasoning` may take on this backend (seed 002 "Worker configuration")."""
    local_id_placeholder: str
    """What a model map's example holds for this backend's `--model` id (`<model id>`)."""
    provider_in_model_id: bool = False
    """Whether this program's `--model` id names its provider, `provider/id` (pi): one without
    is said (`model_id_note`)."""
    default_model: DefaultModel
    """How init knows the id the program runs without `--model`."""
    example_ids: dict[str, str] = {}
    """Project model names of `plan --example`'s repository and this program's id of each."""
    programs: tuple[ProgramSpec, ...]
    """The programs its rounds run, the agent program first (pi: pi, then the sandbox-runtime
    package its permission extension loads)."""
    transcript: TranscriptDialect
    """How the program writes its session (the report's and the events' tool calls)."""
    runtime_entries: RuntimeEntries = RuntimeEntries()
    """What the program keeps in the runtime directory for itself."""
    settings_file: str
    """Where its generated worker settings or permission extension lies, relative to the
    runtime directory (the file whose digest the run record keeps)."""
    environment: RoundEnvironment
    """The environment of its rounds (what the machine's configuration adds, such as Claude
    Code's endpoint, the backend adds on top)."""
    helpers: tuple[HelperTool, ...] = ()
    sandbox_package: str | None = None
    """The program of `programs` whose Bash sandbox doctor tries without network (pi's
    sandbox-runtime, run by node); None: the agent program brings its own."""
    machine_file: MachineFileSpec | None = None
    """The machine's own file of this backend (Claude Code: endpoints.json, its model
    endpoint), read by the one reader of machine files (application/setup/machine_files.py)."""
    machine_file_judge: MachineFileJudge | None = None
    """How `machine_file` is read; plan, run and doctor take its answer."""
    copies_judge: CopiesJudge | None = None
    """What the program would reject in the files a run copies (pi: its models.json and
    auth.json, as pi 0.73.1 reads them); None: judged by nothing but the one reader's bounds."""
    confinement: ConfinementAsks = ConfinementAsks()
    """What the program's own sandbox, nested in the confinement, needs of the namespace
    (Codex's placeholders and private folder); nothing for Claude Code and pi."""

    @property
    def program(self) -> ProgramSpec:
        """The agent program a round runs."""
        return self.programs[0]

    def tool_set(self, grant: Grant) -> tuple[str, ...]:
        """The tools a worker of this grant is given on this backend."""
        return tool_set(self.tools, grant.task_type, grant.has_rw)


Profiles = Mapping[str, BackendProfile]
"""The registered profiles by name, in the registry's order."""


def levels_of(profiles: Profiles) -> Mapping[str, Sequence[str]]:
    """Each backend's reasoning levels, by name."""
    return {name: profile.reasoning_levels for name, profile in profiles.items()}


def programs_of(profiles: Profiles) -> dict[str, ProgramSpec]:
    """Every registered backend's programs, by the program's name."""
    return {spec.program: spec for profile in profiles.values() for spec in profile.programs}


def pins_of(profiles: Profiles) -> dict[str, str]:
    """The npm packages and versions the registered backends pin (package.json's
    dependencies)."""
    return {
        spec.package: spec.pinned
        for spec in programs_of(profiles).values()
        if spec.package and spec.pinned
    }


def placeholders_of(profiles: Profiles) -> dict[str, str]:
    """Each backend's placeholder of its model id in a map's example, the default backend
    first."""
    ordered = sorted(profiles.values(), key=lambda p: p.name != DEFAULT_BACKEND)
    return {profile.name: profile.local_id_placeholder for profile in ordered}


def entries_of(profiles: Profiles) -> RuntimeEntries:
    """What every registered backend's program keeps in a runtime directory: one run's policy
    takes them all, whichever backend runs."""
    entries = RuntimeEntries()
    for profile in profiles.values():
        entries = entries | profile.runtime_entries
    return entries


def copies_of(profiles: Profiles) -> tuple[str, ...]:
    """The names of every registered backend's credential copies in config/ (what a sweep
    removes first from a dead run's runtime directory, whatever its backend)."""
    return tuple(dict.fromkeys(name for p in profiles.values() for name in p.credentials.files))


def example_ids_of(profiles: Profiles) -> dict[str, dict[str, str]]:
    """Each backend's example ids, the default backend first."""
    return {name: dict(profiles[name].example_ids) for name in placeholders_of(profiles)}


def model_id_note(
    profile: BackendProfile, local_model: str | None, model_map: str | None
) -> str | None:
    """What to say of a `--model` id that names no provider on a program whose ids do (issue 31
    §3: pi takes the first provider, built in or in its models.json, that lists the id, and
    fails with "Model ... not found" when none does), with the repair; None otherwise. A note,
    never a refusal: such an id is pi's own to resolve, and often resolves."""
    if not profile.provider_in_model_id or not local_model or "/" in local_model:
        return None
    where = f" (from the model map {model_map})" if model_map else ""
    return (
        f"the {profile.name} model id {local_model!r}{where} names no provider: "
        f"{profile.title} takes the first provider that lists that id, built in or in its own "
        f"models.json, and ends the round failed when none does; write it as provider/id, such "
        f"as local/{local_model}"
    )
