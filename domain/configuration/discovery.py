"""Where an agent program is found, and what said so (issue 12 §2; docs/decisions.md "Where the
agent programs are found").

In order, the first that holds:

1. the program's variable (`CONCORDE_CLAUDE`, `CONCORDE_PI`, `CONCORDE_SANDBOX_RUNTIME`) when it
   is set and not empty — and then only it: a program the user named and that is missing is
   refused, never silently replaced by another;
2. the program's name on PATH (claude, pi), or for sandbox-runtime the primary worktree's
   `.concorde/tools/pi-runtime` (seed 001, Prerequisites);
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

from concorde_workers.domain.configuration.prerequisites import (
    SANDBOX_RUNTIME_ENTRY,
    SANDBOX_RUNTIME_RELATIVE,
)

CHECKOUT = "checkout"
USER_DATA = "user data folder"
DATA_FOLDER_NAME = "concorde-workers"

VARIABLES: Mapping[str, str] = {
    "claude": "CONCORDE_CLAUDE", "pi": "CONCORDE_PI",
    "sandbox-runtime": "CONCORDE_SANDBOX_RUNTIME",
}
"""The environment variable that names each program."""

IN_NODE_MODULES: Mapping[str, str] = {
    "claude": ".bin/claude", "pi": ".bin/pi",
    "sandbox-runtime": "@anthropic-ai/sandbox-runtime",
}
"""Where each program lies in an npm `node_modules` (sandbox-runtime: its package directory)."""


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


def _present(program: str, path: str, probe: Probe) -> bool:
    """sandbox-runtime: a package directory with its entry; a program: an executable file."""
    if program == "sandbox-runtime":
        return probe.is_file(posixpath.join(path, SANDBOX_RUNTIME_ENTRY))
    return probe.which(path, "") is not None


def locate(program: str, environ: Mapping[str, str], found_in: Sequence[Installation],
           probe: Probe, primary: str | None = None) -> Found | None:
    """Where `program` (claude, pi, sandbox-runtime) is, or None. `primary` is the primary
    worktree (sandbox-runtime's own place, seed 001), when one is known."""
    variable = VARIABLES[program]
    named = environ.get(variable, "")
    if named:
        if program != "sandbox-runtime" and "/" not in named:
            on_path = probe.which(named, environ.get("PATH", ""))
            return Found(program, on_path, f"${variable}") if on_path else None
        return Found(program, named, f"${variable}") if _present(program, named, probe) \
            else None
    if program == "sandbox-runtime":
        if primary is not None:
            package = posixpath.join(primary, SANDBOX_RUNTIME_RELATIVE)
            if _present(program, package, probe):
                return Found(program, package, "the primary worktree's .concorde/tools/pi-runtime")
    else:
        on_path = probe.which(program, environ.get("PATH", ""))
        if on_path:
            return Found(program, on_path, "PATH")
    for installation in found_in:
        path = posixpath.join(installation.node_modules, IN_NODE_MODULES[program])
        if _present(program, path, probe):
            return Found(program, path, installation.describe())
    return None


def looked_at(program: str, environ: Mapping[str, str], found_in: Sequence[Installation],
              primary: str | None = None) -> list[str]:
    """Every place `locate` looks, in words, for a refusal or doctor to name."""
    variable = VARIABLES[program]
    if environ.get(variable):
        return [f"${variable} ({environ[variable]})"]
    first = (f"{primary}/{SANDBOX_RUNTIME_RELATIVE}" if program == "sandbox-runtime" and primary
             else "PATH" if program != "sandbox-runtime" else None)
    places = [f"${variable} (unset)", *([first] if first else [])]
    places += [posixpath.join(i.node_modules, IN_NODE_MODULES[program]) for i in found_in]
    return places
