"""Every reason a denied file tool call gives, in one table.

The read, write and search-root tables (`domain.boundary.policy`, notes/harness.md §1.4, §2.4-§2.6),
what
is hidden always (`domain.boundary.hidden`) and the search hook's rows
(`domain.boundary.search_guard`) take their
reasons from `REASONS`. The generated Claude Code hooks and the pi permission extension do not
hold copies: they receive the table as data, under the key `reasons` of the policy they embed
(`search_guard.hook_grant`, `Policy.to_json`), and fill a reason as `fill` does here. So a reason
changed here changes for both backends, and tests/unit/test_reasons.py proves that
`adapters/claude/hook_template.py` and the extension's `.ts` files hold no reason of their own.

A reason is a template: `{name}` is replaced by the value named `name`, once, left to right, and
a value is never scanned again (a Glob pattern may hold braces). Everything else is literal.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")
"""What `fill` replaces; the hook template and pi_policy.ts use the same expression."""

REASONS: Mapping[str, str] = MappingProxyType({
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
    "runtime path": "{path} is not in this task's grant; it lies in a runtime path, which workers "
                    "may read but never change",
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
    # The search hook's roots (domain.boundary.search_guard; docs/decisions.md "Grep and Glob from
    # an
    # ancestor (Claude Code)"): every denial of a root ends with the guidance.
    "absolute pattern": "the Glob pattern {pattern} is absolute, and Claude Code would search from "
                        "its directory; give a granted directory as path and a pattern relative "
                        "to it",
    "dotdot": "the {argument} {value} has a '..' segment; a search may not leave its directory, so "
              "give the directory you mean as path",
    "with guidance": "{reason}; {guidance}",
    "guidance": "search a granted directory instead: {directories}; or Read a granted file by its "
                "path",
    "more directories": "{directories} and {more} more",
    "no guidance": "no granted directory can be searched as a whole; Read a granted file by its "
                   "path instead",
    "search not granted": "{path} is not in this task's grant, so a search from it could reach "
                          "files this task may not read",
    "withheld below": "a search from {path} would reach {withheld}, whose content this task may "
                      "not read",
    "git below": "a search from {path} would reach Git metadata ({anchor}), which is not "
                 "available to workers",
    "protected below": "a search from {path} would reach {anchor}, which this task may not search",
    "other runs below": "a search from {path} would reach other worker runs' runtime directories, "
                        "which this task may not search",
    "search outside": "{path} lies outside the directories this task may search",
})


def placeholders(key: str) -> frozenset[str]:
    """The names reason `key` takes."""
    return frozenset(PLACEHOLDER.findall(REASONS[key]))


def fill(key: str, **values: str) -> str:
    """Reason `key` with each placeholder replaced by its value; exactly its placeholders must be
    given (a wrong name is a defect, found by the first test that meets it)."""
    wanted = placeholders(key)
    if set(values) != wanted:
        raise KeyError(f"the reason {key!r} takes {sorted(wanted)}, not {sorted(values)}")
    return PLACEHOLDER.sub(lambda m: values[m.group(1)], REASONS[key])


def reasons_json() -> dict[str, str]:
    """The table as the hooks and the extension embed it."""
    return dict(REASONS)


__all__ = ["PLACEHOLDER", "REASONS", "fill", "placeholders", "reasons_json"]
