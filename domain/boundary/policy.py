"""The policy: everything every backend enforces, derived from ONE frozen grant.

Seed 000 "One grant for the whole run", seed 001 "Both backends enforce the same grant": the deny
rules (`domain/boundary/deny_rules.py`), the sandbox filesystem lists
(`domain/boundary/sandbox_lists.py`), the read and write tables and the search-root decision
come from `build_policy`, which every backend takes; the tool set is a backend profile's
(`domain/boundary/task_types.py` `tool_set`). Here: the decisions of the tables that judge a path
by the grant's levels. Their rows are data (`domain.boundary.rules`: notes/harness.md §1.4/§2.5
write table, §2.4 read table, §2.6 search roots), which the policy carries (`tables`) and hands
to the hooks and the extension with its facts; `domain.boundary.interpreter` interprets them
here as there. Mechanics: notes/harness.md §5 (names-level entries).

Decisions where the spec is silent:
- The read table treats `<rt>/tmp/jiti` (pi's compile cache, denied in the shared sandbox lists)
  like `control/` and `config/` (it "belongs to the host").
- A runtime path is never writable, even inside an rw directory: the write table denies it, the
  walk gives it an `Edit` rule when an rw entry covers it, and the sandbox lists it in denyWrite
  (seed 000 "Reading beside the grant": readable and none writable, to every tool).
- A Git administrative path is denied by the write table before the worktree rows, so an admin
  path outside the worktree gets the Git reason rather than "outside the task worktree".
- What is hidden always (`domain.boundary.hidden`: other runs' runtime directories, the run
directories,
  the credential files at their origins) is judged before every grant row of the three tables.
  The homes (the password database's and `$HOME`), the primary worktree and the configuration
  directories the credentials come from are the "boundaries": hidden whole but the way to what
  the run keeps (issue 8 §2-§4, docs/decisions.md).
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, PrivateAttr

from concorde_workers.domain.boundary.deny_rules import (
    deny_rules,
    other_runs,
    run_directory_denied,
)
from concorde_workers.domain.boundary.grant import Grant, Level
from concorde_workers.domain.boundary.hidden import Hidden, temporary_roots
from concorde_workers.domain.boundary.interpreter import Decided, Judge
from concorde_workers.domain.boundary.rules import (
    REASONS,
    TABLES,
    Tables,
    fill,
    reasons_json,
    rows_json,
)
from concorde_workers.domain.boundary.sandbox_lists import SandboxFilesystem, sandbox_filesystem
from concorde_workers.domain.gitview.placement import AdminPath
from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.ground.errors import Reason, Refusal
from concorde_workers.domain.ground.layout import RuntimeEntries, RuntimeLayout, host_paths
from concorde_workers.domain.ground.paths import (
    ListDir,
    dedupe,
    is_within,
    outermost,
    relative_to,
)
from concorde_workers.domain.ground.run_id import RUNTIME_PREFIX

GRANT_PREFIX = fill("denial", reason="")
GIT_REASON = REASONS["git"]
PI_TABLES = ("read", "write", "search root")
"""The tables `Policy.to_json` carries: those the pi extension interprets."""


def with_prefix(reason: str) -> str:
    """The reason as a tool sees it: every denial carries `Concorde grant: `."""
    return fill("denial", reason=reason)


def could_not_decide(actor: str, error: str) -> str:
    """Rows 7/8 of the write hook: `the hook could not decide: <error>` (actor hook/extension)."""
    return fill("undecided", actor=actor, error=error)


NO_FILE_REASON = could_not_decide("hook", REASONS["no file"])


# --- decisions -----------------------------------------------------------------------------------


class Decision(BaseModel):
    """A table's answer: allow, or deny with the reason text (without the prefix)."""

    model_config = ConfigDict(frozen=True)

    allowed: bool
    reason: str | None = None
    row: str

    @classmethod
    def of(cls, decided: Decided) -> Decision:
        """The decision `domain.boundary.interpreter` gives as (allowed, row, reason)."""
        allowed, row, reason = decided
        return cls(allowed=allowed, reason=reason, row=row)

    @property
    def message(self) -> str | None:
        """The denial as the tool reports it, with `Concorde grant: `; None when allowed."""
        return None if self.reason is None else with_prefix(self.reason)


