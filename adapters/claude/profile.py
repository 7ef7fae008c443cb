"""Claude Code's profile: what the host's generic algorithms take of it as values."""

from __future__ import annotations

from concorde_workers.domain.evidence.codes import Code
from concorde_workers.ports.agent import BackendProfile

__all__ = ["CLAUDE"]

CLAUDE = BackendProfile(name="claude", title="Claude Code", failure_code=Code.CLAUDE_FAILED)
