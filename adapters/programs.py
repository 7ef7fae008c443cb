"""Finding an agent program (domain/discovery.py): `$CONCORDE_<NAME>` when set (a path, or a
name on PATH), else the program's own name on PATH, else the node_modules this copy of
concorde-workers pinned it in (the checkout's, then the user data folder's)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from concorde_workers.domain.discovery import VARIABLES, Found, Installation, locate
from concorde_workers.ports.filesystem import FileSystem


def find_located(fs: FileSystem, name: str, environ: Mapping[str, str],
                 installations: Sequence[Installation] = ()) -> Found | None:
    """The program and where it came from, or None."""
    return locate(name, environ, installations, fs)


def find_program(fs: FileSystem, name: str, environ: Mapping[str, str],
                 installations: Sequence[Installation] = ()) -> str | None:
    found = locate(name, environ, installations, fs)
    return None if found is None else found.path


def program_or_name(fs: FileSystem, name: str, environ: Mapping[str, str],
                    installations: Sequence[Installation] = ()) -> tuple[str, bool]:
    """The program to run and whether it was found (when not, the name the launch will fail on)."""
    found = find_program(fs, name, environ, installations)
    return (found, True) if found else (environ.get(VARIABLES[name]) or name, False)
