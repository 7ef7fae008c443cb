"""The rules of reading and writing as data: the rows of the read, write and search tables, and
every reason a refusal gives.

**The rows.** Each table is a tuple of `Row`s tried in order, the first whose conditions all hold
deciding: its name (the decision's `row`), its conditions (names of
`domain.boundary.interpreter.PREDICATES`, `not ` before one negating it) and its outcome: allow,
deny with a reason of `REASONS` whose placeholders take their values from named sources
(`interpreter.VALUES`), a literal text or another reason, or hand over to another table. The
tables (`TABLES`):

- `read` (notes/harness.md §2.4), `write` (§1.4, §2.5, judged on the fully resolved target) and
  `search root` (§2.6: pi's grep, find and ls roots), `domain.boundary.policy`;
- `search guard`: Claude Code's Grep and Glob calls (rows a, d, 1, 2, h, 3-7 of
  `adapters.claude.guard.search_guard`).

What is hidden always (`domain.boundary.hidden`: other runs, the run directories, the
credentials) comes before every grant row. The rows are written here only: the domain
(`domain.boundary.interpreter`), the generated Claude Code hooks (which embed that interpreter's
source) and the pi extension (`pi_policy.ts`, its port) receive them as JSON (`rows_json`) with
the policy and only interpret them, so a refusal that uses the predicates there is is one row here.

**The reasons.** Every reason a denied file tool call gives is in `REASONS`; the hooks and the
extension receive the table as data, under the key `reasons` of the policy they embed
(`search_guard.hook_grant`, `Policy.to_json`), and fill a reason as `fill` does here. So a reason
changed here changes for both backends, and tests/unit/boundary/test_reasons.py proves that
`adapters/claude/guard/hook_template.py` and the extension's `.ts` files hold no reason of their
own. A reason is a template: `{name}` is replaced by the value named `name`, once, left to right,
and a value is never scanned again (a Glob pattern may hold braces). Everything else is literal.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.boundary.interpreter import PLACEHOLDER, fill_reason

REASONS: Mapping[str, str] = MappingProxyType(
    {
        # How every denial reaches the worker (notes/harness.md §1.4, §2.3).
        "denial": "Concorde grant: {reason}",
        "undecided": "the {actor} could not decide: {error}",
        # The read table (§2.4), the write table (§1.4, §2.5), the search roots (§2.6).
        "git": "Git metadata is not available to workers",
        "names": "only the name of {path} is visible to this task",
        "not granted": "{path} is not in this task's grant",
        "host": "{path} belongs to the host",
        "processes": "{path} belongs to the host: no process's files are available to workers",
        "boundary": "{path} is outside this task's boundary",
        "outside": "{given} is outside the task worktree",
        "outside link": "{given} is a symbolic link to {resolved}, outside the task worktree",
        "link target": "{path} (the target of the symbolic link {link})",
        "runtime path": (
            "{path} is not in this task's grant; it lies in a runtime path, which workers may read "
            "but never change"
        ),
        "ro": "{path} is read-only for this task",
        "not bound": "{path} is not in this task's grant; a new file outside the bound directories "
        "is created and bound to a Module by the task level before a worker fills it, and "
        "a file another Module binds needs that Module bound to the task",
        "nothing readable": "{path} holds nothing this task may read",
        # What is hidden always (domain.boundary.hidden, issue 8 §2-§4).
        "other run": "{path} belongs to another worker run",
        "run directory": "{path} belongs to the host: run directories are not available to workers",
        "credentials": "{path} holds the user's credentials, which are not available to workers",
        # A hook's input it cannot judge (the `error` of "undecided").
        "input not an object": "the hook input is not a JSON object",
        "tool input not an object": "the tool call's input is not an object",
        "no file": "the tool call names no file",
        "file path not text": "the tool call's file path is not text",
        "path not text": "the tool call's path is not text",
        "pattern not text": "the Glob call's pattern is not text",
        "glob not text": "the Grep call's glob is not text",
        "tool not searched": "the search hook does not judge the tool {tool}",
        # The search hook's roots (adapters.claude.guard.search_guard; docs/decisions.md "Grep and
        # Glob from an ancestor (Claude Code)"): every denial of a root ends with the guidance.
        "absolute pattern": (
            "the Glob pattern {pattern} is absolute, and Claude Code would search from its "
            "directory; give a granted directory as path and a pattern relative to it"
        ),
        "dotdot": (
            "the {argument} {value} has a '..' segment; a search may not leave its directory, so "
            "give the directory you mean as path"
        ),
        "with guidance": "{reason}; {guidance}",
        "guidance": (
            "search a granted directory instead: {directories}; or Read a granted file by its path"
        ),
        "more directories": "{directories} and {more} more",
        "no guidance": (
            "no granted directory can be searched as a whole; Read a granted file by its path "
            "instead"
        ),
        "search not granted": "{path} is not in this task's grant, so a search from it could reach "
        "files this task may not read",
        "withheld below": (
            "a search from {path} would reach {withheld}, whose content this task may not read"
        ),
        "git below": "a search from {path} would reach Git metadata ({anchor}), which is not "
        "available to workers",
        "protected below": (
            "a search from {path} would reach {anchor}, which this task may not search"
        ),
        "other runs below": (
            "a search from {path} would reach other worker runs' runtime directories, which this "
            "task may not search"
        ),
        "search outside": "{path} lies outside the directories this task may search",
    }
)


def placeholders(key: str) -> frozenset[str]:
    """The names reason `key` takes."""
    return frozenset(PLACEHOLDER.findall(REASONS[key]))


def fill(key: str, **values: str) -> str:
    """Reason `key` with each placeholder replaced by its value; exactly its placeholders must be
    given (a wrong name is a defect, found by the first test that meets it)."""
    wanted = placeholders(key)
    if set(values) != wanted:
        raise KeyError(f"the reason {key!r} takes {sorted(wanted)}, not {sorted(values)}")
    return fill_reason(REASONS, key, values)


def reasons_json() -> dict[str, str]:
    """The table as the hooks and the extension embed it."""
    return dict(REASONS)


# --- the rows ------------------------------------------------------------------------------------


class Text(BaseModel):
    """A placeholder's value written out."""

    model_config = ConfigDict(frozen=True)

    text: str


