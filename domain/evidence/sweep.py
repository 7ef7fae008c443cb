"""Stale runtime directories: who owns a runtime directory, and whether its owner is dead.

Seed 000 "Nothing but the trace outlives a worker" excepts a host "killed without a chance to
act" (SIGKILL, the out-of-memory killer): its runtime directory, credential copies included,
stays behind, and its run's record stays `running`. The host therefore writes an owner record
into every runtime directory it makes, in control/ (no tool of the worker may read or write it),
before any credential copy exists; a later sweep (every `concorde-workers run`, and
`concorde-workers sweep`) removes the directories whose owner is dead and finishes their runs'
records as interrupted.

Everything here is pure: the owner record's text and its parsing, the name of a runtime
directory, the parsing of /proc/<pid>/stat, and `judge`, which decides from facts the application
gathered (the directory's kind, owner and age, its owner record, what the process table says of
the owner's pid) whether a directory is stale, live, or to be left alone. A fact that cannot be
known never makes a directory stale, with one exception the documentation explains: a directory
with no readable owner record older than `OWNERLESS_MARGIN_SECONDS`.
"""

from __future__ import annotations

import json
import posixpath
import re
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from concorde_workers.domain.ground import json_limits
from concorde_workers.domain.ground.paths import EntryKind
from concorde_workers.domain.ground.run_id import RUNTIME_PREFIX, is_run_id, run_id_hex

__all__ = [
    "OWNERLESS_MARGIN_SECONDS",
    "OWNER_FILE",
    "OWNER_KIND",
    "Candidate",
    "Judgement",
    "OwnerRecord",
    "ProcessIdentity",
    "ProcessObservation",
    "ProcessState",
    "Verdict",
    "judge",
    "judge_host",
    "judge_ownerless",
    "observation_of_stat",
    "owner_record_text",
    "parse_owner_record",
    "parse_proc_stat",
    "runtime_directory_hex",
    "session_file",
]

OWNER_FILE = "owner.json"
"""The owner record's name in the runtime directory's control/ (written by the host only)."""

OWNER_KIND = "concorde-workers.runtime-owner"
"""The owner record's `kind`, so that no other JSON file is ever taken for one."""

OWNERLESS_MARGIN_SECONDS = 24 * 3600.0
"""A runtime directory without a readable owner record is stale only once it is this old.

The host writes the owner record within milliseconds of making the directory, so a younger
directory without one is a run that is starting; an older one was left by a host that died in
those milliseconds, or by a concorde-workers from before owner records, whose live runs cannot be
told apart from dead ones. A day is longer than any run its limits allow in practice (rounds ×
timeout plus the retry delays), and far shorter than the system's own cleaning of /tmp (10 days
with systemd-tmpfiles)."""

_NAME = re.compile(re.escape(RUNTIME_PREFIX) + r"([0-9a-f]{6})-[A-Za-z0-9_]{1,32}\Z")
_SESSION = re.compile(r"[A-Za-z0-9_-]{1,128}\Z")
_DEAD_STATES = frozenset("ZXx")
"""/proc/<pid>/stat states of a process that has exited: zombie, dead."""


def runtime_directory_hex(name: str) -> str | None:
    """The run id's six hex digits when `name` is a runtime directory's name,
    `concorde-<6 hex>-<random>` (the random part 1 to 32 letters, digits or `_`); else None."""
    match = _NAME.match(name)
    return match.group(1) if match else None


def session_file(session: str) -> str | None:
    """`<session>.jsonl`, the name of a session's transcript, when `session` is a plain file
    name of letters, digits, `-` and `_`; None for anything else (a session id comes from what
    the agent printed, and never leads a path out of its folder)."""
    if not _SESSION.match(session):
        return None
    return f"{session}.jsonl"


# --- the host's identity ------------------------------------------------------------------------


class ProcessIdentity(BaseModel):
    """A process, named so that a later reader cannot mistake another process for it.

    pid: its process id in `pid_namespace`; start_ticks: its start time in clock ticks after
    boot (/proc/<pid>/stat field 22), which tells it from a later process given the same pid;
    boot_id: the kernel's boot id (/proc/sys/kernel/random/boot_id), since ticks restart at every
    boot; pid_namespace: the PID namespace it runs in (/proc/self/ns/pid, such as
    `pid:[4026531836]`), since a pid means something only there. A fact that could not be read is
    None, and then never makes its process dead."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pid: Annotated[StrictInt, Field(ge=1)]
    start_ticks: Annotated[StrictInt, Field(ge=0)] | None
    boot_id: Annotated[StrictStr, Field(min_length=1)] | None
    pid_namespace: Annotated[StrictStr, Field(min_length=1)] | None


class ProcessState(StrEnum):
    """What the process table says of a pid now."""

    ABSENT = "absent"
    """No process has that pid."""
    ALIVE = "alive"
    """A process has it and runs (or sleeps, or is stopped)."""
    EXITED = "exited"
    """A process has it but has exited: a zombie its parent has not reaped yet."""
    UNKNOWN = "unknown"
    """The table could not be read (`problem` says why)."""


class ProcessObservation(BaseModel):
    """One look at a pid: its state, its start time when it has a process, what went wrong."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pid: int
    state: ProcessState
    start_ticks: int | None = None
    problem: str | None = None


