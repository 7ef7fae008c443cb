"""The confinement of the whole agent process tree (issue 8 §7, issue 9 §1; docs/decisions.md
"The agent process tree in its own namespaces").

The agent program — Claude Code or pi itself, not only its Bash — runs inside bubblewrap, in a
mount namespace built from the run's policy and a PID namespace that dies with the host:

- `--ro-bind / /`, a fresh `/dev` and a fresh `/proc` (only the run's own processes);
- what must be absent is an empty, read-only tmpfs: `/tmp`, the temporary root of runtime
  directories (every other run's), both homes, the primary worktree, the run records
  (`<parent>/workers/`), the credential origins; the worker's runtime directory is bound back
  writable (its `control/` read-only), the task worktree and the runtime paths read-only, and
  the installations the agent program itself runs from (its program, node, the host interpreter
  that runs the hooks, sandbox-runtime) read-only;
- inside the worktree the rw entries are bound writable, and every path the deny rules hide
  (the SAME cover: hidden wholesale by the highest directory whose subtree is hidden) is masked:
  a hidden directory by an empty read-only tmpfs, a hidden or names-only file by an empty
  read-only file. So hidden content is simply not there, whatever path or link a tool follows
  when it opens a file; the deny rules, the hooks and pi's tables are the second layer.

The mount count scales with the deny rules, that is with the grant, not the repository.

Lifetime: bwrap `--unshare-pid --die-with-parent`. When the host dies (SIGKILL, the OOM killer)
the launcher gets SIGKILL, its namespace's init gets SIGKILL, and the kernel kills every process
of the namespace, including those that left the process group with setsid(). When a round ends
the process runner waits until the init bwrap reports on `--info-fd` has exited, which the
kernel completes only once every other process of the namespace is gone.

As root a helper runs first inside the namespace (`HELPER_AS_ROOT`): bwrap covers /proc/irq and
/proc/bus with read-only binds, which makes a nested sandbox's fresh /proc "too revealing" for
the kernel, so the helper unmounts those covers; then it moves the agent into a nested user
namespace as uid 65534 (kernel uid still the host's), where it holds no capability over the
mount namespace (it cannot unmount a mask) and where Claude Code's and pi's own sandboxes can map
their uid without CAP_SETFCAP.

Signals: bwrap's launcher runs with SIGTERM ignored (`env --ignore-signal=TERM`), so a round's
timeout, which sends SIGTERM to the whole process group, reaches the agent (restored to the
default by `env --default-signal=TERM` right before it) and lets it end as it would unconfined —
Claude Code writes its transcript — while the namespace stays until the agent has exited or the
grace period's SIGKILL ends the launcher. That last `env` also drops the `PWD` bwrap sets, so the
agent's environment stays exactly the spec's. Before it, the host's interpreter runs the waiter
(`WAITER`, control/wait.py), which reports the agent's exact wait status to the process runner:
bwrap alone reports a death by signal n as the exit status 128 + n.

Everything here is pure: the filesystem facts come in as callables (`PathFacts`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.deny_rules import PROCESSES
from concorde_workers.domain.grant import Level, directory_level
from concorde_workers.domain.launch import EXIT_STATUS_FD, NAMESPACE_REPORT_FD, LaunchCommand
from concorde_workers.domain.paths import EntryKind, ListDir, is_within, relative_to
from concorde_workers.domain.policy import Policy

CONFINED_UID = 65534
"""The agent's uid inside the namespace when the host runs as root ("nobody"): a nested
sandbox cannot map uid 0 without CAP_SETFCAP, and Claude Code treats uid 0 specially."""

HELPER_NAME = "concorde-confine"
"""The helper's `$0` (shown by ps for the moment it runs)."""

EMPTY_FILE = "empty"
"""The empty file in the runtime directory's control/ that masks a hidden or names-only file."""

WAITER_FILE = "wait.py"
"""The waiter's program in the runtime directory's control/ (`WAITER`)."""

# bwrap covers these with read-only binds when it can write them (bubblewrap.c
# cover_proc_dirs); a covered /proc keeps any nested sandbox from mounting its own /proc.
PROC_COVERS = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus")

HELPER_AS_ROOT = (
    "{umount} " + " ".join(PROC_COVERS) + " 2>/dev/null; "
    'exec {unshare} --user --map-user={uid} --map-group={uid} -- "$@"'
)


class MountKind(StrEnum):
    """What one mount makes of a path inside the namespace."""

    EMPTY_DIR = "empty directory"  # --tmpfs, then --remount-ro: nothing of it is there
    WRITABLE = "writable"          # --bind p p
    READ_ONLY = "read-only"        # --ro-bind p p
    EMPTY_FILE = "empty file"      # --ro-bind <control/empty> p


