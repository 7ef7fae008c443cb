"""The interpreter of the rows of the read, write and search tables (`domain.boundary.rules`).

A table is a list of rows tried in order; the first row whose conditions all hold decides. A row,
as JSON:

    {"row": <its name, the decision's row>, "when": [<condition>, ...], "then": "allow"}
    {"row": ..., "when": [...], "then": "deny", "reason": <fill>}
    {"row": ..., "when": [...], "then": "table", "table": <the table that decides instead>}

A condition is a name of `PREDICATES`, or `not ` and one. A fill is `{"key": <key of the reasons
table>, "values": {<placeholder>: <value>}}` and a value is a name of `VALUES`,
`{"text": <literal>}` or a fill. The facts the predicates ask are the policy's JSON (the lists of
`Policy.facts_json`) and its `reasons` table; `Judge` reads both and the rows,
checks every row against the vocabulary and the reasons, and then decides a path as a table says.

Standard library only, no I/O, no `from __future__` import and nothing that needs the module's
name: the generated Claude Code hooks embed this file's source (adapters/claude/guard/hooks.py), so
Python interprets the rows here and nowhere else; `adapters/pi/extension/pi_policy.ts` is its
TypeScript port. A decision is `(allowed, row, reason)`, the reason without the denial prefix.
"""

import posixpath
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

TYPE_CHECKING = False  # the Claude Code hooks embed this source: `typing` would cost each call
if TYPE_CHECKING:
    from typing import Any
else:
    Any = object

PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")
"""A reason's placeholder (`domain.boundary.rules.fill`, pi_policy.ts)."""
RUNTIME_PREFIX = "concorde-"
"""How a runtime directory's name begins (`domain.ground.run_id.RUNTIME_PREFIX`)."""
RUNTIME_NAME = re.compile(r"concorde-[0-9a-f]{6}-[A-Za-z0-9_]{1,32}")
"""A runtime directory's name (`domain.ground.run_id.runtime_directory_name`), matched
whole."""
PROCESSES = "/proc"
GUIDANCE_LIMIT = 12
"""At most this many directories are named in a search's guidance; the rest are counted."""
_READABLE = frozenset({"ro", "rw"})
_LEVELS = ("names", "ro", "rw")
_SEGMENT_SPLIT = re.compile(r"[/\s,{}]")

Decided = tuple[bool, str, str | None]
"""(allowed, row, reason without the prefix; None when allowed)."""


def has_dotdot(value: str) -> bool:
    """A `..` segment, between `/`, whitespace, `,`, `{` or `}` (Claude Code splits a Grep glob
    on whitespace and commas, and a brace list holds alternatives)."""
    return ".." in _SEGMENT_SPLIT.split(value)


def fill_reason(reasons: Mapping[str, str], key: str, values: Mapping[str, str]) -> str:
    """Reason `key` of `reasons` with each placeholder replaced once by its value, left to right;
    a value is never scanned again."""
    return PLACEHOLDER.sub(lambda m: values[m.group(1)], reasons[key])


# --- the facts -----------------------------------------------------------------------------------


class _Roots:
    """Paths as the policy lists them, normalised: which holds a path, which lie below one."""

    __slots__ = ("exact", "given", "normal", "prefixes")

    def __init__(self, paths: Iterable[str]) -> None:
        self.given = tuple(paths)
        self.normal = tuple(posixpath.normpath(p) for p in self.given)
        self.prefixes = tuple(n.rstrip("/") + "/" for n in self.normal)
        self.exact = frozenset(self.normal)

    def hold(self, path: str) -> bool:
        """`path` (normalised) is one of them or lies below one."""
        return path in self.exact or path.startswith(self.prefixes)

    def first_below(self, path: str) -> str | None:
        """The first of them (as listed) strictly below `path` (normalised)."""
        prefix = path.rstrip("/") + "/"
        for given, normal in zip(self.given, self.normal, strict=True):
            if normal != path and normal.startswith(prefix):
                return given
        return None

    def any_at_or_below(self, path: str) -> bool:
        prefix = path.rstrip("/") + "/"
        return any(n == path or n.startswith(prefix) for n in self.normal)


