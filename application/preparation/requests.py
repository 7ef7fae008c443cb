"""Building a run request from a request file and command-line flags.

A request file is a JSON object mirroring seed 000's Inputs table (the fields of
`domain.configuration.request.RunRequest`); flags fill or override its fields. Every problem is a
`Refusal`
with the code `request_invalid` that names the file or flag, what is wrong and the repair.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from concorde_workers.application.setup.json_text import decode_json
from concorde_workers.domain.boundary.beside import (
    INTERPRETER_REPAIR,
    MAX_PYVENV_CFG_BYTES,
    RUNTIME_REPAIR,
    interpreter_installation,
    text_problem,
)
from concorde_workers.domain.configuration.request import RunRequest
from concorde_workers.domain.configuration.resources import parse_size
from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.ground.errors import Reason, Refusal
from concorde_workers.domain.ground.paths import is_within
from concorde_workers.domain.ground.text import control_problem
from concorde_workers.domain.run.checks import Check, parse_checks
from concorde_workers.ports.machine.filesystem import (
    BoundedReading,
    FileSystemError,
    read_regular_text,
)

REQUEST_FIELDS = tuple(RunRequest.model_fields)
MAX_INSTRUCTIONS_BYTES = 1024 * 1024
"""The task's instructions, from `--instructions`, `@FILE` or the request file: 1 MiB of UTF-8
(a brief of a few pages is kilobytes; docs/decisions.md "Every reader bounded")."""
MAX_GRANT_FILE_BYTES = 16 * 1024 * 1024
"""A grant file: 100,000 entries (the grant's own bound) of 160 bytes on average."""
MAX_REQUEST_FILE_BYTES = MAX_GRANT_FILE_BYTES + 2 * MAX_INSTRUCTIONS_BYTES
"""A request file holds a grant and the instructions besides a few short fields."""
FLAG_NAMES = {
    "worktree": "--worktree",
    "parent": "--parent",
    "interpreter": "--interpreter",
    "runtime_paths": "--runtime-path",
}


@dataclass(frozen=True)
class RequestFlags:
    """The request flags shared by `plan` and `run`; None means not given."""

    request_file: str | None = None
    worktree: str | None = None
    task_type: str | None = None
    grant_file: str | None = None
    instructions: str | None = None
    operation: str | None = None
    worker: str | None = None
    backend: str | None = None
    interpreter: str | None = None
    runtime_paths: Sequence[str] = field(default_factory=tuple)
    parent: str | None = None
    checks: Sequence[str] = field(default_factory=tuple)
    """`--check` commands (`run`), after the request file's `checks`."""
    max_processes: str | None = None
    max_memory: str | None = None
    cpu_weight: str | None = None
    max_space: str | None = None
    """The run's resource limits (issue 20), over the request file's `resources`."""
    max_tmp: str | None = None
    """The flag `--max-space` replaced: refused, naming it."""


CHECKS_FIELD = "checks"
"""The request file's checks: the caller's, not the host's (seed 000: the host never runs a
check), so they are taken apart from the Inputs table (`RequestBuilder.checks`)."""


def invalid(message: str, file: str | None = None) -> Refusal:
    return Refusal(code=Code.REQUEST_INVALID, reason=Reason.INPUT, message=message, file=file)


def _instructions_source(flags: RequestFlags) -> str:
    if flags.instructions is not None:
        return "--instructions"
    if flags.request_file is not None:
        return f"the request file {flags.request_file}"
    return "the request"


def _instructions_too_long(value: object, flags: RequestFlags) -> Refusal | None:
    """More than `MAX_INSTRUCTIONS_BYTES` of instructions is no brief: refused, naming where
    they came from (a value that is no text is the request model's to refuse)."""
    if not isinstance(value, str):
        return None
    size = len(value.encode("utf-8", "surrogatepass"))
    if size <= MAX_INSTRUCTIONS_BYTES:
        return None
    return invalid(
        f"{_instructions_source(flags)} gives {size:,} bytes of instructions, past the "
        f"{MAX_INSTRUCTIONS_BYTES:,} a brief may hold: give the task itself, and name the "
        "files the worker should read in it",
        flags.request_file,
    )


def instructions_missing(request: RunRequest, flags: RequestFlags) -> Refusal | None:
    """The instructions are the task (seed 000 Inputs): none, or only blanks, sends a worker
    with nothing to do. `run` refuses it before a run exists; `plan` shows the whole plan and
    says the same as its verdict (issue 31 §3, docs/decisions.md "Inputs the user writes")."""
    if request.instructions.strip():
        return None
    given = "gives no instructions" if not request.instructions else "gives only blank ones"
    return invalid(
        f"{_instructions_source(flags)} {given}: a worker needs its task; give --instructions "
        'TEXT or --instructions @FILE (or the request file\'s "instructions")',
        flags.request_file,
    )


class RequestBuilder:
    """Reads the request file, the grant file and `@file` instructions through the filesystem."""

    def __init__(self, fs: BoundedReading, cwd: str) -> None:
        self._fs = fs
        self._cwd = cwd

    def build(self, flags: RequestFlags) -> RunRequest | Refusal:
        data: dict[str, Any] = {}
        if flags.request_file is not None:
            loaded = self._json_object(flags.request_file, "request file")
            if isinstance(loaded, Refusal):
                return loaded
            data.update(loaded)
            data.pop(CHECKS_FIELD, None)
        overrides = self._overrides(flags)
        if isinstance(overrides, Refusal):
            return overrides
        data.update(overrides)
        limited = self._resources(data, flags)
        if isinstance(limited, Refusal):
            return limited
        data = limited
        if "task_type" not in data and isinstance(data.get("grant"), Mapping):
            data["task_type"] = data["grant"].get("task_type")
        return self._validate(data, flags.request_file, flags)

    def worktree(self, flags: RequestFlags) -> str | Refusal:
        """The worktree alone, as `build` would take it (--worktree over the request file's
        "worktree"), for a question that needs no grant or instructions."""
        if flags.worktree is not None:
            return self._absolute(flags.worktree)
        if flags.request_file is None:
            return invalid("give --worktree PATH or a request file naming the worktree")
        loaded = self._json_object(flags.request_file, "request file")
        if isinstance(loaded, Refusal):
            return loaded
        worktree = loaded.get("worktree")
        if not isinstance(worktree, str) or not worktree:
            file = self._absolute(flags.request_file)
            return invalid(f"the request file {file} names no worktree: give --worktree", file)
        return self._absolute(worktree)

    def checks(self, flags: RequestFlags) -> tuple[Check, ...] | Refusal:
        """The checks of the request file's `checks` and of `--check`, or the refusal naming the
        entry and the repair."""
        entries: object = None
        if flags.request_file is not None:
            loaded = self._json_object(flags.request_file, "request file")
            if isinstance(loaded, Refusal):
                return loaded
            entries = loaded.get(CHECKS_FIELD)
        file = self._absolute(flags.request_file) if flags.request_file else None
        parsed = parse_checks(entries, tuple(flags.checks), f"the request file {file}")
        return invalid(parsed, file) if isinstance(parsed, str) else parsed

    def _overrides(self, flags: RequestFlags) -> dict[str, Any] | Refusal:
        out: dict[str, Any] = {}
        if flags.worktree is not None:
            out["worktree"] = self._absolute(flags.worktree)
        if flags.grant_file is not None:
            grant = self._json_object(flags.grant_file, "grant file")
            if isinstance(grant, Refusal):
                return grant
            out["grant"] = grant
        if flags.instructions is not None:
            text = self._instructions(flags.instructions)
            if isinstance(text, Refusal):
                return text
            out["instructions"] = text
        # Runtime paths and the interpreter are handed over exactly as given (seed 000 "A worker
        # reads beside its grant only what its caller lists"): never completed against the
        # current directory, so that `--runtime-path ''` is refused, not the current directory.
        if flags.interpreter is not None:
            out["project_interpreter"] = flags.interpreter
        if flags.runtime_paths:
            out["runtime_paths"] = list(flags.runtime_paths)
        if flags.parent is not None:
            out["parent"] = self._absolute(flags.parent)
        for name in ("task_type", "operation", "worker", "backend"):
            value = getattr(flags, name)
            if value is not None:
                out[name] = value
        return out

    @staticmethod
    def _resources(data: dict[str, Any], flags: RequestFlags) -> dict[str, Any] | Refusal:
        """The request's `resources` with the limit flags over it (issue 20)."""
        if flags.max_tmp is not None:
            return invalid(
                "--max-tmp is now --max-space: the size of each of the runtime directory's "
                "writable spaces (config/; home/, tmp/ and work/: a tmpfs each); give --max-space"
            )
        given = {
            "processes": flags.max_processes,
            "memory_mib": flags.max_memory,
            "cpu_weight": flags.cpu_weight,
            "space_mib": flags.max_space,
        }
        out: dict[str, Any] = {}
        for key, flag in (
            ("processes", "--max-processes"),
            ("memory_mib", "--max-memory"),
            ("cpu_weight", "--cpu-weight"),
            ("space_mib", "--max-space"),
        ):
            text = given[key]
            if text is None:
                continue
            sized = key.endswith("_mib")
            value = parse_size(text) if sized else (int(text) if text.strip().isdigit() else None)
            if value is None:
                unit = "MiB or a size such as 512m or 2g" if sized else "a number"
                return invalid(f"{flag} {text!r} is no limit: give {unit}")
            out[key] = value
        if not out:
            return data
        file_given = data.get("resources")
        base = dict(file_given) if isinstance(file_given, Mapping) else {}
        return {**data, "resources": {**base, **out}}

    def _validate(
        self, data: dict[str, Any], file: str | None, flags: RequestFlags | None = None
    ) -> RunRequest | Refusal:
        where = f"the request file {file}" if file else "the request"
        given = self._given_paths(data, file, flags or RequestFlags())
        if given is not None:
            return given
        if "worktree" not in data:
            return invalid(
                f'{where} names no worktree: give --worktree or a "worktree" field '
                "with the absolute path of the worktree in .claude/worktrees/",
                file,
            )
        if data.get("task_type") is None:
            return invalid(
                f'{where} names no task type: give --task-type, a "task_type" '
                "field, or a grant whose task_type names it",
                file,
            )
        told = _instructions_too_long(data.get("instructions"), flags or RequestFlags())
        if told is not None:
            return told
        for name in ("worktree", "parent"):
            value = data.get(name)
            if isinstance(value, str) and not posixpath.isabs(value):
                return invalid(
                    f"{where} gives {name} {value!r}, which is not an absolute path; "
                    "write it as an absolute path",
                    file,
                )
        data = self._with_installation(data)
        try:
            return RunRequest.model_validate(data)
        except ValidationError as error:
            first = error.errors()[0]
            location = ".".join(str(part) for part in first["loc"]) or "(the request)"
            return invalid(
                f"{where} is invalid at {location}: {first['msg']}; the fields are "
                f"those of the Inputs table: {', '.join(REQUEST_FIELDS)}",
                file,
            )

    def _with_installation(self, data: dict[str, Any]) -> dict[str, Any]:
        """The command line is the caller here, and it lists what the project interpreter
        needs to start among the runtime paths (issue 19 §1; seed 000 asks the caller to list
        them): its virtual environment and the base installation that one links to, which lie
        in a home for a pyenv, uv or conda Python. After the paths given; each is judged like
        every runtime path (domain/boundary/beside.py), and plan shows them."""
        interpreter = data.get("project_interpreter")
        given = data.get("runtime_paths", [])
        if (
            not isinstance(interpreter, str)
            or not posixpath.isabs(interpreter)
            or not isinstance(given, list)
            or not self._fs.is_file(interpreter)
        ):
            return data
        # Inside the worktree the caller decides alone. A runtime path there is never writable,
        # so listing one would take rw from the grant (and hide an interpreter the worker may
        # replace from its refusal); and a pyvenv.cfg there is the worker's to have written,
        # whose `home` could name any folder of a home: it is never read.
        worktree = data.get("worktree")
        inside = (
            [worktree, self._fs.realpath(worktree)]
            if isinstance(worktree, str) and posixpath.isabs(worktree)
            else []
        )

        def near(path: str) -> bool:
            return any(
                is_within(f, w) or is_within(w, f)
                for f in (path, self._fs.realpath(path))
                for w in inside
            )

        derived = interpreter_installation(
            interpreter, self._fs.realpath, lambda cfg: None if near(cfg) else self._pyvenv_cfg(cfg)
        )
        added = [p for p in derived if p not in given and not near(p)]
        return {**data, "runtime_paths": [*given, *added]} if added else data

    def _pyvenv_cfg(self, path: str) -> str | None:
        try:
            return read_regular_text(self._fs, path, MAX_PYVENV_CFG_BYTES)
        except (FileSystemError, UnicodeDecodeError):
            return None

    @staticmethod
    def _given_paths(data: dict[str, Any], file: str | None, flags: RequestFlags) -> Refusal | None:
        """The text of every path the request gives (domain/boundary/beside.py row "text", the
        grant's
        rule for control characters): the flag or field that gives a bad one, and the repair.
        Whether a runtime path or the interpreter exists or uncovers anything is the
        preparation's judgement, which a request of the Python API meets too."""

        def source(flag: str, name: str) -> str:
            if getattr(flags, flag):
                return FLAG_NAMES[flag]
            return f"the {name} field of the request file {file}" if file else f"the {name} field"

        for name, flag in (("worktree", "worktree"), ("parent", "parent")):
            value = data.get(name)
            problem = control_problem(value) if isinstance(value, str) else None
            if problem is not None:
                return invalid(
                    f"{source(flag, name)} gives {name} {value!r}, which {problem}; "
                    "give the absolute path without it",
                    file,
                )
        paths = data.get("runtime_paths")
        for value in paths if isinstance(paths, list) else []:
            problem = text_problem(value) if isinstance(value, str) else None
            if problem is not None:
                return invalid(
                    f"{source('runtime_paths', 'runtime_paths')} gives the runtime "
                    f"path {value!r}, which {problem}; {RUNTIME_REPAIR}",
                    file,
                )
        value = data.get("project_interpreter")
        problem = text_problem(value) if isinstance(value, str) else None
        if problem is not None:
            return invalid(
                f"{source('interpreter', 'project_interpreter')} gives the project "
                f"interpreter {value!r}, which {problem}; {INTERPRETER_REPAIR}",
                file,
            )
        return None

    def _json_object(self, path: str, what: str) -> dict[str, Any] | Refusal:
        path = self._absolute(path)
        limit = MAX_GRANT_FILE_BYTES if what == "grant file" else MAX_REQUEST_FILE_BYTES
        text = self._read(path, what, limit)
        if isinstance(text, Refusal):
            return text
        decoded = decode_json(text)
        if decoded.problem is not None:
            return invalid(
                f"the {what} {path} is not valid JSON: {decoded.problem}; repair the file", path
            )
        if not isinstance(decoded.value, dict):
            return invalid(f"the {what} {path} must hold one JSON object", path)
        return decoded.value

    def _instructions(self, value: str) -> str | Refusal:
        if not value.startswith("@"):
            return value
        return self._read(self._absolute(value[1:]), "instructions file", MAX_INSTRUCTIONS_BYTES)

    def _read(self, path: str, what: str, limit: int) -> str | Refusal:
        """The text of a file the user names (links followed: the user's own), when it is a
        regular file of at most `limit` bytes of UTF-8: a FIFO or a device (`@/dev/zero`) is
        refused at once, never opened, and a larger file is never read (issue 31 §3)."""
        try:
            return read_regular_text(self._fs, self._fs.realpath(path), limit)
        except FileSystemError as error:
            return invalid(
                f"the {what} {path} cannot be read: {error.os_error_text}; give a regular file "
                f"of at most {limit:,} bytes of UTF-8 text",
                path,
            )

    def _absolute(self, path: str) -> str:
        return posixpath.normpath(posixpath.join(self._cwd, path))