# At one path only the most restrictive mount stays: a mask beats a read-only bind beats a
# writable one (a runtime path is never writable; a hidden child of a writable scope stays
# hidden).
_STRENGTH = {MountKind.WRITABLE: 0, MountKind.READ_ONLY: 1, MountKind.EMPTY_DIR: 2,
             MountKind.EMPTY_FILE: 2}
_MASKS = frozenset({MountKind.EMPTY_DIR, MountKind.EMPTY_FILE})


class Mount(BaseModel):
    """One mount of the plan: the path (the same inside and outside), what it becomes there and
    why. `exact`: the path must be itself, no link on the way, whenever a round launches (every
    mount but an installation the agent runs from, bound into a fresh tmpfs, where bwrap may
    resolve a link of the host's own on the source side)."""

    model_config = ConfigDict(frozen=True)

    kind: MountKind
    path: str
    why: str
    exact: bool = True


# The waiter between bwrap's init and the agent (run by the host's own interpreter, `-I -S`):
# bwrap's init reports an initial process killed by signal n as the exit status 128 + n, so an
# agent that exits 130 and one killed by SIGINT look alike. The waiter starts the agent as its
# child and writes the agent's exact wait status (waitpid's number) on the pipe the process
# runner gave it (EXIT_STATUS_FD), not inherited by the agent, then ends as the agent did (the
# exit status, or 128 + n, as before). It ignores SIGINT and keeps SIGTERM ignored (a timeout's
# SIGTERM is the agent's); the grace period's SIGKILL ends it with everything else.
WAITER = (
    "import os, signal, sys\n"
    "fd, argv = int(sys.argv[1]), sys.argv[2:]\n"
    "os.set_inheritable(fd, False)\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    try:\n"
    "        os.execv(argv[0], argv)\n"
    "    finally:\n"
    "        os._exit(127)\n"
    "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    "status = os.waitpid(pid, 0)[1]\n"
    "try:\n"
    "    os.write(fd, b'%d\\n' % status)\n"
    "finally:\n"
    "    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))\n"
)


class ConfinementTools(BaseModel):
    """The programs the wrapper runs, by absolute path (resolved on the host's PATH); `python`
    is the host's own interpreter, which runs the waiter (None: no waiter, and an agent's exit
    status of 129–192 cannot be told from a death by signal)."""

    model_config = ConfigDict(frozen=True)

    bwrap: str
    env: str = "/usr/bin/env"
    shell: str = "/bin/sh"
    umount: str | None = None
    unshare: str | None = None
    python: str | None = None


