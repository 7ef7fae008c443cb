"""The process table adapter: the `ProcessTable` port over Linux's /proc.

A pid is looked up in /proc/<pid>/stat (its state and start time, field 22, in clock ticks after
boot); the boot is /proc/sys/kernel/random/boot_id, the PID namespace the link /proc/self/ns/pid.
"""

from __future__ import annotations

import errno
import os

from concorde_workers.domain.evidence.sweep import (
    ProcessIdentity,
    ProcessObservation,
    ProcessState,
    observation_of_stat,
)

_PROC = "/proc"


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().strip() or None
    except OSError:
        return None


class ProcTable:
    """`ProcessTable` from /proc (`proc` names another mount point, for tests)."""

    def __init__(self, proc: str = _PROC) -> None:
        self._proc = proc

    def own(self) -> ProcessIdentity:
        pid = os.getpid()
        seen = self.observe(pid)
        try:
            namespace: str | None = os.readlink(f"{self._proc}/self/ns/pid") or None
        except OSError:
            namespace = None
        return ProcessIdentity(
            pid=pid,
            start_ticks=seen.start_ticks,
            boot_id=_read(f"{self._proc}/sys/kernel/random/boot_id"),
            pid_namespace=namespace,
        )

    def own_uid(self) -> int:
        return os.geteuid()

    def observe(self, pid: int) -> ProcessObservation:
        if isinstance(pid, bool) or not isinstance(pid, int) or pid < 1:
            return ProcessObservation(pid=pid, state=ProcessState.ABSENT)
        path = f"{self._proc}/{pid}/stat"
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError as error:
            if error.errno in (errno.ENOENT, errno.ESRCH):
                return ProcessObservation(pid=pid, state=ProcessState.ABSENT)
            return ProcessObservation(
                pid=pid, state=ProcessState.UNKNOWN, problem=f"{path}: {error.strerror or error}"
            )
        return observation_of_stat(pid, text)
