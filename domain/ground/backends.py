"""The agent programs the contracts know by name: seed 002's backend enums (the worker
configuration's `backend`, the run record's per-round object, the event schema), defined here
once, and the backend a worker runs on when nothing sets one. Light on purpose: the command
line's grammar names them without loading a model."""

from __future__ import annotations

__all__ = ["BACKENDS", "DEFAULT_BACKEND", "Backend"]

BACKENDS: tuple[Backend, ...] = ("claude", "pi")
DEFAULT_BACKEND: Backend = "pi"
"""The backend a worker runs on when no entry of its configuration sets one (seed 002 "Worker
configuration": "A backend no entry sets is pi")."""

# `Backend`, the agent programs a worker runs on (domain.ground.record_fields and
# domain.configuration.request name it too), is `Literal[BACKENDS]`. It is built when a model
# first asks for it: `typing` is a tenth of `--help`, which only needs the names (issue 32 §2).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Literal

    Backend = Literal["claude", "pi"]
else:

    def __getattr__(name: str) -> object:
        if name == "Backend":
            from typing import Literal

            return Literal[BACKENDS]
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
