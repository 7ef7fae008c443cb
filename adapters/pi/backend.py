"""The pi backend (seed 001; notes/harness.md §2; notes/pi.md).

Checks the prerequisites before anything is generated; generates the permission extension
(`adapters/pi/extension.py`) and config/settings.json of its own; copies only auth.json and
models.json; builds each round's command line (adapted to the installed pi in
`adapters/pi/launch.py`)
and environment; reads pi's JSON events (`adapters/pi/stream.py`); the transcript is the
session file under config/sessions/.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from concorde_workers.adapters.pi import layout
from concorde_workers.adapters.pi.environment import pi_environment
from concorde_workers.adapters.pi.extension import (
    generate_extension,
    policy_module_path,
    sandbox_runtime_entry,
    sandbox_runtime_package,
)
from concorde_workers.adapters.pi.launch import pi_command
from concorde_workers.adapters.pi.prerequisites import PiPrerequisites, pi_runtime_refusal
from concorde_workers.adapters.pi.profile import PI, PI_PROGRAM, SANDBOX_RUNTIME
from concorde_workers.adapters.processes.programs import find_program, program_or_name
from concorde_workers.domain.configuration.credentials import config_directory, copied_files
from concorde_workers.domain.configuration.discovery import Installation, locate
from concorde_workers.domain.configuration.program_versions import ProgramLocation
from concorde_workers.domain.ground.errors import Refusal
from concorde_workers.domain.ground.text import digest_text
from concorde_workers.domain.isolation.launch import LaunchCommand
from concorde_workers.ports.agents.agent import (
    BackendContext,
    BackendPorts,
    BackendRegistration,
    CompiledCache,
    Generated,
    RoundKind,
    StreamReader,
)
from concorde_workers.ports.machine.filesystem import BoundedReading

# Seed 001 "Run directory": the generated settings.json holds only this.
PI_SETTINGS = {"defaultProjectTrust": "never"}


PRECOMPILE = Path(__file__).with_name("extension") / "precompile.mjs"
"""The script that compiles the extension into jiti's cache (`PiBackend.compiled_cache`)."""


