"""The ProcessTable port: which processes live, told so that a reused pid cannot fool it.

A sweep of stale runtime directories asks it who this process is (to record as a runtime
directory's owner, and to compare boots and PID namespaces) and what has become of the pid an
owner record names. The real adapter reads /proc; the fake is an in-memory table.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from concorde_workers.domain.sweep import ProcessIdentity, ProcessObservation, ProcessState

__all__ = ["ProcessIdentity", "ProcessObservation", "ProcessState", "ProcessTable"]


@runtime_checkable
class ProcessTable(Protocol):
    """This process's identity and its user, and one look at any pid."""

    def own(self) -> ProcessIdentity:
        """This process: its pid, start time in ticks, the boot id and its PID namespace (a
        fact that cannot be read is None)."""
        ...

    def own_uid(self) -> int:
        """The user this process acts as (its effective uid): the owner of what it creates."""
        ...

    def observe(self, pid: int) -> ProcessObservation:
        """What the process table says of `pid` now: absent, alive (with its start time),
        exited (a zombie, with its start time), or unknown with the problem. Never raises."""
        ...
