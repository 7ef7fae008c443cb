"""The policy: everything both backends enforce, derived from ONE frozen grant.

Seed 000 "One grant for the whole run", seed 001 "Both backends enforce the same grant": the deny
rules, the sandbox filesystem lists, the read and write tables, the search-root decision and the
tool sets come from `build_policy`, which both backends call. Mechanics: notes/harness.md §1.2
(sandbox lists), §1.3 (deny rules), §1.4/§2.5 (write table), §2.4 (read table), §2.6 (search
roots), §1.5 (tool sets), §5 (names-level entries).

Decisions where the spec is silent:
- The pi hardening of notes/pi.md §9 sits in the SHARED sandbox lists: denyRead and denyWrite
  `<rt>/tmp/jiti`, denyWrite `<rt>/work/.pi`. One list for both backends keeps "the same code";
  Claude Code has no jiti cache and no `.pi`, so the entries are inert there. The read table treats
  `<rt>/tmp/jiti` like `control/` and `config/` (it "belongs to the host").
- A runtime path is never writable, even inside an rw directory: the write table denies it, the
  walk gives it an `Edit` rule when an rw entry covers it, and the sandbox lists it in denyWrite
  (seed 000 "Reading beside the grant": readable and none writable, to every tool).
- A Git administrative path is denied by the write table before the worktree rows, so an admin
  path outside the worktree gets the Git reason rather than "outside the task worktree".
- The deny-rule cover hides a directory wholesale when its covering level is neither ro nor rw
  and no ro/rw entry lies below it (upstream's "no ro/rw path at, below or above" made exact for
  a `names` directory below an ro one), so the rule count scales with the grant.
- What is hidden always (`domain.hidden`: other runs' runtime directories, the run directories,
  the credential files at their origins) is judged before every grant row of the three tables.
  The homes (the password database's and `$HOME`), the primary worktree and the configuration
  directories the credentials come from are the "boundaries": hidden whole but the way to what
  the run keeps (issue 8 §2-§4, docs/decisions.md).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.errors import Reason, Refusal
from concorde_workers.domain.grant import Grant, GrantEntry, Level
from concorde_workers.domain.hidden import Hidden
from concorde_workers.domain.layout import RuntimeLayout
from concorde_workers.domain.paths import EntryKind, ListDir, is_within, relative_to
from concorde_workers.domain.placement import AdminPath
from concorde_workers.domain.reasons import REASONS, fill, reasons_json
from concorde_workers.domain.request import Backend
from concorde_workers.domain.run_id import RUNTIME_PREFIX
from concorde_workers.domain.task_types import BASH_TASK_TYPES, TaskType, writes_nothing

GRANT_PREFIX = fill("denial", reason="")
GIT_REASON = REASONS["git"]
READABLE = frozenset({Level.RO, Level.RW})


def with_prefix(reason: str) -> str:
    """The reason as a tool sees it: every denial carries `Concorde grant: `."""
    return fill("denial", reason=reason)


def could_not_decide(actor: str, error: str) -> str:
    """Rows 7/8 of the write hook: `the hook could not decide: <error>` (actor hook/extension)."""
    return fill("undecided", actor=actor, error=error)


NO_FILE_REASON = could_not_decide("hook", REASONS["no file"])


# --- runtime directory layout (seed 000 "Run directory and runtime directory") -------------------


def jiti_cache(runtime: RuntimeLayout) -> str:
    """pi's compile cache of the extension, `<rt>/tmp/jiti` (notes/pi.md §9.1)."""
    return posixpath.join(runtime.tmp, "jiti")


def pi_project_dir(runtime: RuntimeLayout) -> str:
    """pi's project settings directory in the working directory, `<rt>/work/.pi` (§9.2)."""
    return posixpath.join(runtime.work, ".pi")


def host_paths(runtime: RuntimeLayout) -> tuple[str, str, str]:
    """What belongs to the host (read table row 6): control/, config/ and the jiti cache."""
    return (runtime.control, runtime.config, jiti_cache(runtime))


# --- decisions -----------------------------------------------------------------------------------


