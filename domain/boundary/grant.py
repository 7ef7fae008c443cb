"""The frozen grant: parsing the grant input and the level of a path.

Seed 002 "Grant input"; seed 000 "Audit" (a file's level is that of the grant's most specific
entry: the exact entry, else the longest directory entry above it; no entry means hidden).
Parsing returns a value: a `Grant`, or a `Refusal` (grant_unavailable / grant_malformed) naming
the first bad entry and what is wrong with it.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import posixpath
from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, PrivateAttr

from concorde_workers.domain.boundary.interpreter import LevelIndex
from concorde_workers.domain.boundary.task_types import (
    TASK_TYPES,
    TaskType,
    parse_task_type,
    writes_nothing,
)
from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.ground.errors import Reason, Refusal
from concorde_workers.domain.ground.paths import EntryKind
from concorde_workers.domain.ground.text import control_problem


class Level(StrEnum):
    RW = "rw"
    RO = "ro"
    NAMES = "names"


LEVELS: tuple[str, ...] = ("names", "ro", "rw")
READABLE = frozenset({Level.RO, Level.RW})
"""The levels whose contents a worker reads."""
_GRANT_FIELDS = ("task_type", "entries", "context_identity")
MAX_ENTRIES = 100_000
"""The most entries a grant may have (issue 19 §4): past it the grant is refused, naming the
limit; every question of a level is answered by the index in the path's depth, so a grant at
the limit is planned in seconds (docs/benchmarks.md)."""
MAX_PATH_BYTES = 4096
"""The longest grant path, in UTF-8 bytes: Linux's PATH_MAX, past which no file can be named."""


class GrantEntry(BaseModel):
    """One path of the grant, relative to the worktree; a directory entry ends with `/`."""

    model_config = ConfigDict(frozen=True)

    path: str
    level: Level

    @property
    def is_directory(self) -> bool:
        return self.path.endswith("/")

    @property
    def bare(self) -> str:
        """The path without a directory entry's trailing slash."""
        return self.path.rstrip("/")


