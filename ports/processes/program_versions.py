"""The ProgramVersions port: which version of an agent program is installed.

The preparation asks it for every program a backend runs (`AgentBackend.programs`) and refuses a
run whose program is older than the policy relies on (domain/configuration/program_versions.py).
Asking costs
nothing on a path already seen: the real adapter reads the program's npm package.json when it
lies in one and runs `<program> --version` only otherwise, once per program file (cached per
user by the file's path, modification time and size).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from concorde_workers.domain.configuration.program_versions import ProgramLocation, ProgramVersion


@runtime_checkable
class ProgramVersions(Protocol):
    """Reads an agent program's version."""

    def version_of(self, location: ProgramLocation) -> ProgramVersion:
        """The version of the program at `location` (or of the sandbox-runtime package in its
        directory), with what said it; `version` None and `problem` set when nothing did."""
        ...
