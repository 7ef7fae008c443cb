"""Runs `concorde-workers` on the production container with its agent backends replaced by
ProgramBackend (tests/fakes/program_backend.py), for integration tests that need the CLI in a
process of its own (to send it a signal):

    python tests/fakes/cli_launcher.py SCENARIOS.json ARGV...

SCENARIOS.json holds a JSON list with one scenario of agent.py per round (or is `-`: the real
agent programs, production's backends); ARGV is the command line of `concorde-workers` (`run ...`,
`show ...`, `sweep ...`). Everything else is production wiring: real Git, the real filesystem,
the real process runner, the system clock, the process's own environment. The exit status is
cli.main's.

Two variables of the launcher's environment (read here, never by concorde-workers) let a test
keep its runs to itself: FAKE_RUNTIME_PARENT replaces the runtime parent (/tmp), so that no other
sweep on the machine sees the test's runtime directories and no test's sweep sees anyone
else's; FAKE_CREDENTIALS names a file the test backend copies as its credential copy
(config/auth.json), as pi's auth.json is copied.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # run as a script: make `fakes` importable, as pytest does
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dependency_injector import providers

from concorde_workers.adapters.cli import main as cli
from concorde_workers.adapters.filesystem import LocalFileSystem
from concorde_workers.adapters.liveness import ProcTable
from concorde_workers.adapters.process import SubprocessRunner
from concorde_workers.container import Container, check_runner, production
from fakes.program_backend import ProgramBackend, Scenario


def program_container(
    scenarios: Sequence[Scenario] | None,
    backend: str = "pi",
    *,
    runtime_parent: str | None = None,
    credentials: str | None = None,
) -> Container:
    """The production container whose `backend` plays `scenarios` with agent.py (None: the real
    backends), its runtime parent `runtime_parent` when given; `credentials` is copied as the
    test backend's credential copy config/auth.json."""
    container = production()
    if runtime_parent is not None:
        container.temp_root.override(providers.Object(runtime_parent))
        # The checks' copies go where the runtime directories go: the sweep looks there.
        container.check_runner.override(
            providers.Object(
                check_runner(
                    SubprocessRunner(),
                    LocalFileSystem(),
                    container.host(),
                    ProcTable(),
                    runtime_parent,
                )
            )
        )
    if scenarios is None:
        return container
    program = ProgramBackend(backend, scenarios=list(scenarios))  # type: ignore[arg-type]
    if credentials is not None:
        program.credentials = lambda context: [
            (credentials, context.policy.runtime.copy_of("auth.json"))
        ]
    others = {name: ProgramBackend(name) for name in ("pi", "claude") if name != backend}  # type: ignore[arg-type]
    container.backends.override(
        providers.Dict(
            **{name: providers.Object(b) for name, b in {**others, backend: program}.items()}
        )
    )
    return container


def main(argv: Sequence[str]) -> int:
    scenarios: Any = (
        None if argv[0] == "-" else json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    )
    return cli.main(
        list(argv[1:]),
        container=program_container(
            scenarios,
            runtime_parent=os.environ.get("FAKE_RUNTIME_PARENT"),
            credentials=os.environ.get("FAKE_CREDENTIALS"),
        ),
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
