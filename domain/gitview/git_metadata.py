"""Git metadata a worker left in the worktree, told plainly (issue 8 §1).

A `.git` entry the audit finds new or changed is a violation whatever the level around it
(`domain.run.audit.path_violation`). Its path alone does not tell the person reading the account why
it matters: a repository inside the worktree carries a configuration, and the next Git command
that reaches it runs what that configuration names (a clean filter on a plain `git status`,
which recurses into a submodule path; an fsmonitor; hooks on a commit). This module holds what
the host read of such an entry (as text, never by running Git in it) and the sentence the record
and the account give.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

RUNS_SHOWN = 8
"""How many configuration entries a description quotes before it says how many more."""
VALUE_SHOWN = 1000
"""How many characters of one configured command a description quotes."""
ITEMS_SHOWN = 20
"""How many Git metadata entries an error's detail describes before it says how many more."""


class GitMetadata(BaseModel):
    """One `.git` entry the audit found new or changed, as the host read it.

    `path` is relative to the worktree; `created` says it was absent at the snapshot; `kind` is
    `directory`, `file`, `symbolic link` or `other`; `points_to` is the Git directory a `.git`
    file or link names; `submodule` the gitlink path it lies in (a plain `git status` in the
    worktree recurses there), or None; `runs` the entries of its configuration that make Git run
    a program or read configuration from elsewhere (`key = value`); `hooks` the hooks that would
    run. `moved_to` is where the host moved it as evidence; `left` why it is still in place;
    `left_out` what its archive could not hold (the run's archives are capped); `removed` that
    it was removed from the worktree with no archive at all (the cap was used up)."""

    model_config = ConfigDict(frozen=True)

    path: str
    created: bool
    kind: str
    points_to: str | None = None
    submodule: str | None = None
    runs: tuple[str, ...] = ()
    hooks: tuple[str, ...] = ()
    moved_to: str | None = None
    left: str | None = None
    left_out: str | None = None
    removed: bool = False


def _quote(value: str) -> str:
    value = value.replace("\n", "\\n")
    return value if len(value) <= VALUE_SHOWN else value[:VALUE_SHOWN] + "…"


def _what(item: GitMetadata) -> str:
    verb = "created" if item.created else "changed"
    if item.kind == "directory" and item.path.rsplit("/", 1)[-1] != ".git":
        what = (
            f"a directory Git takes for a repository (a HEAD, objects/ and refs/), which "
            f"the worker {verb}: Git uses it, and what it configures, for whoever works in "
            "it"
        )
    elif item.kind == "directory":
        what = f"a Git repository the worker {verb}"
    elif item.points_to is not None:
        what = f"a .git {item.kind} the worker {verb}, naming the Git directory {item.points_to}"
    else:
        what = f"a .git {item.kind} the worker {verb}"
    if item.submodule is not None:
        what += (
            f" in the submodule path {item.submodule}, where a plain git status in the "
            "worktree goes"
        )
    return what


def _runs(item: GitMetadata) -> str:
    parts: list[str] = []
    if item.runs:
        shown = [_quote(r) for r in item.runs[:RUNS_SHOWN]]
        more = len(item.runs) - RUNS_SHOWN
        parts.append("; ".join(shown) + (f"; and {more} more" if more > 0 else ""))
    if item.hooks:
        parts.append("hooks " + ", ".join(item.hooks))
    if not parts:
        return "its configuration names no program"
    return "the next Git command there would run what it configures: " + "; ".join(parts)


def describe_one(item: GitMetadata, worktree: str) -> str:
    """One sentence: what the entry is, what it would run, and where it is now."""
    text = f"{item.path} is {_what(item)}; {_runs(item)}"
    if item.moved_to is not None:
        text += f"; the host moved it out of the worktree, as evidence, into {item.moved_to}"
        if item.left_out is not None:
            text += f", left out of its archive: {item.left_out}"
    elif item.removed:
        text += (
            f"; the host removed it from the worktree without keeping it (left out of "
            f"the archives: {item.left_out})"
        )
    else:
        why = f" ({item.left})" if item.left else ""
        text += (
            f"; it is still in the worktree{why}: remove it before running Git there "
            f"(rm -rf -- {worktree.rstrip('/')}/{item.path})"
        )
    return text


def describe_git_metadata(items: Sequence[GitMetadata], worktree: str) -> str:
    """The Git metadata a round left, for an error's detail (at most `ITEMS_SHOWN` entries
    told, then how many more: the detail is written into every trace write); empty when
    there is none."""
    told = " ".join(describe_one(item, worktree) + "." for item in items[:ITEMS_SHOWN])
    more = len(items) - ITEMS_SHOWN
    if more > 0:
        told += (
            f" And {more} more Git metadata entries, each among the round's audit "
            "violations, handled the same way."
        )
    return told


def found_before_refusal(items: Sequence[GitMetadata], worktree: str) -> str:
    """Why a run is refused before launch: Git metadata inside the grant's rw directories at
    the snapshot that would run a program for whoever next uses Git there (an interrupted run
    leaves what its worker planted in place), each with what it runs, and the repair."""
    root = worktree.rstrip("/")
    found = "; ".join(f"{item.path} ({_runs(item)})" for item in items)
    removals = " ".join(f"rm -rf -- {root}/{item.path}" for item in items)
    return (
        f"the worktree holds Git metadata inside the grant's rw directories, where a worker "
        f"could have made it, that would run a program for whoever next uses Git there: "
        f"{found}. An interrupted run leaves what its worker planted in place, and the next "
        f"run cannot tell it from yours: if a worker made it, remove it ({removals}); if it "
        "is yours, remove what its configuration and hooks run, or move it out of the rw "
        "directories; then run again"
    )
