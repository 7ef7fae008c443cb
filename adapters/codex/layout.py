"""What Codex keeps in a run's runtime directory (issue 33 §1; ../shared/notes/codex.md §2):
its CODEX_HOME is `config/codex` (the run's private config, never inside TMPDIR, where Codex
refuses to make its helper programs and every sandboxed command fails), holding only the
generated config.toml before round 1, then its thread's rollout and state databases; the last
message of each round is `config/codex-last.json`; the strict schema sent on the wire is the
host's, in control/."""

from __future__ import annotations

import posixpath

from concorde_workers.domain.ground.layout import RuntimeEntries, RuntimeLayout

__all__ = [
    "CODEX_ENTRIES",
    "CODEX_HOME",
    "CONFIG_FILE",
    "LAST_MESSAGE",
    "WIRE_SCHEMA",
    "codex_home",
    "config_toml",
    "last_message",
    "sessions",
    "wire_schema",
]

CODEX_HOME = "config/codex"
"""CODEX_HOME, relative to the runtime directory."""
CONFIG_FILE = "config/codex/config.toml"
"""The generated configuration, the file whose digest the run record keeps."""
LAST_MESSAGE = "config/codex-last.json"
WIRE_SCHEMA = "control/codex-output.schema.json"

CODEX_ENTRIES = RuntimeEntries(transcripts=("config/codex/sessions",))
"""Codex keeps its thread's rollout below config/codex/sessions/YYYY/MM/DD/."""


def codex_home(runtime: RuntimeLayout) -> str:
    return runtime.at(CODEX_HOME)


def config_toml(runtime: RuntimeLayout) -> str:
    return runtime.at(CONFIG_FILE)


def last_message(runtime: RuntimeLayout) -> str:
    """The round's last agent message, as `-o` writes it."""
    return runtime.at(LAST_MESSAGE)


def wire_schema(runtime: RuntimeLayout) -> str:
    """The strict schema `--output-schema` sends (adapters/codex/config.py `wire_schema`)."""
    return runtime.at(WIRE_SCHEMA)


def sessions(runtime: RuntimeLayout) -> str:
    return posixpath.join(codex_home(runtime), "sessions")