class Grant(BaseModel):
    """A frozen, well-formed grant. Build it with `parse_grant`."""

    model_config = ConfigDict(frozen=True)

    task_type: TaskType
    entries: tuple[GrantEntry, ...]
    context_identity: str

    _index: LevelIndex | None = PrivateAttr(default=None)

    def index(self) -> LevelIndex:
        """The entries by path, made once: every question of a level is then a walk up the
        path's folders, not a pass over the entries (issue 19 §4: a plan of 20,000 entries
        asked each entry of each entry)."""
        if self._index is None:
            self._index = LevelIndex([(e.path, e.level) for e in self.entries], self.entries)
        return self._index

    def _fields(self) -> tuple[TaskType, tuple[GrantEntry, ...], str]:
        return self.task_type, self.entries, self.context_identity

    def __eq__(self, other: object) -> bool:
        # The index is a cache, not part of the grant: two grants are equal by their fields.
        return isinstance(other, Grant) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def level_of(self, rel: str) -> Level | None:
        """The level of a worktree-relative path, or None when it is hidden.

        The exact entry decides; else the longest directory entry above the path. A directory
        entry `d/` is also the exact entry of `d` itself.
        """
        return _level(self.index().level_of(rel))

    def paths(self, level: Level) -> tuple[str, ...]:
        """The entry paths of one level, as the grant lists them."""
        return tuple(e.path for e in self.entries if e.level is level)

    @property
    def has_rw(self) -> bool:
        return any(e.level is Level.RW for e in self.entries)

    def to_input(self) -> dict[str, Any]:
        """The grant input object (contract.workers.grant-input) as the request gave it."""
        return {
            "task_type": self.task_type.value,
            "entries": [{"path": e.path, "level": e.level.value} for e in self.entries],
            "context_identity": self.context_identity,
        }

    def digest(self) -> str:
        """`sha256:<hex>` of the canonical JSON of the grant input."""
        text = json.dumps(self.to_input(), sort_keys=True, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _type_name(value: object) -> str:
    names = {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        type(None): "null",
        int: "a number",
        float: "a number",
    }
    return names.get(type(value), type(value).__name__)


def _unavailable(what: str) -> Refusal:
    return Refusal(
        code=Code.GRANT_UNAVAILABLE,
        reason=Reason.INPUT,
        message=f"the grant has no {what}; the caller must hand over the grant input with its "
        "task_type, entries and context_identity (contract.workers.grant-input)",
    )


def _malformed(message: str) -> Refusal:
    return Refusal(code=Code.GRANT_MALFORMED, reason=Reason.INPUT, message=message)


def entry_problem(entry: object) -> str | None:
    """What is wrong with one grant entry, or None when it is well formed."""
    if not isinstance(entry, Mapping):
        return f"it is {_type_name(entry)}, not an object with a path and a level"
    extra = sorted(str(k) for k in entry if k not in ("path", "level"))
    if extra:
        return f"it has the field(s) {', '.join(extra)}, besides path and level"
    if "path" not in entry:
        return "it has no path"
    path = entry["path"]
    if not isinstance(path, str):
        return f"its path is {_type_name(path)}, not a string"
    problem = path_problem(path)
    if problem:
        return problem
    if "level" not in entry:
        return "it has no level"
    level = entry["level"]
    if not isinstance(level, str) or level not in LEVELS:
        shown = json.dumps(level) if not isinstance(level, str) else f"'{level}'"
        return f"its level {shown} is none of names, ro, rw"
    return None


def path_problem(path: str) -> str | None:
    """What keeps `path` from being a canonical worktree-relative grant path, or None."""
    if path == "":
        return "its path is empty"
    problem = control_problem(path)
    if problem is not None:
        # Refused, not quoted: the path is written as it is into the brief, the plan, the deny
        # rules and the sandbox lists, one per line (docs/decisions.md "Control characters").
        return f"its path {path!r} {problem}; rename the file, or leave it out of the grant"
    if len(path.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        return (
            f"its path is longer than {MAX_PATH_BYTES} bytes (Linux's PATH_MAX), so it "
            "names no file; shorten it or leave it out"
        )
    if path.startswith("/"):
        return f"its path {path!r} is absolute; a grant path is relative to the worktree"
    segments = path[:-1].split("/") if path.endswith("/") else path.split("/")
    if ".." in segments:
        return f"its path {path!r} has a '..' segment, which would leave the worktree"
    if "." in segments:
        return f"its path {path!r} is not in canonical form: it has a '.' segment"
    if "" in segments:
        return f"its path {path!r} is not in canonical form: it has an empty segment"
    return None


def parse_grant(data: object, request_task_type: str | None = None) -> Grant | Refusal:
    """Parse the grant input, refusing it with grant_unavailable or grant_malformed.

    `request_task_type`, when given, is the request's own task type, which the grant must repeat.
    A task type outside the eight is refused with grant_unavailable (notes/harness.md §1.5).
    """
    if not isinstance(data, Mapping):
        if data is None:
            return _unavailable("task type, entries or context identity: it is missing")
        return _malformed(f"the grant is {_type_name(data)}, not an object")
    for field, what in (
        ("task_type", "task type"),
        ("entries", "entries"),
        ("context_identity", "context identity"),
    ):
        if data.get(field) in (None, ""):
            return _unavailable(what)
    extra = sorted(str(k) for k in data if k not in _GRANT_FIELDS)
    if extra:
        return _malformed(
            f"the grant has the field(s) {', '.join(extra)}, besides "
            "task_type, entries and context_identity"
        )
    task_type = parse_task_type(data["task_type"])
    if task_type is None:
        return Refusal(
            code=Code.GRANT_UNAVAILABLE,
            reason=Reason.INPUT,
            message=f"the task type {json.dumps(data['task_type'])} is not a known task type; "
            f"a known task type is one of {', '.join(TASK_TYPES)}",
        )
    if request_task_type is not None and request_task_type != task_type.value:
        return _malformed(
            f"the grant's task type {task_type.value!r} differs from the request's "
            f"{request_task_type!r}"
        )
    if not isinstance(data["context_identity"], str):
        return _malformed(
            f"the context identity is {_type_name(data['context_identity'])}, not a string"
        )
    parsed = _parse_entries(data["entries"])
    if isinstance(parsed, Refusal):
        return parsed
    return Grant(task_type=task_type, entries=parsed, context_identity=data["context_identity"])


def _parse_entries(entries: object) -> tuple[GrantEntry, ...] | Refusal:
    """The entries, each well formed, one level per path, at most MAX_ENTRIES of them."""
    if not isinstance(entries, list):
        return _malformed(f"the entries are {_type_name(entries)}, not a list of objects")
    if len(entries) > MAX_ENTRIES:
        return _malformed(
            f"the grant has {len(entries):,} entries, more than the limit of "
            f"{MAX_ENTRIES:,}; grant whole folders (a directory entry covers "
            "everything below it) instead of each file"
        )
    parsed: list[GrantEntry] = []
    seen: dict[str, tuple[int, str]] = {}
    for index, entry in enumerate(entries, start=1):
        shown = json.dumps(entry, ensure_ascii=False, default=str)
        problem = entry_problem(entry)
        if problem is None:
            assert isinstance(entry, Mapping)
            earlier = seen.get(entry["path"])
            if earlier is not None and earlier[1] != entry["level"]:
                problem = (
                    f"its path is already listed by entry {earlier[0]} with the level "
                    f"{earlier[1]}; one path has one level"
                )
        if problem is not None:
            return _malformed(f"grant entry {index} ({shown}) is malformed: {problem}")
        assert isinstance(entry, Mapping)
        seen.setdefault(entry["path"], (index, entry["level"]))
        parsed.append(GrantEntry(path=entry["path"], level=Level(entry["level"])))
    return tuple(parsed)


# --- the grant's levels over a directory (the deny-rule walk, the search roots) ------------


def directory_level(grant: Grant, rel: str) -> Level | None:
    """The level of the directory entry covering directory `rel` (exact `rel/`, else the longest
    directory entry above); file entries do not cover a directory."""
    return _level(grant.index().directory_level(rel))


def entries_below(grant: Grant, rel: str) -> list[GrantEntry]:
    """The grant's entries strictly below worktree-relative `rel` (`""` = the worktree)."""
    return list(grant.index().below(rel))


def _level(found: str | None) -> Level | None:
    """The index's level as the grant's `Level` (the index keeps the grant's own members)."""
    return None if found is None else Level(found)


# --- what a grant says that its author may not have meant (issue 31 §3) ------------------------

GLOB_CHARACTERS = "*?["
CONFIGURATION_FOLDER = ".concorde"


def grant_notes(
    grant: Grant,
    kind_of: Callable[[str], EntryKind | None] | None = None,
    names_in: Callable[[str], Sequence[str]] | None = None,
) -> tuple[str, ...]:
    """What the grant says, read as seed 002 reads it, that its author likely did not mean: each
    entry named (numbered from 1, as refusals number them) with what it does and the repair.
    Warnings only, never a change of meaning: the run takes the grant as it reads.

    `kind_of` (a worktree-relative path -> what is there, links not followed; None: nothing)
    and `names_in` (a folder -> the names in it) are the worktree's facts; without them the
    notes that need none are given (`show`, which has no worktree)."""
    notes: list[str] = []
    for number, entry in enumerate(grant.entries, start=1):
        said = f"grant entry {number} ({entry.path!r}, {entry.level.value})"
        notes += _entry_notes(entry, said, kind_of, names_in)
    has_rw = grant.has_rw
    if not has_rw and not writes_nothing(grant.task_type):
        notes.append(
            f"the grant has no rw entry, so the {grant.task_type.value} worker can change "
            "nothing (a grant without rw is how a reading worker is run); make the paths it is "
            "to change rw"
        )
    if has_rw and writes_nothing(grant.task_type):
        notes.append(
            f"the task type {grant.task_type.value} writes nothing: its worker gets the "
            "read-only tools whatever the grant, so its rw entries change nothing; give a "
            "task type that writes, or make them ro"
        )
    return tuple(notes)


def _entry_notes(
    entry: GrantEntry,
    said: str,
    kind_of: Callable[[str], EntryKind | None] | None,
    names_in: Callable[[str], Sequence[str]] | None,
) -> list[str]:
    notes: list[str] = []
    glob = next((c for c in entry.path if c in GLOB_CHARACTERS), None)
    if glob is not None:
        folder = entry.path[: entry.path.index(glob)].rpartition("/")[0]
        instead = f"`{folder}/`" if folder else "each path by its name"
        notes.append(
            f"{said} holds {glob!r}, which a grant takes literally: a grant path is a path, "
            f"not a pattern; for everything below a folder write the folder, such as {instead}"
        )
    bare = entry.bare
    if entry.level is Level.RW and (
        bare == CONFIGURATION_FOLDER or bare.startswith(CONFIGURATION_FOLDER + "/")
    ):
        notes.append(
            f"{said} lets the worker change .concorde/, the project's worker configuration: "
            "this run reads workers.json as committed, but a change someone commits later "
            "configures every later worker; make it ro unless the task is to change it"
        )
    if kind_of is not None and glob is None:  # a pattern names nothing: said once, above
        notes += _kind_notes(entry, said, kind_of(bare), names_in)
    return notes


def _kind_notes(
    entry: GrantEntry,
    said: str,
    kind: EntryKind | None,
    names_in: Callable[[str], Sequence[str]] | None,
) -> list[str]:
    bare = entry.bare
    if kind is EntryKind.DIRECTORY and not entry.is_directory:
        return [
            f"{said} names a directory without the slash: a grant reads it as the entry "
            f"{bare} itself, so nothing below it is in the grant and the worker finds it "
            f"empty; did you mean `{bare}/`?"
        ]
    if kind is EntryKind.FILE and entry.is_directory:
        return [
            f"{said} names a file with a slash: a grant reads it as a folder, which covers "
            f"nothing but the file itself; did you mean `{bare}`?"
        ]
    if kind is not None:
        return []
    parent, _, name = bare.rpartition("/")
    near = _nearest(name, names_in(parent)) if names_in else None
    slash = "/" if entry.is_directory else ""
    guess = f"; did you mean `{posixpath.join(parent, near)}{slash}`?" if near else ""
    if entry.level is Level.RW:
        return [
            f"{said} names nothing in the worktree yet: the worker may create it (rw); "
            f"check the spelling if it should be there{guess}"
        ]
    return [f"{said} names nothing in the worktree, so the worker finds nothing there{guess}"]


def _nearest(name: str, names: Sequence[str]) -> str | None:
    """The name of `names` the author most likely meant by `name`: the same but for case, the
    same letters in another order (a transposition), else the closest by difflib's ratio."""
    folded = {n.casefold(): n for n in names}
    key = name.casefold()
    if key in folded:
        return folded[key]
    letters = sorted(key)
    same = [n for f, n in folded.items() if sorted(f) == letters]
    if same:
        return same[0]
    close = difflib.get_close_matches(key, list(folded), n=1)
    return folded[close[0]] if close else None
