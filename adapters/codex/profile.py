"""The Codex CLI's profile: what the host's generic algorithms take of it as values (issue 33 §1;
docs/decisions.md 72)."""

from __future__ import annotations

import platform

from concorde_workers.adapters.codex.endpoint import CODEX_CONFIG_SPEC, codex_endpoint
from concorde_workers.adapters.codex.environment import codex_environment
from concorde_workers.adapters.codex.layout import CODEX_ENTRIES, CONFIG_FILE
from concorde_workers.adapters.codex.transcript import CODEX_TRANSCRIPT
from concorde_workers.domain.configuration.credentials import CredentialSpec
from concorde_workers.domain.configuration.profile import (
    BackendProfile,
    ConfinementAsks,
    ToolNames,
)
from concorde_workers.domain.configuration.program_versions import INSTALL_AGENTS, ProgramSpec
from concorde_workers.domain.configuration.starter import DefaultModel
from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.run.brief import BriefVariant

__all__ = ["CODEX", "CODEX_PROGRAM", "PINS", "PLACEHOLDERS", "native_relative"]

PINS = {
    "@openai/codex": "0.171.0",
}
"""The version package.json pins (scripts/bump-agents moves both; a unit test holds them equal)."""

_PACKAGE = "@openai/codex"
_PIN = f"{_PACKAGE}@{PINS[_PACKAGE]}"

# The npm package's platform packages (its optionalDependencies) and Rust targets, by machine.
_PLATFORMS = {
    "x86_64": ("linux-x64", "x86_64-unknown-linux-musl"),
    "aarch64": ("linux-arm64", "aarch64-unknown-linux-musl"),
}

PLACEHOLDERS = (".git", ".codex", ".agents", ".aws")
"""The names Codex 0.171's sandbox mounts read-only over in its writable root (its
`<permissions instructions>` list them; to check again on every version bump)."""


def native_relative(machine: str | None = None) -> str:
    """The native program of this machine's platform package, relative to node_modules (the
    npm package's `bin/codex.js` only finds and starts it: Node is not needed to run Codex)."""
    package, target = _PLATFORMS.get(machine or platform.machine(), _PLATFORMS["x86_64"])
    return f"@openai/codex-{package}/vendor/{target}/bin/codex"


CODEX_PROGRAM = ProgramSpec(
    program="codex",
    title="the Codex CLI",
    package=_PACKAGE,
    pinned=PINS[_PACKAGE],
    minimum="0.171.0",
    relies_on="the config.toml keys the run generates under --strict-config, exec resume with "
    "--output-schema, and its sandbox's placeholders and private folder the tests verified",
    upgrade=f"run {INSTALL_AGENTS} (the pinned {_PIN} in the user data folder; ./scripts/setup "
    f"in a checkout), or npm install -g {_PIN}, or set CONCORDE_CODEX to a newer codex",
    provide=f"run {INSTALL_AGENTS} (the pinned {_PIN} in the user data folder; ./scripts/setup "
    f"in a checkout), or npm install -g {_PIN}, or set CONCORDE_CODEX to its codex program",
    code=Code.LAUNCH_FAILED,
    refused="{problem}; or choose another backend for this worker. The run is never started "
    "with a program older than the settings it is given.",
    variable="CONCORDE_CODEX",
    in_node_modules=native_relative(),
)

CODEX = BackendProfile(
    name="codex",
    title="the Codex CLI",
    failure_code=Code.CODEX_FAILED,
    runtime_missing_code=Code.LAUNCH_FAILED,
    run_directory_code=Code.LAUNCH_FAILED,
    credentials=CredentialSpec(
        directory_variable="CODEX_HOME",
        default_directory=".codex",
        # A run copies nothing: its CODEX_HOME is its own, holding only the generated
        # config.toml, and the key comes by the one variable the machine's codex.json names
        # (else OPENAI_API_KEY: adapters/codex/endpoint.py, the judge plan, run and doctor
        # take). The user's auth.json, a ChatGPT login no run uses, is hidden all the same.
        files=(),
        hidden_files=("auth.json",),
        login_file=None,
        key_text="OPENAI_API_KEY (or the variable codex.json's key_env names)",
        repair="set OPENAI_API_KEY, or name the endpoint's key variable in the machine's "
        "codex.json (key_env) and export it",
    ),
    brief=BriefVariant(
        shell="exec_command",
        write_tool="apply_patch tool",
        ending="End with your final message: one JSON object of the output schema, with "
        "`output` given as JSON text (a string holding the output object).",
        retry_ending="end with your final message, one JSON object of the output schema",
    ),
    runtime_entries=CODEX_ENTRIES,
    settings_file=CONFIG_FILE,
    environment=codex_environment,
    transcript=CODEX_TRANSCRIPT,
    tools=ToolNames(
        read=("exec_command", "view_image"),
        change=("apply_patch",),
        shell=(),
        commands=("exec_command",),
    ),
    local_id_placeholder="<model id>",
    example_ids={"example-local": "gpt-5.5"},
    # What Codex runs without `model` depends on its provider: init cannot know it.
    default_model=DefaultModel(),
    reasoning_levels=("minimal", "low", "medium", "high", "xhigh"),
    programs=(CODEX_PROGRAM,),
    machine_file=CODEX_CONFIG_SPEC,
    machine_file_judge=codex_endpoint,
    confinement=ConfinementAsks(
        placeholders=PLACEHOLDERS,
        private=("/tmp/codex-daemon-{uid}",),
        # Codex reads /etc/codex (config.toml, requirements, managed config: an MCP server it
        # names is started) whatever CODEX_HOME says (../shared/notes/codex.md §3).
        hidden=("/etc/codex",),
        nested=True,
        # Its sandbox lets commands and apply_patch write its whole working folder, with no
        # per-path layer: a folder bound writable for a rw file would let them make any name
        # there (docs/decisions.md 73).
        files_alone=True,
    ),
)
