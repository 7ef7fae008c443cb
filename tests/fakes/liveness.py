"""FakeProcessTable: an in-memory process table with start times, zombies, boots and namespaces.

table = FakeProcessTable()          # this process: pid 42, started at tick 1000
pid = table.spawn()                 # another live process
table.exit(pid)                     # it exits: a zombie until reaped
table.reap(pid)                     # gone
table.reuse(pid)                    # a new process with the same pid, a later start
"""

from __future__ import annotations

from dataclasses import dataclass, field

from concorde_workers.domain.evidence.sweep import ProcessIdentity, ProcessObservation, ProcessState

FAKE_HOST_PID = 42
FAKE_BOOT_ID = "00000000-0000-4000-8000-000000000001"
FAKE_PID_NAMESPACE = "pid:[4026531836]"


@dataclass
class FakeProcess:
    start_ticks: int
    exited: bool = False


@dataclass
class FakeProcessTable:
    """`ProcessTable` in memory. `unreadable` pids answer unknown, as an unreadable /proc."""

    pid: int = FAKE_HOST_PID
    uid: int = 1000
    boot_id: str | None = FAKE_BOOT_ID
    pid_namespace: str | None = FAKE_PID_NAMESPACE
    processes: dict[int, FakeProcess] = field(default_factory=dict)
    unreadable: set[int] = field(default_factory=set)
    _next_pid: int = 1000
    _ticks: int = 1000

    def __post_init__(self) -> None:
        self.processes.setdefault(self.pid, FakeProcess(start_ticks=self._tick()))

    def _tick(self) -> int:
        self._ticks += 7
        return self._ticks

    # -- setup helpers -----------------------------------------------------------------------

    def spawn(self, pid: int | None = None) -> int:
        """A new live process (a fresh pid unless one is given); its pid."""
        if pid is None:
            self._next_pid += 1
            pid = self._next_pid
        self.processes[pid] = FakeProcess(start_ticks=self._tick())
        return pid

    def exit(self, pid: int) -> None:
        """The process exits; a zombie until `reap`."""
        self.processes[pid].exited = True

    def reap(self, pid: int) -> None:
        self.processes.pop(pid, None)

    def reuse(self, pid: int) -> None:
        """The pid is given to a new process, which started later."""
        self.spawn(pid)

    def identity(self, pid: int) -> ProcessIdentity:
        """The identity a host with `pid` would record (this boot, this namespace)."""
        return ProcessIdentity(
            pid=pid,
            start_ticks=self.processes[pid].start_ticks,
            boot_id=self.boot_id,
            pid_namespace=self.pid_namespace,
        )

    # -- ProcessTable ------------------------------------------------------------------------

    def own(self) -> ProcessIdentity:
        return self.identity(self.pid)

    def own_uid(self) -> int:
        return self.uid

    def observe(self, pid: int) -> ProcessObservation:
        if pid in self.unreadable:
            return ProcessObservation(
                pid=pid, state=ProcessState.UNKNOWN, problem=f"/proc/{pid}/stat: Permission denied"
            )
        process = self.processes.get(pid)
        if process is None:
            return ProcessObservation(pid=pid, state=ProcessState.ABSENT)
        state = ProcessState.EXITED if process.exited else ProcessState.ALIVE
        return ProcessObservation(pid=pid, state=state, start_ticks=process.start_ticks)
