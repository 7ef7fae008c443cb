"""Claude Code's profile: what the host's generic algorithms take of it as values."""

from __future__ import annotations

from concorde_workers.domain.boundary.task_types import ToolNames
from concorde_workers.domain.configuration.profile import BackendProfile
from concorde_workers.domain.evidence.codes import Code
from concorde_workers.domain.run.brief import BriefVariant

__all__ = ["CLAUDE"]

CLAUDE = BackendProfile(
    name="claude", title="Claude Code", failure_code=Code.CLAUDE_FAILED,
    runtime_missing_code=Code.LAUNCH_FAILED, run_directory_code=Code.RUN_DIRECTORY_DENIED,
    key_variables="ANTHROPIC_API_KEY",
    brief=BriefVariant(shell="Bash", write_tool="Write tool",
                       ending="End with the structured result.",
                       retry_ending="end with the structured result"),
    tools=ToolNames(read=("Read", "Glob", "Grep"), change=("Edit", "Write"), shell=("Bash",)),
    reasoning_levels=("low", "medium", "high", "xhigh", "max"),
)
