"""The Claude Code backend (seed 000 "Launch"; notes/harness.md §1; notes/claude-code.md).

Generates control/settings.json from the shared policy and the worker result schema, builds
each round's command line and environment. The write hook, the stream-json reader and the
transcript lookup are the Claude Code backend's next part.
"""

from __future__ import annotations

from collections.abc import Sequence

from concorde_workers.adapters.programs import program_or_name
from concorde_workers.domain.claude_settings import claude_settings, digest_text, settings_text
from concorde_workers.domain.environment import claude_environment
from concorde_workers.domain.errors import Refusal
from concorde_workers.domain.launch import LaunchCommand, claude_command
from concorde_workers.ports.agent import BackendContext, Generated, RoundKind, StreamReader
from concorde_workers.ports.filesystem import FileSystem


class ClaudeBackend:
    """The `claude` program (or `$CONCORDE_CLAUDE`)."""

    name = "claude"

    def __init__(self, fs: FileSystem) -> None:
        self._fs = fs

    def check(self, primary: str) -> Refusal | None:
        return None

    def generate(self, context: BackendContext) -> Generated:
        rt = context.policy.runtime
        settings = settings_text(claude_settings(context.policy, context.interpreter,
                                                 as_root=context.as_root))
        program, found = program_or_name(self._fs, "claude", context.environ)
        return Generated(
            files={rt.settings: settings, rt.result_schema: context.result_schema},
            settings_digest=digest_text(settings), tools=context.policy.tools_for("claude"),
            program=program, program_found=found,
        )

    def credential_copies(self, context: BackendContext) -> Sequence[tuple[str, str]]:
        return ()

    def command(self, context: BackendContext, kind: RoundKind,
                session: str | None) -> LaunchCommand:
        request = context.request
        program, _ = program_or_name(self._fs, "claude", context.environ)
        return claude_command(
            runtime=context.policy.runtime, tools=context.policy.tools_for("claude"),
            result_schema=context.result_schema, max_turns=request.limits.max_turns,
            max_budget_usd=request.limits.max_budget_usd, model=request.local_model,
            effort=request.reasoning, resume=session if kind is not RoundKind.INITIAL else None,
            program=program,
        )

    def environment(self, context: BackendContext) -> dict[str, str]:
        return claude_environment(context.environ, context.policy.runtime,
                                  context.request.project_interpreter)

    def reader(self, context: BackendContext) -> StreamReader:
        raise NotImplementedError("the Claude Code stream-json reader is not built yet")

    def transcript(self, context: BackendContext, session: str | None) -> str | None:
        raise NotImplementedError("the Claude Code transcript lookup is not built yet")

    def session_usable(self, context: BackendContext, session: str) -> bool:
        raise NotImplementedError("the Claude Code session check is not built yet")
