"""Claude Code's profile: what the host's generic algorithms take of it as values."""

from __future__ import annotations

from concorde_workers.adapters.claude.endpoints import ENDPOINTS_SPEC, claude_endpoint
from concorde_workers.adapters.claude.environment import claude_environment
from concorde_workers.adapters.claude.layout import CLAUDE_ENTRIES, CREDENTIALS_FILE, SETTINGS_FILE
from concorde_workers.adapters.claude.transcript import CLAUDE_TRANSCRIPT
from concorde_workers.domain.configuration.credentials import CredentialSpec
from concorde_workers.domain.configuration.profile import BackendProfile, ToolNames
from concorde_workers.domain.configuration.program_versions import INSTALL_AGENTS, ProgramSpec
from concorde_workers.domain.configuration.starter import DefaultModel
from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.run.brief import BriefVariant

__all__ = ["CLAUDE", "PINS"]

PINS = {
    "@anthropic-ai/claude-code": "2.1.332",
}
"""The version package.json pins (scripts/bump-agents moves both; a unit test holds them equal)."""

_PACKAGE = "@anthropic-ai/claude-code"
_PIN = f"{_PACKAGE}@{PINS[_PACKAGE]}"

CLAUDE_PROGRAM = ProgramSpec(
    program="claude",
    title="Claude Code",
    package=_PACKAGE,
    pinned=PINS[_PACKAGE],
    minimum="2.1.332",
    relies_on="the generated settings' sandbox.network.strictAllowlist and "
    "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS, which an older Claude Code reads "
    "without honouring, and its hook and sandbox behaviour the tests verified",
    upgrade=f"run {INSTALL_AGENTS} (the pinned {_PIN} in the user data folder; ./scripts/setup "
    f"in a checkout), or npm install -g {_PIN}, or set CONCORDE_CLAUDE to a newer claude",
    provide=f"run {INSTALL_AGENTS} (the pinned {_PIN} in the user data folder; ./scripts/setup "
    f"in a checkout), or npm install -g {_PIN}, or set CONCORDE_CLAUDE to its claude "
    "program",
    code=Code.LAUNCH_FAILED,
    refused="{problem}; or choose the pi backend for this worker. The run is never started "
    "with a program older than the settings it is given.",
    variable="CONCORDE_CLAUDE",
    in_node_modules=".bin/claude",
)

CLAUDE = BackendProfile(
    name="claude",
    title="Claude Code",
    failure_code=Code.CLAUDE_FAILED,
    runtime_missing_code=Code.LAUNCH_FAILED,
    run_directory_code=Code.RUN_DIRECTORY_DENIED,
    credentials=CredentialSpec(
        directory_variable="CLAUDE_CONFIG_DIR",
        default_directory=".claude",
        files=(CREDENTIALS_FILE,),
        login_file=CREDENTIALS_FILE,
        key_variables=("ANTHROPIC_API_KEY",),
        key_text="ANTHROPIC_API_KEY",
        repair="log in once with claude (it writes ~/.claude/.credentials.json, or "
        "$CLAUDE_CONFIG_DIR/.credentials.json) or set ANTHROPIC_API_KEY",
    ),
    brief=BriefVariant(
        shell="Bash",
        write_tool="Write tool",
        ending="End with the structured result.",
        retry_ending="end with the structured result",
    ),
    runtime_entries=CLAUDE_ENTRIES,
    settings_file=SETTINGS_FILE,
    environment=claude_environment,
    transcript=CLAUDE_TRANSCRIPT,
    tools=ToolNames(read=("Read", "Glob", "Grep"), change=("Edit", "Write"), shell=("Bash",)),
    local_id_placeholder="<model id>",
    # What Claude Code 2.1.332 runs without `--model` (../shared/notes/claude-code.md, [V-run]).
    example_ids={"example-sonnet": "claude-sonnet-4-5"},
    default_model=DefaultModel(fixed="claude-opus-4-8"),
    reasoning_levels=("low", "medium", "high", "xhigh", "max"),
    programs=(CLAUDE_PROGRAM,),
    machine_file=ENDPOINTS_SPEC,
    machine_file_judge=claude_endpoint,
)
