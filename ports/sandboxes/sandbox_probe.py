"""The SandboxProbe port: run one command in the worker's Bash sandbox and tell whether it
could reach the host's loopback (`concorde-workers doctor`, issue 12 §1)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from concorde_workers.domain.setup.doctor import SandboxFact


@runtime_checkable
class SandboxProbe(Protocol):
    """Runs a probe in sandbox-runtime, as the worker's Bash runs."""

    def network(self, node: str, sandbox_runtime: str) -> SandboxFact:
        """Run, inside sandbox-runtime (the package directory `sandbox_runtime`, started with
        `node`) with the worker's network settings, a command that says it ran and tries to
        connect to a listener this probe opened on 127.0.0.1."""
        ...
