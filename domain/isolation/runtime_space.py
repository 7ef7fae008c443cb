"""The runtime directory's writable space (issue 30 §2; docs/decisions.md "The runtime
directory's writable space, bounded whole").

Everything a confined run's agent tree may write outside the grant's rw entries lies on two
tmpfs of the run's size each (`ResourceLimits.space_mib`), so the kernel refuses a write past
one (ENOSPC) and nothing of either ever reaches the host's disk:

- the agent's space, config/: the agent program's own configuration — its sessions and
  transcripts, the tool results Claude Code keeps there, the credential copies and the host's
  settings;
- the worker's space, home/, tmp/ and work/: one budget for what the worker's tools write.

Two, not one: with one budget a worker's `head -c` into work/ left the agent no room for its own
transcript (measured: pi's session cut at 4,096 bytes, Claude Code "could not save all of this
session's transcript"), and the transcript is the run's evidence; so the worker's own writes can
never fill the agent's space. They are made and reached this way:

1. when the run begins, a keeper makes them: `unshare --user --map-current-user --keep-caps
   --mount` gives it a user and a mount namespace of its own (the host's uid itself inside; the
   capabilities kept for the mounts), and `SPACE_SCRIPT` mounts the agent's tmpfs on config/ and
   the worker's on tmp/, makes the worker's three folders there and binds each over its place,
   tmp/ last (its own folder over the tmpfs's root, which no path reaches then); it says it is
   ready and sleeps, with the parent-death signal SIGKILL;
2. the host opens the keeper's user and mount namespaces and its root (`/proc/<pid>/ns/…`,
   `/proc/<pid>/root`), then ends the keeper: its open descriptors hold the namespaces, so the
   spaces live exactly as long as the host holds them, and the kernel frees them when the host
   closes them at the run's end, or dies, however;
3. the host reaches them through its root (`/proc/self/fd/<root>` + the path, `view`): it writes
   the credential copies and its settings there before the launch, clears what it clears before
   a round, and keeps the transcript from there at the end;
4. each confined round enters the namespaces first (`join_argv`: nsenter, by the host's
   descriptors, then bwrap), so the round's own namespace is made from the keeper's and shows the
   spaces at the runtime directory's paths.

Pure: the command lines and the paths; the adapter (adapters/sandboxes/space.py) runs them.
"""

from __future__ import annotations

import posixpath
import shlex

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.ground.layout import (
    CONFIG_DIR,
    HOME_DIR,
    TMP_DIR,
    WORK_DIR,
    RuntimeLayout,
)
from concorde_workers.domain.ground.paths import is_within

__all__ = [
    "AGENT_DIRS",
    "INODE_BYTES",
    "MIN_INODES",
    "READY",
    "SPACES",
    "SPACE_DIRS",
    "SPACE_NAME",
    "SPACE_SCRIPT",
    "WORKER_DIRS",
    "SpaceTools",
    "in_space",
    "inodes_for",
    "join_argv",
    "ready_pid",
    "space_argv",
    "view",
]

AGENT_DIRS: tuple[str, ...] = (CONFIG_DIR,)
"""The agent's space: its own tmpfs, mounted on the folder itself."""
WORKER_DIRS: tuple[str, ...] = (HOME_DIR, WORK_DIR, TMP_DIR)
"""The worker's space, in the order its folders are bound (tmp/ last: its bind hides the tmpfs's
root, which the others' sources lie in)."""
SPACE_DIRS: tuple[str, ...] = (*AGENT_DIRS, *WORKER_DIRS)
"""Every folder of the runtime directory the two spaces hold."""
SPACES: dict[str, tuple[str, ...]] = {"agent": AGENT_DIRS, "worker": WORKER_DIRS}
"""Each space by its name (said in a round's resources.json), with its folders."""

SPACE_NAME = "concorde-space"
"""The tmpfs' source name (df and findmnt show it)."""

READY = "concorde-space-ready"
"""The keeper's one line on stdout once the space is made, followed by its pid."""