class PiBackend:
    """The `pi` program (or `$CONCORDE_PI`) with sandbox-runtime."""

    profile = PI
    name = profile.name

    def __init__(
        self,
        fs: BoundedReading,
        environ: dict[str, str],
        linux: bool = True,
        installations: Sequence[Installation] = (),
    ) -> None:
        self._fs = fs
        self._environ = environ
        self._linux = linux
        self._installations = tuple(installations)

    def _package(self, environ: Mapping[str, str], primary: str) -> str:
        """The sandbox-runtime package directory found (domain/configuration/discovery.py), else
        where seed
        001 says it lies (`sandbox_runtime_package`), which a refusal names."""
        found = locate(SANDBOX_RUNTIME, environ, self._installations, self._fs, primary)
        return found.path if found else sandbox_runtime_package(environ, primary)

    def prerequisites(self, primary: str) -> PiPrerequisites:
        env = self._environ
        path = env.get("PATH", "")
        package = self._package(env, primary)
        return PiPrerequisites(
            pi=find_program(self._fs, PI_PROGRAM, env, self._installations),
            rg=self._fs.which("rg", path),
            fd=self._fd(path),
            sandbox_runtime=package if self._fs.is_file(sandbox_runtime_entry(package)) else None,
            sandbox_runtime_looked_at=package,
            bwrap=self._fs.which("bwrap", path),
            socat=self._fs.which("socat", path),
            linux=self._linux,
        )

    def _fd(self, path: str) -> str | None:
        """fd, or fdfind as Debian names it."""
        return self._fs.which("fd", path) or self._fs.which("fdfind", path)

    def check(self, primary: str) -> Refusal | None:
        return pi_runtime_refusal(self.prerequisites(primary))

    def programs(self, environ: Mapping[str, str], primary: str) -> Sequence[ProgramLocation]:
        """pi and the sandbox-runtime package its permission extension loads, those found."""
        found: list[ProgramLocation] = []
        for spec in self.profile.programs:
            where = locate(spec, environ, self._installations, self._fs, primary)
            if where is not None:
                found.append(ProgramLocation(spec=spec, path=where.path, origin=where.origin))
        return tuple(found)

    def generate(self, context: BackendContext) -> Generated:
        rt = context.policy.runtime
        program, found = program_or_name(self._fs, PI_PROGRAM, context.environ, self._installations)
        path = context.environ.get("PATH", "")
        extension = generate_extension(
            context.policy,
            limits=context.request.limits,
            result_schema=context.result_schema,
            environ=context.environ,
            rg=self._fs.which("rg", path),
            fd=self._fd(path),
            package=self._package(context.environ, context.policy.primary),
        )
        return Generated(
            files={
                rt.result_schema: context.result_schema,
                layout.pi_settings(rt): json.dumps(PI_SETTINGS, indent=2) + "\n",
                **extension,
            },
            settings_digest=digest_text(extension[layout.permission_extension(rt)]),
            tools=self.profile.tool_set(context.policy.grant),
            program=program,
            program_found=found,
        )

    def confinement_needs(self, context: BackendContext) -> Sequence[str]:
        """The program, the node that runs it, and the sandbox-runtime package the permission
        extension loads (it may lie in the primary worktree, which the confinement hides)."""
        program, found = program_or_name(self._fs, PI_PROGRAM, context.environ, self._installations)
        node = self._fs.which("node", context.environ.get("PATH", ""))
        package = self._package(context.environ, context.policy.primary)
        return tuple(p for p in ((program if found else None), node, package) if p)

    def round_scratch(self, context: BackendContext) -> Sequence[str]:
        """pi compiles the extension into `<rt>/tmp/jiti` and reads project settings, a system
        prompt and packages from `<rt>/work/.pi`; both lie where the worker's bash may write
        (the sandbox denies them, and the host clears them anyway: notes/pi.md §9)."""
        runtime = context.policy.runtime
        return (layout.jiti_cache(runtime), layout.project_dir(runtime))

    def compiled_cache(self, context: BackendContext) -> CompiledCache | None:
        """The extension compiled once a run into jiti's cache format by the jiti pi's own
        program resolves (extension/precompile.mjs), into control/jiti, which no round writes;
        the rounds' cache, cleared before every round (`round_scratch`), is filled from it. None
        when the program or node is not found (the round then fails to start anyway)."""
        program, found = program_or_name(self._fs, PI_PROGRAM, context.environ, self._installations)
        node = self._fs.which("node", context.environ.get("PATH", ""))
        if not found or node is None:
            return None
        runtime = context.policy.runtime
        folder = layout.compiled_extension(runtime)
        return CompiledCache(
            argv=(
                node,
                str(PRECOMPILE),
                self._fs.realpath(program),
                folder,
                layout.permission_extension(runtime),
                policy_module_path(runtime),
            ),
            folder=folder,
            cache=layout.jiti_cache(runtime),
        )

    def credential_copies(self, context: BackendContext) -> Sequence[tuple[str, str]]:
        """auth.json and models.json, only, from the user's pi configuration directory
        (seed 001): `PI_CODING_AGENT_DIR` with a leading `~` expanded as pi does, else
        `~/.pi/agent`; HOME is the host's. The user's settings.json is never read."""
        rt = context.policy.runtime
        return tuple(
            (origin, rt.copy_of(name))
            for origin, name in copied_files(self.profile.credentials, context.environ)
        )

    def command(
        self, context: BackendContext, kind: RoundKind, session: str | None
    ) -> LaunchCommand:
        program, _ = program_or_name(self._fs, PI_PROGRAM, context.environ, self._installations)
        return pi_command(
            runtime=context.policy.runtime,
            tools=self.profile.tool_set(context.policy.grant),
            run_id=context.run_id,
            model=context.request.local_model,
            thinking=context.request.reasoning,
            program=program,
        )

    def environment(self, context: BackendContext) -> dict[str, str]:
        return pi_environment(
            context.environ, context.policy.runtime, context.request.project_interpreter
        )

    def reader(self, context: BackendContext) -> StreamReader:
        """A PiStreamReader that also reads this round's concorde-limit entry from the run's
        session file (pi 0.73.1 prints no entry_appended record). Imported when a round runs:
        `plan` makes no reader (issue 32 §2)."""
        from concorde_workers.adapters.pi.stream import PiStreamReader

        return PiStreamReader(
            session_file=layout.session_file(context.policy.runtime, context.run_id), fs=self._fs
        )

    def transcript(self, context: BackendContext, session: str | None) -> str | None:
        """The run's fixed session file `<rt>/config/sessions/<run-id>.jsonl` (every round
        continues it), None while pi has not written it (before its first assistant message)."""
        path = layout.session_file(context.policy.runtime, context.run_id)
        return path if self._fs.is_file(path) else None


def user_pi_directory(environ: Mapping[str, str]) -> str | None:
    """The user's pi configuration directory as pi 0.73.1 finds it
    (`domain.configuration.credentials`, which the policy hides too)."""
    return config_directory(PI.credentials, environ)


def _made(ports: BackendPorts) -> PiBackend:
    return PiBackend(ports.fs, ports.environ, ports.linux, ports.installations)


REGISTRATION = BackendRegistration(PiBackend.profile, _made)
"""This backend as the composition root registers it: its profile and its making (issue 34 §4)."""
