"""What the rounds of one run share (`RoundContext`): the ports they act through, the run's
writers, its preparation and snapshot, the caller's round validation and cancellation, the run's
state, resources, change keeper, events and writable space. The round runner, the agent process
and the validation call each take it."""

from __future__ import annotations

from dataclasses import dataclass, field

from concorde_workers.application.preparation.prepared import Prepared
from concorde_workers.application.rounds.changes import ChangeKeeper
from concorde_workers.application.rounds.compiled_cache import CacheCompilation
from concorde_workers.application.rounds.worktree_state import WorktreeObserver
from concorde_workers.application.runtime.cancellation import Cancellation
from concorde_workers.application.runtime.events import EventEmitter
from concorde_workers.application.runtime.run_state import RunState
from concorde_workers.application.runtime.validation import RoundValidation
from concorde_workers.application.setup.resources import RunResources
from concorde_workers.application.tracing.progress import ProgressWriter
from concorde_workers.application.tracing.writer import TraceWriter
from concorde_workers.domain.run.audit import Snapshot
from concorde_workers.ports.machine.clock import Clock
from concorde_workers.ports.machine.filesystem import RunFiles
from concorde_workers.ports.machine.random import Random
from concorde_workers.ports.processes.process import ProcessRunner
from concorde_workers.ports.sandboxes.space import RuntimeSpace

__all__ = ["RoundContext"]


@dataclass
class RoundContext:
    fs: RunFiles
    clock: Clock
    random: Random
    processes: ProcessRunner
    tracer: TraceWriter
    progress: ProgressWriter
    prepared: Prepared
    observer: WorktreeObserver
    snapshot: Snapshot
    validation: RoundValidation | None
    cancel: Cancellation
    state: RunState
    resources: RunResources = field(default_factory=RunResources.none)
    changes: ChangeKeeper | None = None  # each round's change kept (issue 21); None: none
    events: EventEmitter = field(default_factory=EventEmitter.none)  # told as it goes
    space: RuntimeSpace | None = None  # a confined run's writable space, entered by each round
    compilation: CacheCompilation | None = None  # the program's cache, compiled once (issue 32 §4)
