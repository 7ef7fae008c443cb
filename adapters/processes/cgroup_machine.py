"""What a machine gives for control groups (issue 20), asked of `/proc/self/cgroup` and the
cgroup filesystems under a root (adapters/processes/cgroups.py asks once and keeps the answer):

- cgroup v1 with the `pids` and `memory` controllers mounted (`cpu` and `cpuacct` when they
  are): a round's group is a folder of the same name in each, under the host's own group of
  that controller;
- cgroup v2 whose host group hands `pids` and `memory` to its children (`cgroup.subtree_control`)
  — a delegated systemd scope, a container's namespace root — or, when the host lives in the
  hierarchy's root (root directly in cgroupfs), after enabling them there;
- otherwise none, and why.

The answer is the enforcement the domain reads (`domain.configuration.resources.Enforcement`)
and the parent folder per controller ("" for v2) a round's group is made in.
"""

from __future__ import annotations

import os

from concorde_workers.domain.configuration.resources import Enforcement, GroupKind

__all__ = ["Answer", "ask_enforcement", "own_groups", "read_small"]

V1_NEEDED = ("pids", "memory")
V1_OPTIONAL = ("cpu", "cpuacct")
V2_NEEDED = ("pids", "memory")

Answer = tuple[Enforcement, dict[str, str]]
"""What a machine gives, and the parent folder of a round's group per controller."""


def read_small(path: str, limit: int = 65536) -> str | None:
    """A cgroupfs file's text (at most `limit` characters), None when it cannot be read."""
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read(limit)
    except OSError:
        return None


def own_groups(self_cgroup: str) -> tuple[dict[str, str], str | None]:
    """The host's own group per v1 controller, and its v2 group (`0::/path`)."""
    v1: dict[str, str] = {}
    v2: str | None = None
    for line in self_cgroup.splitlines():
        number, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if number == "0" and controllers == "":
            v2 = path or "/"
        for controller in controllers.split(","):
            if controller:
                v1[controller] = path or "/"
    return v1, v2


def ask_enforcement(root: str, self_cgroup: str) -> Answer:
    """What this machine gives, and the parent folder per controller ("" for v2) a round's
    group is made in (none when it gives nothing)."""
    text = read_small(self_cgroup)
    if text is None:
        return Enforcement(kind=GroupKind.NONE, problem=f"{self_cgroup} cannot be read"), {}
    v1, v2 = own_groups(text)
    if all(os.path.isdir(os.path.join(root, c)) and c in v1 for c in V1_NEEDED):
        return _ask_v1(root, v1)
    if v2 is not None:
        return _ask_v2(root, v2)
    return Enforcement(
        kind=GroupKind.NONE,
        problem=f"no cgroup v1 pids and memory controllers and no cgroup v2 hierarchy under {root}",
    ), {}


def _ask_v1(root: str, own: dict[str, str]) -> Answer:
    parents: dict[str, str] = {}
    for controller in (*V1_NEEDED, *V1_OPTIONAL):
        mount = os.path.join(root, controller)
        if controller not in own or not os.path.isdir(mount):
            continue
        parent = os.path.normpath(os.path.join(mount, own[controller].lstrip("/")))
        if not os.access(parent, os.W_OK):
            if controller in V1_NEEDED:
                return Enforcement(
                    kind=GroupKind.NONE,
                    problem=(
                        f"the host may not make groups in {parent} (cgroup v1 {controller}); "
                        "run it as root or with that folder delegated to its user"
                    ),
                ), {}
            continue
        parents[controller] = parent
    return Enforcement(
        kind=GroupKind.V1, parents=tuple(parents.values()), cpu="cpu" in parents
    ), parents


def _v2_base(root: str) -> str | None:
    for base in (root, os.path.join(root, "unified")):
        if os.path.exists(os.path.join(base, "cgroup.controllers")):
            return base
    return None


def _ask_v2(root: str, own: str) -> Answer:
    base = _v2_base(root)
    if base is None:
        return Enforcement(kind=GroupKind.NONE, problem=f"no cgroup v2 under {root}"), {}
    parent = os.path.normpath(os.path.join(base, own.lstrip("/")))
    enabled = set((read_small(os.path.join(parent, "cgroup.subtree_control")) or "").split())
    available = set((read_small(os.path.join(parent, "cgroup.controllers")) or "").split())
    missing = [c for c in V2_NEEDED if c not in enabled]
    if missing and own == "/" and all(c in available for c in missing):
        # root directly in cgroupfs: the root group may hand controllers down at once
        try:
            with open(os.path.join(parent, "cgroup.subtree_control"), "w") as handle:
                handle.write(" ".join(f"+{c}" for c in missing if c in available))
            enabled |= set(missing)
        except OSError as error:
            return Enforcement(
                kind=GroupKind.NONE,
                problem=(
                    f"{parent}/cgroup.subtree_control refused pids and memory: {error.strerror}"
                ),
            ), {}
    missing = [c for c in V2_NEEDED if c not in enabled]
    if missing:
        return Enforcement(
            kind=GroupKind.NONE,
            problem=(
                f"the host's cgroup v2 group {parent} hands no {' or '.join(missing)} "
                "controller to its children (cgroup.subtree_control); run the host in a "
                "delegated scope whose own process sits in a leaf (systemd-run --user --scope "
                "-p Delegate=yes … concorde-workers …)"
            ),
        ), {}
    return Enforcement(kind=GroupKind.V2, parents=(parent,), cpu="cpu" in enabled), {"": parent}
