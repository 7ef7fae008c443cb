"""Grep and Glob from an ancestor (Claude Code): the search hook's decision.

Claude Code's deny rules check only a Grep/Glob call's `path` argument; a search rooted at an
ancestor of a denied path (the worktree root, the primary worktree, `/`) returns the denied files
(notes/claude-code.md §4, LEAK). The generated `control/search_hook.py`, a PreToolUse hook on
`Grep|Glob`, therefore allows only a search root under which nothing the task may not read can be
found, and denies every other root with a reason naming the granted directories to search instead
(docs/decisions.md "Grep and Glob from an ancestor (Claude Code)").

This module is the decision as a pure function over the shared policy; the hook template
(`adapters/claude/hook_template.py`, stdlib only) carries a faithful re-implementation over the
embedded JSON (`hook_grant`), and the parity tests run both on the same inputs.

The root is judged lexically and, when allowed, by its real path too.
Rows, first match decides (row t: a tool other than Grep/Glob, or a path/pattern/glob that is
not text, denies as "could not decide"):

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

import posixpath
import re
from collections.abc import Mapping, Sequence
from typing import Any

from concorde_workers.domain.boundary.grant import (
    READABLE,
    Grant,
    Level,
    directory_level,
    entries_below,
)
from concorde_workers.domain.boundary.paths import is_within
from concorde_workers.domain.boundary.policy import GIT_REASON, Decision, Policy, could_not_decide
from concorde_workers.domain.boundary.rules import REASONS, fill, reasons_json
from concorde_workers.domain.evidence.layout import host_paths

SEARCH_TOOLS = ("Grep", "Glob")
SEARCH_TOOLS_MATCHER = "Grep|Glob"
GUIDANCE_LIMIT = 12
"""At most this many directories are named in one reason; the rest are counted."""

JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
"""What JavaScript's `trim` strips: Claude Code trims a path before resolving it."""

_SEGMENT_SPLIT = re.compile(r"[/\s,{}]")


def _allow(row: str) -> Decision:
    return Decision(allowed=True, row=row)


def _deny(row: str, reason: str) -> Decision:
    return Decision(allowed=False, reason=reason, row=row)


def hook_grant(policy: Policy) -> dict[str, Any]:
    """The JSON the hooks embed as `GRANT`: the policy's `grant_lists()` (names, ro, rw,
    worktree, git, runtime) plus what the search decision also needs, and the reasons table
    (`domain.boundary.rules`) the hooks fill their denials from; keys sorted on output."""
    runtime = policy.runtime
    return {
        **policy.grant_lists(),
        "hidden": list(host_paths(runtime)),
        "home": runtime.home,
        "own": list(runtime.worker_dirs),
        "primary": policy.primary,
        "userHome": policy.user_home,
        "boundaries": list(policy.boundaries),
        **policy.always_hidden.to_json(),
        "reasons": reasons_json(),
    }


def claude_path(raw: str, cwd: str, home: str) -> str:
    """An argument path as Claude Code resolves it (its `expandPath`): trimmed like JavaScript's
    `trim`; empty → the working directory; `~` and `~/…` → the worker's HOME; relative → joined
    to the working directory; then normalised lexically, `..` before any link (Node's
    `path.resolve`); a leading `//` collapses to `/`."""
    text = raw.strip(JS_WHITESPACE)
    if not text:
        path = cwd
    elif text == "~":
        path = home
    elif text.startswith("~/"):
        path = posixpath.join(home, text[2:])
    else:
        path = posixpath.join(cwd, text)
    path = posixpath.normpath(path)
    return "/" + path.lstrip("/") if path.startswith("//") else path


def has_dotdot(value: str) -> bool:
    """A `..` segment, between `/`, whitespace, `,`, `{` or `}` (Claude Code splits a Grep glob
    on whitespace and commas, and a brace list holds alternatives)."""
    return ".." in _SEGMENT_SPLIT.split(value)


def search_root(tool_name: object, tool_input: Mapping[str, Any], cwd: str,
                home: str) -> str | Decision:
    """The call's lexical search root (absolute), or the denial of rows t, a and d."""
    if tool_name not in SEARCH_TOOLS:
        return _deny("tool", could_not_decide("hook", fill("tool not searched",
                                                           tool=str(tool_name))))
    path = tool_input.get("path")
    if path is not None and not isinstance(path, str):
        return _deny("input", could_not_decide("hook", REASONS["path not text"]))
    if tool_name == "Glob":
        pattern = tool_input.get("pattern")
        if not isinstance(pattern, str):
            return _deny("input", could_not_decide("hook", REASONS["pattern not text"]))
        if pattern.startswith("/"):
            return _deny("absolute pattern", fill("absolute pattern", pattern=pattern))
        if has_dotdot(pattern):
            return _deny("dotdot", fill("dotdot", argument="Glob pattern", value=pattern))
    else:
        glob = tool_input.get("glob")
        if glob is not None and not isinstance(glob, str):
            return _deny("input", could_not_decide("hook", REASONS["glob not text"]))
        if glob is not None and has_dotdot(glob):
            return _deny("dotdot", fill("dotdot", argument="Grep glob", value=glob))
    return claude_path(path or "", cwd, home)


# --- the root ------------------------------------------------------------------------------------


def _withheld_below(grant: Grant, rel: str) -> list[str]:
    """Entries strictly below `rel` whose content the task may not read (level names)."""
    return [e.path for e in entries_below(grant, rel) if e.level is Level.NAMES]


