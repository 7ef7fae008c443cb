"""A run's resource limits (issue 20): what they are, how a control group holds them, and
what its counters say after a round.

Each round's whole confined tree (the agent, its Bash sandbox, every child) runs in a control
group of its own, made by the host before the round and removed after it: processes and memory
(swap off) are bounded by the kernel, CPU is weighted. This module decides, from values: the
limits (`ResourceLimits`, the defaults protecting a 2-core, 24 GiB machine running 16 runs),
which files of which controller a group's limits are written to (`limit_writes`), the command
line that puts a round's process into its groups before it execs the round's own
(`join_prefix`), and what a group's counters say (`judge_use`): the peaks, and each limit
reached, named with its value and what was using it. The adapter (adapters/processes/cgroups.py)
does the I/O; docs/decisions.md "Per-run resource limits" says why.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "DEFAULT_LIMITS",
    "GROUP_PREFIX",
    "MIB",
    "Enforcement",
    "GroupCounters",
    "GroupKind",
    "ResourceLimits",
    "ResourceUse",
    "join_prefix",
    "judge_use",
    "limit_writes",
    "parse_size",
]

MIB = 1024 * 1024
GROUP_PREFIX = "concorde-"
"""Every group a host makes: a round's is named after its runtime directory (`concorde-<hex>-…
-r<n>`), a check's `concorde-check-<hex>`; the sweep's key."""


class ResourceLimits(BaseModel):
    """One run's limits. The defaults: 16 runs at once on a 24 GiB machine keep 8 GiB for
    everything else at 1 GiB each; 512 processes is far past what an agent, its Bash and a
    test suite need, and far below a machine's limit (96,363 here)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    processes: int = Field(default=512, ge=16, le=4_194_304)
    memory_mib: int = Field(default=1024, ge=128, le=16 * 1024 * 1024)
    cpu_weight: int = Field(default=100, ge=1, le=10_000)
    """cgroup v2's cpu.weight scale (100 = the default share); v1's cpu.shares is 10.24x."""
    space_mib: int = Field(default=512, ge=16, le=1024 * 1024)
    """The size of each of the runtime directory's two writable spaces — the agent's (config/)
    and the worker's (home/, tmp/, work/), a tmpfs each, the confined run's own (issue 30 §2;
    docs/decisions.md "The runtime directory's writable space, bounded whole")."""

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: Any) -> Any:
        if isinstance(data, dict) and "tmp_mib" in data:
            raise ValueError(
                "tmp_mib is now space_mib: the size of each of the runtime directory's "
                "writable spaces (config/; home/, tmp/ and work/: a tmpfs each); rename it"
            )
        return data

    def text(self) -> str:
        return (
            f"processes {self.processes}, memory {self.memory_mib} MiB (swap off), "
            f"CPU weight {self.cpu_weight}, runtime spaces {self.space_mib} MiB each "
            "(config/; home/, tmp/, work/)"
        )


DEFAULT_LIMITS = ResourceLimits()


class GroupKind(StrEnum):
    """Which control groups a machine lets the host make."""

    V2 = "cgroup v2"
    V1 = "cgroup v1"
    NONE = "none"


class Enforcement(BaseModel):
    """What this machine gives a run's limits: the kind, the parent group(s) the host makes its
    groups in, and when there is none, why (said by plan, doctor and the run's trace)."""

    model_config = ConfigDict(frozen=True)

    kind: GroupKind
    parents: tuple[str, ...] = ()
    problem: str | None = None
    cpu: bool = True
    """Whether the CPU weight (v1: the cpu controller) can be set."""

    def text(self) -> str:
        if self.kind is GroupKind.NONE:
            return f"not enforced: {self.problem}"
        return f"enforced by the kernel ({self.kind.value}, under {', '.join(self.parents)})"


# (controller, file, value) — v1's controllers are folders of their own; v2's one folder.
Write = tuple[str, str, str]


def limit_writes(
    kind: GroupKind, limits: ResourceLimits, cpu: bool = True, memsw: bool = True
) -> tuple[Write, ...]:
    """The files a new group's limits are written to, in order (v1: the memory limit before
    memory+swap, which may never be below it)."""
    memory = str(limits.memory_mib * MIB)
    if kind is GroupKind.V2:
        writes: list[Write] = [
            ("", "pids.max", str(limits.processes)),
            ("", "memory.max", memory),
            ("", "memory.swap.max", "0"),
        ]
        if cpu:
            writes.append(("", "cpu.weight", str(limits.cpu_weight)))
        return tuple(writes)
    if kind is GroupKind.V1:
        writes = [
            ("pids", "pids.max", str(limits.processes)),
            ("memory", "memory.limit_in_bytes", memory),
        ]
        if memsw:
            writes.append(("memory", "memory.memsw.limit_in_bytes", memory))
        if cpu:
            writes.append(("cpu", "cpu.shares", str(max(2, limits.cpu_weight * 1024 // 100))))
        return tuple(writes)
    return ()


JOIN_SCRIPT = (
    'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; '
    'n=$((n - 1)); done; unset PWD; exec "$@"'
)
"""Writes its own pid into each group's `cgroup.procs`, then becomes the round's command: every
process the round makes is born inside. Paths come as arguments, never in the text. A shell
exports a `PWD` of its own; the host's environments never hold one (they are cleared), so the
prefix unsets it and the command gets exactly the environment the host gave."""


def join_prefix(shell: str, procs_files: Sequence[str]) -> list[str]:
    """The command line in front of a round's (or a check's): `shell` by absolute path."""
    return [shell, "-c", JOIN_SCRIPT, "concorde-join", str(len(procs_files)), *procs_files]


class GroupCounters(BaseModel):
    """What a group's counters said when its round ended (None: this kernel keeps no such
    counter)."""

    model_config = ConfigDict(frozen=True)

    memory_peak_bytes: int | None = None
    oom_kills: int = 0
    processes_peak: int | None = None
    forks_refused: int = 0
    cpu_seconds: float | None = None


class ResourceUse(BaseModel):
    """A round's resource profile: its peaks, and each limit it reached, said."""

    model_config = ConfigDict(frozen=True)

    counters: GroupCounters
    reached: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        c = self.counters
        return {
            "memory_peak_bytes": c.memory_peak_bytes,
            "oom_kills": c.oom_kills,
            "processes_peak": c.processes_peak,
            "forks_refused": c.forks_refused,
            "cpu_seconds": c.cpu_seconds,
            "limits_reached": list(self.reached),
        }


HEAP_EXHAUSTED = "JavaScript heap out of memory"
"""What node prints as it aborts at its heap limit. Node sizes that limit from its control
group's memory limit (half of it: 259 MiB of heap under 512 MiB, 524 under 1,024; 4,144 with no
group on this 24 GiB machine), so a node agent that outgrows the run's memory limit dies by its
own hand before the kernel kills anything (docs/decisions.md "Per-run resource limits")."""


def judge_use(counters: GroupCounters, limits: ResourceLimits, stderr: str = "") -> ResourceUse:
    """The limits a round reached, each named with its value and what was using it; `stderr`
    is the agent's (its tail), which says when node aborted at the heap the limit gave it."""
    reached: list[str] = []
    if counters.forks_refused:
        peak = "" if counters.processes_peak is None else f", peak {counters.processes_peak}"
        reached.append(
            f"the run's process limit ({limits.processes} processes) refused "
            f"{counters.forks_refused} new process(es){peak}"
        )
    memory_peak = (
        ""
        if counters.memory_peak_bytes is None
        else f", peak {counters.memory_peak_bytes / MIB:.0f} MiB"
    )
    if counters.oom_kills:
        reached.append(
            f"the run's memory limit ({limits.memory_mib} MiB, swap off) made the "
            f"kernel kill {counters.oom_kills} process(es){memory_peak}"
        )
    elif HEAP_EXHAUSTED in stderr:
        reached.append(
            f"the run's memory limit ({limits.memory_mib} MiB, swap off) bounded "
            "the agent's JavaScript heap (node sizes it to half the limit) and the "
            f"agent ran out of it{memory_peak}"
        )
    return ResourceUse(counters=counters, reached=tuple(reached))


_UNITS = {"": 1, "k": 1024, "m": MIB, "g": 1024 * MIB}


def parse_size(text: str) -> int | None:
    """A size in MiB from `512m`, `2g`, `2048` (MiB) or `1048576k`; None when it is none."""
    value = text.strip().lower().removesuffix("ib").removesuffix("b")
    unit = value[-1:] if value[-1:] in _UNITS else ""
    number = value[: len(value) - len(unit)]
    if not number.isdigit():
        return None
    size = int(number) * (_UNITS[unit] if unit else MIB)
    return size // MIB if size % MIB == 0 else None
