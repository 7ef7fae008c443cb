"""ProgramVersions contract: InstalledProgramVersions over a real program and package on disk, and
FakeProgramVersions told the same facts, answer alike.

A program whose package says its version answers it with no problem; a program that says no
version answers none, with a problem that names why; the location asked about is named back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Protocol

import pytest
from fakes.program_versions import FakeProgramVersions

from concorde_workers.adapters.machine.filesystem import LocalFileSystem
from concorde_workers.adapters.processes.process import SubprocessRunner
from concorde_workers.adapters.processes.program_versions import InstalledProgramVersions
from concorde_workers.container import PROFILES
from concorde_workers.domain.configuration.profile import programs_of
from concorde_workers.domain.configuration.program_versions import ProgramLocation
from concorde_workers.ports.processes.program_versions import ProgramVersions

PROGRAMS = programs_of(PROFILES)


class World(Protocol):
    versions: ProgramVersions

    def installed(self, program: str, version: str) -> ProgramLocation: ...

    def mute(self, program: str) -> ProgramLocation: ...


PACKAGES = {
    "claude": ("@anthropic-ai/claude-code", "bin/claude.exe"),
    "pi": ("@mariozechner/pi-coding-agent", "dist/cli.js"),
}


class RealWorld:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.versions = InstalledProgramVersions(
            LocalFileSystem(),
            SubprocessRunner(),
            {"PATH": "/usr/bin:/bin", "XDG_CACHE_HOME": str(root / "cache")},
        )

    def installed(self, program: str, version: str) -> ProgramLocation:
        package, entry = PACKAGES[program]
        directory = self.root / "node_modules" / package
        (directory / entry).parent.mkdir(parents=True)
        (directory / entry).write_text("#!/bin/sh\nexit 9\n")
        (directory / entry).chmod(0o755)
        (directory / "package.json").write_text(json.dumps({"name": package, "version": version}))
        link = self.root / "bin" / program
        link.parent.mkdir(exist_ok=True)
        link.symlink_to(directory / entry)
        return ProgramLocation(spec=PROGRAMS[program], path=str(link))

    def mute(self, program: str) -> ProgramLocation:
        script = self.root / f"mute-{program}"
        script.write_text("#!/bin/sh\necho 'no idea'\n")
        script.chmod(0o755)
        return ProgramLocation(spec=PROGRAMS[program], path=str(script))


class FakeWorld:
    def __init__(self, root: Path) -> None:
        self.fake = FakeProgramVersions()
        self.versions = self.fake

    def installed(self, program: str, version: str) -> ProgramLocation:
        path = f"/opt/bin/{program}"
        self.fake.versions[path] = version
        return ProgramLocation(spec=PROGRAMS[program], path=path)

    def mute(self, program: str) -> ProgramLocation:
        path = f"/opt/mute-{program}"
        self.fake.unreadable[path] = "it exited 0 and printed 'no idea'"
        return ProgramLocation(spec=PROGRAMS[program], path=path)


@pytest.fixture(params=["real", "fake"])
def world(request: pytest.FixtureRequest, tmp_path: Path) -> World:
    return RealWorld(tmp_path) if request.param == "real" else FakeWorld(tmp_path)


@pytest.mark.parametrize(("program", "version"), [("claude", "2.1.400"), ("pi", "0.73.1")])
def test_an_installed_program_answers_its_version(world: World, program: str, version: str) -> None:
    location = world.installed(program, version)
    found = world.versions.version_of(location)
    assert (found.program, found.path, found.version, found.problem) == (
        program,
        location.path,
        version,
        None,
    )
    assert found.source


def test_a_program_that_names_no_version_answers_none_and_why(world: World) -> None:
    location = world.mute("claude")
    found = world.versions.version_of(location)
    assert (found.program, found.path, found.version) == ("claude", location.path, None)
    assert found.problem is not None and "no idea" in found.problem
