"""The Codex CLI's program as a round runs it (issue 33; ../shared/notes/codex.md): the native
executable of the pinned npm package's platform package, found through `codex` (or
`$CONCORDE_CODEX`) as any program is, then through npm's `bin/codex.js` to the binary it only
starts (Node is not needed)."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence

from concorde_workers.adapters.codex.profile import CODEX_PROGRAM, native_relative
from concorde_workers.adapters.processes.programs import find_located
from concorde_workers.domain.configuration.discovery import Installation
from concorde_workers.domain.configuration.program_versions import ProgramLocation
from concorde_workers.ports.machine.filesystem import PathFacts

__all__ = ["NativeProgram"]


class NativeProgram:
    """Where the native codex program lies on this host, from the environment and the
    programs' installations."""

    def __init__(self, fs: PathFacts, installations: Sequence[Installation] = ()) -> None:
        self._fs = fs
        self._installations = tuple(installations)

    def locations(self, environ: Mapping[str, str]) -> Sequence[ProgramLocation]:
        """The native codex program, when it is found (its version from its platform package)."""
        found = find_located(self._fs, CODEX_PROGRAM, environ, self._installations)
        if found is None:
            return ()
        return (
            ProgramLocation(spec=CODEX_PROGRAM, path=self.native(found.path), origin=found.origin),
        )

    def of(self, environ: Mapping[str, str]) -> tuple[str, bool]:
        """The program a round runs, and whether it was found (else the name it is asked by)."""
        found = find_located(self._fs, CODEX_PROGRAM, environ, self._installations)
        if found is None:
            return environ.get(CODEX_PROGRAM.variable) or CODEX_PROGRAM.program, False
        return self.native(found.path), True

    def native(self, program: str) -> str:
        """The native program a found `codex` stands for: npm's `bin/codex.js` only starts the
        platform package's binary beside it, which the round runs itself."""
        real = self._fs.realpath(program)
        if not real.endswith("/@openai/codex/bin/codex.js"):
            return program
        package = posixpath.dirname(posixpath.dirname(real))
        modules = posixpath.dirname(posixpath.dirname(package))
        for root in (posixpath.join(package, "node_modules"), modules):
            candidate = posixpath.join(root, native_relative())
            if self._fs.is_file(candidate):
                return candidate
        return program