class Decision(BaseModel):
    """A table's answer: allow, or deny with the reason text (without the prefix)."""

    model_config = ConfigDict(frozen=True)

    allowed: bool
    reason: str | None = None
    row: str

    @property
    def message(self) -> str | None:
        """The denial as the tool reports it, with `Concorde grant: `; None when allowed."""
        return None if self.reason is None else with_prefix(self.reason)


def _allow(row: str) -> Decision:
    return Decision(allowed=True, row=row)


def _deny(row: str, reason: str) -> Decision:
    return Decision(allowed=False, reason=reason, row=row)


class SandboxFilesystem(BaseModel):
    """The sandbox filesystem lists, shared by Claude Code and pi (notes/harness.md §1.2)."""

    model_config = ConfigDict(frozen=True)

    deny_read: tuple[str, ...]
    allow_read: tuple[str, ...]
    allow_write: tuple[str, ...]
    deny_write: tuple[str, ...]

    def to_json(self) -> dict[str, list[str]]:
        return {"denyRead": list(self.deny_read), "allowRead": list(self.allow_read),
                "allowWrite": list(self.allow_write), "denyWrite": list(self.deny_write)}


class ToolSets(BaseModel):
    model_config = ConfigDict(frozen=True)

    claude: tuple[str, ...]
    pi: tuple[str, ...]


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
    deny_rules: tuple[str, ...]
    sandbox: SandboxFilesystem
    tools: ToolSets

    def tools_for(self, backend: Backend) -> tuple[str, ...]:
        return self.tools.claude if backend == "claude" else self.tools.pi

    def tools_arg(self, backend: Backend) -> str:
        """The `--tools` argument, also the run record's `tools`."""
        return ",".join(self.tools_for(backend))

    @property
    def run_directory_refusal(self) -> Refusal | None:
        return run_directory_denied(self.deny_rules, self.runtime)

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

    def to_json(self) -> dict[str, Any]:
        """The JSON-able policy the pi extension embeds (notes/harness.md §2.2 keys, and the
        reasons table of `domain.reasons` its denials are filled from; the backend adds
        `programs`, `limits` and `resultSchema`)."""
        return {
            **self.grant_lists(),
            "hidden": list(host_paths(self.runtime)),
            "own": list(self.runtime.worker_dirs),
            "primary": self.primary,
            "userHome": self.user_home,
            "boundaries": list(self.boundaries),
            **self.always_hidden.to_json(),
            "sandbox": self.sandbox.to_json(),
            "denyRules": list(self.deny_rules),
            "tools": {"claude": list(self.tools.claude), "pi": list(self.tools.pi)},
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

    def in_runtime_path(self, path: str) -> bool:
        return any(is_within(path, r) for r in self.runtime_paths)

    def in_boundary(self, path: str) -> bool:
        return any(is_within(path, b) for b in self.boundaries)

    def hidden_always(self, path: str) -> Decision | None:
        """The denial of `domain.hidden` (other run, run directory, credentials), or None."""
        found = self.always_hidden.judge(path)
        return None if found is None else _deny(*found)

    def level_of(self, path: str) -> Level | None:
        return self.grant.level_of(self.rel(path))

    def shown(self, path: str) -> str:
        """The worktree-relative form a reason names; the worktree root by its absolute path."""
        return self.rel(path) or self.worktree


# --- deny rules (notes/harness.md §1.3) ----------------------------------------------------------


def _rules(path: str, directory: bool, kinds: Sequence[str] = ("Read", "Edit")) -> list[str]:
    """`Read(//abs)` / `Edit(//abs/**)`: `/` before the absolute path, `/**` for a directory."""
    target = "/" + posixpath.normpath(path) + ("/**" if directory else "")
    return [f"{kind}({target})" for kind in kinds]


def directory_level(grant: Grant, rel: str) -> Level | None:
    """The level of the directory entry covering directory `rel` (exact `rel/`, else the longest
    directory entry above); file entries do not cover a directory."""
    best: GrantEntry | None = None
    for e in grant.entries:
        covers = e.is_directory and (e.bare == rel or rel.startswith(e.path))
        if covers and (best is None or len(e.bare) > len(best.bare)):
            best = e
    return best.level if best is not None else None


def entries_below(grant: Grant, rel: str) -> list[GrantEntry]:
    """The grant's entries strictly below worktree-relative `rel` (`""` = the worktree)."""
    prefix = rel + "/" if rel else ""
    return [e for e in grant.entries if e.bare != rel and e.bare.startswith(prefix)]


class _Walk:
    """The task-worktree walk of §1.3, row by row; iterative, children in name order."""

    def __init__(self, grant: Grant, worktree: str, keep: Sequence[str], runtime: Sequence[str],
                 list_dir: ListDir) -> None:
        self.grant, self.worktree, self.keep = grant, worktree, keep
        self.runtime = frozenset(posixpath.normpath(r) for r in runtime)
        self.list_dir = list_dir

    def holds_kept(self, path: str) -> bool:
        return any(is_within(k, path) and k != path for k in self.keep)

    def directory(self, path: str) -> tuple[list[str], bool]:
        """(rules, descend) for a real directory, rows 3-6 of the walk table."""
        rel = relative_to(path, self.worktree)
        level = directory_level(self.grant, rel)
        below = entries_below(self.grant, rel)
        holds = self.holds_kept(path)
        if level is Level.RW and not holds and all(e.level is Level.RW for e in below):
            return [], False
        if level is Level.RO and all(e.level is Level.RO for e in below):
            return _rules(path, True, ("Edit",)), False
        if level not in READABLE and not holds and not any(e.level in READABLE for e in below):
            return _rules(path, True), False
        return [], True

    def entry(self, path: str, kind: EntryKind) -> tuple[list[str], bool]:
        name = posixpath.basename(path)
        if name == ".git":
            return _rules(path, kind is EntryKind.DIRECTORY), False
        if any(is_within(path, k) for k in self.keep):
            return self.kept(path, kind), False
        if kind is EntryKind.DIRECTORY:
            return self.directory(path)
        level = self.grant.level_of(relative_to(path, self.worktree))
        if level is Level.RW:
            return [], False
        if level is Level.RO:
            return _rules(path, False, ("Edit",)), False
        return _rules(path, False), False

    def kept(self, path: str, kind: EntryKind) -> list[str]:
        """A runtime path is left readable; under rw cover it still gets an Edit rule (never
        writable, seed 000 "Reading beside the grant")."""
        level = self.grant.level_of(relative_to(path, self.worktree))
        if path in self.runtime and level is Level.RW:
            return _rules(path, kind is EntryKind.DIRECTORY, ("Edit",))
        return []

    def run(self) -> list[str]:
        out: list[str] = []
        stack = [self.worktree]
        while stack:
            directory = stack.pop()
            subdirs: list[str] = []
            for child in sorted(self.list_dir(directory), key=lambda e: e.name):
                path = posixpath.join(directory, child.name)
                rules, descend = self.entry(path, child.kind)
                out.extend(rules)
                if descend:
                    subdirs.append(path)
            stack.extend(reversed(subdirs))
        return out


def _outside_rules(boundary: str, keep: Sequence[str], list_dir: ListDir) -> list[str]:
    """§1.3 (2)/(3): hide a boundary (home, primary worktree) but the way to what is kept."""
    if not any(is_within(k, boundary) for k in keep):
        return _rules(boundary, True)
    out: list[str] = []
    stack = [boundary]
    while stack:
        directory = stack.pop()
        subdirs: list[str] = []
        for child in sorted(list_dir(directory), key=lambda e: e.name):
            path = posixpath.join(directory, child.name)
            if any(is_within(path, k) for k in keep):
                continue
            if child.kind is EntryKind.DIRECTORY and any(is_within(k, path) for k in keep):
                subdirs.append(path)
                continue
            out.extend(_rules(path, child.kind is EntryKind.DIRECTORY))
        stack.extend(reversed(subdirs))
    return out


def _dedupe(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def deny_rules(
    grant: Grant, worktree: str, primary: str, user_home: str, runtime: RuntimeLayout,
    runtime_paths: Sequence[str], git: Sequence[AdminPath], list_dir: ListDir,
    boundaries: Sequence[str] = (), hidden: Hidden | None = None, other_runs: Sequence[str] = (),
) -> tuple[str, ...]:
    """The deny rules in the order of §1.3: (1) worktree walk, (2) home, (3) primary worktree,
    (4) Git admin paths, (5) control/ and config/, and /proc (the agent's own environment);
    then (6) the other boundaries (`$HOME`, the configuration directories) like the home, (7)
    the credential files, (8) the run directories, (9) the other runs' runtime directories that
    exist now; de-duplicated keeping the first occurrence."""
    runtime_paths = [posixpath.normpath(r) for r in runtime_paths]
    keep_walk = (*runtime_paths, *runtime.worker_dirs)
    rules = _Walk(grant, worktree, keep_walk, runtime_paths, list_dir).run()
    keep_outside = (worktree, *runtime.worker_dirs, *runtime_paths)
    rules += _outside_rules(user_home, keep_outside, list_dir)
    rules += _outside_rules(primary, keep_outside, list_dir)
    for admin in git:
        rules += _rules(admin.path, admin.directory)
    for host in (runtime.control, runtime.config, PROCESSES):
        rules += _rules(host, True)
    for boundary in outermost(boundaries, done=(user_home, primary)):
        rules += _outside_rules(boundary, keep_outside, list_dir)
    if hidden is not None:
        for credential in hidden.credentials:
            rules += _rules(credential, False)
        for records in hidden.run_directories:
            rules += _rules(records, True)
    for other in other_runs:
        rules += _rules(other, True)
    return _dedupe(rules)


def outermost(paths: Iterable[str], done: Sequence[str] = ()) -> list[str]:
    """`paths` but those at or below another of them or of `done` (already hidden whole, or
    walked the same way), first occurrence kept."""
    out: list[str] = []
    for path in paths:
        if any(is_within(path, o) for o in (*done, *out)):
            continue
        out = [o for o in out if not is_within(o, path)] + [path]
    return out


def other_runs(runtime: RuntimeLayout, list_dir: ListDir) -> tuple[str, ...]:
    """The other runs' runtime directories in the temp root now: every `concorde-*` entry of
    this run's runtime directory's parent but this run's own."""
    root = posixpath.dirname(runtime.root)
    own = posixpath.basename(runtime.root)
    return tuple(posixpath.join(root, e.name) for e in list_dir(root)
                 if e.name.startswith(RUNTIME_PREFIX) and e.name != own)


def rule_covers(rule: str, path: str) -> bool:
    """True when a `Read(//x)`/`Edit(//x/**)` rule applies to `path` (exact, or `/**` prefix)."""
    target = rule[rule.index("(") + 2 : -1]
    if target.endswith("/**"):
        return is_within(path, target[:-3])
    return posixpath.normpath(target) == posixpath.normpath(path)


def run_directory_denied(rules: Iterable[str], runtime: RuntimeLayout) -> Refusal | None:
    """Seed 000 "A run the deny rules would disable is refused".

    Any generated rule, Read OR Edit, that covers work/, home/ or tmp/ refuses the run. Stricter
    than upstream, whose settings generator checked only Read rules: an Edit rule over them would
    break the worker's file tools in its own scratch space just the same.
    """
    for rule in rules:
        for own in runtime.worker_dirs:
            if rule_covers(rule, own):
                return Refusal(
                    code="run_directory_denied", reason=Reason.ENVIRONMENT,
                    message=f"the generated deny rule {rule} covers the worker's own directory "
                    f"{own}; place the runtime directory outside the worktree, the user's home, "
                    "the primary worktree and the Git administrative paths",
                )
    return None


# --- sandbox lists (notes/harness.md §1.2, §5; notes/pi.md §9) -----------------------------------


def _abs(worktree: str, entry: GrantEntry) -> str:
    return posixpath.join(worktree, entry.bare)


def _below_dir_of(grant: Grant, entry: GrantEntry, levels: frozenset[Level]) -> bool:
    return any(d.is_directory and d.level in levels and entry.bare.startswith(d.path)
               for d in grant.entries)


def sandbox_filesystem(
    grant: Grant, worktree: str, primary: str, user_home: str, runtime: RuntimeLayout,
    runtime_paths: Sequence[str], git: Sequence[AdminPath],
    boundaries: Sequence[str] = (), hidden: Hidden | None = None, other_runs: Sequence[str] = (),
) -> SandboxFilesystem:
    """The four lists, one function for both backends. The sandbox lists are fixed when the
    sandbox starts, so they cannot name a run that starts later: the temp root itself is denied
    (commands see an empty one, with the worker's own directories bound back), unless it is `/`,
    when only the other runs that exist now are listed (docs/decisions.md)."""
    readable = [_abs(worktree, e) for e in grant.entries if e.level in READABLE]
    writable = [_abs(worktree, e) for e in grant.entries if e.level is Level.RW]
    names_apart = [_abs(worktree, e) for e in grant.entries
                   if e.level is Level.NAMES and _below_dir_of(grant, e, READABLE)]
    not_writable = [_abs(worktree, e) for e in grant.entries
                    if e.level is not Level.RW and _below_dir_of(grant, e, frozenset({Level.RW}))]
    runtime_in_writable = [r for r in runtime_paths if any(is_within(r, w) for w in writable)]
    deny_read = [worktree, user_home]
    if primary != user_home:
        deny_read.append(primary)
    deny_read += [g.path for g in git]
    deny_read += [*host_paths(runtime), *names_apart]
    deny_read += outermost(boundaries, done=(user_home, primary))
    if hidden is not None:
        deny_read += [*hidden.credentials, *hidden.run_directories]
        if hidden.runtime_root != "/":
            deny_read.append(hidden.runtime_root)
        else:
            deny_read += other_runs
    return SandboxFilesystem(
        deny_read=_dedupe(deny_read),
        allow_read=tuple(sorted({*readable, *runtime.worker_dirs, *runtime_paths})),
        allow_write=tuple(sorted({*writable, *runtime.worker_dirs})),
        deny_write=_dedupe([*not_writable, *runtime_in_writable, jiti_cache(runtime),
                            pi_project_dir(runtime)]),
    )


# --- tool sets (notes/harness.md §1.5) -----------------------------------------------------------

_CLAUDE_READ = ("Read", "Glob", "Grep")
_PI_READ = ("read", "grep", "find", "ls")


def tool_sets(task_type: TaskType, grant: Grant) -> ToolSets:
    """The read-only row for a task type that writes nothing or a grant with no rw entry."""
    claude: tuple[str, ...]
    pi: tuple[str, ...]
    if writes_nothing(task_type) or not grant.has_rw:
        claude, pi = _CLAUDE_READ, _PI_READ
    elif task_type in BASH_TASK_TYPES:
        claude, pi = (*_CLAUDE_READ, "Edit", "Write", "Bash"), (*_PI_READ, "edit", "write", "bash")
    else:
        claude, pi = (*_CLAUDE_READ, "Edit", "Write"), (*_PI_READ, "edit", "write")
    return ToolSets(claude=claude, pi=(*pi, "concorde_result"))


# --- read table (notes/harness.md §2.4), rows tried in order -------------------------------------

Row = Callable[[Policy, str], Decision | None]


def _r_git(p: Policy, path: str) -> Decision | None:
    return _deny("git", GIT_REASON) if p.in_git(path) else None


def _r_hidden(p: Policy, path: str) -> Decision | None:
    return p.hidden_always(path)


def _r_runtime(p: Policy, path: str) -> Decision | None:
    return _allow("runtime path") if p.in_runtime_path(path) else None


def _r_granted(p: Policy, path: str) -> Decision | None:
    if p.in_worktree(path) and p.level_of(path) in READABLE:
        return _allow("ro or rw")
    return None


def _r_names(p: Policy, path: str) -> Decision | None:
    if p.in_worktree(path) and p.level_of(path) is Level.NAMES:
        return _deny("names", fill("names", path=p.shown(path)))
    return None


def _r_worktree(p: Policy, path: str) -> Decision | None:
    if p.in_worktree(path):
        return _deny("not granted", fill("not granted", path=p.shown(path)))
    return None


def _r_host(p: Policy, path: str) -> Decision | None:
    if any(is_within(path, h) for h in host_paths(p.runtime)):
        return _deny("host", fill("host", path=path))
    return None


# The process filesystem holds every process's environment (/proc/self/environ is the agent
# program's own, with its API keys) and memory: never readable by a file tool. The sandbox keeps
# its own /proc for its commands, so this row is for the tools that run in the agent's process.
PROCESSES = "/proc"


def _r_processes(p: Policy, path: str) -> Decision | None:
    if is_within(path, PROCESSES):
        return _deny("processes", fill("processes", path=path))
    return None


def _r_own(p: Policy, path: str) -> Decision | None:
    own = any(is_within(path, o) for o in p.runtime.worker_dirs)
    return _allow("own directory") if own else None


def _r_boundary(p: Policy, path: str) -> Decision | None:
    if p.in_boundary(path):
        return _deny("boundary", fill("boundary", path=path))
    return None


def _r_else(p: Policy, path: str) -> Decision | None:
    return _allow("elsewhere")


READ_TABLE: tuple[Row, ...] = (
    _r_git, _r_hidden, _r_runtime, _r_granted, _r_names, _r_worktree, _r_host, _r_processes, _r_own,
    _r_boundary, _r_else,
)


def _first(rows: Sequence[Row], policy: Policy, path: str) -> Decision:
    for row in rows:
        decision = row(policy, path)
        if decision is not None:
            return decision
    raise AssertionError("the last row of a table always decides")  # pragma: no cover


def decide_read(policy: Policy, path: str, real: str | None = None) -> Decision:
    """A read is allowed only if the lexical path and, when it exists, its real path pass."""
    lexical = _first(READ_TABLE, policy, posixpath.normpath(path))
    if not lexical.allowed or real is None:
        return lexical
    return _first(READ_TABLE, policy, posixpath.normpath(real))


# --- write table (notes/harness.md §1.4, §2.5), judged on the fully resolved target --------------


def _named(p: Policy, resolved: str, given: str, given_is_link: bool) -> str:
    rel = p.shown(resolved)
    return fill("link target", path=rel, link=given) if given_is_link else rel


def decide_write(
    policy: Policy, given: str, resolved: str, given_is_link: bool = False
) -> Decision:
    """Rows, first match decides: Git admin path → hidden always → outside → `.git` segment →
    runtime path → rw → ro → names → other. `resolved` has every link resolved, the final one
    included."""
    p, resolved = policy, posixpath.normpath(resolved)
    if any(is_within(resolved, g.path) for g in p.git):
        return _deny("git", GIT_REASON)
    hidden = p.hidden_always(resolved)
    if hidden is not None:
        return hidden
    if not p.in_worktree(resolved):
        if given_is_link:
            return _deny("outside", fill("outside link", given=given, resolved=resolved))
        return _deny("outside", fill("outside", given=given))
    if ".git" in p.rel(resolved).split("/"):
        return _deny("git", GIT_REASON)
    named = _named(p, resolved, given, given_is_link)
    if p.in_runtime_path(resolved):
        return _deny("runtime path", fill("runtime path", path=named))
    level = p.level_of(resolved)
    if level is Level.RW:
        return _allow("rw")
    if level is Level.RO:
        return _deny("ro", fill("ro", path=named))
    if level is Level.NAMES:
        return _deny("names", fill("names", path=named))
    return _deny("not granted", fill("not bound", path=named))


# --- search/listing roots (notes/harness.md §2.6) ------------------------------------------------


def _search_one(p: Policy, root: str) -> Decision:
    if not p.in_worktree(root):
        return _first(READ_TABLE, p, root)
    if p.in_git(root):
        return _deny("git", GIT_REASON)
    hidden = p.hidden_always(root)
    if hidden is not None:
        return hidden
    if p.in_runtime_path(root) or any(is_within(r, root) for r in p.runtime_paths):
        return _allow("runtime path")
    rel = p.rel(root)
    above = directory_level(p.grant, rel) in READABLE or p.grant.level_of(rel) in READABLE
    below = any(e.level in READABLE for e in entries_below(p.grant, rel))
    if above or below:
        return _allow("readable at, below or above")
    return _deny("nothing readable", fill("nothing readable", path=p.shown(root)))


def decide_search_root(policy: Policy, root: str, real: str | None = None,
                       is_directory: bool = True) -> Decision:
    """grep/find/ls root: a directory inside the worktree by §2.6, anything else by the read
    table; the lexical root and, when it exists, its real path must both pass."""
    def one(path: str) -> Decision:
        path = posixpath.normpath(path)
        return _search_one(policy, path) if is_directory else _first(READ_TABLE, policy, path)

    first = one(root)
    return first if not first.allowed or real is None else one(real)


# --- the one entry point -------------------------------------------------------------------------


def build_policy(
    *, grant: Grant, worktree: str, primary: str, user_home: str, runtime_dir: str,
    runtime_paths: Sequence[str], git: Sequence[AdminPath], list_dir: ListDir,
    homes: Sequence[str] = (), config_dirs: Sequence[str] = (), credentials: Sequence[str] = (),
    run_directories: Sequence[str] = (),
) -> Policy:
    """The policy of one run from ONE frozen grant; all paths absolute and real, runtime paths
    exactly as the caller listed them (seed 000 "A worker reads beside its grant only what its
    caller lists"). `list_dir` backs the walks of worktree, homes, primary worktree and
    configuration directories, and finds the other runs in the temp root.

    Besides the password database's home `user_home`: `homes` (`$HOME`, as given and really),
    `config_dirs` (the configuration directories the credentials come from), `credentials` (the
    credential files at their origins) and `run_directories` (the trace parent's `workers/`), all
    hidden from every tool (issue 8 §2-§4)."""
    worktree, primary, user_home = (posixpath.normpath(p) for p in (worktree, primary, user_home))
    runtime = RuntimeLayout(root=posixpath.normpath(runtime_dir))
    runtime_paths = tuple(runtime_paths)
    git = tuple(git)
    boundaries = tuple(outermost(posixpath.normpath(b) for b in (
        user_home, *homes, primary, *config_dirs)))
    hidden = Hidden(
        runtime_root=posixpath.dirname(runtime.root), runtime_directory=runtime.root,
        run_directories=_dedupe(posixpath.normpath(r) for r in run_directories),
        credentials=_dedupe(posixpath.normpath(c) for c in credentials))
    others = other_runs(runtime, list_dir)
    every_boundary = (user_home, *homes, primary, *config_dirs)
    return Policy(
        grant=grant, worktree=worktree, primary=primary, user_home=user_home,
        boundaries=boundaries, runtime=runtime, runtime_paths=runtime_paths, git=git,
        always_hidden=hidden, other_runs=others,
        deny_rules=deny_rules(grant, worktree, primary, user_home, runtime, runtime_paths, git,
                              list_dir, every_boundary, hidden, others),
        sandbox=sandbox_filesystem(grant, worktree, primary, user_home, runtime, runtime_paths,
                                   git, every_boundary, hidden, others),
        tools=tool_sets(grant.task_type, grant),
    )


__all__ = [
    "GIT_REASON", "GRANT_PREFIX", "NO_FILE_REASON", "READ_TABLE", "Decision",
    "Policy", "SandboxFilesystem", "ToolSets", "build_policy",
    "could_not_decide", "decide_read", "decide_search_root", "decide_write", "deny_rules",
    "directory_level", "entries_below", "host_paths", "jiti_cache", "other_runs", "outermost",
    "pi_project_dir",
    "rule_covers", "run_directory_denied", "sandbox_filesystem", "tool_sets", "with_prefix",
]
