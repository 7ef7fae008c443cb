"""The capability of bounding a round's processes, memory and CPU: control groups (issue 20).

A `ResourceGroups` says what this machine enforces (`enforcement`), makes a round's group
(`open`), and lists the groups a dead host left (`leftovers`) for the sweep. A `ResourceGroup`
gives the command line that puts a process into it, says whether a limit was reached so far
(and watches for the moment one is), and is closed after its round: every process left in it
killed, its counters read, the group removed. The real one: adapters/processes/cgroups.py; the fake:
tests/fakes/resources.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from concorde_workers.domain.configuration.resources import (
    Enforcement,
    GroupCounters,
    ResourceLimits,
)

__all__ = ["GroupFailed", "ResourceGroup", "ResourceGroups"]


class GroupFailed(Exception):
    """A group could not be made or removed; `text` says which file and why."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


@runtime_checkable
class ResourceGroup(Protocol):
    name: str

    def prefix(self) -> list[str]:
        """The command line in front of the round's: it joins the group, then execs."""
        ...

    def folders(self) -> tuple[str, ...]:
        """The group's folder in each hierarchy it was made in (v1: one per controller, the
        real path once; v2: one), which a confined round sees as its whole control group
        filesystem (domain/isolation/control_groups.py)."""
        ...

    def reached(self) -> bool:
        """Whether a limit was reached so far (a refused fork, a process the kernel killed)."""
        ...

    def watch(self, on_reached: Callable[[], None]) -> Callable[[], None]:
        """Call `on_reached` once, from a thread of its own, as soon as a limit is reached;
        the returned function stops the watch (and waits for its thread)."""
        ...

    def close(self) -> GroupCounters:
        """Kill what is left in the group, read its counters, remove it (GroupFailed when it
        stays)."""
        ...


@runtime_checkable
class ResourceGroups(Protocol):
    def enforcement(self) -> Enforcement:
        """What this machine gives (asked once)."""
        ...

    def open(self, name: str, limits: ResourceLimits) -> ResourceGroup:
        """A new group `name` with `limits` written (GroupFailed when it cannot be made)."""
        ...

    def leftovers(self, prefix: str) -> list[str]:
        """The names of the groups starting with `prefix` that exist now."""
        ...

    def idle(self, prefix: str, older_than_seconds: float) -> list[str]:
        """The groups starting with `prefix` that hold no process and were made at least
        `older_than_seconds` ago: a dead host's (a live round's group holds its processes from
        a few milliseconds after it is made until it is removed)."""
        ...

    def remove(self, name: str) -> GroupCounters:
        """Close the group `name` (a dead host's), as `ResourceGroup.close` does."""
        ...
