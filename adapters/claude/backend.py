"""The Claude Code backend (seed 000 "Launch"; notes/harness.md §1; notes/claude-code.md).

Generates the control files from the shared policy (settings.json with the deny rules, the
sandbox and the hooks; write_hook.py; search_hook.py; read_hook.py; the worker result schema),
the credential copy, each round's command line and environment, the stream-json reader
(`adapters/claude/stream.py`) and the transcript under config/projects/.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping, Sequence

from concorde_workers.adapters.claude.environment import claude_environment
from concorde_workers.adapters.claude.guard.hooks import extra_hook_entries, hook_files
from concorde_workers.adapters.claude.launch import claude_command
from concorde_workers.adapters.claude.layout import settings_file
from concorde_workers.adapters.claude.profile import CLAUDE
from concorde_workers.adapters.claude.settings import (
    claude_settings,
    settings_text,
    shown_settings,
)
from concorde_workers.adapters.processes.programs import find_located, program_or_name
from concorde_workers.domain.configuration.credentials import config_directory
from concorde_workers.domain.configuration.discovery import Installation
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
from concorde_workers.ports.machine.filesystem import EntryKind, FileSystemError, Walking


class ClaudeBackend:
    """The `claude` program (or `$CONCORDE_CLAUDE`)."""

    profile = CLAUDE
    name = profile.name

    def __init__(
        self,
        fs: Walking,
        installations: Sequence[Installation] = (),
    ) -> None:
        self._fs = fs
        self._installations = tuple(installations)

    def check(self, primary: str) -> Refusal | None:
        """Nothing of its own: the machine's endpoints.json, its one file, is the profile's
        `machine_file`, read and judged by the preparation like every machine file."""
        return None

    def programs(self, environ: Mapping[str, str], primary: str) -> Sequence[ProgramLocation]:
        """The claude program (`$CONCORDE_CLAUDE`, PATH or a pinned installation), when it is
        found."""
        spec = self.profile.program
        found = find_located(self._fs, spec, environ, self._installations)
        return (ProgramLocation(spec=spec, path=found.path, origin=found.origin),) if found else ()

    def generate(self, context: BackendContext) -> Generated:
        # control/settings.json with the PreToolUse hooks, control/write_hook.py,
        # control/search_hook.py and control/read_hook.py (adapters/claude/guard/hooks.py); the
        # digest covers the final text.
        rt = context.policy.runtime
        settings = claude_settings(
            context.policy,
            context.interpreter,
            as_root=context.as_root,
            extra_hooks=extra_hook_entries(context.interpreter, rt),
        )
        text = settings_text(settings)
        program, found = program_or_name(
            self._fs, self.profile.program, context.environ, self._installations
        )
        return Generated(
            files={
                settings_file(rt): text,
                rt.result_schema: context.result_schema,
                **hook_files(context.policy),
            },
            settings_digest=digest_text(text),
            tools=self.profile.tool_set(context.policy.grant),
            program=program,
            program_found=found,
            shown_settings=shown_settings(settings),
        )

    def round_scratch(self, context: BackendContext) -> Sequence[str]:
        return ()

    def compiled_cache(self, context: BackendContext) -> CompiledCache | None:
        return None

    def confinement_needs(self, context: BackendContext) -> Sequence[str]:
        """The program (a native executable; its sandbox and ripgrep are inside it)."""
        program, found = program_or_name(
            self._fs, self.profile.program, context.environ, self._installations
        )
        return (program,) if found else ()

    def credential_copies(self, context: BackendContext) -> Sequence[tuple[str, str]]:
        """The user's credentials file (`$CLAUDE_CONFIG_DIR/.credentials.json`, else
        `~/.claude/.credentials.json` of the host's HOME) and its copy in config/; the origin
        comes from `domain.configuration.credentials`, which the policy hides too."""
        spec = self.profile.credentials
        config = config_directory(spec, context.environ) or posixpath.join(
            os.path.expanduser("~"), spec.default_directory
        )
        return tuple(
            (posixpath.join(config, name), context.policy.runtime.copy_of(name))
            for name in spec.files
        )

    def command(
        self, context: BackendContext, kind: RoundKind, session: str | None
    ) -> LaunchCommand:
        request = context.request
        program, _ = program_or_name(
            self._fs, self.profile.program, context.environ, self._installations
        )
        return claude_command(
            runtime=context.policy.runtime,
            tools=self.profile.tool_set(context.policy.grant),
            result_schema=context.result_schema,
            max_turns=request.limits.max_turns,
            max_budget_usd=request.limits.max_budget_usd,
            model=request.local_model,
            effort=request.reasoning,
            resume=session if kind is not RoundKind.INITIAL else None,
            program=program,
        )

    def environment(self, context: BackendContext) -> dict[str, str]:
        """Seed 000's table; the machine's endpoint (endpoints.json, the profile's
        `machine_file`) is added by the preparation from its one reader's answer."""
        return claude_environment(
            context.environ, context.policy.runtime, context.request.project_interpreter
        )

    def reader(self, context: BackendContext) -> StreamReader:
        # The stream's reader and its records are a round's, imported when one runs: `plan`
        # makes no reader (issue 32 §2).
        from concorde_workers.adapters.claude.stream import ClaudeStreamReader

        return ClaudeStreamReader()

    def transcript(self, context: BackendContext, session: str | None) -> str | None:
        """`<config>/projects/<slug of work/>/<session>.jsonl` when it exists, else the first
        `<config>/projects/*/<session>.jsonl`; None when the session has no transcript."""
        from concorde_workers.adapters.claude.stream import project_slug, session_file_name

        name = session_file_name(session) if session else None
        if name is None:
            return None
        rt = context.policy.runtime
        projects = posixpath.join(rt.config, "projects")
        expected = posixpath.join(projects, project_slug(rt.work), name)
        if self._fs.is_file(expected):
            return expected
        try:
            entries = self._fs.listdir(projects)
        except FileSystemError:
            return None
        for entry in entries:
            candidate = posixpath.join(projects, entry.name, name)
            if entry.kind is EntryKind.DIRECTORY and self._fs.is_file(candidate):
                return candidate
        return None


def _made(ports: BackendPorts) -> ClaudeBackend:
    return ClaudeBackend(ports.fs, ports.installations)


REGISTRATION = BackendRegistration(ClaudeBackend.profile, _made)
"""This backend as the composition root registers it: its profile and its making (issue 34 §4)."""
