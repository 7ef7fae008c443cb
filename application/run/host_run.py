"""One run as every step of the host shares it (`HostRun`): what the host observed, the writers
of its trace and progress file, the builder of its links, the caller's round validation and
cancellation, its runtime directory and the credential copies made in it, its events, what its
cleanup did and its writable space. The host, the deletions and the run's end each take it."""

from __future__ import annotations

from dataclasses import dataclass, field

from concorde_workers.application.runtime.cancellation import Cancellation
from concorde_workers.application.runtime.events import EventEmitter
from concorde_workers.application.runtime.outcomes import LinkContext, refusal_link
from concorde_workers.application.runtime.run_state import RunState
from concorde_workers.application.runtime.runtime_directory import CleanupOutcome
from concorde_workers.application.runtime.validation import RoundValidation
from concorde_workers.application.setup.resources import RunResources
from concorde_workers.application.tracing.progress import ProgressWriter
from concorde_workers.application.tracing.writer import TraceWriter
from concorde_workers.domain.ground.errors import Refusal
from concorde_workers.domain.ground.layout import RuntimeLayout
from concorde_workers.ports.machine.filesystem import FileSystemError
from concorde_workers.ports.sandboxes.space import RuntimeSpace

__all__ = ["HostRun"]


@dataclass
class HostRun:
    """One run as every step of the host shares it: what the host observed (`state`), the
    writers of its trace and progress file, the builder of its links, the caller's round
    validation and cancellation, its runtime directory (the error when it could not be made)
    and the credential copies made in it."""

    state: RunState
    tracer: TraceWriter
    progress: ProgressWriter
    links: LinkContext
    validation: RoundValidation | None
    cancel: Cancellation
    runtime: RuntimeLayout | FileSystemError
    resources: RunResources
    credential_copies: list[str] = field(default_factory=list)
    events: EventEmitter = field(default_factory=EventEmitter.none)
    attestation_failure: str | None = None
    """Why the run's attestation.json could not be written (verify then says it is missing)."""
    cleaned: CleanupOutcome | None = None
    """What the cleanup before the final record did (the owner record then still stays)."""
    space: RuntimeSpace | None = None
    """The runtime directory's writable space of a confined run, once made (issue 30 §2)."""

    def refuse(self, refusal: Refusal) -> None:
        """End the run with a refusal's link (`outcomes.refusal_link`)."""
        self.state.end(refusal_link(self.links, refusal))