def _under(path: str, root: str) -> str | None:
    """`path` relative to `root` (both normalised; `""` for the root), None when not within."""
    if path == root:
        return ""
    prefix = root.rstrip("/") + "/"
    return path[len(prefix) :] if path.startswith(prefix) else None


def is_other_run(
    path: str, runtime_root: str, runtime_directory: str, temporary_roots: Iterable[str]
) -> bool:
    """`path` lies in a directory `<runtime root>/concorde-*` other than this run's, or in a
    directory named like a runtime directory below a temporary root (all paths normalised;
    `domain.boundary.hidden`)."""
    if _under(path, runtime_directory) is not None:
        return False
    rel = _under(path, runtime_root)
    if rel is not None and rel.split("/", 1)[0].startswith(RUNTIME_PREFIX):
        return True
    for root in temporary_roots:
        rel = _under(path, root)
        if rel is not None and any(RUNTIME_NAME.fullmatch(p) for p in rel.split("/")):
            return True
    return False


class LevelIndex:
    """A grant's entries by path: the one index of its levels (issue 34 §5), which `Grant` asks
    for the mount plan, the audit, the deletions and the deny rules, and the rows' predicates
    through `_Facts`. The file entries' levels and the directory entries' levels (by their path
    without the slash), the first entry of a path deciding, made in one pass; and, made when
    first asked, for each folder with entries below it those entries (their `items`) in the
    order given. Every question of a level is then a walk up the path's folders, not a pass over
    the entries (issue 19 §4)."""

    def __init__(self, entries: Sequence[tuple[str, str]], items: Sequence[Any] = ()) -> None:
        """`entries`: (the entry's path as listed, its level); `items`: what `below` gives for
        each entry, in the same order (by default the entry's pair itself)."""
        self._entries = entries
        self._items = items or entries
        self.files: dict[str, str] = {}
        self.directories: dict[str, str] = {}
        for path, level in entries:
            table = self.directories if path.endswith("/") else self.files
            table.setdefault(path.rstrip("/"), level)
        self._below: dict[str, list[Any]] | None = None

    def level_of(self, rel: str) -> str | None:
        """The exact entry's level, else the longest directory entry's above (a directory entry
        `d/` is also the exact entry of `d`); None when no entry covers `rel`."""
        rel = rel.strip("/")
        found = self.files.get(rel)
        return found if found is not None else self.directory_level(rel)

    def directory_level(self, rel: str) -> str | None:
        """The level of the directory entry covering directory `rel`: `rel/`, else the longest
        directory entry above; file entries do not cover a directory."""
        folder = rel
        while True:
            found = self.directories.get(folder)
            if found is not None or not folder:
                return found
            folder = folder.rpartition("/")[0]

    def under_directory(self, rel: str, levels: Collection[str]) -> bool:
        """Whether a directory entry of one of `levels` lies strictly above `rel` (the worktree
        itself not counted)."""
        folder = rel
        while folder:
            folder = folder.rpartition("/")[0]
            if folder and self.directories.get(folder) in levels:
                return True
        return False

    def below(self, rel: str) -> list[Any]:
        """The items of every entry strictly below `rel` (`""` = the worktree), in order."""
        if self._below is None:
            below: dict[str, list[Any]] = {}
            for (path, _), item in zip(self._entries, self._items, strict=True):
                folder = path.rstrip("/")
                while folder:
                    folder = folder.rpartition("/")[0]
                    below.setdefault(folder, []).append(item)
            self._below = below
        return self._below.get(rel, [])


