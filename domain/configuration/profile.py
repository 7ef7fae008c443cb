"""A backend's profile: what is one agent program's, as values the host's generic algorithms take
(issue 22 §1; docs/decisions.md 55).

Each backend's adapter package holds its own (adapters/claude/profile.py, adapters/pi/profile.py)
and the composition root registers them (container.py `PROFILES`). Nothing below the composition
root knows a backend by its name: what differs between programs reaches the domain as a
profile's fields, and the use cases get the registered profiles injected.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.boundary.grant import Grant
from concorde_workers.domain.boundary.task_types import ToolNames, tool_set
from concorde_workers.domain.evidence.codes import Code
from concorde_workers.domain.run.brief import BriefVariant

__all__ = ["BackendProfile", "Profiles", "levels_of"]


class BackendProfile(BaseModel):
    """One agent program as the host's generic algorithms take it."""

    model_config = ConfigDict(frozen=True)

    name: str
    """The name the trace keeps (`backend`), the worker configuration sets and `--backend` takes."""
    title: str
    """How a person names the program."""
    failure_code: Code
    """What a round whose program failed ends with."""
    runtime_missing_code: Code
    """What a run is refused with when the machine lacks what the program runs from (pi:
    pi_runtime_missing; Claude Code has no such code: launch_failed)."""
    run_directory_code: Code
    """What a runtime directory the worker may not have is refused with (Claude Code:
    run_directory_denied, which also refuses a grant naming a run directory; pi has no such
    code: launch_failed)."""
    key_variables: str
    """The environment variables a round's model key comes from, as a person reads them."""
    brief: BriefVariant
    tools: ToolNames
    reasoning_levels: tuple[str, ...]
    """The levels `reasoning` may take on this backend (seed 002 "Worker configuration")."""

    def tool_set(self, grant: Grant) -> tuple[str, ...]:
        """The tools a worker of this grant is given on this backend."""
        return tool_set(self.tools, grant.task_type, grant.has_rw)


Profiles = Mapping[str, BackendProfile]
"""The registered profiles by name, in the registry's order."""


def levels_of(profiles: Profiles) -> Mapping[str, Sequence[str]]:
    """Each backend's reasoning levels, by name."""
    return {name: profile.reasoning_levels for name, profile in profiles.items()}
