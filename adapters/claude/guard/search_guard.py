"""Grep and Glob from an ancestor (Claude Code): the search hook's decision.

Claude Code's deny rules check only a Grep/Glob call's `path` argument; a search rooted at an
ancestor of a denied path (the worktree root, the primary worktree, `/`) returns the denied files
(notes/claude-code.md §4, LEAK). The generated `control/search_hook.py`, a PreToolUse hook on
`Grep|Glob`, therefore allows only a search root under which nothing the task may not read can be
found, and denies every other root with a reason naming the granted directories to search instead
(docs/decisions.md "Grep and Glob from an ancestor (Claude Code)").

Here: the call's root as Claude Code resolves it (`search_root`; `claude_path` is the hook
template's, written once there since the generated hook is standalone) and the decision, whose
rows are the table `search guard` of `domain.boundary.rules`, interpreted by
`domain.boundary.interpreter` (which the generated hooks embed, with the rows, `hook_rows`).

The root is judged lexically and, when allowed, by its real path too.
Rows, first match decides (row t: a tool other than Grep/Glob, or a path/pattern/glob that is
not text, denies as "could not decide", before the table):

- a: Glob with an absolute `pattern` (Claude Code would search from the pattern's directory): deny;
- d: a `..` segment in a Glob `pattern` or a Grep `glob`: deny;
- 1: the root at or below a Git admin path, or a `.git` segment inside the worktree: deny (Git);
- 2: at or below `control/`, `config/` or `tmp/jiti`: deny (belongs to the host);
- h: at or below what is hidden always (`domain.boundary.hidden`: another run's runtime directory,
the run
  directories, a credential file): deny with its reason;
- 3: at or below a runtime path, nothing protected below: allow;
- 4: in the worktree with level ro/rw (directory entries only, for a directory), no `names`
  entry and no Git admin path below: allow;
- 5: in the worktree otherwise: deny (names, not granted, withheld below, Git below);
- 6: at or below the worker's work/, home/ or tmp/, nothing protected below: allow;
- 7: anything else: deny (outside the searchable directories).

"Protected" = a Git admin path, a host path, the worktree, a boundary (the homes, the primary
worktree, the configuration directories), a run directory or a credential file; and a root at or
above the temp root would reach the other runs' runtime directories.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from concorde_workers.adapters.claude.guard.hook_template import (
    JS_WHITESPACE,
    SEARCH_TOOLS,
    claude_path,
)
from concorde_workers.domain.boundary.interpreter import GUIDANCE_LIMIT, has_dotdot
from concorde_workers.domain.boundary.policy import Decision, Policy, could_not_decide
from concorde_workers.domain.boundary.rules import REASONS, fill, reasons_json, rows_json

SEARCH_TOOLS_MATCHER = "Grep|Glob"
HOOK_TABLES = ("read", "write", "search guard")
"""The tables the generated hooks interpret: the read hook's, the write hook's, the search
hook's."""


def hook_grant(policy: Policy) -> dict[str, Any]:
    """The JSON the hooks embed as `GRANT`: the policy's facts (`Policy.facts_json`: the grant
    lists, the host, own and hidden paths, the boundaries), the worker's HOME (`~` in a path) and
    the reasons table the hooks fill their denials from; keys sorted on output."""
    return {**policy.facts_json(), "home": policy.runtime.home, "reasons": reasons_json()}


def hook_rows(policy: Policy) -> dict[str, list[dict[str, Any]]]:
    """The JSON the hooks embed as `ROWS`: the policy's rows of `HOOK_TABLES`."""
    return rows_json(policy.tables, HOOK_TABLES)


def search_root(
    tool_name: object, tool_input: Mapping[str, Any], cwd: str, home: str
) -> str | Decision:
    """The call's lexical search root (absolute), or the denial of row t: a tool this hook does
    not judge, or a path, Glob pattern or Grep glob that is not text."""
    if tool_name not in SEARCH_TOOLS:
        return _undecided("tool", fill("tool not searched", tool=str(tool_name)))
    path = tool_input.get("path")
    if path is not None and not isinstance(path, str):
        return _undecided("input", REASONS["path not text"])
    if tool_name == "Glob" and not isinstance(tool_input.get("pattern"), str):
        return _undecided("input", REASONS["pattern not text"])
    glob = tool_input.get("glob")
    if tool_name == "Grep" and glob is not None and not isinstance(glob, str):
        return _undecided("input", REASONS["glob not text"])
    return claude_path(path or "", cwd, home)


def _undecided(row: str, error: str) -> Decision:
    return Decision(allowed=False, reason=could_not_decide("hook", error), row=row)


def searchable_directories(policy: Policy) -> list[str]:
    """The granted directories a search may start from: every ro/rw directory entry with no
    `names` entry, no Git admin path and nothing hidden always below it, absolute, sorted, none
    inside another."""
    return policy.judge().facts.searchable_directories()


def guidance(policy: Policy) -> str:
    """What a denied search reason tells the worker to do instead."""
    return policy.judge().facts.guidance()


def decide_search(
    policy: Policy,
    lexical: str,
    real: str | None = None,
    is_directory: bool = True,
    pattern: str | None = None,
    glob: str | None = None,
) -> Decision:
    """The table `search guard` for a search root: the call's Glob `pattern` or Grep `glob`,
    then the lexical root and, when it differs, its real path (every link resolved), must pass.
    `is_directory` is what the real path is; a root that does not exist is judged as a
    directory."""
    return Decision.of(policy.judge().search(lexical, real, is_directory, pattern, glob))


def decide_search_call(
    policy: Policy,
    tool_name: object,
    tool_input: Mapping[str, Any],
    cwd: str,
    real: str | None = None,
    is_directory: bool = True,
) -> Decision:
    """The whole call: row t, then the table (`real` is the root's real path, which only the
    caller can find)."""
    root = search_root(tool_name, tool_input, cwd, policy.runtime.home)
    if isinstance(root, Decision):
        return root
    glob_call = tool_name == "Glob"
    return decide_search(
        policy,
        root,
        real,
        is_directory,
        pattern=tool_input["pattern"] if glob_call else None,
        glob=None if glob_call else tool_input.get("glob"),
    )


__all__ = [
    "GUIDANCE_LIMIT",
    "HOOK_TABLES",
    "JS_WHITESPACE",
    "SEARCH_TOOLS",
    "SEARCH_TOOLS_MATCHER",
    "claude_path",
    "decide_search",
    "decide_search_call",
    "guidance",
    "has_dotdot",
    "hook_grant",
    "hook_rows",
    "search_root",
    "searchable_directories",
]