class Policy(BaseModel):
    """Everything both backends enforce for one run, from one frozen grant."""

    model_config = ConfigDict(frozen=True)

    grant: Grant
    worktree: str
    primary: str
    user_home: str
    boundaries: tuple[str, ...]
    """Hidden whole but the way to what the run keeps: the homes, the primary worktree, the
    configuration directories the credentials come from (none inside another)."""
    runtime: RuntimeLayout
    runtime_paths: tuple[str, ...]
    git: tuple[AdminPath, ...]
    always_hidden: Hidden
    other_runs: tuple[str, ...]
    """The other runs' runtime directories that existed when the rules were generated."""
    tables: Tables = TABLES
    """The rows of the read, write and search tables (`domain.boundary.rules`)."""

    deny_rules: tuple[str, ...]
    sandbox: SandboxFilesystem

    @property
    def hidden_worktree_refusal(self) -> Refusal | None:
        """worktree_misplaced when the worktree itself lies in what is hidden from every tool
        (another run's runtime directory, a run directory, a credential), naming why and the
        repair; None otherwise. A worker there could read and write nothing of its task."""
        found = self.always_hidden.judge(self.worktree)
        if found is None:
            return None
        return Refusal(
            code=Code.WORKTREE_MISPLACED,
            reason=Reason.ENVIRONMENT,
            message=f"the worktree {self.worktree} lies where every worker's tools are refused "
            f"({found[1]}): move the repository elsewhere; a folder directly in the temporary "
            f"directory whose name begins with {RUNTIME_PREFIX} is taken for a run's runtime "
            "directory",
        )

    @property
    def run_directory_refusal(self) -> Refusal | None:
        return run_directory_denied(self.deny_rules, self.runtime)

    # --- the tables: the rows and the interpreter (domain.boundary.rules, .interpreter) ----------

    _judge: Judge | None = PrivateAttr(default=None)

    def judge(self) -> Judge:
        """The interpreter of the policy's rows over its facts, made when first asked."""
        if self._judge is None:
            self._judge = Judge(
                {**self.facts_json(), "reasons": reasons_json()},
                rows_json(self.tables, self.tables),
            )
        return self._judge

    def __eq__(self, other: object) -> bool:
        # The judge is a cache, not part of the policy: two policies are equal by their fields.
        return isinstance(other, Policy) and self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash((self.grant, self.worktree, self.runtime))

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Policy:
        """A copy judges by its own fields: this policy's judge stays behind."""
        copied = super().model_copy(update=update, deep=deep)
        copied._judge = None
        return copied

    def grant_lists(self) -> dict[str, Any]:
        """`{"names", "ro", "rw", "worktree"}` as the write hook embeds them (§1.4), plus the
        Git administrative paths and runtime paths our write table also judges."""
        return {
            "git": [p.path for p in self.git],
            "names": list(self.grant.paths(Level.NAMES)),
            "ro": list(self.grant.paths(Level.RO)),
            "runtime": list(self.runtime_paths),
            "rw": list(self.grant.paths(Level.RW)),
            "worktree": self.worktree,
        }

    def facts_json(self) -> dict[str, Any]:
        """What the rows judge a path by, as the hooks and the extension embed it (beside the
        reasons table): the grant lists, the host, own and hidden paths, the boundaries."""
        return {
            **self.grant_lists(),
            "hidden": list(host_paths(self.runtime)),
            "own": list(self.runtime.worker_dirs),
            "primary": self.primary,
            "userHome": self.user_home,
            "boundaries": list(self.boundaries),
            **self.always_hidden.to_json(),
        }

    def to_json(self) -> dict[str, Any]:
        """The JSON-able policy the pi extension embeds (notes/harness.md §2.2 keys, the rows of
        the tables it interprets and the reasons table of `domain.boundary.rules` its denials
        are filled from; the backend adds `programs`, `limits` and `resultSchema`)."""
        return {
            **self.facts_json(),
            "rows": rows_json(self.tables, PI_TABLES),
            "sandbox": self.sandbox.to_json(),
            "denyRules": list(self.deny_rules),
            "reasons": reasons_json(),
        }

    def rel(self, path: str) -> str:
        return relative_to(path, self.worktree)

    def in_worktree(self, path: str) -> bool:
        return is_within(path, self.worktree)

    def in_git(self, path: str) -> bool:
        """A Git admin path or below, or a `.git` segment in the worktree-relative path."""
        if any(is_within(path, g.path) for g in self.git):
            return True
        return self.in_worktree(path) and ".git" in self.rel(path).split("/")

    def level_of(self, path: str) -> Level | None:
        return self.grant.level_of(self.rel(path))


