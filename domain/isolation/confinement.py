"""The confinement of the whole agent process tree (issue 8 §7, issue 9 §1; docs/decisions.md
"The agent process tree in its own namespaces").

The agent program — Claude Code or pi itself, not only its Bash — runs inside bubblewrap, in a
mount namespace built from the run's policy and a PID namespace that dies with the host:

- `--ro-bind / /`, a fresh `/dev` and a fresh `/proc` (only the run's own processes);
- what must be absent is an empty, read-only tmpfs: `/tmp`, the temporary root of runtime
  directories (every other run's), both homes, the primary worktree, the run records
  (`<parent>/workers/`), the credential origins; the worker's runtime directory is bound back
  read-only, its writable spaces (config/; home/, tmp/, work/: a tmpfs each of the run's own,
  entered before bwrap starts: domain/isolation/runtime_space.py) writable, the runtime paths
  read-only, and
  the installations the agent program itself runs from (its program, node, the host interpreter
  that runs the hooks, sandbox-runtime) read-only;
- the worktree is built from what is visible (issue 18 §3): an empty read-only tmpfs with the
  readable entries bound in (the rw ones writable) and the names-only ones made empty; a hidden
  entry (the SAME cover as the deny rules) is simply not there, and no mount point names it.
  Outside the worktree what the deny rules hide is masked: a directory by an empty read-only
  tmpfs, a file by an empty read-only file. So hidden content is not there, whatever path or
  link a tool follows when it opens a file; the deny rules, the hooks and pi's tables are the
  second layer.

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

Here: the mounts and the bwrap command line they make. Which mounts a run gets is
domain/isolation/mount_plan.py. Everything is pure: the filesystem facts come in as callables
(`mount_plan.PathFacts`).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.isolation.control_groups import mask_args
from concorde_workers.domain.isolation.launch import (
    EXIT_STATUS_FD,
    NAMESPACE_REPORT_FD,
    LaunchCommand,
    lifeline,
)
from concorde_workers.domain.isolation.runtime_space import SpaceTools

CONFINED_UID = 65534
"""The agent's uid inside the namespace when the host runs as root ("nobody"): a nested
sandbox cannot map uid 0 without CAP_SETFCAP, and Claude Code treats uid 0 specially."""

PRIVATE_BYTES = 1 << 20
"""The size of a private folder (`MountKind.PRIVATE`): the agent program's own sockets and
locks, never its files (the run's writable space holds those, bounded: decision 64)."""

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
    WRITABLE = "writable"  # --bind p p
    READ_ONLY = "read-only"  # --ro-bind p p
    EMPTY_FILE = "empty file"  # --ro-bind <control/empty> p
    PRIVATE = "private writable"  # --perms 0700 --size PRIVATE_BYTES --tmpfs p, never read-only


class Mount(BaseModel):
    """One mount of the plan: the path (the same inside and outside), what it becomes there and
    why. `exact`: the path must be itself, no link on the way, whenever a round launches (every
    mount but an installation the agent runs from, bound into a fresh tmpfs, where bwrap may
    resolve a link of the host's own on the source side). `named`: a mask whose path the worker
    may know (a names-level entry, the task worktree itself): in a place that is absent already
    (an empty tmpfs) it is made there, empty, where a mask of a hidden path is simply left out,
    so that no mount point names a path the grant hides (issue 18 §3)."""

    model_config = ConfigDict(frozen=True)

    kind: MountKind
    path: str
    why: str
    exact: bool = True
    named: bool = False
    file: bool = False
    """A regular file's own bind (a rw file bound itself, `PlanInputs.files_alone`): before every
    round it must still be a regular file, so that a folder put in its place is never bound
    writable."""
    inside: bool = False
    """Made inside the namespace, in a place that is absent already (an empty tmpfs): nothing of
    the host's lies there, so nothing is checked on the host before a round (a backend's
    placeholders and private folders, `ConfinementAsks`)."""


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
    nsenter: str | None = None
    mount: str | None = None
    mkdir: str | None = None
    setpriv: str | None = None
    sleep: str | None = None

    def space(self) -> SpaceTools | None:
        """What makes and enters the run's writable space (domain/isolation/runtime_space.py);
        None when one of them was not found."""
        found = {
            "unshare": self.unshare,
            "nsenter": self.nsenter,
            "mount": self.mount,
            "mkdir": self.mkdir,
            "setpriv": self.setpriv,
            "sleep": self.sleep,
        }
        if any(v is None for v in found.values()):
            return None
        return SpaceTools(shell=self.shell, **{k: str(v) for k, v in found.items()})


class Confinement(BaseModel):
    """The mount plan and everything the bwrap command line needs."""

    model_config = ConfigDict(frozen=True)

    mounts: tuple[Mount, ...]
    empty_file: str
    tools: ConfinementTools
    as_root: bool
    waiter_file: str | None = None
    control_groups: tuple[str, ...] = ()
    """The host's control group mounts (domain/isolation/control_groups.py): each shows the
    round's own group there, or nothing."""

    def control_files(self) -> dict[str, str]:
        """What the host writes into control/ for the confinement: the empty file that masks,
        and the waiter's program."""
        files = {self.empty_file: ""}
        if self.waiter_file is not None:
            files[self.waiter_file] = WAITER
        return files

    def prefix(self, own_groups: Sequence[str] = ()) -> tuple[str, ...]:
        """The command line in front of the agent's own argv; `own_groups` are the round's
        control group folders (`ResourceGroup.folders`), which it joined before bwrap starts."""
        t = self.tools
        argv = [t.env, "--ignore-signal=TERM", "--", t.bwrap, "--unshare-user"]
        if self.as_root:
            argv += ["--uid", "0", "--gid", "0"]
        # --info-fd: bwrap reports the namespace's init on a pipe of the process runner, which
        # ends the round only once that init has exited, that is once the namespace is empty.
        # Its own System V IPC (nothing a worker makes there outlives the round or is seen by
        # another) and control group namespace (rooted at the round's group: no other named).
        argv += [
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-cgroup",
            "--die-with-parent",
            "--info-fd",
            NAMESPACE_REPORT_FD,
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
        ]
        for mount in self.mounts:
            argv += _mount_args(mount, self.empty_file)
        groups, empty = mask_args(self.control_groups, own_groups)
        argv += groups
        for path in [*(m.path for m in self.mounts if m.kind is MountKind.EMPTY_DIR), *empty]:
            argv += ["--remount-ro", path]
        argv += ["--", *lifeline()]  # the namespace ends with the host, race-free
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
        return HELPER_AS_ROOT.format(
            umount=self.tools.umount, unshare=self.tools.unshare, uid=CONFINED_UID
        )

    def wrap(
        self, command: LaunchCommand, own_groups: Sequence[str] = (), join: Sequence[str] = ()
    ) -> LaunchCommand:
        """The same round command, run inside the confinement (`prefix`), behind `join`, which
        enters the run's writable space (`RuntimeSpace.join`) before bwrap starts."""
        argv = (*join, *self.prefix(own_groups), *command.argv)
        return command.model_copy(update={"argv": argv})

    def count(self, kind: MountKind) -> int:
        return sum(1 for m in self.mounts if m.kind is kind)


def _mount_args(mount: Mount, empty_file: str) -> list[str]:
    p = mount.path
    if mount.kind is MountKind.EMPTY_DIR:
        return ["--tmpfs", p]
    if mount.kind is MountKind.PRIVATE:
        return ["--perms", "0700", "--size", str(PRIVATE_BYTES), "--tmpfs", p]
    if mount.kind is MountKind.WRITABLE:
        return ["--bind", p, p]
    if mount.kind is MountKind.READ_ONLY:
        return ["--ro-bind", p, p]
    return ["--ro-bind", empty_file, p]


__all__ = [
    "CONFINED_UID",
    "EMPTY_FILE",
    "HELPER_AS_ROOT",
    "HELPER_NAME",
    "PRIVATE_BYTES",
    "PROC_COVERS",
    "WAITER",
    "WAITER_FILE",
    "Confinement",
    "ConfinementTools",
    "Mount",
    "MountKind",
]
