"""FakeResourceGroups: an in-memory `ResourceGroups` whose groups bound nothing (issue 20).

`open` makes a group by name (GroupFailed when the name is open already, as the real one's
`mkdir` fails, and when the machine is told to have no enforcement); `close` (or `remove` of a
leftover) forgets it and returns its counters. A test scripts what a group's counters say and
whether a limit was reached (`script(name, GroupCounters(...), reached=True)`, before or after
the group is opened: a watch of the group is told then, from a thread of its own), makes a group's removal fail (`stays`), or builds a machine without
enforcement (`FakeResourceGroups.unenforced(problem)`). The fake cannot see a process: a test
says which groups hold one (`busy`); `idle` lists the others made at least that long ago by
`clock` (time.time unless given).

A group's `prefix()` is a real, harmless command line: `/usr/bin/env` setting `GROUP_VARIABLE`
to the group's `tag` (the fake's own token and the group's name), so a real process still runs
behind it and a test can tell which group it was started in (`member_of`).

Records: `opened` (name, limits) of every open, `closed` (names closed, in order), `removed`
(names `remove` closed), `live` (the groups open now). tests/contract/test_resource_groups_contract.py
runs the same tests on this fake and on the real CgroupGroups.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from concorde_workers.domain.configuration.resources import (
    Enforcement,
    GroupCounters,
    GroupKind,
    ResourceLimits,
)
from concorde_workers.ports.processes.resources import GroupFailed

__all__ = [
    "ENV",
    "FAKE_PARENT",
    "GROUP_VARIABLE",
    "FakeResourceGroup",
    "FakeResourceGroups",
    "member_of",
]

ENV = "/usr/bin/env"
GROUP_VARIABLE = "CONCORDE_FAKE_RESOURCE_GROUP"
FAKE_PARENT = "/fake-cgroup/concorde"


@dataclass
class _Script:
    counters: GroupCounters
    reached: bool | None


@dataclass(eq=False)
class FakeResourceGroup:
    name: str
    limits: ResourceLimits
    groups: FakeResourceGroups
    closed: bool = False
    watchers: list[Callable[[], None]] = field(default_factory=list)
    fired: list[threading.Thread] = field(default_factory=list)
    """The threads that called a watcher (a test may join them)."""
    watches_stopped: int = 0

    @property
    def tag(self) -> str:
        """What `GROUP_VARIABLE` says in a process started behind `prefix()`."""
        return f"{self.groups.token}/{self.name}"

    def prefix(self) -> list[str]:
        return [ENV, f"{GROUP_VARIABLE}={self.tag}"]

    def folders(self) -> tuple[str, ...]:
        """Where the group would lie: below `FAKE_PARENT`, in no control group filesystem a
        confinement replaces (so a fake group shows nothing there)."""
        return (f"{FAKE_PARENT}/{self.name}",)

    def reached(self) -> bool:
        return self.groups.reached_of(self.name)

    def watch(self, on_reached: Callable[[], None]) -> Callable[[], None]:
        """`on_reached` is called from a thread of its own at once if a limit is reached now,
        else when a script says one is (as the real one, once)."""
        self.watchers.append(on_reached)
        self.fire()

        def stop() -> None:
            if on_reached in self.watchers:
                self.watchers.remove(on_reached)
            self.watches_stopped += 1

        return stop

    def fire(self) -> None:
        if not self.reached():
            return
        watchers, self.watchers = self.watchers, []
        for call in watchers:
            thread = threading.Thread(target=call, name=f"fake-watch-{self.name}", daemon=True)
            thread.start()
            self.fired.append(thread)

    def close(self) -> GroupCounters:
        if self.closed:
            return GroupCounters()  # as the real one's second close (even after a failed one)
        self.closed = True
        return self.groups.close_group(self.name)


@dataclass
class FakeResourceGroups:
    answer: Enforcement = field(
        default_factory=lambda: Enforcement(kind=GroupKind.V2, parents=(FAKE_PARENT,))
    )
    stays: set[str] = field(default_factory=set)
    """Names whose removal fails (GroupFailed); the group stays open and listed."""
    opened: list[tuple[str, ResourceLimits]] = field(default_factory=list)
    closed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    live: dict[str, FakeResourceGroup] = field(default_factory=dict)
    token: str = field(default_factory=lambda: secrets.token_hex(6))
    busy: set[str] = field(default_factory=set)
    """Names of the groups holding a process now (what `idle` leaves out)."""
    clock: Callable[[], float] = time.time
    made: dict[str, float] = field(default_factory=dict)
    """When each open group was made, by `clock`."""
    _scripts: dict[str, _Script] = field(default_factory=dict)
    enforcement_asked: int = 0

    @classmethod
    def unenforced(
        cls,
        problem: str = "no cgroup v1 pids and memory controllers and no "
        "cgroup v2 hierarchy under /sys/fs/cgroup",
    ) -> FakeResourceGroups:
        """A machine that gives no control groups, and why."""
        return cls(answer=Enforcement(kind=GroupKind.NONE, problem=problem))

    def script(
        self, name: str, counters: GroupCounters | None = None, reached: bool | None = None
    ) -> None:
        """What the group `name`'s counters say (at close, and to `reached` unless `reached`
        is given: a refused fork or a killed process is a limit reached, as the real one)."""
        self._scripts[name] = _Script(counters or GroupCounters(), reached)
        if name in self.live:
            self.live[name].fire()

    # --- the port -------------------------------------------------------------------------

    def enforcement(self) -> Enforcement:
        self.enforcement_asked += 1
        return self.answer

    def open(self, name: str, limits: ResourceLimits) -> FakeResourceGroup:
        if self.answer.kind is GroupKind.NONE:
            raise GroupFailed(f"no resource group can be made: {self.answer.problem}")
        if name in self.live:
            raise GroupFailed(
                f"the resource group {name} could not be made: "
                f"[Errno 17] File exists: '{FAKE_PARENT}/{name}'"
            )
        group = FakeResourceGroup(name, limits, self)
        self.live[name] = group
        self.made[name] = self.clock()
        self.opened.append((name, limits))
        return group

    def leftovers(self, prefix: str) -> list[str]:
        return sorted(name for name in self.live if name.startswith(prefix))

    def idle(self, prefix: str, older_than_seconds: float) -> list[str]:
        now = self.clock()
        return [
            name
            for name in self.leftovers(prefix)
            if name not in self.busy and now - self.made[name] >= older_than_seconds
        ]

    def remove(self, name: str) -> GroupCounters:
        group = self.live.get(name)
        if group is None:
            return GroupCounters()  # nothing there: nothing killed, nothing counted
        group.closed = True
        counters = self.close_group(name)
        self.removed.append(name)
        return counters

    # --- what a group asks ----------------------------------------------------------------

    def reached_of(self, name: str) -> bool:
        scripted = self._scripts.get(name)
        if scripted is None:
            return False
        if scripted.reached is not None:
            return scripted.reached
        return bool(scripted.counters.forks_refused or scripted.counters.oom_kills)

    def close_group(self, name: str) -> GroupCounters:
        if name in self.stays:
            raise GroupFailed(
                f"the resource group {name} stays: {FAKE_PARENT}/{name}: Device or resource busy"
            )
        del self.live[name]
        del self.made[name]
        self.busy.discard(name)
        self.closed.append(name)
        scripted = self._scripts.get(name)
        return scripted.counters if scripted is not None else GroupCounters()


def member_of(pid: int) -> str | None:
    """The tag of the fake group the process `pid` was started in (None: none, or gone)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            environ = handle.read()
    except OSError:
        return None
    for entry in environ.split(b"\0"):
        key, _, value = entry.partition(b"=")
        if key == GROUP_VARIABLE.encode():
            return value.decode("utf-8", "replace")
    return None
