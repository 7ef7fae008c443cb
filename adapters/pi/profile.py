"""pi's profile: what the host's generic algorithms take of it as values."""

from __future__ import annotations

from concorde_workers.domain.evidence.codes import Code
from concorde_workers.ports.agent import BackendProfile

__all__ = ["PI"]

PI = BackendProfile(name="pi", title="pi", failure_code=Code.PI_FAILED)