class _Facts:
    """The policy's lists as the rows ask them; the grant's levels indexed when first asked."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.reasons: Mapping[str, str] = data["reasons"]
        self.worktree = posixpath.normpath(data["worktree"])
        self.git = _Roots(data["git"])
        self.runtime = _Roots(data["runtime"])
        self.host = _Roots(data["hidden"])
        self.own = _Roots(data["own"])
        self.boundaries = _Roots(data["boundaries"])
        self.run_directories = _Roots(data["runDirectories"])
        self.credentials = _Roots(data["credentials"])
        self.hidden_anchors = _Roots([*data["runDirectories"], *data["credentials"]])
        self.protected = _Roots(
            [
                *data["git"],
                *data["hidden"],
                data["worktree"],
                *data["boundaries"],
                *data["runDirectories"],
                *data["credentials"],
            ]
        )
        self.runtime_root = posixpath.normpath(data["runtimeRoot"])
        self.runtime_directory = posixpath.normpath(data["runtimeDirectory"])
        self.temporary_roots = tuple(posixpath.normpath(t) for t in data["temporaryRoots"])
        self.entries = [(path, level) for level in _LEVELS for path in data[level]]
        self._levels: LevelIndex | None = None
        self._guidance: str | None = None

    def rel(self, path: str) -> str | None:
        return _under(path, self.worktree)

    def shown(self, path: str) -> str:
        """The worktree-relative form a reason names; the worktree root by its absolute path."""
        path = posixpath.normpath(path)
        rel = self.rel(path)
        if rel is None:
            rel = posixpath.relpath(path, self.worktree)
        return rel or self.worktree

    def fill(self, key: str, values: Mapping[str, str]) -> str:
        return fill_reason(self.reasons, key, values)

    # --- the grant's levels (domain.boundary.grant: Grant.level_of, directory_level) ------------

    def levels(self) -> LevelIndex:
        """The grant's levels (`LevelIndex`), indexed when first asked."""
        if self._levels is None:
            self._levels = LevelIndex(self.entries)
        return self._levels

    def level_of(self, rel: str) -> str | None:
        return self.levels().level_of(rel)

    def directory_level(self, rel: str) -> str | None:
        return self.levels().directory_level(rel)

    def below(self, rel: str) -> list[tuple[str, str]]:
        """(entry as listed, level) of every entry strictly below `rel` (`""` = the worktree)."""
        return self.levels().below(rel)

    def withheld_below(self, rel: str) -> list[str]:
        """The `names` entries strictly below `rel`, as listed."""
        return [path for path, level in self.below(rel) if level == "names"]

    # --- what a denied search names instead ------------------------------------------------------

    def searchable_directories(self) -> list[str]:
        """Every ro/rw directory entry with no `names` entry, no Git admin path and nothing hidden
        always below it, absolute, sorted, none inside another."""
        anchors = _Roots([*self.git.given, *self.hidden_anchors.given])
        out: list[str] = []
        for path, level in self.entries:
            if not path.endswith("/") or level not in _READABLE:
                continue
            bare = path.rstrip("/")
            absolute = posixpath.join(self.worktree, bare)
            if self.withheld_below(bare) or anchors.first_below(absolute) is not None:
                continue
            out.append(absolute)
        return sorted({d for d in out if not any(o != d and _under(d, o) is not None for o in out)})

    def guidance(self) -> str:
        """What a denied search tells the worker to search instead."""
        if self._guidance is None:
            dirs = self.searchable_directories()
            if not dirs:
                self._guidance = self.fill("no guidance", {})
                return self._guidance
            shown = ", ".join(dirs[:GUIDANCE_LIMIT])
            more = len(dirs) - GUIDANCE_LIMIT
            if more > 0:
                shown = self.fill("more directories", {"directories": shown, "more": str(more)})
            self._guidance = self.fill("guidance", {"directories": shown})
        return self._guidance


# --- what is judged: a path, and what came with it -----------------------------------------------

_UNKNOWN = "?"