class Fill(BaseModel):
    """A reason of `REASONS` (its key) and where each of its placeholders takes its value from:
    a source of `interpreter.VALUES` by name, a `Text` or another `Fill`."""

    model_config = ConfigDict(frozen=True)

    key: str
    values: Mapping[str, str | Text | Fill] = MappingProxyType({})

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "values": {
                name: value
                if isinstance(value, str)
                else value.to_json()
                if isinstance(value, Fill)
                else {"text": value.text}
                for name, value in self.values.items()
            },
        }


class Row(BaseModel):
    """One row: its name, its conditions (all must hold) and its outcome: `allow`, `deny` with
    its `reason`, or `table`: the decision of the table named."""

    model_config = ConfigDict(frozen=True)

    row: str
    when: tuple[str, ...] = ()
    then: Literal["allow", "deny", "table"]
    reason: Fill | None = None
    table: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The row as JSON that is also a Python literal (no true, false or null): the hooks
        embed it as such."""
        more: dict[str, Any] = {}
        if self.reason is not None:
            more["reason"] = self.reason.to_json()
        if self.table is not None:
            more["table"] = self.table
        return {"row": self.row, "when": list(self.when), "then": self.then, **more}


Table = tuple[Row, ...]
Tables = Mapping[str, Table]


def allow(row: str, *when: str) -> Row:
    return Row(row=row, when=when, then="allow")


def deny(row: str, *when: str, because: Fill) -> Row:
    return Row(row=row, when=when, then="deny", reason=because)


def hand_over(row: str, *when: str, table: str) -> Row:
    """A row whose decision is table `table`'s."""
    return Row(row=row, when=when, then="table", table=table)


def reason(key: str, **values: str | Text | Fill) -> Fill:
    return Fill(key=key, values=values)


def guided(key: str, **values: str | Text | Fill) -> Fill:
    """A denied search root: reason `key`, then what to search instead."""
    return with_guidance(reason(key, **values))


def with_guidance(because: Fill) -> Fill:
    return reason("with guidance", reason=because, guidance="guidance")


HIDDEN_ALWAYS: Table = (
    deny("run directory", "in run directory", because=reason("run directory", path="path")),
    deny("other run", "in other run", because=reason("other run", path="path")),
    deny("credentials", "in credentials", because=reason("credentials", path="path")),
)
"""What no tool ever reads (`domain.boundary.hidden`), before every grant row."""

READ_ROWS: Table = (
    deny("git", "in git", because=reason("git")),
    *HIDDEN_ALWAYS,
    allow("runtime path", "in runtime path"),
    allow("ro or rw", "in worktree", "level readable"),
    deny("names", "in worktree", "level names", because=reason("names", path="shown")),
    deny("not granted", "in worktree", because=reason("not granted", path="shown")),
    deny("host", "in host path", because=reason("host", path="path")),
    deny("processes", "in processes", because=reason("processes", path="path")),
    allow("own directory", "in own directory"),
    deny("boundary", "in boundary", because=reason("boundary", path="path")),
    allow("elsewhere"),
)
"""notes/harness.md §2.4; `<rt>/tmp/jiti`, pi's compile cache, is a host path like `control/`."""

