"""Where an agent program is found, and what said so (issue 12 §2; docs/decisions.md "Where the
agent programs are found").

Each program is a `ProgramSpec` of its backend's profile. In order, the first that holds:

1. the program's variable (`CONCORDE_CLAUDE`, `CONCORDE_PI`, `CONCORDE_SANDBOX_RUNTIME`) when it
   is set and not empty — and then only it: a program the user named and that is missing is
   refused, never silently replaced by another;
2. the program's name on PATH, or for a package directory its place in the primary worktree
   (sandbox-runtime's `.concorde/tools/pi-runtime`, seed 001, Prerequisites);
3. the installations this copy of concorde-workers pinned with package-lock.json: the
   checkout's `node_modules` after `./scripts/setup`, then the user data folder's
   (`$XDG_DATA_HOME/concorde-workers`, else `~/.local/share/concorde-workers`) that
   `concorde-workers install-agents` fills.

Pure: the caller hands in a `Probe` (the filesystem port satisfies it) and the installations.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from concorde_workers.domain.configuration.program_versions import ProgramSpec

CHECKOUT = "checkout"
USER_DATA = "user data folder"
DATA_FOLDER_NAME = "concorde-workers"


class Probe(Protocol):
    """What discovery asks of the machine (the FileSystem port has both)."""

    def is_file(self, path: str) -> bool: ...

    def which(self, program: str, search_path: str) -> str | None: ...


@dataclass(frozen=True)
class Installation:
    """A `node_modules` this copy of concorde-workers pinned its programs in."""

    kind: str
    """`checkout` (./scripts/setup) or `user data folder` (install-agents)."""
    node_modules: str

    def describe(self) -> str:
        folder = posixpath.dirname(self.node_modules)
        if self.kind == CHECKOUT:
            return f"this checkout's node_modules ({folder}, ./scripts/setup)"
        return f"the user data folder ({folder}, concorde-workers install-agents)"


@dataclass(frozen=True)
class Found:
    """A program and where it came from."""

    program: str
    path: str
    origin: str
    """In words: `$CONCORDE_PI`, `PATH`, the primary worktree's pi-runtime, an installation."""


def user_data_folder(environ: Mapping[str, str]) -> str | None:
    """`$XDG_DATA_HOME/concorde-workers` when absolute, else `~/.local/share/concorde-workers`
    of an absolute HOME; None without either."""
    base = environ.get("XDG_DATA_HOME", "")
    if not posixpath.isabs(base):
        home = environ.get("HOME", "")
        if not posixpath.isabs(home):
            return None
        base = posixpath.join(home, ".local", "share")
    return posixpath.join(base, DATA_FOLDER_NAME)


def installations(checkout: str | None, environ: Mapping[str, str]) -> tuple[Installation, ...]:
    """The checkout's node_modules (when this copy runs from a checkout) and the user data
    folder's, in the order they are searched."""
    found: list[Installation] = []
    if checkout is not None:
        found.append(Installation(CHECKOUT, posixpath.join(checkout, "node_modules")))
    data = user_data_folder(environ)
    if data is not None:
        found.append(Installation(USER_DATA, posixpath.join(data, "node_modules")))
    return tuple(found)


def _present(spec: ProgramSpec, path: str, probe: Probe) -> bool:
    """A package directory with its entry; a program: an executable file."""
    if spec.entry is not None:
        return probe.is_file(posixpath.join(path, spec.entry))
    return probe.which(path, "") is not None


def locate(
    spec: ProgramSpec,
    environ: Mapping[str, str],
    found_in: Sequence[Installation],
    probe: Probe,
    primary: str | None = None,
) -> Found | None:
    """Where the program is, or None. `primary` is the primary worktree (a package
    directory's own place, seed 001), when one is known."""
    program, variable = spec.program, spec.variable
    named = environ.get(variable, "")
    if named:
        if spec.entry is None and "/" not in named:
            on_path = probe.which(named, environ.get("PATH", ""))
            return Found(program, on_path, f"${variable}") if on_path else None
        return Found(program, named, f"${variable}") if _present(spec, named, probe) else None
    if spec.entry is not None:
        if primary is not None and spec.in_primary is not None:
            package = posixpath.join(primary, spec.in_primary)
            if _present(spec, package, probe):
                return Found(program, package, spec.in_primary_origin)
    else:
        on_path = probe.which(program, environ.get("PATH", ""))
        if on_path:
            return Found(program, on_path, "PATH")
    for installation in found_in:
        path = posixpath.join(installation.node_modules, spec.in_node_modules)
        if _present(spec, path, probe):
            return Found(program, path, installation.describe())
    return None


def looked_at(
    spec: ProgramSpec,
    environ: Mapping[str, str],
    found_in: Sequence[Installation],
    primary: str | None = None,
) -> list[str]:
    """Every place `locate` looks, in words, for a refusal or doctor to name."""
    variable = spec.variable
    if environ.get(variable):
        return [f"${variable} ({environ[variable]})"]
    first = (
        f"{primary}/{spec.in_primary}"
        if spec.entry is not None and spec.in_primary and primary
        else "PATH"
        if spec.entry is None
        else None
    )
    places = [f"${variable} (unset)", *([first] if first else [])]
    places += [posixpath.join(i.node_modules, spec.in_node_modules) for i in found_in]
    return places
