"""Finding an agent program: `$CONCORDE_<NAME>` when set (a path, or a name on PATH), else the
program's own name on PATH."""

from __future__ import annotations

from collections.abc import Mapping

from concorde_workers.ports.filesystem import FileSystem


def find_program(fs: FileSystem, name: str, environ: Mapping[str, str]) -> str | None:
    wanted = environ.get(f"CONCORDE_{name.upper()}") or name
    if "/" in wanted:
        return wanted if fs.is_file(wanted) else None
    return fs.which(wanted, environ.get("PATH", ""))


def program_or_name(fs: FileSystem, name: str, environ: Mapping[str, str]) -> tuple[str, bool]:
    """The program to run and whether it was found (when not, the name the launch will fail on)."""
    found = find_program(fs, name, environ)
    return (found, True) if found else (environ.get(f"CONCORDE_{name.upper()}") or name, False)
