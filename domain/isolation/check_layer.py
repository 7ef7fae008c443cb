"""A check's copy-on-write view (issue 19 §1): what it sees of a tree, and where its writes go.

A check used to run over a copy of what the grant shows, made before it and removed after it:
its cost grew with the worktree (0.35–0.45 s for this repository under a six-folder grant).
Now it runs over the tree itself, through an overlay whose upper layer is a size-bounded tmpfs
that dies with the check:

1. `unshare --user --map-root-user --mount` gives the check a user and a mount namespace of its
   own, in which the host's uid is root and nothing propagates back to the host;
2. the layer script (`LAYER_SCRIPT`, every program in it by absolute path: it runs with
   CAP_SYS_ADMIN in that namespace, before any sandbox) mounts the tmpfs on the layer's folder
   (`concorde-check-<hex>/layer`, in the runtime parent, with the host's owner record and an
   empty file beside it), binds the tree into it as the overlay's lower layer and mounts the
   overlay beside it, at `layer/view`;
3. then it execs the check sandbox (domain/isolation/check_sandbox.py), whose view of the worktree
is the
   run's own mount plan (domain/isolation/mount_plan.py): every mount inside the worktree, as the
   agent
   has it, but each readable one bound writable from the overlay (`view_args`), so that what a
   check may see is decided once, by the plan the agent ran under, and what it writes lands in
   the throwaway layer, never in the tree.

Its set-up is a number of mounts that grows with the grant (the plan), never with the tree.
A tree given without a plan (a copy of what the grant shows: the run's starting state, a run
without a confinement) is seen whole. Where the kernel refuses the layer (asked once:
adapters/sandboxes/checks.py), the checks run over copies, as before, and say so.

Pure: the command line's parts; the adapter runs them.
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.ground.paths import relative_to
from concorde_workers.domain.isolation.confinement import Mount, MountKind

__all__ = [
    "EMPTY_FILE",
    "LAYER_FOLDER",
    "LAYER_SIZE",
    "LayerTools",
    "layer_prefix",
    "view_args",
    "view_source",
]

LAYER_FOLDER = "layer"
"""The mount point of a check's layer in its folder (beside the host's owner record)."""
EMPTY_FILE = "empty"
"""The empty file in a check's folder that a names-only file of the plan shows as."""
LAYER_SIZE = "2g"
"""What one check may write (the tmpfs's size): past it, a write fails with ENOSPC."""
LAYER_NAME = "concorde-check"
"""The layer's mounts' source name (findmnt shows it)."""

LAYER_SCRIPT = (
    "layer=$1 lower=$2; shift 2; "
    '{mount} -t tmpfs -o size={size},mode=0700 {name} "$layer" && cd "$layer" && '
    '{mkdir} lower upper work view && {mount} --bind "$lower" lower && '
    "{mount} -t overlay -o lowerdir=lower,upperdir=upper,workdir=work,userxattr {name} view "
    '&& cd / && exec "$@"'
)
"""Every path comes as an argument, never inside the text or a mount option: the overlay's
layers are named relative to the tmpfs, so no comma or colon of a host path reaches the
kernel's option parser."""


class LayerTools(BaseModel):
    """The programs the layer needs, by absolute path on the host's trusted PATH."""

    model_config = ConfigDict(frozen=True)

    unshare: str
    mount: str
    mkdir: str
    shell: str = "/bin/sh"


def layer_prefix(tools: LayerTools, layer: str, lower: str) -> list[str]:
    """The command line in front of the check sandbox's: the namespace, the tmpfs on `layer`,
    and the overlay of `lower` (the tree) at `layer`/view (`view_source`)."""
    script = LAYER_SCRIPT.format(
        mount=shlex.quote(tools.mount),
        mkdir=shlex.quote(tools.mkdir),
        size=LAYER_SIZE,
        name=LAYER_NAME,
    )
    return [
        tools.unshare,
        "--user",
        "--map-root-user",
        "--mount",
        "--propagation",
        "private",
        "--",
        tools.shell,
        "-c",
        script,
        LAYER_NAME,
        layer,
        lower,
    ]


def view_source(layer: str) -> str:
    """Where the overlay of a check's tree is, in the check's mount namespace."""
    return posixpath.join(layer, "view")


def view_args(
    worktree: str, view: Sequence[Mount] | None, source: str, empty_file: str
) -> list[str]:
    """The check sandbox's mounts of the worktree from the overlay at `source`: the run's mount
    plan inside it (`view`), each readable mount bound writable (into the layer), an empty one a
    writable tmpfs, an empty file the regular, empty `empty_file` read-only (a device node
    would not read in the sandbox); None: the tree whole. A planned path that is gone since (a
    proposed deletion the host performed) is left out. The worktree's own path stays the
    worktree (a runtime path inside it is bound from there)."""
    if view is None:
        return ["--bind", source, worktree]
    args: list[str] = []
    if not any(m.path == worktree for m in view):
        args += ["--tmpfs", worktree]  # built from the plan alone: nothing unplanned shows
    for mount in view:
        if mount.kind is MountKind.EMPTY_DIR:
            args += ["--tmpfs", mount.path]
        elif mount.kind is MountKind.EMPTY_FILE:
            args += ["--ro-bind-try", empty_file, mount.path]
        else:
            seen = posixpath.join(source, relative_to(mount.path, worktree))
            args += ["--bind-try", seen.rstrip("/") or "/", mount.path]
    return args
