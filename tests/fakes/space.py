"""FakeSpaces: an in-memory `RuntimeSpaces` whose spaces bound nothing (issue 30 §2).

`open` records the runtime directory, the size and the tools it was asked for, and what the
filesystem held then (`held_at_open`: a test asks whether the host wrote anything into the space
before it was made); it answers `problem` instead when a test sets one. A space's `join()` is a
real, harmless command line (`/usr/bin/env` setting `SPACE_VARIABLE` to the runtime directory),
so a real process still runs behind it; its folders are the runtime directory's own on disk (the
fake makes no namespace), and `close` is recorded. tests/contract/test_runtime_space_contract.py
runs the same tests on this fake and on the real KeeperSpaces.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from concorde_workers.domain.ground.layout import RuntimeLayout
from concorde_workers.domain.isolation.runtime_space import SpaceTools

__all__ = ["ENV", "SPACE_VARIABLE", "FakeSpace", "FakeSpaces"]

ENV = "/usr/bin/env"
SPACE_VARIABLE = "CONCORDE_FAKE_SPACE"


@dataclass(eq=False)
class FakeSpace:
    runtime: RuntimeLayout
    size: int
    spaces: FakeSpaces
    closes: int = 0

    def join(self) -> tuple[str, ...]:
        return (ENV, f"{SPACE_VARIABLE}={self.runtime.root}")

    def used(self) -> dict[str, int]:
        return {}

    def close(self) -> None:
        self.closes += 1
        self.spaces.closed.append(self.runtime.root)


@dataclass
class FakeSpaces:
    problem: str | None = None
    """What `open` answers instead of a space (None: it makes one)."""
    look: Callable[[RuntimeLayout], object] | None = None
    """Called at each open; what it returns is kept in `held_at_open`."""
    opened: list[tuple[str, int, SpaceTools]] = field(default_factory=list)
    held_at_open: list[object] = field(default_factory=list)
    closed: list[str] = field(default_factory=list)
    spaces: list[FakeSpace] = field(default_factory=list)

    def open(self, runtime: RuntimeLayout, size_bytes: int, tools: SpaceTools) -> FakeSpace | str:
        self.opened.append((runtime.root, size_bytes, tools))
        if self.look is not None:
            self.held_at_open.append(self.look(runtime))
        if self.problem is not None:
            return self.problem
        space = FakeSpace(runtime, size_bytes, self)
        self.spaces.append(space)
        return space
