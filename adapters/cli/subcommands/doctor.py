"""`doctor` (every prerequisite of a run, its state and its repair; application/setup/doctor.py) and
`install-agents` (the pinned agent programs into the user data folder;
application/setup/agent_install.py)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TextIO

from concorde_workers.adapters.cli.output import print_json
from concorde_workers.adapters.cli.status import ExitStatus
from concorde_workers.adapters.cli.wiring import Wiring
from concorde_workers.domain.configuration.discovery import installations, locate
from concorde_workers.domain.configuration.profile import pins_of, programs_of
from concorde_workers.domain.configuration.program_versions import ProgramLocation
from concorde_workers.domain.ground.text import terminal_lines

if TYPE_CHECKING:
    from concorde_workers.container import Container


def run_doctor(args: argparse.Namespace, out: TextIO, err: TextIO, wiring: Wiring) -> ExitStatus:
    """0 every prerequisite holds, 2 one does not (each line names its repair)."""
    diagnosis = wiring.container().doctor().diagnose(args.backend)
    if args.json:
        print_json(diagnosis.to_json(), out)
    else:
        out.write(terminal_lines(diagnosis.lines()))
    return ExitStatus.OK if diagnosis.ok else ExitStatus.REFUSED


def run_install_agents(
    args: argparse.Namespace, out: TextIO, err: TextIO, wiring: Wiring
) -> ExitStatus:
    """0 installed (or already), 1 npm failed, 2 refused before anything was done."""
    from concorde_workers.container import PROFILES, shipped_pins

    container = wiring.container()
    pins = ", ".join(f"{package}@{version}" for package, version in pins_of(PROFILES).items())

    def announce(folder: str) -> None:
        if not args.json:
            err.write(
                terminal_lines(
                    [
                        f"install-agents: npm ci of the pinned {pins} into "
                        f"{folder} (about a minute)..."
                    ]
                )
            )
            err.flush()

    outcome = container.agent_installer().install(*shipped_pins(), before_npm=announce)
    found = []
    if outcome.status == 0 and outcome.folder is not None:
        found = _installed(container, wiring.environ)
    if args.json:
        print_json(
            {
                "status": outcome.status,
                "folder": outcome.folder,
                "message": outcome.message,
                "installed": outcome.installed,
                "programs": found,
            },
            out,
        )
    else:
        lines = [outcome.message]
        lines += [f"  {p['program']} {p['version'] or 'missing'} at {p['path']}" for p in found]
        if outcome.status == 0:
            lines.append(
                "every run now finds them (after CONCORDE_* and PATH); check the "
                "rest with: concorde-workers doctor"
            )
        (out if outcome.status == 0 else err).write(terminal_lines(lines))
    return ExitStatus(outcome.status) if outcome.status in (0, 1, 2) else ExitStatus.FAILED


def _installed(container: Container, environ: Mapping[str, str]) -> list[dict[str, Any]]:
    """What a run will now find in the user data folder (domain/configuration/discovery.py),
    with the versions it reads."""
    from concorde_workers.container import PROFILES

    user_data = installations(None, dict(environ))
    found = []
    for spec in programs_of(PROFILES).values():
        where = locate(spec, {}, user_data, container.filesystem())
        version = (
            None
            if where is None
            else container.versions()
            .version_of(ProgramLocation(spec=spec, path=where.path))
            .version
        )
        found.append(
            {
                "program": spec.program,
                "path": None if where is None else where.path,
                "version": version,
                "minimum": spec.minimum,
            }
        )
    return found
