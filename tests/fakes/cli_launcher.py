"""Runs `concorde-workers` on the production container with its agent backends replaced by
ProgramBackend (tests/fakes/program_backend.py), for integration tests that need the CLI in a
process of its own (to send it a signal):

    python tests/fakes/cli_launcher.py SCENARIOS.json ARGV...

SCENARIOS.json holds a JSON list with one scenario of agent.py per round; ARGV is the command
line of `concorde-workers` (`run ...`, `show ...`). Everything else is production wiring: real
Git, the real filesystem, the real process runner, the system clock, the process's own
environment. The exit status is cli.main's.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # run as a script: make `fakes` importable, as pytest does
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dependency_injector import providers

from concorde_workers.application import cli
from concorde_workers.application.container import Container, production
from fakes.program_backend import ProgramBackend, Scenario


def program_container(scenarios: Sequence[Scenario], backend: str = "pi") -> Container:
    """The production container whose `backend` plays `scenarios` with agent.py."""
    container = production()
    program = ProgramBackend(backend, scenarios=list(scenarios))  # type: ignore[arg-type]
    others = {name: ProgramBackend(name) for name in ("pi", "claude") if name != backend}  # type: ignore[arg-type]
    container.backends.override(providers.Dict(
        **{name: providers.Object(b) for name, b in {**others, backend: program}.items()}))
    return container


def main(argv: Sequence[str]) -> int:
    scenarios: Any = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    return cli.main(list(argv[1:]), container=program_container(scenarios))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