def _strictly_below(paths: Sequence[str], root: str) -> list[str]:
    return [p for p in paths if is_within(p, root) and posixpath.normpath(p) != root]


def searchable_directories(policy: Policy) -> list[str]:
    """The granted directories a search may start from: every ro/rw directory entry with no
    `names` entry, no Git admin path and nothing hidden always below it, absolute, sorted, none
    inside another."""
    hidden = policy.always_hidden
    anchors = [*(g.path for g in policy.git), *hidden.run_directories, *hidden.credentials]
    out: list[str] = []
    for e in policy.grant.entries:
        if not e.is_directory or e.level not in READABLE:
            continue
        absolute = posixpath.join(policy.worktree, e.bare)
        if _withheld_below(policy.grant, e.bare) or _strictly_below(anchors, absolute):
            continue
        out.append(absolute)
    return sorted({d for d in out if not any(o != d and is_within(d, o) for o in out)})


def guidance(policy: Policy) -> str:
    """What a denied search reason tells the worker to do instead."""
    dirs = searchable_directories(policy)
    if not dirs:
        return REASONS["no guidance"]
    shown = ", ".join(dirs[:GUIDANCE_LIMIT])
    more = len(dirs) - GUIDANCE_LIMIT
    if more > 0:
        shown = fill("more directories", directories=shown, more=str(more))
    return fill("guidance", directories=shown)


def _guided(row: str, key: str, policy: Policy, **values: str) -> Decision:
    """A denied root: reason `key` and what to search instead."""
    return _deny(row, fill("with guidance", reason=fill(key, **values),
                           guidance=guidance(policy)))


def _protected(policy: Policy) -> list[str]:
    hidden = policy.always_hidden
    return [*(g.path for g in policy.git), *host_paths(policy.runtime), policy.worktree,
            *policy.boundaries, *hidden.run_directories, *hidden.credentials]


def _nothing_protected_below(policy: Policy, path: str, row: str) -> Decision:
    if is_within(policy.always_hidden.runtime_root, path):
        return _guided("other runs below", "other runs below", policy, path=path)
    git = [g.path for g in policy.git]
    for anchor in _strictly_below(_protected(policy), path):
        if anchor in git:
            return _guided("git below", "git below", policy, path=path, anchor=anchor)
        return _guided("protected below", "protected below", policy, path=path, anchor=anchor)
    return _allow(row)


def _in_worktree(policy: Policy, path: str, is_directory: bool) -> Decision:
    rel = policy.rel(path)
    shown = policy.shown(path)
    level = directory_level(policy.grant, rel) if is_directory else policy.grant.level_of(rel)
    if level is Level.NAMES:
        return _guided("names", "names", policy, path=shown)
    if level not in READABLE:
        return _guided("not granted", "search not granted", policy, path=shown)
    withheld = _withheld_below(policy.grant, rel)
    if withheld:
        return _guided("withheld below", "withheld below", policy, path=shown,
                       withheld=withheld[0])
    hidden = policy.always_hidden
    for anchor in _strictly_below([*hidden.run_directories, *hidden.credentials], path):
        return _guided("protected below", "protected below", policy, path=shown, anchor=anchor)
    for git in _strictly_below([g.path for g in policy.git], path):
        return _guided("git below", "git below", policy, path=shown, anchor=policy.shown(git))
    return _allow("ro or rw")


def _judge(policy: Policy, path: str, is_directory: bool) -> Decision:
    path = posixpath.normpath(path)
    if policy.in_git(path):
        return _deny("git", GIT_REASON)
    if any(is_within(path, h) for h in host_paths(policy.runtime)):
        return _guided("host", "host", policy, path=path)
    hidden = policy.hidden_always(path)
    if hidden is not None:
        return _deny(hidden.row, fill("with guidance", reason=str(hidden.reason),
                                      guidance=guidance(policy)))
    if policy.in_runtime_path(path):
        return _nothing_protected_below(policy, path, "runtime path")
    if policy.in_worktree(path):
        return _in_worktree(policy, path, is_directory)
    if any(is_within(path, o) for o in policy.runtime.worker_dirs):
        return _nothing_protected_below(policy, path, "own directory")
    return _guided("outside", "search outside", policy, path=path)


def decide_search(policy: Policy, lexical: str, real: str | None = None,
                  is_directory: bool = True) -> Decision:
    """Rows 1-7 for a search root: the lexical root and, when it differs, its real path (every
    link resolved) must both pass. `is_directory` is what the real path is; a root that does not
    exist is judged as a directory."""
    first = _judge(policy, lexical, is_directory)
    if not first.allowed or real is None or posixpath.normpath(real) == posixpath.normpath(
            lexical):
        return first
    return _judge(policy, real, is_directory)


def decide_search_call(policy: Policy, tool_name: object, tool_input: Mapping[str, Any], cwd: str,
                       real: str | None = None, is_directory: bool = True) -> Decision:
    """The whole call: rows t/a/d, then the root (`real` is the root's real path, which only the
    caller can find)."""
    root = search_root(tool_name, tool_input, cwd, policy.runtime.home)
    if isinstance(root, Decision):
        return root
    return decide_search(policy, root, real, is_directory)


__all__ = [
    "JS_WHITESPACE", "SEARCH_TOOLS", "SEARCH_TOOLS_MATCHER", "claude_path", "decide_search",
    "decide_search_call", "guidance", "has_dotdot", "hook_grant", "search_root",
    "searchable_directories",
]
