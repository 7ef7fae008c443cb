"""The identity of the agent programs a run prepared, checked again before every round
(docs/decisions.md "The program that runs is the one checked").

The preparation reads each program's version and refuses one older than the policy relies on;
between that and a round (the plan shown, a retry minutes later) the program can be replaced or
updated. One `stat` of the program's file and of its version's source per round tells; a round
whose program changed is not started (launch_failed), so the version the run recorded is the
version of what ran.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

from concorde_workers.domain.configuration.program_versions import ProgramVersion, changed_problem
from concorde_workers.ports.machine.filesystem import FileSystemError, PathFacts


def program_identity(fs: PathFacts, program: ProgramVersion) -> str | None:
    """The program's file and its version's source (a package.json; a `--version` asked has no
    file of its own), each resolved with its size and modification time; None when one of them
    cannot be read."""
    parts: list[str] = []
    for path in dict.fromkeys((program.path, program.source)):
        if not posixpath.isabs(path):
            continue
        try:
            real = fs.realpath(path)
            found = fs.stat(real)
        except FileSystemError:
            return None
        parts.append(f"{real} {found.size} {found.mtime!r}")
    return "\n".join(parts) or None


def with_identity(fs: PathFacts, program: ProgramVersion) -> ProgramVersion:
    """The program as found, with its identity now."""
    return program.model_copy(update={"identity": program_identity(fs, program)})


def program_changed(fs: PathFacts, programs: Sequence[ProgramVersion]) -> str | None:
    """Why the next round must not start (a program changed since the preparation), or None."""
    for program in programs:
        problem = changed_problem(program, program_identity(fs, program))
        if problem is not None:
            return problem
    return None


__all__ = ["program_changed", "program_identity", "with_identity"]