class Confinement(BaseModel):
    """The mount plan and everything the bwrap command line needs."""

    model_config = ConfigDict(frozen=True)

    mounts: tuple[Mount, ...]
    empty_file: str
    tools: ConfinementTools
    as_root: bool
    waiter_file: str | None = None

    def control_files(self) -> dict[str, str]:
        """What the host writes into control/ for the confinement: the empty file that masks,
        and the waiter's program."""
        files = {self.empty_file: ""}
        if self.waiter_file is not None:
            files[self.waiter_file] = WAITER
        return files

    def prefix(self) -> tuple[str, ...]:
        """The command line in front of the agent's own argv."""
        t = self.tools
        argv = [t.env, "--ignore-signal=TERM", "--", t.bwrap, "--unshare-user"]
        if self.as_root:
            argv += ["--uid", "0", "--gid", "0"]
        # --info-fd: bwrap reports the namespace's init on a pipe of the process runner, which
        # ends the round only once that init has exited, that is once the namespace is empty.
        argv += ["--unshare-pid", "--die-with-parent", "--info-fd", NAMESPACE_REPORT_FD,
                 "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        for mount in self.mounts:
            argv += _mount_args(mount, self.empty_file)
        for mount in self.mounts:
            if mount.kind is MountKind.EMPTY_DIR:
                argv += ["--remount-ro", mount.path]
        argv.append("--")
        helper = self.helper()
        if helper is not None:
            argv += [t.shell, "-c", helper, HELPER_NAME]
        if t.python is not None and self.waiter_file is not None:
            argv += [t.python, "-I", "-S", self.waiter_file, EXIT_STATUS_FD]
        argv += [t.env, "-u", "PWD", "--default-signal=TERM", "--"]
        return tuple(argv)

    def helper(self) -> str | None:
        """The shell text the root helper runs (None when not as root)."""
        if not self.as_root:
            return None
        assert self.tools.umount is not None and self.tools.unshare is not None
        return HELPER_AS_ROOT.format(umount=self.tools.umount, unshare=self.tools.unshare,
                                     uid=CONFINED_UID)

    def wrap(self, command: LaunchCommand) -> LaunchCommand:
        """The same round command, run inside the confinement."""
        return command.model_copy(update={"argv": (*self.prefix(), *command.argv)})

    def count(self, kind: MountKind) -> int:
        return sum(1 for m in self.mounts if m.kind is kind)


def _mount_args(mount: Mount, empty_file: str) -> list[str]:
    p = mount.path
    if mount.kind is MountKind.EMPTY_DIR:
        return ["--tmpfs", p]
    if mount.kind is MountKind.WRITABLE:
        return ["--bind", p, p]
    if mount.kind is MountKind.READ_ONLY:
        return ["--ro-bind", p, p]
    return ["--ro-bind", empty_file, p]


# --- the facts the plan is computed over -------------------------------------------------------


@dataclass(frozen=True)
class PathFacts:
    """The filesystem as the plan sees it: `kind` does not follow the last link (None: missing),
    `realpath` resolves every link, `list_dir` lists a directory (empty when unreadable)."""

    kind: Callable[[str], EntryKind | None]
    realpath: Callable[[str], str]
    list_dir: ListDir

    def is_real(self, path: str, kind: EntryKind | None = None) -> bool:
        """`path` exists, has no link on the way (the final component included) and, when
        given, is of `kind`."""
        found = self.kind(path)
        if found is None or found is EntryKind.SYMLINK or self.realpath(path) != path:
            return False
        return kind is None or found is kind


@dataclass(frozen=True)
class PlanInputs:
    """What the agent program itself runs from, besides what the policy names: its program, the
    installations it loads and the host interpreter's (absolute; see `installation`)."""

    keep: tuple[str, ...] = ()


# --- the plan ----------------------------------------------------------------------------------


def parse_rule(rule: str) -> tuple[str, str, bool] | None:
    """`Read(//abs/path/**)` -> ("Read", "/abs/path", True); a rule that names no literal
    absolute path (a glob) -> None."""
    if "(" not in rule or not rule.endswith(")"):
        return None
    kind, target = rule[: rule.index("(")], rule[rule.index("(") + 1 : -1]
    if not target.startswith("//"):
        return None
    target = target[1:]
    directory = target.endswith("/**")
    if directory:
        target = target[:-3] or "/"
    if any(c in target for c in "*?[{"):
        return None
    return kind, posixpath.normpath(target), directory


def _rule_masks(policy: Policy) -> Iterable[Mount]:
    """Every literal path the deny rules cover, as a mask (a Read rule: hidden) or a read-only
    bind (an Edit rule alone, inside the worktree). /proc is fresh already; the runtime directory
    is the agent's own (its control/ and config/ are hidden from its tools, not from it)."""
    rules: dict[str, tuple[set[str], bool]] = {}
    for rule in policy.deny_rules:
        parsed = parse_rule(rule)
        if parsed is None:
            continue
        kind, path, directory = parsed
        kinds, was_directory = rules.get(path, (set(), False))
        kinds.add(kind)
        rules[path] = (kinds, was_directory or directory)
    for path, (kinds, directory) in rules.items():
        if is_within(path, PROCESSES) or is_within(path, policy.runtime.root):
            continue
        if "Read" in kinds:
            kind = MountKind.EMPTY_DIR if directory else MountKind.EMPTY_FILE
            yield Mount(kind=kind, path=path, why=_hidden_why(policy, path))
        elif policy.in_worktree(path):
            yield Mount(kind=MountKind.READ_ONLY, path=path, why="read-only in the grant")


def _boundary_why(policy: Policy, path: str) -> str:
    if path == policy.primary:
        return "the primary worktree"
    if path == policy.user_home:
        return "a home directory"
    return "a home or a credentials directory"


def _hidden_why(policy: Policy, path: str) -> str:
    if policy.in_git(path):
        return "Git metadata"
    if not policy.in_worktree(path):
        return "hidden by the deny rules"
    if policy.level_of(path) is Level.NAMES or directory_level(
            policy.grant, policy.rel(path)) is Level.NAMES:
        return "names only"
    return "not in the grant"


def _writable(policy: Policy, facts: PathFacts) -> Iterable[Mount]:
    """The rw entries, writable. A rw directory that exists is bound itself. A rw file, or a rw
    entry that does not exist yet, needs its directory writable (the host creates no file for
    the worker, and tools write a file by a new one renamed over it): the nearest existing
    directory above it is bound writable, and every other entry there is bound back read-only
    or masked, so only the rw entries and new names become writable."""
    wt, grant = policy.worktree, policy.grant
    scopes: set[str] = set()
    for entry in grant.entries:
        if entry.level is not Level.RW:
            continue
        path = posixpath.join(wt, entry.bare)
        if entry.is_directory and facts.is_real(path, EntryKind.DIRECTORY):
            yield Mount(kind=MountKind.WRITABLE, path=path, why=f"rw in the grant ({entry.path})")
            continue
        scope = posixpath.dirname(path)
        while scope != wt and not facts.is_real(scope, EntryKind.DIRECTORY):
            scope = posixpath.dirname(scope)
        if directory_level(grant, relative_to(scope, wt)) is not Level.RW:
            scopes.add(scope)
    for scope in sorted(scopes):
        yield Mount(kind=MountKind.WRITABLE, path=scope,
                    why="holds a rw file or a rw entry still to be created")
        yield from _beside(policy, facts, scope)


def _beside(policy: Policy, facts: PathFacts, scope: str) -> Iterable[Mount]:
    """The entries of a writable scope that are not rw: bound back read-only (a mask from the
    deny rules replaces it where the entry is hidden)."""
    for child in facts.list_dir(scope):
        path = posixpath.join(scope, child.name)
        rel = policy.rel(path)
        if child.kind is EntryKind.DIRECTORY:
            rw = directory_level(policy.grant, rel) is Level.RW
        elif child.kind is EntryKind.FILE:
            rw = policy.grant.level_of(rel) is Level.RW
        else:
            continue  # a link or a special file: no mount can stand on it
        if not rw:
            yield Mount(kind=MountKind.READ_ONLY, path=path, why="beside a writable entry")


def _segments(path: str) -> tuple[str, ...]:
    return tuple(s for s in path.split("/") if s)


def confinement_plan(policy: Policy, inputs: PlanInputs, facts: PathFacts,
                     tools: ConfinementTools, *, as_root: bool) -> Confinement | str:
    """The mount plan of one run, from its policy (see the module docstring); or, as a value,
    why no plan can confine this run (what the agent needs would not be there)."""
    rt = policy.runtime
    writable = list(_writable(policy, facts))
    worktree_scope = any(m.path == policy.worktree for m in writable)
    hidden = policy.always_hidden
    wanted: list[Mount] = []
    absent = [("/tmp", "temporary files"),
              (hidden.runtime_root, "every run's runtime directory"),
              *((b, _boundary_why(policy, b))
                for b in (policy.user_home, policy.primary, *policy.boundaries) if b != "/"),
              *((r, "the run directories") for r in hidden.run_directories)]
    wanted += [Mount(kind=MountKind.EMPTY_DIR, path=p, why=why) for p, why in absent]
    wanted += _rule_masks(policy)
    wanted += [Mount(kind=MountKind.EMPTY_FILE, path=p, why="a credential at its origin")
               for p in hidden.credentials]
    wanted += [Mount(kind=MountKind.READ_ONLY, path=p, why="what the agent program runs from")
               for p in inputs.keep
               if not policy.in_worktree(p) and not is_within(p, rt.root)]
    wanted += [Mount(kind=MountKind.READ_ONLY, path=posixpath.normpath(p), why="a runtime path")
               for p in policy.runtime_paths]
    if not worktree_scope:
        wanted.append(Mount(kind=MountKind.READ_ONLY, path=policy.worktree,
                            why="the task worktree"))
    wanted += [Mount(kind=MountKind.WRITABLE, path=rt.root, why="the worker's runtime directory"),
               Mount(kind=MountKind.READ_ONLY, path=rt.control, why="the host's control files")]
    wanted += writable
    keep = frozenset(inputs.keep)
    # The host makes the runtime directory right before it launches (the planner only names
    # it): planned without looking, checked before every round like every other mount.
    made = frozenset({rt.root, rt.control})
    mounts = _settle(wanted, facts, keep, made)
    needed = [policy.worktree, rt.root, rt.control,
              *(k for k in inputs.keep if not policy.in_worktree(k) and not is_within(k, rt.root))]
    for path in needed:
        if not visible(mounts, path):
            return (f"the confinement would not show {path}, which the agent program needs: it "
                    "lies in a hidden place or has a link on its way")
    return Confinement(mounts=mounts, empty_file=posixpath.join(rt.control, EMPTY_FILE),
                       tools=tools, as_root=as_root,
                       waiter_file=posixpath.join(rt.control, WAITER_FILE))


def visible(mounts: Sequence[Mount], path: str) -> bool:
    """Whether `path` shows its host content inside the namespace the mounts build."""
    last = next((m for m in reversed(mounts) if is_within(path, m.path)), None)
    if last is None:
        return True
    return last.kind not in _MASKS


def _strongest(mounts: Iterable[Mount]) -> list[Mount]:
    """One mount per path, the most restrictive; parents before children."""
    by_path: dict[str, Mount] = {}
    for mount in mounts:
        path = posixpath.normpath(mount.path)
        mount = mount.model_copy(update={"path": path})
        held = by_path.get(path)
        if held is None or _STRENGTH[mount.kind] > _STRENGTH[held.kind]:
            by_path[path] = mount
    return sorted(by_path.values(), key=lambda m: _segments(m.path))


def _settle(wanted: Sequence[Mount], facts: PathFacts, keep: frozenset[str],
            made: frozenset[str]) -> tuple[Mount, ...]:
    """Drop what changes nothing (a mask inside what is absent already, a bind of a path as it
    is visible anyway) and what no mount can stand on (a missing path, a link); mark what lies
    on the host's own filesystem."""
    settled: list[Mount] = []
    for mount in _strongest(wanted):
        above = next((m for m in reversed(settled) if is_within(mount.path, m.path)
                      and m.path != mount.path), None)
        state = above.kind if above is not None else MountKind.READ_ONLY
        fresh = state is MountKind.EMPTY_DIR
        if fresh and mount.kind in _MASKS:
            continue
        if state is mount.kind and mount.kind in (MountKind.READ_ONLY, MountKind.WRITABLE):
            continue
        kept = fresh and mount.path in keep
        if mount.path not in made and not _standable(mount, facts, kept):
            continue
        settled.append(mount.model_copy(update={"exact": not kept}))
    return tuple(settled)


def _standable(mount: Mount, facts: PathFacts, kept: bool) -> bool:
    """A mount lands on the path itself: it must exist with no link on the way (bwrap would
    follow one, or create a missing file in the worktree). A program or installation the agent
    runs from may be reached through a link when it is bound into a fresh tmpfs: bwrap resolves
    the source on the host and makes the destination anew."""
    if kept:
        return facts.kind(mount.path) is not None and facts.kind(
            facts.realpath(mount.path)) not in (None, EntryKind.SYMLINK)
    if mount.kind is MountKind.EMPTY_DIR:
        return facts.is_real(mount.path, EntryKind.DIRECTORY)
    if mount.kind is MountKind.EMPTY_FILE:
        return facts.is_real(mount.path, EntryKind.FILE)
    return facts.is_real(mount.path)


def installation(realpath: str) -> str:
    """What to keep visible for a program whose real path is `realpath`: the whole outermost
    node_modules for a program inside one (node resolves its modules there), else the real file
    itself (a native program, node). An interpreter's own installation (its prefix, its standard
    library) is given as a directory (sys.base_prefix) and kept as it is; nothing is guessed
    beside a program, so a program in ~/.local/bin keeps ~/.local/share hidden."""
    segments = realpath.split("/")
    if "node_modules" in segments:
        return "/".join(segments[: segments.index("node_modules") + 1])
    return realpath


def launch_problem(confinement: Confinement, facts: PathFacts) -> str | None:
    """Before every round: each mount must still land where it was planned. Between rounds no
    process of the worker runs (its namespace died), but its last round may have swapped a
    directory on the way for a link, which bwrap would follow; the round is not started then."""
    for mount in confinement.mounts:
        if mount.exact:
            kind = {MountKind.EMPTY_DIR: EntryKind.DIRECTORY,
                    MountKind.EMPTY_FILE: EntryKind.FILE}.get(mount.kind)
            if not facts.is_real(mount.path, kind):
                return (f"the confinement cannot be set up: {mount.path} ({mount.why}) is no "
                        f"longer the {mount.kind.value if kind else 'path'} it was when the run "
                        "was prepared (a link or a missing entry on the way)")
        elif facts.kind(mount.path) is None:
            return (f"the confinement cannot be set up: {mount.path} ({mount.why}) no longer "
                    "exists")
    return None


__all__ = [
    "CONFINED_UID", "EMPTY_FILE", "HELPER_AS_ROOT", "HELPER_NAME", "PROC_COVERS", "WAITER",
    "WAITER_FILE",
    "Confinement", "ConfinementTools", "Mount", "MountKind", "PathFacts", "PlanInputs",
    "confinement_plan", "installation", "launch_problem", "parse_rule",
    "visible",
]