WRITE_ROWS: Table = (
    deny("git", "in git admin path", because=reason("git")),
    *HIDDEN_ALWAYS,
    deny(
        "outside",
        "not in worktree",
        "link",
        because=reason("outside link", given="given", resolved="path"),
    ),
    deny("outside", "not in worktree", because=reason("outside", given="given")),
    deny("git", "git segment", because=reason("git")),
    deny("runtime path", "in runtime path", because=reason("runtime path", path="named")),
    allow("rw", "level rw"),
    deny("ro", "level ro", because=reason("ro", path="named")),
    deny("names", "level names", because=reason("names", path="named")),
    deny("not granted", because=reason("not bound", path="named")),
)
"""notes/harness.md §1.4, §2.5, on the target with every link resolved. A Git admin path comes
before the worktree rows (outside the worktree it gets the Git reason, not "outside"); a runtime
path is never writable, even in an rw directory."""

SEARCH_ROOT_ROWS: Table = (
    hand_over("a file", "not directory", table="read"),
    hand_over("outside the worktree", "not in worktree", table="read"),
    deny("git", "in git", because=reason("git")),
    *HIDDEN_ALWAYS,
    allow("runtime path", "in runtime path"),
    allow("runtime path", "runtime path at or below"),
    allow("readable at, below or above", "root level readable"),
    allow("readable at, below or above", "level readable"),
    allow("readable at, below or above", "readable below"),
    deny("nothing readable", because=reason("nothing readable", path="shown")),
)
"""notes/harness.md §2.6: a directory in the worktree from which something readable can be
found; a file, or anything outside the worktree, by the read table."""


def _nothing_protected_below(where: str, row: str) -> Table:
    """A search from a directory where reading is allowed, unless it would reach the other runs
    or a protected path (a Git admin path first)."""
    return (
        deny(
            "other runs below",
            where,
            "temp root at or below",
            because=guided("other runs below", path="path"),
        ),
        deny(
            "git below",
            where,
            "git below",
            because=guided("git below", path="path", anchor="git below"),
        ),
        deny(
            "protected below",
            where,
            "protected below",
            because=guided("protected below", path="path", anchor="protected below"),
        ),
        allow(row, where),
    )


SEARCH_GUARD_ROWS: Table = (
    deny(
        "absolute pattern",
        "pattern absolute",
        because=reason("absolute pattern", pattern="pattern"),
    ),
    deny(
        "dotdot",
        "pattern dotdot",
        because=reason("dotdot", argument=Text(text="Glob pattern"), value="pattern"),
    ),
    deny(
        "dotdot",
        "glob dotdot",
        because=reason("dotdot", argument=Text(text="Grep glob"), value="glob"),
    ),
    deny("git", "in git", because=reason("git")),
    deny("host", "in host path", because=guided("host", path="path")),
    *(
        r.model_copy(update={"reason": with_guidance(r.reason)})
        for r in HIDDEN_ALWAYS
        if r.reason is not None
    ),
    *_nothing_protected_below("in runtime path", "runtime path"),
    deny("names", "in worktree", "root level names", because=guided("names", path="shown")),
    deny(
        "not granted",
        "in worktree",
        "not root level readable",
        because=guided("search not granted", path="shown"),
    ),
    deny(
        "withheld below",
        "in worktree",
        "withheld below",
        because=guided("withheld below", path="shown", withheld="withheld below"),
    ),
    deny(
        "protected below",
        "in worktree",
        "hidden below",
        because=guided("protected below", path="shown", anchor="hidden below"),
    ),
    deny(
        "git below",
        "in worktree",
        "git below",
        because=guided("git below", path="shown", anchor="git below, shown"),
    ),
    allow("ro or rw", "in worktree"),
    *_nothing_protected_below("in own directory", "own directory"),
    deny("outside", because=guided("search outside", path="path")),
)
"""Claude Code's Grep and Glob (docs/decisions.md "Grep and Glob from an ancestor"): a Glob
pattern that is absolute or, like a Grep glob, has a `..` segment; then the root, which must hold
nothing the task may not read. Every denial of a root names the directories to search instead."""

TABLES: Tables = MappingProxyType(
    {
        "read": READ_ROWS,
        "write": WRITE_ROWS,
        "search root": SEARCH_ROOT_ROWS,
        "search guard": SEARCH_GUARD_ROWS,
    }
)


def rows_json(tables: Tables, names: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
    """Tables `names` of `tables` as the interpreters read them."""
    return {name: [row.to_json() for row in tables[name]] for name in names}


__all__ = [
    "HIDDEN_ALWAYS",
    "PLACEHOLDER",
    "READ_ROWS",
    "REASONS",
    "SEARCH_GUARD_ROWS",
    "SEARCH_ROOT_ROWS",
    "TABLES",
    "WRITE_ROWS",
    "Fill",
    "Row",
    "Table",
    "Tables",
    "Text",
    "allow",
    "deny",
    "fill",
    "guided",
    "hand_over",
    "placeholders",
    "reason",
    "reasons_json",
    "rows_json",
    "with_guidance",
]
