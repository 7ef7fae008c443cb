"""What pi keeps in a run's runtime directory (seed 001 "Run directory"; notes/pi.md §9): the
permission extension in control/, Concorde's own settings, the copies of auth.json and
models.json and the run's session file below config/ (its PI_CODING_AGENT_DIR), the compile cache
of the extension in tmp/jiti and the project settings it would read in work/.pi."""

from __future__ import annotations

import posixpath

from concorde_workers.domain.ground.layout import RuntimeEntries, RuntimeLayout

__all__ = [
    "AUTH_FILE",
    "EXTENSION_FILE",
    "MODELS_FILE",
    "PI_ENTRIES",
    "jiti_cache",
    "permission_extension",
    "pi_settings",
    "project_dir",
    "session_file",
    "sessions",
]

EXTENSION_FILE = "control/permission.ts"
"""The permission extension, relative to the runtime directory."""
AUTH_FILE = "auth.json"
MODELS_FILE = "models.json"

PI_ENTRIES = RuntimeEntries(
    host=("tmp/jiti",), not_writable=("work/.pi",), transcripts=("config/sessions",)
)
"""pi compiles the extension into tmp/jiti (the host's: no tool reads or writes it), would read
project settings, a system prompt and packages from work/.pi (no tool writes it), and keeps
the run's session in config/sessions/."""


def permission_extension(runtime: RuntimeLayout) -> str:
    """control/permission.ts, the permission extension."""
    return runtime.at(EXTENSION_FILE)


def pi_settings(runtime: RuntimeLayout) -> str:
    """config/settings.json, Concorde's own pi settings."""
    return posixpath.join(runtime.config, "settings.json")


def sessions(runtime: RuntimeLayout) -> str:
    """config/sessions/, pi's session directory."""
    return posixpath.join(runtime.config, "sessions")


def session_file(runtime: RuntimeLayout, run_id: str) -> str:
    """config/sessions/<run-id>.jsonl, the session file a pi run fixes at its first round."""
    if not run_id or "/" in run_id or run_id.startswith("."):
        raise ValueError(f"not a run id: {run_id!r}")
    return posixpath.join(sessions(runtime), f"{run_id}.jsonl")


def jiti_cache(runtime: RuntimeLayout) -> str:
    """pi's compile cache of the extension, `<rt>/tmp/jiti` (notes/pi.md §9.1)."""
    return posixpath.join(runtime.tmp, "jiti")


def compiled_extension(runtime: RuntimeLayout) -> str:
    """`<rt>/control/jiti`: the extension compiled by the host once a run, copied into
    `jiti_cache` before every round (issue 32 §4)."""
    return posixpath.join(runtime.control, "jiti")


def project_dir(runtime: RuntimeLayout) -> str:
    """pi's project settings directory in the working directory, `<rt>/work/.pi` (§9.2)."""
    return posixpath.join(runtime.work, ".pi")