def parse_proc_stat(text: str) -> tuple[str, int] | None:
    """The state letter (field 3) and the start time in ticks (field 22) of a /proc/<pid>/stat
    line; None when the line is not one. The command name (field 2) is in parentheses and may
    itself hold spaces and parentheses: the fields after it start after the last `)`."""
    close = text.rfind(")")
    if close < 0:
        return None
    rest = text[close + 1 :].split()
    # rest[0] is field 3 (state), so field 22 is rest[19]
    if len(rest) < 20 or len(rest[0]) != 1 or not rest[19].isdigit():
        return None
    return rest[0], int(rest[19])


def observation_of_stat(pid: int, text: str) -> ProcessObservation:
    """What a /proc/<pid>/stat line says of `pid`."""
    parsed = parse_proc_stat(text)
    if parsed is None:
        return ProcessObservation(
            pid=pid,
            state=ProcessState.UNKNOWN,
            problem=f"/proc/{pid}/stat is not a stat line: {text[:80]!r}",
        )
    state, ticks = parsed
    alive = ProcessState.EXITED if state in _DEAD_STATES else ProcessState.ALIVE
    return ProcessObservation(pid=pid, state=alive, start_ticks=ticks)


# --- the owner record ---------------------------------------------------------------------------


class OwnerRecord(BaseModel):
    """control/owner.json: which host made the runtime directory, for which run.

    Written by the host before any credential copy exists, read only by a sweep. `run_id` and
    `run_directory` name the run whose record a sweep finishes; `backend` where its transcript
    lies."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["concorde-workers.runtime-owner"]
    version: Literal[1]
    run_id: StrictStr
    run_directory: StrictStr
    backend: StrictStr
    host: ProcessIdentity

    @classmethod
    def of(
        cls, run_id: str, run_directory: str, backend: str, host: ProcessIdentity
    ) -> OwnerRecord:
        return cls(
            kind=OWNER_KIND,
            version=1,
            run_id=run_id,
            run_directory=run_directory,
            backend=backend,
            host=host,
        )


def owner_record_text(record: OwnerRecord) -> str:
    """The owner record as written: one JSON object, indented, ending in a newline."""
    return json.dumps(record.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"


def parse_owner_record(text: str) -> OwnerRecord | str:
    """The owner record in `text`, or what is wrong with it: not JSON, not an owner record, a
    field missing or of the wrong type, a run id not of the host's form, a run directory that is
    not the absolute, normalized `<parent>/workers/<run-id>` of that run id."""
    try:
        data = json_limits.loads(text)
    except ValueError as error:  # not JSON (JSONDecodeError), or nested too deeply
        return f"not JSON: {error}"
    if not isinstance(data, dict) or data.get("kind") != OWNER_KIND:
        return f"not an owner record (its kind is not {OWNER_KIND})"
    try:
        record = OwnerRecord.model_validate(data)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"])
        return f"{where}: {first['msg']}"
    if not is_run_id(record.run_id):
        return f"run_id: not a run id: {record.run_id!r}"
    run_dir = record.run_directory
    if (
        not posixpath.isabs(run_dir)
        or posixpath.normpath(run_dir) != run_dir
        or posixpath.basename(run_dir) != record.run_id
        or posixpath.basename(posixpath.dirname(run_dir)) != "workers"
    ):
        return (
            f"run_directory: {run_dir!r} is not the run directory <parent>/workers/{record.run_id}"
        )
    return record


# --- the judgement ------------------------------------------------------------------------------


class Candidate(BaseModel):
    """What the application found of one entry of the runtime parent named like a runtime
    directory: its kind (links never followed), its owning user and modification time (None when
    it could not be examined), and its owner record or why there is none that can be used."""

    model_config = ConfigDict(frozen=True)

    path: str
    name: str
    kind: EntryKind
    uid: int | None = None
    mtime: float | None = None
    owner: OwnerRecord | str = "not read"


class Verdict(StrEnum):
    STALE = "stale"
    """Its host is dead: remove it and finish its run's record."""
    LIVE = "live"
    """Its host is alive: never touched."""
    LEFT = "left"
    """Not this sweep's to judge (not a directory, another user's, liveness unknowable, too
    young without an owner record): left as it is, with the reason."""


class Judgement(BaseModel):
    model_config = ConfigDict(frozen=True)

    verdict: Verdict
    reason: str


def _stale(reason: str) -> Judgement:
    return Judgement(verdict=Verdict.STALE, reason=reason)


