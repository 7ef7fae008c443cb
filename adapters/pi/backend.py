"""The pi backend (seed 001; notes/harness.md §2; notes/pi.md).

Checks the prerequisites before anything is generated, writes config/settings.json of its own,
builds each round's command line (adapted to the installed pi in `domain.launch`) and
environment. The permission extension, the event-stream reader and the transcript lookup are the
pi backend's next part.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Sequence

from concorde_workers.adapters.programs import find_program, program_or_name
from concorde_workers.domain.environment import pi_environment
from concorde_workers.domain.errors import Refusal
from concorde_workers.domain.launch import LaunchCommand, pi_command
from concorde_workers.domain.prerequisites import (
    SANDBOX_RUNTIME_ENTRY,
    SANDBOX_RUNTIME_RELATIVE,
    PiPrerequisites,
    pi_runtime_refusal,
)
from concorde_workers.ports.agent import BackendContext, Generated, RoundKind, StreamReader
from concorde_workers.ports.filesystem import FileSystem

# Seed 001 "Run directory": the generated settings.json holds only this.
PI_SETTINGS = {"defaultProjectTrust": "never"}


class PiBackend:
    """The `pi` program (or `$CONCORDE_PI`) with sandbox-runtime."""

    name = "pi"

    def __init__(self, fs: FileSystem, environ: dict[str, str], linux: bool = True) -> None:
        self._fs = fs
        self._environ = environ
        self._linux = linux

    def prerequisites(self, primary: str) -> PiPrerequisites:
        env = self._environ
        path = env.get("PATH", "")
        package = env.get("CONCORDE_SANDBOX_RUNTIME") or posixpath.join(
            primary, SANDBOX_RUNTIME_RELATIVE)
        entry = posixpath.join(package, SANDBOX_RUNTIME_ENTRY)
        return PiPrerequisites(
            pi=find_program(self._fs, "pi", env),
            rg=self._fs.which("rg", path),
            fd=self._fs.which("fd", path) or self._fs.which("fdfind", path),
            sandbox_runtime=package if self._fs.is_file(entry) else None,
            sandbox_runtime_looked_at=package,
            bwrap=self._fs.which("bwrap", path), socat=self._fs.which("socat", path),
            linux=self._linux,
        )

    def check(self, primary: str) -> Refusal | None:
        return pi_runtime_refusal(self.prerequisites(primary))

    def generate(self, context: BackendContext) -> Generated:
        rt = context.policy.runtime
        program, found = program_or_name(self._fs, "pi", context.environ)
        return Generated(
            files={rt.result_schema: context.result_schema,
                   rt.pi_settings: json.dumps(PI_SETTINGS, indent=2) + "\n"},
            settings_digest=None, tools=context.policy.tools_for("pi"),
            program=program, program_found=found,
        )

    def credential_copies(self, context: BackendContext) -> Sequence[tuple[str, str]]:
        return ()

    def command(self, context: BackendContext, kind: RoundKind,
                session: str | None) -> LaunchCommand:
        program, _ = program_or_name(self._fs, "pi", context.environ)
        return pi_command(runtime=context.policy.runtime, tools=context.policy.tools_for("pi"),
                          run_id=context.run_id, model=context.request.local_model,
                          thinking=context.request.reasoning, program=program)

    def environment(self, context: BackendContext) -> dict[str, str]:
        return pi_environment(context.environ, context.policy.runtime,
                              context.request.project_interpreter)

    def reader(self, context: BackendContext) -> StreamReader:
        raise NotImplementedError("the pi event-stream reader is not built yet")

    def transcript(self, context: BackendContext, session: str | None) -> str | None:
        raise NotImplementedError("the pi transcript lookup is not built yet")

    def session_usable(self, context: BackendContext, session: str) -> bool:
        raise NotImplementedError("the pi session check is not built yet")
