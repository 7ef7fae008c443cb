"""The agent program's compiled cache, made once a run by the host (issue 32 §4).

A backend's `CompiledCache` (ports/agents/agent.py) names a command that compiles, once a run, what
the program would otherwise compile at every round (pi's permission extension). The host starts it
when round 1's program has ended, in the background at the lowest priority, beside the audit,
the checks and the validation: a one-round run waits for nothing (its compilation is ended with
it) and round 1 compiles for itself as before. Every later round waits for it and finds its
answer copied into the program's cache. What it makes comes from the host's own files (the
control files) and the program's installation, never from the worktree or anything a round
wrote. A run that ends first stops it; a host that dies takes it along (its lifeline: a command
that outlived a SIGKILLed host would write into a runtime directory its sweep is removing).
"""

from __future__ import annotations

from concorde_workers.domain.isolation.launch import host_lifeline
from concorde_workers.ports.agents.agent import CompiledCache
from concorde_workers.ports.processes.process import (
    ProcessHandle,
    ProcessRunner,
    ProcessStartFailed,
)

ENVIRONMENT = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
"""The command's whole environment: nothing of the host's (no JITI_* setting, no NODE_OPTIONS)."""
NICE = "/usr/bin/nice"


class CacheCompilation:
    """One run's `CompiledCache` command: started once, asked whether it is done, stopped."""

    def __init__(self, processes: ProcessRunner, compiled: CompiledCache | None) -> None:
        self._processes = processes
        self.compiled = compiled
        self._handle: ProcessHandle | None = None
        self._started = False

    def start(self, cwd: str) -> None:
        """Start the command (once; `nice`d when /usr/bin/nice is there); a command that cannot
        start leaves nothing to wait for."""
        if self._started or self.compiled is None:
            return
        self._started = True
        argv = list(self.compiled.argv)
        for command in ([NICE, "-n", "19", *argv], argv):
            try:
                self._handle = self._processes.start(
                    command,
                    ENVIRONMENT,
                    cwd,
                    None,
                    self.compiled.timeout_seconds,
                    prefix=host_lifeline(),
                )
                return
            except ProcessStartFailed:
                continue

    def done(self, wait: bool) -> bool:
        """Whether the command ended well (exit status 0), waiting for its end when `wait`."""
        if self._handle is None:
            return False
        return self._handle.wait(None if wait else 0) == 0

    def stop(self) -> None:
        """End the command if it still runs (the run is over), and wait for it."""
        handle, self._handle = self._handle, None
        if handle is None:
            return
        if handle.wait(0) is None:
            handle.kill_group()
        handle.wait(None)
