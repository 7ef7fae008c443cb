"""The agent programs the contracts know by name: seed 002's backend enums (the worker
configuration's `backend`, the run record's per-round object, the event schema), defined here
once, and the backend a worker runs on when nothing sets one. Light on purpose: the command
line's grammar names them without loading a model."""

from __future__ import annotations

from typing import Literal

__all__ = ["BACKENDS", "DEFAULT_BACKEND", "Backend"]

Backend = Literal["claude", "pi"]
"""The agent programs a worker runs on (domain.evidence.record_fields and
domain.configuration.request name it too)."""
BACKENDS: tuple[Backend, ...] = ("claude", "pi")
DEFAULT_BACKEND: Backend = "pi"
"""The backend a worker runs on when no entry of its configuration sets one (seed 002 "Worker
configuration": "A backend no entry sets is pi")."""
