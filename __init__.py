"""concorde-workers: run one AI coding agent headless under a frozen grant, audit it, trace it.

The face for callers (Concorde, a script): everything needed to run, validate and read a run.

    import concorde_workers as cw

    host = cw.production().worker_host()
    request = cw.RunRequest.model_validate({...})       # seed 000's Inputs
    record = host.run(request, validation=lambda given: cw.ValidationOutcome())
    result = record.result                                # a cw.WorkerResult, or None
    again = cw.read_run(record.run_directory)             # the record, rebuilt from the trace

The names are imported on first use, so `import concorde_workers` stays cheap (the command
line's start-up is measured: benchmarks/cli_startup.py).
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # `typing` itself is a fifth of the command line's start (issue 32 §2)

__version__ = "0.1.0"

_FACE: dict[str, tuple[str, str]] = {
    "WorkerHost": ("concorde_workers.container", "WorkerHost"),
    "RequestRefused": ("concorde_workers.container", "RequestRefused"),
    "RunRequest": ("concorde_workers.domain.configuration.request", "RunRequest"),
    "Limits": ("concorde_workers.domain.configuration.request", "Limits"),
    "RunRecord": ("concorde_workers.domain.evidence.records", "RunRecord"),
    "WorkerResult": ("concorde_workers.domain.evidence.records", "WorkerResult"),
    "Refusal": ("concorde_workers.domain.ground.errors", "Refusal"),
    "ErrorLink": ("concorde_workers.domain.ground.errors", "ErrorLink"),
    "Cancellation": ("concorde_workers.container", "Cancellation"),
    "ValidationInput": ("concorde_workers.container", "ValidationInput"),
    "ValidationOutcome": ("concorde_workers.container", "ValidationOutcome"),
    "RoundValidation": ("concorde_workers.container", "RoundValidation"),
    "RunEvents": ("concorde_workers.ports.agents.events", "RunEvents"),
    "production": ("concorde_workers.container", "production"),
    "read_run": ("concorde_workers.container", "read_run"),
}

__all__ = [
    "Cancellation",
    "ErrorLink",
    "Limits",
    "Refusal",
    "RequestRefused",
    "RoundValidation",
    "RunEvents",
    "RunRecord",
    "RunRequest",
    "ValidationInput",
    "ValidationOutcome",
    "WorkerHost",
    "WorkerResult",
    "__version__",
    "production",
    "read_run",
]

if TYPE_CHECKING:
    from typing import Any

    from concorde_workers.container import (
        Cancellation,
        RequestRefused,
        RoundValidation,
        ValidationInput,
        ValidationOutcome,
        WorkerHost,
        production,
        read_run,
    )
    from concorde_workers.domain.configuration.request import Limits, RunRequest
    from concorde_workers.domain.evidence.records import RunRecord, WorkerResult
    from concorde_workers.domain.ground.errors import ErrorLink, Refusal
    from concorde_workers.ports.agents.events import RunEvents


def __getattr__(name: str) -> Any:
    if name not in _FACE:
        raise AttributeError(f"module 'concorde_workers' has no attribute {name!r}")
    module, attribute = _FACE[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value