class _Subject:
    """One path judged (normalised) and what came with it; its levels found when first asked."""

    __slots__ = (
        "_level",
        "_root_level",
        "given",
        "glob",
        "is_directory",
        "link",
        "path",
        "pattern",
        "rel",
    )

    def __init__(
        self,
        facts: _Facts,
        path: str,
        *,
        is_directory: bool = True,
        given: str = "",
        link: bool = False,
        pattern: str | None = None,
        glob: str | None = None,
    ) -> None:
        self.path = posixpath.normpath(path)
        self.rel = facts.rel(self.path)
        self.is_directory = is_directory
        self.given, self.link = given, link
        self.pattern, self.glob = pattern, glob
        self._level: str | None = _UNKNOWN
        self._root_level: str | None = _UNKNOWN

    def level(self, f: _Facts) -> str | None:
        """The path's level in the grant (None outside the worktree)."""
        if self._level == _UNKNOWN:
            self._level = None if self.rel is None else f.level_of(self.rel)
        return self._level

    def root_level(self, f: _Facts) -> str | None:
        """A search root's level: a directory's by directory entries only, a file's own."""
        if self._root_level == _UNKNOWN:
            if self.rel is None or not self.is_directory:
                self._root_level = self.level(f)
            else:
                self._root_level = f.directory_level(self.rel)
        return self._root_level


Predicate = Callable[[_Facts, _Subject], bool]
Value = Callable[[_Facts, _Subject], str]


def _git_segment(f: _Facts, s: _Subject) -> bool:
    return s.rel is not None and ".git" in s.rel.split("/")


def _withheld(f: _Facts, s: _Subject) -> str | None:
    found = [] if s.rel is None else f.withheld_below(s.rel)
    return found[0] if found else None


def _source(name: str, find: Callable[[_Facts, _Subject], str | None]) -> Value:
    """A value that may be missing: a row naming it where it is missing is a defect."""

    def value(f: _Facts, s: _Subject) -> str:
        found = find(f, s)
        if found is None:
            raise ValueError(f"the value {name!r} is missing for {s.path}")
        return found

    return value


_GIT_BELOW = _source("git below", lambda f, s: f.git.first_below(s.path))


PREDICATES: Mapping[str, Predicate] = {
    "in git": lambda f, s: f.git.hold(s.path) or _git_segment(f, s),
    "in git admin path": lambda f, s: f.git.hold(s.path),
    "git segment": _git_segment,
    "in run directory": lambda f, s: f.run_directories.hold(s.path),
    "in other run": lambda f, s: is_other_run(
        s.path, f.runtime_root, f.runtime_directory, f.temporary_roots
    ),
    "in credentials": lambda f, s: f.credentials.hold(s.path),
    "in runtime path": lambda f, s: f.runtime.hold(s.path),
    "runtime path at or below": lambda f, s: f.runtime.any_at_or_below(s.path),
    "in worktree": lambda f, s: s.rel is not None,
    "level rw": lambda f, s: s.level(f) == "rw",
    "level ro": lambda f, s: s.level(f) == "ro",
    "level names": lambda f, s: s.level(f) == "names",
    "level readable": lambda f, s: s.level(f) in _READABLE,
    "root level names": lambda f, s: s.root_level(f) == "names",
    "root level readable": lambda f, s: s.root_level(f) in _READABLE,
    "readable below": lambda f, s: (
        s.rel is not None and any(level in _READABLE for _, level in f.below(s.rel))
    ),
    "withheld below": lambda f, s: s.rel is not None and bool(f.withheld_below(s.rel)),
    "in host path": lambda f, s: f.host.hold(s.path),
    "in processes": lambda f, s: _under(s.path, PROCESSES) is not None,
    "in own directory": lambda f, s: f.own.hold(s.path),
    "in boundary": lambda f, s: f.boundaries.hold(s.path),
    "directory": lambda f, s: s.is_directory,
    "link": lambda f, s: s.link,
    "temp root at or below": lambda f, s: _under(f.runtime_root, s.path) is not None,
    "git below": lambda f, s: f.git.first_below(s.path) is not None,
    "hidden below": lambda f, s: f.hidden_anchors.first_below(s.path) is not None,
    "protected below": lambda f, s: f.protected.first_below(s.path) is not None,
    "pattern absolute": lambda f, s: s.pattern is not None and s.pattern.startswith("/"),
    "pattern dotdot": lambda f, s: s.pattern is not None and has_dotdot(s.pattern),
    "glob dotdot": lambda f, s: s.glob is not None and has_dotdot(s.glob),
}
"""What a row's condition may ask of the judged path (`s`) and the policy (`f`): where the path
lies, its level in the grant (`root level`: a directory's by directory entries only), what lies
strictly below it (or `at or below`), whether it is a directory or a link, the call's pattern."""

