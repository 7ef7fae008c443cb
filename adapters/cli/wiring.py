"""How the command line reaches the composition root, explicitly.

`main` reads the host environment once (the entry point and the composition root are the only
readers of os.environ) and builds one `Wiring`; every command gets its container, the example
repository or the demo's world from it. The composition root, concorde_workers.container, is
imported only when a command first needs it: `--help` and a usage error never load the
container, the adapters or dependency-injector. A test gives a container with fakes instead of
the production wiring (`main(..., container=...)`).

The demo's world (adapters/demo/) writes its repository with GitPython, the `demo` extra: where
it is not installed, `plan --example` and `demo` are refused with the repair, never a traceback.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from concorde_workers.domain.ground.backends import DEFAULT_BACKEND
from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.ground.errors import Reason, Refusal

if TYPE_CHECKING:
    from concorde_workers.container import Container

DEMO_EXTRA_MISSING = Code.DEMO_EXTRA_MISSING
"""The refusal of `plan --example` and `demo` where GitPython (the `demo` extra) is missing."""


class ExampleRepository(Protocol):
    """What `plan --example` needs of the example (adapters.demo.example_repository.Example)."""

    @property
    def primary(self) -> str: ...

    @property
    def worktree(self) -> str: ...

    @property
    def request_file(self) -> str: ...

    @property
    def declared(self) -> tuple[str, ...]: ...

    def discard(self) -> None: ...


class DemoWorld(Protocol):
    """What the demo needs of its world (adapters.demo.example_repository.DemoWorld)."""

    folder: str
    worktree: str
    model: str
    grant: dict[str, Any]
    instructions: str
    trace_parent: str
    environ_additions: dict[str, str]
    backend: str
    refused_by: str
    shell: str

    @property
    def requests_served(self) -> int: ...

    def tool_results(self) -> dict[str, str]: ...

    def close(self) -> None: ...

    def discard(self) -> None: ...


def demo_extra_refusal(error: ModuleNotFoundError, folder: str | None = None) -> Refusal:
    return Refusal(
        code=DEMO_EXTRA_MISSING,
        reason=Reason.ENVIRONMENT,
        file=folder,
        message=f"the example repository is written with GitPython, which this installation "
        f"lacks ({error}); install the demo extra: pip install 'concorde-workers[demo]' "
        "(./scripts/setup installs it in a checkout)",
    )


@dataclass(frozen=True)
class Wiring:
    """The host environment, read once, and the way to the composition root."""

    environ: Mapping[str, str]
    given: Container | None = None
    """A container that replaces the production wiring (the tests give one with fakes)."""

    def container(self, environ: Mapping[str, str] | None = None) -> Container:
        """The given container, else the production wiring over `environ` (by default the host
        environment)."""
        if self.given is not None:
            return self.given
        return self.production(self.environ if environ is None else environ)

    def production(self, environ: Mapping[str, str]) -> Container:
        """The production wiring over `environ`, even where a container was given."""
        from concorde_workers.container import production

        return production(environ)

    def example(self) -> tuple[ExampleRepository, dict[str, str]] | Refusal:
        """A throwaway example repository for `plan --example` and the environment additions
        that point the planner at it; the refusal when GitPython is missing."""
        from concorde_workers import container

        try:
            return container.example_repository()
        except ModuleNotFoundError as error:
            if error.name != "git":
                raise
            return demo_extra_refusal(error)

    def demo_world(self, folder: str | None, backend: str = DEFAULT_BACKEND) -> DemoWorld | Refusal:
        """The demo's world of `backend` below `folder` (default: the system temporary
        directory); the refusal when GitPython is missing. An unwritable folder raises
        OSError."""
        from concorde_workers import container

        try:
            return container.demo_world(folder, backend)
        except ModuleNotFoundError as error:
            if error.name != "git":
                raise
            return demo_extra_refusal(error, folder)
