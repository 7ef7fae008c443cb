"""The ProcessTable port: which processes live, told so that a reused pid cannot fool it.

The run host asks it who this process is, to record as its runtime directory's owner; the sweep
of stale runtime directories asks the same (to compare boots and PID namespaces), the user this
process acts as, and what has become of the pid an owner record names. The real adapter reads
/proc; the fake is an in-memory table.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from concorde_workers.domain.evidence.sweep import ProcessIdentity, ProcessObservation, ProcessState

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
