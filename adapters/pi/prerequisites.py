"""The pi backend's prerequisites (seed 001, Prerequisites): checked before anything is generated.

The application looks the programs up through the filesystem port and passes what it found; this
module decides and words the refusal `pi_runtime_missing`, naming every missing one and how to
provide it.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict

from concorde_workers.adapters.pi.profile import PI, SANDBOX_RUNTIME_ENTRY
from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.ground.errors import Reason, Refusal
from concorde_workers.domain.setup.doctor import MACHINE_TOOLS

HOW_TO_PROVIDE: Mapping[str, str] = {
    **{spec.program: spec.provide for spec in PI.programs},
    **{helper.name: helper.provide for helper in PI.helpers},
    **{name: MACHINE_TOOLS[name] for name in ("bwrap", "socat")},
}
"""What each prerequisite is and how a user provides it."""


class PiPrerequisites(BaseModel):
    """Where each prerequisite was found, None when it was not."""

    model_config = ConfigDict(frozen=True)

    pi: str | None
    rg: str | None
    fd: str | None
    sandbox_runtime: str | None
    sandbox_runtime_looked_at: str
    bwrap: str | None = None
    socat: str | None = None
    linux: bool = True

    def missing(self) -> list[str]:
        found = {
            "pi": self.pi,
            "rg": self.rg,
            "fd": self.fd,
            "sandbox-runtime": self.sandbox_runtime,
        }
        if self.linux:
            found |= {"bwrap": self.bwrap, "socat": self.socat}
        return [name for name, where in found.items() if where is None]


def pi_runtime_refusal(found: PiPrerequisites) -> Refusal | None:
    """`pi_runtime_missing` naming every missing prerequisite and how to provide it, or None."""
    missing = found.missing()
    if not missing:
        return None
    parts = []
    for name in missing:
        where = (
            f" (no {SANDBOX_RUNTIME_ENTRY} in {found.sandbox_runtime_looked_at})"
            if name == "sandbox-runtime"
            else ""
        )
        parts.append(f"{name}{where}: {HOW_TO_PROVIDE[name]}")
    return Refusal(
        code=Code.PI_RUNTIME_MISSING,
        reason=Reason.ENVIRONMENT,
        message="the pi backend needs programs this machine lacks; the run is never started "
        "without its sandbox. Missing: " + "; ".join(parts),
    )
