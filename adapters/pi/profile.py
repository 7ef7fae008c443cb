"""pi's profile: what the host's generic algorithms take of it as values."""

from __future__ import annotations

from concorde_workers.domain.boundary.task_types import ToolNames
from concorde_workers.domain.configuration.profile import BackendProfile
from concorde_workers.domain.evidence.codes import Code
from concorde_workers.domain.run.brief import BriefVariant

__all__ = ["PI"]

PI = BackendProfile(
    name="pi", title="pi", failure_code=Code.PI_FAILED,
    runtime_missing_code=Code.PI_RUNTIME_MISSING, run_directory_code=Code.LAUNCH_FAILED,
    key_variables="*_API_KEY",
    brief=BriefVariant(
        shell="bash", write_tool="write tool",
        ending="End by calling the `concorde_result` tool exactly once; it ends your session.",
        retry_ending="end by calling the `concorde_result` tool exactly once"),
    tools=ToolNames(read=("read", "grep", "find", "ls"), change=("edit", "write"), shell=("bash",),
                    always=("concorde_result",)),
    reasoning_levels=("off", "minimal", "low", "medium", "high", "xhigh"),
)
