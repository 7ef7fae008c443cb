"""FakeProgramVersions: the ProgramVersions port in memory.

Each program answers the version the test gives it, by path or by program name, else the
minimum its row of domain/configuration/program_versions.py asks for (a machine with the pinned programs); a
path the test marks unreadable answers no version with the problem given. It records every
location asked about (`asked`). tests/contract/test_program_versions_contract.py holds it to
the real adapter's answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from concorde_workers.domain.configuration.program_versions import ProgramLocation, ProgramVersion

FAKE_SOURCE = "the test's FakeProgramVersions"


@dataclass
class FakeProgramVersions:
    versions: dict[str, str] = field(default_factory=dict)
    """Program path or program name -> the version it answers."""
    unreadable: dict[str, str] = field(default_factory=dict)
    """Program path -> why its version cannot be read."""
    asked: list[ProgramLocation] = field(default_factory=list)

    def version_of(self, location: ProgramLocation) -> ProgramVersion:
        self.asked.append(location)
        if location.path in self.unreadable:
            return ProgramVersion(
                spec=location.spec,
                path=location.path,
                version=None,
                source=FAKE_SOURCE,
                problem=self.unreadable[location.path],
            )
        version = (
            self.versions.get(location.path)
            or self.versions.get(location.program)
            or location.spec.minimum
        )
        return ProgramVersion(
            spec=location.spec, path=location.path, version=version, source=FAKE_SOURCE
        )