# --- tool sets (notes/harness.md §1.5) -----------------------------------------------------------

# --- the tables (their rows: domain.boundary.rules) ---------------------------------------------


def decide_read(policy: Policy, path: str, real: str | None = None) -> Decision:
    """The read table: the lexical path and, when it exists, its real path must both pass."""
    return Decision.of(policy.judge().read(path, real))


def decide_write(
    policy: Policy, given: str, resolved: str, given_is_link: bool = False
) -> Decision:
    """The write table, on `resolved`: the target with every link resolved, the final one
    included; `given` is the path the tool named."""
    return Decision.of(policy.judge().write(given, resolved, given_is_link))


def decide_search_root(
    policy: Policy, root: str, real: str | None = None, is_directory: bool = True
) -> Decision:
    """grep/find/ls root: a directory inside the worktree by §2.6, anything else by the read
    table; the lexical root and, when it exists, its real path must both pass."""
    return Decision.of(policy.judge().search_root(root, real, is_directory))


# --- the one entry point -------------------------------------------------------------------------


def _always_hidden(
    runtime: RuntimeLayout,
    run_directories: Sequence[str],
    credentials: Sequence[str],
    tmpdir: str | None,
) -> Hidden:
    root = posixpath.dirname(runtime.root)
    return Hidden(
        runtime_root=root,
        runtime_directory=runtime.root,
        temporary_roots=temporary_roots(tmpdir, root),
        run_directories=dedupe(posixpath.normpath(r) for r in run_directories),
        credentials=dedupe(posixpath.normpath(c) for c in credentials),
    )


def build_policy(
    *,
    grant: Grant,
    worktree: str,
    primary: str,
    user_home: str,
    runtime_dir: str,
    runtime_entries: RuntimeEntries,
    runtime_paths: Sequence[str],
    git: Sequence[AdminPath],
    list_dir: ListDir,
    homes: Sequence[str] = (),
    config_dirs: Sequence[str] = (),
    credentials: Sequence[str] = (),
    run_directories: Sequence[str] = (),
    tmpdir: str | None = None,
    tables: Tables = TABLES,
) -> Policy:
    """The policy of one run from ONE frozen grant; all paths absolute and real, runtime paths
    exactly as the caller listed them (seed 000 "A worker reads beside its grant only what its
    caller lists"). `list_dir` backs the walks of worktree, homes, primary worktree and
    configuration directories, and finds the other runs in the temp root. `runtime_entries` are
    what every registered backend's program keeps in the runtime directory (their profiles').

    Besides the password database's home `user_home`: `homes` (`$HOME`, as given and really),
    `config_dirs` (the configuration directories the credentials come from), `credentials` (the
    credential files at their origins) and `run_directories` (the trace parent's `workers/`), all
    hidden from every tool (issue 8 §2-§4). `tmpdir`: the host environment's system temporary
    directory, hidden whole like `/tmp` (issue 31 §4). `tables` are the rows the decisions
    interpret (`domain.boundary.rules.TABLES`)."""
    worktree, primary, user_home = (posixpath.normpath(p) for p in (worktree, primary, user_home))
    runtime = RuntimeLayout(root=posixpath.normpath(runtime_dir), entries=runtime_entries)
    runtime_paths = tuple(runtime_paths)
    git = tuple(git)
    boundaries = tuple(
        outermost(posixpath.normpath(b) for b in (user_home, *homes, primary, *config_dirs))
    )
    hidden = _always_hidden(runtime, run_directories, credentials, tmpdir)
    others = other_runs(runtime, list_dir)
    every_boundary = (user_home, *homes, primary, *config_dirs)
    seen = (grant, worktree, primary, user_home, runtime, runtime_paths, git)
    return Policy(
        grant=grant,
        worktree=worktree,
        primary=primary,
        user_home=user_home,
        boundaries=boundaries,
        runtime=runtime,
        runtime_paths=runtime_paths,
        git=git,
        always_hidden=hidden,
        other_runs=others,
        tables=tables,
        deny_rules=deny_rules(*seen, list_dir, every_boundary, hidden, others),
        sandbox=sandbox_filesystem(*seen, every_boundary, hidden, others),
    )


__all__ = [
    "GIT_REASON",
    "GRANT_PREFIX",
    "NO_FILE_REASON",
    "PI_TABLES",
    "Decision",
    "Policy",
    "build_policy",
    "could_not_decide",
    "decide_read",
    "decide_search_root",
    "decide_write",
    "with_prefix",
]