VALUES: Mapping[str, Value] = {
    "path": lambda f, s: s.path,
    "shown": lambda f, s: f.shown(s.path),
    "given": lambda f, s: s.given,
    "named": lambda f, s: (
        f.fill("link target", {"path": f.shown(s.path), "link": s.given})
        if s.link
        else f.shown(s.path)
    ),
    "guidance": lambda f, s: f.guidance(),
    "git below": _GIT_BELOW,
    "git below, shown": lambda f, s: f.shown(_GIT_BELOW(f, s)),
    "hidden below": _source("hidden below", lambda f, s: f.hidden_anchors.first_below(s.path)),
    "protected below": _source("protected below", lambda f, s: f.protected.first_below(s.path)),
    "withheld below": _source("withheld below", _withheld),
    "pattern": _source("pattern", lambda f, s: s.pattern),
    "glob": _source("glob", lambda f, s: s.glob),
}
"""Where a reason's placeholder may take its value from: the judged path (`path`; `shown`
relative to the worktree; `named` so, or for a link as the target of the link `given`), what to
search instead, the first Git admin path, hidden path, protected path or `names` entry below
the path, the call's Glob pattern and Grep glob."""


# --- rows -----------------------------------------------------------------------------------------

Outcome = Callable[["Judge", _Subject], Decided]
Compiled = tuple[tuple[tuple[Predicate, bool], ...], Outcome]


def _condition(name: str) -> tuple[Predicate, bool]:
    wanted = not name.startswith("not ")
    predicate = PREDICATES.get(name if wanted else name[4:])
    if predicate is None:
        raise ValueError(f"no predicate {name!r}")
    return predicate, wanted


def _value(spec: Any, reasons: Mapping[str, str]) -> Value:
    if isinstance(spec, str):
        if spec not in VALUES:
            raise ValueError(f"no value {spec!r}")
        return VALUES[spec]
    if isinstance(spec, Mapping) and set(spec) == {"text"} and isinstance(spec["text"], str):
        literal: str = spec["text"]
        return lambda f, s: literal
    return _fill(spec, reasons)


def _fill(spec: Any, reasons: Mapping[str, str]) -> Value:
    """A fill: its reason with every placeholder given a value, and no value more."""
    if not isinstance(spec, Mapping) or set(spec) != {"key", "values"}:
        raise ValueError(f"a fill is a reason's key and its values, not {spec!r}")
    key = spec["key"]
    if key not in reasons:
        raise ValueError(f"no reason {key!r}")
    wanted = set(PLACEHOLDER.findall(reasons[key]))
    if set(spec["values"]) != wanted:
        raise ValueError(f"the reason {key!r} takes {sorted(wanted)}, not {sorted(spec['values'])}")
    values = [(name, _value(v, reasons)) for name, v in spec["values"].items()]
    return lambda f, s: f.fill(key, {name: value(f, s) for name, value in values})


_OUTCOME_KEYS = {
    "allow": {"row", "when", "then"},
    "deny": {"row", "when", "then", "reason"},
    "table": {"row", "when", "then", "table"},
}


def _outcome(
    row: Mapping[str, Any], tables: Mapping[str, Any], reasons: Mapping[str, str]
) -> Outcome:
    name, then = row.get("row"), row.get("then")
    if not isinstance(name, str) or then not in _OUTCOME_KEYS or set(row) != _OUTCOME_KEYS[then]:
        raise ValueError(f"a row is its name, its conditions and one outcome, not {row!r}")
    if then == "allow":
        allowed: Decided = (True, name, None)
        return lambda judge, s: allowed
    if then == "table":
        other = row["table"]
        if other not in tables:
            raise ValueError(
                f"the row {name!r} hands over to {other!r}, which is no table "
                "that decides by itself"
            )
        return lambda judge, s: judge.table(other, s)
    because = _fill(row["reason"], reasons)
    return lambda judge, s: (False, name, because(judge.facts, s))


