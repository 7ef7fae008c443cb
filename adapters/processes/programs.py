"""Finding an agent program (domain/configuration/discovery.py): `$CONCORDE_<NAME>` when set (a
path, or a
name on PATH), else the program's own name on PATH, else the node_modules this copy of
concorde-workers pinned it in (the checkout's, then the user data folder's); and whether a
program can be started at all, as `exec` would find it (`start_problem`)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence

from concorde_workers.domain.configuration.discovery import Found, Installation, locate
from concorde_workers.domain.configuration.program_versions import ProgramSpec
from concorde_workers.ports.machine.filesystem import PathFacts


def find_located(
    fs: PathFacts,
    spec: ProgramSpec,
    environ: Mapping[str, str],
    installations: Sequence[Installation] = (),
) -> Found | None:
    """The program and where it came from, or None."""
    return locate(spec, environ, installations, fs)


def find_program(
    fs: PathFacts,
    spec: ProgramSpec,
    environ: Mapping[str, str],
    installations: Sequence[Installation] = (),
) -> str | None:
    found = locate(spec, environ, installations, fs)
    return None if found is None else found.path


def program_or_name(
    fs: PathFacts,
    spec: ProgramSpec,
    environ: Mapping[str, str],
    installations: Sequence[Installation] = (),
) -> tuple[str, bool]:
    """The program to run and whether it was found (when not, the name the launch will fail on)."""
    found = find_program(fs, spec, environ, installations)
    return (found, True) if found else (environ.get(spec.variable) or spec.program, False)


def start_problem(program: str, env: Mapping[str, str], cwd: str) -> str | None:
    """The text `Popen` gives when `program` (looked up on `env`'s PATH when it has no slash)
    cannot be executed, or None."""
    path = (
        os.path.join(cwd, program)
        if "/" in program
        else shutil.which(program, path=env.get("PATH", os.defpath))
    )
    if path is None or not os.path.isfile(path):
        return f"[Errno 2] No such file or directory: '{program}'"
    if not os.access(path, os.X_OK):
        return f"[Errno 13] Permission denied: '{program}'"
    return None
