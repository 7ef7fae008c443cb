"""The capability of a run's writable space (issue 30 §2): config/ of its runtime directory on a
tmpfs of the run's size (the agent's), home/, tmp/ and work/ on another (the worker's), in a
mount namespace of the run's own (domain/isolation/runtime_space.py).

`RuntimeSpaces.open` makes it when the run begins; from then on the host's filesystem reaches
the runtime directory's folders there, and each confined round enters it first (`join`). `close`
gives it back to the kernel, with everything in it; a host that dies does so too, however it
dies. The real one: adapters/sandboxes/space.py; the fake: tests/fakes/space.py.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from concorde_workers.domain.ground.layout import RuntimeLayout
from concorde_workers.domain.isolation.runtime_space import SpaceTools

__all__ = ["RuntimeSpace", "RuntimeSpaces"]


@runtime_checkable
class RuntimeSpace(Protocol):
    """One run's space, open."""

    def join(self) -> tuple[str, ...]:
        """The command line in front of a confined round's: it enters the space's namespaces,
        then execs the round's command."""
        ...

    def used(self) -> dict[str, int]:
        """The bytes each space holds now, by its name ("agent", "worker":
        `domain.isolation.runtime_space.SPACES`); a space it cannot say of is left out."""
        ...

    def close(self) -> None:
        """Give the space back to the kernel (idempotent): the runtime directory's folders are
        the empty ones on the host's disk again."""
        ...


@runtime_checkable
class RuntimeSpaces(Protocol):
    def open(
        self, runtime: RuntimeLayout, size_bytes: int, tools: SpaceTools
    ) -> RuntimeSpace | str:
        """The space of the runtime directory `runtime` (made already, its folders empty), of
        `size_bytes`; or why it could not be made."""
        ...
