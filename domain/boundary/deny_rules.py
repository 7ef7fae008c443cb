"""The deny rules of Claude Code's settings (notes/harness.md §1.3), from the one frozen grant.

`Read(//abs)` and `Edit(//abs/**)` rules, in the order of §1.3: the task-worktree walk, the
boundaries (homes, primary worktree, configuration directories) hidden but the way to what the
run keeps, the Git administrative paths, what belongs to the host, /proc, the credential files,
the run directories and the other runs' runtime directories. And the refusal of a run these
rules would disable (seed 000 "A run the deny rules would disable is refused").

Decision where the spec is silent: the deny-rule cover hides a directory wholesale when its
covering level is neither ro nor rw and no ro/rw entry lies below it (upstream's "no ro/rw path
at, below or above" made exact for a `names` directory below an ro one), so the rule count scales
with the grant.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence

from concorde_workers.domain.boundary.grant import (
    READABLE,
    Grant,
    Level,
    directory_level,
    entries_below,
)
from concorde_workers.domain.boundary.hidden import Hidden
from concorde_workers.domain.boundary.interpreter import PROCESSES
from concorde_workers.domain.gitview.placement import AdminPath
from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.ground.errors import Reason, Refusal
from concorde_workers.domain.ground.layout import RuntimeLayout
from concorde_workers.domain.ground.paths import (
    EntryKind,
    ListDir,
    dedupe,
    is_within,
    outermost,
    relative_to,
)
from concorde_workers.domain.ground.run_id import RUNTIME_PREFIX

__all__ = ["PROCESSES", "deny_rules", "other_runs", "rule_covers", "run_directory_denied"]

# PROCESSES, the process filesystem, holds every process's environment (/proc/self/environ is
# the agent program's own, with its API keys) and memory: never readable by a file tool (the
# read table's row `processes`). The sandbox keeps its own /proc for its commands, so this row is
# for the tools that run in the agent's process.


def _rules(path: str, directory: bool, kinds: Sequence[str] = ("Read", "Edit")) -> list[str]:
    """`Read(//abs)` / `Edit(//abs/**)`: `/` before the absolute path, `/**` for a directory."""
    target = "/" + posixpath.normpath(path) + ("/**" if directory else "")
    return [f"{kind}({target})" for kind in kinds]


class _Walk:
    """The task-worktree walk of §1.3, row by row; iterative, children in name order."""

    def __init__(
        self,
        grant: Grant,
        worktree: str,
        keep: Sequence[str],
        runtime: Sequence[str],
        list_dir: ListDir,
    ) -> None:
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


def deny_rules(
    grant: Grant,
    worktree: str,
    primary: str,
    user_home: str,
    runtime: RuntimeLayout,
    runtime_paths: Sequence[str],
    git: Sequence[AdminPath],
    list_dir: ListDir,
    boundaries: Sequence[str] = (),
    hidden: Hidden | None = None,
    other_runs: Sequence[str] = (),
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
    return dedupe(rules)


def other_runs(runtime: RuntimeLayout, list_dir: ListDir) -> tuple[str, ...]:
    """The other runs' runtime directories in the temp root now: every `concorde-*` entry of
    this run's runtime directory's parent but this run's own."""
    root = posixpath.dirname(runtime.root)
    own = posixpath.basename(runtime.root)
    return tuple(
        posixpath.join(root, e.name)
        for e in list_dir(root)
        if e.name.startswith(RUNTIME_PREFIX) and e.name != own
    )


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
                    code=Code.RUN_DIRECTORY_DENIED,
                    reason=Reason.ENVIRONMENT,
                    message=f"the generated deny rule {rule} covers the worker's own directory "
                    f"{own}; place the runtime directory outside the worktree, the user's home, "
                    "the primary worktree and the Git administrative paths",
                )
    return None
