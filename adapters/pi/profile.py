"""pi's profile: what the host's generic algorithms take of it as values."""

from __future__ import annotations

from concorde_workers.adapters.pi.agent_files import judge_pi_files
from concorde_workers.adapters.pi.environment import pi_environment
from concorde_workers.adapters.pi.layout import AUTH_FILE, EXTENSION_FILE, MODELS_FILE, PI_ENTRIES
from concorde_workers.adapters.pi.transcript import PI_TRANSCRIPT
from concorde_workers.domain.configuration.credentials import CredentialSpec
from concorde_workers.domain.configuration.profile import BackendProfile, HelperTool, ToolNames
from concorde_workers.domain.configuration.program_versions import INSTALL_AGENTS, ProgramSpec
from concorde_workers.domain.configuration.starter import DefaultModel
from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.isolation.environment import API_KEY_SUFFIX
from concorde_workers.domain.run.brief import BriefVariant

__all__ = ["PI", "PINS", "SANDBOX_RUNTIME_ENTRY", "SANDBOX_RUNTIME_RELATIVE"]

PINS = {
    "@mariozechner/pi-coding-agent": "0.73.1",
    "@anthropic-ai/sandbox-runtime": "0.0.83",
}
"""The versions package.json pins (scripts/bump-agents moves both; a unit test holds them
equal)."""

SANDBOX_RUNTIME_RELATIVE = ".concorde/tools/pi-runtime/node_modules/@anthropic-ai/sandbox-runtime"
"""Where seed 001 (Prerequisites) says sandbox-runtime lies in the primary worktree."""
SANDBOX_RUNTIME_ENTRY = "dist/index.js"

_PI, _RUNTIME = "@mariozechner/pi-coding-agent", "@anthropic-ai/sandbox-runtime"
_PI_PIN, _RUNTIME_PIN = f"{_PI}@{PINS[_PI]}", f"{_RUNTIME}@{PINS[_RUNTIME]}"
_INSTALLED = "in the user data folder; ./scripts/setup in a checkout"
_REFUSED = (
    "the pi backend needs programs this machine lacks; the run is never started without "
    "its sandbox. {problem}"
)

PI_PROGRAM = ProgramSpec(
    program="pi",
    title="pi",
    package=_PI,
    pinned=PINS[_PI],
    minimum="0.73.1",
    relies_on="the extension API the permission extension uses and the session file "
    "options the command line gives (--session-dir, --session)",
    upgrade=f"run {INSTALL_AGENTS} (the pinned {_PI_PIN} {_INSTALLED}), or npm install -g "
    f"{_PI_PIN}, or set CONCORDE_PI to a newer pi",
    provide=f"run {INSTALL_AGENTS} (the pinned {_PI_PIN} {_INSTALLED}), or npm install -g "
    f"{_PI_PIN}, or set CONCORDE_PI to its pi program",
    code=Code.PI_RUNTIME_MISSING,
    refused=_REFUSED,
    variable="CONCORDE_PI",
    in_node_modules=".bin/pi",
)

SANDBOX_RUNTIME = ProgramSpec(
    program="sandbox-runtime",
    title="sandbox-runtime",
    package=_RUNTIME,
    pinned=PINS[_RUNTIME],
    minimum="0.0.78",
    relies_on="the SandboxManager calls of the permission extension and network.strictAllowlist",
    upgrade=f"run {INSTALL_AGENTS} (the pinned {_RUNTIME_PIN} {_INSTALLED}), or npm install "
    f"--prefix <primary worktree>/.concorde/tools/pi-runtime {_RUNTIME_PIN}, or set "
    "CONCORDE_SANDBOX_RUNTIME to a newer package directory",
    provide=f"run {INSTALL_AGENTS} (the pinned {_RUNTIME_PIN} {_INSTALLED}), or install it in "
    "the primary worktree (npm install --prefix <primary worktree>/.concorde/tools/"
    f"pi-runtime {_RUNTIME_PIN}), or set CONCORDE_SANDBOX_RUNTIME to the package "
    "directory",
    code=Code.PI_RUNTIME_MISSING,
    refused=_REFUSED,
    variable="CONCORDE_SANDBOX_RUNTIME",
    in_node_modules=_RUNTIME,
    entry=SANDBOX_RUNTIME_ENTRY,
    in_primary=SANDBOX_RUNTIME_RELATIVE,
    in_primary_origin="the primary worktree's .concorde/tools/pi-runtime",
)

PI = BackendProfile(
    name="pi",
    title="pi",
    failure_code=Code.PI_FAILED,
    runtime_missing_code=Code.PI_RUNTIME_MISSING,
    run_directory_code=Code.LAUNCH_FAILED,
    credentials=CredentialSpec(
        directory_variable="PI_CODING_AGENT_DIR",
        default_directory=".pi/agent",
        expands_tilde=True,
        files=(AUTH_FILE, MODELS_FILE),
        login_file=AUTH_FILE,
        key_suffix=API_KEY_SUFFIX,
        key_text="*_API_KEY",
        repair="configure pi (auth.json in $PI_CODING_AGENT_DIR or ~/.pi/agent, e.g. with pi's "
        "/login) or set the provider's *_API_KEY",
    ),
    brief=BriefVariant(
        shell="bash",
        write_tool="write tool",
        ending="End by calling the `concorde_result` tool exactly once; it ends your session.",
        retry_ending="end by calling the `concorde_result` tool exactly once",
    ),
    runtime_entries=PI_ENTRIES,
    settings_file=EXTENSION_FILE,
    environment=pi_environment,
    transcript=PI_TRANSCRIPT,
    tools=ToolNames(
        read=("read", "grep", "find", "ls"),
        change=("edit", "write"),
        shell=("bash",),
        always=("concorde_result",),
    ),
    local_id_placeholder="<provider/id>",
    provider_in_model_id=True,
    example_ids={
        "example-local": "local-openai/example-local",
        "example-sonnet": "anthropic/claude-sonnet-4-5",
    },
    default_model=DefaultModel(
        settings_file="settings.json", keys=("defaultProvider", "defaultModel")
    ),
    reasoning_levels=("off", "minimal", "low", "medium", "high", "xhigh"),
    programs=(PI_PROGRAM, SANDBOX_RUNTIME),
    copies_judge=judge_pi_files,
    helpers=(
        HelperTool(
            name="rg",
            executables=("rg",),
            provide="install ripgrep (Debian: apt-get install ripgrep)",
        ),
        HelperTool(
            name="fd",
            executables=("fd", "fdfind"),
            provide="install fd (Debian: apt-get install fd-find, which provides fdfind)",
        ),
        HelperTool(
            name="node",
            executables=("node",),
            provide="install Node.js 20 or later (Debian: apt-get install nodejs); pi runs on it",
        ),
    ),
    sandbox_package="sandbox-runtime",
)