def _left(reason: str) -> Judgement:
    return Judgement(verdict=Verdict.LEFT, reason=reason)


def judge(
    candidate: Candidate,
    *,
    own_uid: int,
    own: ProcessIdentity,
    observation: ProcessObservation | None,
    now: float,
    margin: float = OWNERLESS_MARGIN_SECONDS,
) -> Judgement | None:
    """Whether the runtime-directory candidate is stale, live, or to be left alone.

    None when its name is not a runtime directory's (nothing to say of it). In order:
    not a directory (a link is never followed) or of another user: left. No usable owner
    record (missing, unreadable, malformed, or naming a run whose hex is not the directory's):
    stale once older than `margin`, else left. The owner's boot is not this one: stale (every
    process of that boot is gone). Either PID namespace unknown or different: left (a pid means
    nothing here). The owner's pid: absent, exited (a zombie), or held by a process that started
    at another tick (the pid was reused): stale; the table unreadable: left; alive with the same
    start (or a start that was not recorded): live. `observation` is what the process table says
    of the owner record's pid (None when there is no owner record).
    """
    hex6 = runtime_directory_hex(candidate.name)
    if hex6 is None:
        return None
    if candidate.kind is not EntryKind.DIRECTORY:
        return _left(f"not a directory but a {candidate.kind.value}: never followed")
    if candidate.uid is None:
        return _left("it could not be examined")
    if candidate.uid != own_uid:
        return _left(f"it belongs to user {candidate.uid}, not to user {own_uid}")
    owner = candidate.owner
    if isinstance(owner, OwnerRecord) and run_id_hex(owner.run_id) != hex6:
        owner = f"it names run {owner.run_id}, whose hex is not this directory's"
    if isinstance(owner, str):
        return _ownerless(owner, candidate.mtime, now, margin)
    return judge_host(owner.host, own, observation)


def judge_host(
    host: ProcessIdentity, own: ProcessIdentity, observation: ProcessObservation | None
) -> Judgement:
    """Whether what `host` made is stale (its host is dead), live, or to be left alone, from
    this process's identity `own` and what the process table says of the host's pid: another
    boot: stale; a PID namespace unknown or different: left; then by the pid (`judge`)."""
    if own.boot_id and host.boot_id and own.boot_id != host.boot_id:
        return _stale(
            f"its host (pid {host.pid}) ran before the machine last started "
            f"(boot {host.boot_id}, now {own.boot_id})"
        )
    if not (own.pid_namespace and host.pid_namespace):
        return _left(
            f"the PID namespace of its host (pid {host.pid}) or of this process is "
            "unknown: its pid cannot be checked here"
        )
    if own.pid_namespace != host.pid_namespace:
        return _left(
            f"its host (pid {host.pid}) runs in another PID namespace "
            f"({host.pid_namespace}, this one {own.pid_namespace}): its pid cannot be "
            "checked here"
        )
    return _by_pid(host, observation)


def judge_ownerless(
    problem: str, mtime: float | None, now: float, margin: float = OWNERLESS_MARGIN_SECONDS
) -> Judgement:
    """What has no usable owner record (`problem` says why): stale once older than `margin`,
    else left (it may be starting)."""
    return _ownerless(problem, mtime, now, margin)


def _ownerless(problem: str, mtime: float | None, now: float, margin: float) -> Judgement:
    hours = margin / 3600
    if mtime is None:
        return _left(f"no usable owner record ({problem}), and its age is unknown")
    age = now - mtime
    if age >= margin:
        return _stale(
            f"no usable owner record ({problem}), and it was last changed "
            f"{age / 3600:.1f} hours ago, more than {hours:g} hours"
        )
    return _left(
        f"no usable owner record ({problem}), and it is younger than {hours:g} hours: "
        "it may be a run that is starting, or a run of a concorde-workers from before "
        "owner records"
    )


def _by_pid(host: ProcessIdentity, seen: ProcessObservation | None) -> Judgement:
    pid = host.pid
    if seen is None or seen.pid != pid or seen.state is ProcessState.UNKNOWN:
        why = seen.problem if seen is not None and seen.problem else "no observation"
        return _left(f"whether its host (pid {pid}) lives cannot be told: {why}")
    if seen.state is ProcessState.ABSENT:
        return _stale(f"its host (pid {pid}) is gone")
    if host.start_ticks is not None and seen.start_ticks != host.start_ticks:
        return _stale(
            f"its host (pid {pid}) is gone: pid {pid} now belongs to another process "
            f"(started at tick {seen.start_ticks}, the host at tick {host.start_ticks})"
        )
    if seen.state is ProcessState.EXITED:
        return _stale(f"its host (pid {pid}) has exited (a zombie its parent has not reaped)")
    return Judgement(verdict=Verdict.LIVE, reason=f"its host (pid {pid}) is alive")
