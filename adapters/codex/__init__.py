"""The Codex CLI backend (issue 33; docs/decisions.md 72): `codex exec` headless, its own sandbox
kept on inside the confinement."""

from concorde_workers.adapters.codex.backend import REGISTRATION

__all__ = ["REGISTRATION"]