def compile_table(
    rows: Sequence[Mapping[str, Any]], tables: Mapping[str, Any], reasons: Mapping[str, str]
) -> list[Compiled]:
    """A table's rows as conditions and outcomes, each checked against the vocabulary and the
    reasons; a row may hand over only to one of `tables`, and the last row decides whatever the
    path (it has no condition)."""
    compiled: list[Compiled] = []
    for row in rows:
        outcome = _outcome(row, tables, reasons)  # first: it checks the row's keys
        compiled.append((tuple(_condition(c) for c in row["when"]), outcome))
    if not rows or rows[-1]["when"]:
        raise ValueError("the last row of a table must decide whatever the path")
    return compiled


class Judge:
    """The tables of one policy: its facts (`Policy.facts_json`) and its rows, by table name. A
    row hands over only to a table none of whose rows hands over, so no decision loops."""

    def __init__(
        self, facts: Mapping[str, Any], rows: Mapping[str, Sequence[Mapping[str, Any]]]
    ) -> None:
        self.facts = _Facts(facts)
        deciding = {n: t for n, t in rows.items() if all(r.get("then") != "table" for r in t)}
        self._tables = {
            name: compile_table(table, deciding, self.facts.reasons) for name, table in rows.items()
        }

    def table(self, name: str, subject: _Subject) -> Decided:
        """The first row of table `name` whose conditions hold decides."""
        f = self.facts
        for conditions, outcome in self._tables[name]:
            for predicate, wanted in conditions:
                if predicate(f, subject) is not wanted:
                    break
            else:
                return outcome(self, subject)
        raise AssertionError("the last row of a table always decides")  # pragma: no cover

    def read(self, path: str, real: str | None = None) -> Decided:
        """The read table: the lexical path and, when given, its real path must both pass."""
        lexical = self.table("read", _Subject(self.facts, path))
        if not lexical[0] or real is None:
            return lexical
        return self.table("read", _Subject(self.facts, real))

    def write(self, given: str, resolved: str, given_is_link: bool = False) -> Decided:
        """The write table, on the target with every link resolved (the final one included)."""
        return self.table("write", _Subject(self.facts, resolved, given=given, link=given_is_link))

    def search_root(self, root: str, real: str | None = None, is_directory: bool = True) -> Decided:
        """A grep/find/ls root (pi): the lexical root and, when given, its real path."""
        lexical = self.table("search root", _Subject(self.facts, root, is_directory=is_directory))
        if not lexical[0] or real is None:
            return lexical
        return self.table("search root", _Subject(self.facts, real, is_directory=is_directory))

    def search(
        self,
        lexical: str,
        real: str | None = None,
        is_directory: bool = True,
        pattern: str | None = None,
        glob: str | None = None,
    ) -> Decided:
        """A Grep/Glob call (Claude Code): its Glob pattern or Grep glob, its lexical root and,
        when it differs, its real path."""

        def judged(path: str) -> Decided:
            return self.table(
                "search guard",
                _Subject(self.facts, path, is_directory=is_directory, pattern=pattern, glob=glob),
            )

        first = judged(lexical)
        if not first[0] or real is None or posixpath.normpath(real) == posixpath.normpath(lexical):
            return first
        return judged(real)


__all__ = [
    "GUIDANCE_LIMIT",
    "PLACEHOLDER",
    "PREDICATES",
    "PROCESSES",
    "RUNTIME_NAME",
    "RUNTIME_PREFIX",
    "VALUES",
    "Decided",
    "Judge",
    "compile_table",
    "fill_reason",
    "has_dotdot",
    "is_other_run",
]