INODE_BYTES = 4096
MIN_INODES = 1024
"""Each space's inodes: one per 4 KiB of its size, at least 1,024 (a tmpfs's default is half of
the machine's memory pages, and an inode takes kernel memory its size does not count)."""

SPACE_SCRIPT = (
    "rt=$1 size=$2 inodes=$3; "
    '{mount} -t tmpfs -o "size=$size,nr_inodes=$inodes,mode=0700" {name} "$rt/config" '
    '&& {mount} -t tmpfs -o "size=$size,nr_inodes=$inodes,mode=0700" {name} "$rt/tmp" '
    '&& cd "$rt/tmp" && {mkdir} -m 0700 {dirs} && cd / '
    "{binds}|| exit 125; "
    'echo "{ready} $$"; exec {sleep} infinity'
)
"""Every path comes as an argument, never inside the text or a mount option; the option holds
the two numbers the host gives. The keeper then sleeps until the host ends it: it has the
parent-death signal SIGKILL (set by setpriv after unshare changed its credentials, which clears
an earlier one), so it ends with the host's thread that started it, whatever kills the host."""


class SpaceTools(BaseModel):
    """The programs the space needs, by absolute path on the host's trusted PATH."""

    model_config = ConfigDict(frozen=True)

    unshare: str
    nsenter: str
    mount: str
    mkdir: str
    setpriv: str
    sleep: str
    shell: str = "/bin/sh"


def inodes_for(size_bytes: int) -> int:
    return max(MIN_INODES, size_bytes // INODE_BYTES)


def space_argv(tools: SpaceTools, runtime: RuntimeLayout, size_bytes: int) -> list[str]:
    """The keeper's command line: its namespaces, its parent-death signal, the space made,
    then a sleep until the host ends it."""
    mount = shlex.quote(tools.mount)
    binds = "".join(f'&& {mount} --bind "$rt/tmp/{d}" "$rt/{d}" ' for d in WORKER_DIRS)
    script = SPACE_SCRIPT.format(
        mount=mount,
        mkdir=shlex.quote(tools.mkdir),
        name=SPACE_NAME,
        dirs=" ".join(WORKER_DIRS),
        binds=binds,
        ready=READY,
        sleep=shlex.quote(tools.sleep),
    )
    return [
        tools.unshare,
        "--user",
        "--map-current-user",
        "--keep-caps",
        "--mount",
        "--propagation",
        "private",
        "--",
        tools.setpriv,
        "--pdeathsig",
        "KILL",
        "--",
        tools.shell,
        "-c",
        script,
        SPACE_NAME,
        runtime.root,
        str(size_bytes),
        str(inodes_for(size_bytes)),
    ]


def ready_pid(line: str) -> int | None:
    """The keeper's pid from its ready line, None for any other line."""
    word, _, pid = line.partition(" ")
    return int(pid) if word == READY and pid.isdigit() else None


def join_argv(
    tools: SpaceTools, host_pid: int, user_fd: int, mount_fd: int, cwd: str
) -> tuple[str, ...]:
    """The command line in front of a confined round's: it enters the space's user and mount
    namespaces through the host's descriptors (its own uid kept), in `cwd` there (entering a
    mount namespace moves a process to its root), and execs the round's command."""
    return (
        tools.nsenter,
        f"--user=/proc/{host_pid}/fd/{user_fd}",
        f"--mount=/proc/{host_pid}/fd/{mount_fd}",
        "--preserve-credentials",
        f"--wd={cwd}",
        "--",
    )


def in_space(runtime_root: str, path: str) -> bool:
    """Whether `path` (absolute, normalized) lies in the space of the runtime directory at
    `runtime_root`: at or below one of its folders."""
    return any(is_within(path, posixpath.join(runtime_root, d)) for d in SPACE_DIRS)


def view(view_root: str, path: str) -> str:
    """Where the host reaches `path` of the space: below the keeper's root it holds open."""
    return view_root.rstrip("/") + path
