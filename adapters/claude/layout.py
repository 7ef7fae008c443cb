"""What Claude Code keeps in a run's runtime directory (seed 000 "Run directory and runtime
directory"; notes/harness.md §1): the worker settings and the hooks in control/, the credentials'
copy and the sessions' transcripts below config/ (its CLAUDE_CONFIG_DIR)."""

from __future__ import annotations

import posixpath

from concorde_workers.domain.ground.layout import RuntimeEntries, RuntimeLayout

__all__ = ["CLAUDE_ENTRIES", "CREDENTIALS_FILE", "SETTINGS_FILE", "settings_file", "write_hook"]

SETTINGS_FILE = "control/settings.json"
"""The worker settings, relative to the runtime directory."""

CREDENTIALS_FILE = ".credentials.json"
"""The user's Claude Code credentials, copied into config/ under the same name."""

CLAUDE_ENTRIES = RuntimeEntries(transcripts=("config/projects/*",))
"""Claude Code keeps each session's transcript in config/projects/<slug of its cwd>/."""


def settings_file(runtime: RuntimeLayout) -> str:
    """control/settings.json, the worker settings."""
    return runtime.at(SETTINGS_FILE)


def write_hook(runtime: RuntimeLayout) -> str:
    """control/write_hook.py, the write hook."""
    return posixpath.join(runtime.control, "write_hook.py")
