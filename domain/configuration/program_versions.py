"""The agent programs' versions (issue 11): the oldest version of each program the generated
settings rely on, a version read from what a program or its package says, and the refusal of a
program older than its minimum or whose version cannot be read.

Why a floor at all: Claude Code in -p mode ignores a settings file that fails its validation, and
reads a key it does not know without honouring it (docs/decisions.md "Claude Code 2.1.332"), so
an older program given the generated settings runs with less than the policy says, silently.
Each minimum is the oldest version the generated settings were verified against with the whole
end-to-end suite; a version between that and an older verified one is refused too, because
nobody checked it (docs/decisions.md "Program versions").

The codes are those of a run that ends failed before launch, with its record (issue 19 §3: the
same code has one shape, a program too old ends as a missing one does): Claude Code's program is
the command that cannot be started, `launch_failed`; pi and its sandbox-runtime are pi's
prerequisites, `pi_runtime_missing` (seed 001, the pi run mechanics: "the run ends failed with
pi_runtime_missing before launch"). The caller's resolution of a worker (the configuration
reader) refuses such a program before any run with `backend_missing`
(domain/configuration/machine.py).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.ground.errors import Reason, Refusal


class ProgramSpec(BaseModel):
    """One program a backend runs, as its profile gives it: the npm package it comes in and the
    version this copy pins, the oldest version the policy relies on, what of the policy needs it,
    how to upgrade or provide it, the code of its refusal, and where discovery looks for it
    (domain/configuration/discovery.py)."""

    model_config = ConfigDict(frozen=True)

    program: str
    title: str
    package: str | None = None
    """The npm package this copy pins it in; None: a program it does not install."""
    pinned: str | None = None
    """The version package.json and package-lock.json pin (a unit test holds them equal;
    scripts/bump-agents moves both): what install-agents and ./scripts/setup install, and what
    every repair hint names."""
    minimum: str | None = None
    """The oldest version the policy relies on; None: no version is relied on, none is asked."""
    relies_on: str = ""
    upgrade: str
    provide: str
    """How a user provides it when it is missing (a backend's prerequisites refusal)."""
    code: Code
    refused: str
    """The refusal's message around a version problem (`{problem}`): what the run needs and
    what else the user may do."""
    variable: str
    """The environment variable that names it (`CONCORDE_CLAUDE`)."""
    in_node_modules: str
    """Where it lies in an npm `node_modules` (a program: `.bin/<name>`; a package: its
    directory)."""
    entry: str | None = None
    """A package directory's file that must be there (sandbox-runtime: `dist/index.js`); None:
    the path found is a program, looked for on PATH too."""
    in_primary: str | None = None
    """Where in the primary worktree it may lie instead of PATH (sandbox-runtime, seed 001)."""
    in_primary_origin: str = ""

    @property
    def is_package_directory(self) -> bool:
        """The path found is the package's own directory (sandbox-runtime), not a program."""
        return self.entry is not None


Programs = Mapping[str, ProgramSpec]
"""Every registered backend's programs, by name (`domain.configuration.profile.programs_of`)."""

INSTALL_AGENTS = "concorde-workers install-agents"


def pinned(spec: ProgramSpec) -> str:
    """`package@version` as pinned; the program's name when this copy pins none."""
    return f"{spec.package}@{spec.pinned}" if spec.package and spec.pinned else spec.program


_VERSION = re.compile(r"(?<![\w.])v?(\d+)\.(\d+)\.(\d+)(?!\d|\.\d)")


def parse_version(text: str) -> tuple[int, int, int] | None:
    """The first `major.minor.patch` in `text` (`2.1.332 (Claude Code)`, `0.73.1`, `v1.2.3`),
    None when there is none."""
    found = _VERSION.search(text)
    if found is None:
        return None
    major, minor, patch = (int(part) for part in found.groups())
    return major, minor, patch


def version_text(text: str) -> str | None:
    """The version `text` names, as `major.minor.patch`."""
    parsed = parse_version(text)
    return None if parsed is None else ".".join(str(part) for part in parsed)


class ProgramLocation(BaseModel):
    """A program a backend runs, where it was found (a program path, or sandbox-runtime's
    package directory)."""

    model_config = ConfigDict(frozen=True)

    spec: ProgramSpec
    path: str
    origin: str | None = None
    """Where it was found (domain/configuration/discovery.py): `$CONCORDE_PI`, `PATH`, an
    installation."""

    @property
    def program(self) -> str:
        return self.spec.program


class ProgramVersion(BaseModel):
    """A program as the host found it: where, its version, where the version was read, or why it
    could not be read."""

    model_config = ConfigDict(frozen=True)

    spec: ProgramSpec
    path: str
    version: str | None
    source: str
    """What said the version: a package.json, or the program's `--version` (cached or run)."""
    problem: str | None = None
    """Why no version could be read (None when `version` is set)."""
    origin: str | None = None
    """Where the program was found (domain/configuration/discovery.py), when that is known."""
    identity: str | None = None
    """The program's file and its version's source (each resolved, with size and modification
    time) when the preparation read the version: a round starts only while they are unchanged
    (`changed_problem`). None when they could not be read (nothing to compare)."""

    @property
    def program(self) -> str:
        return self.spec.program

    @property
    def too_old(self) -> bool:
        found = parse_version(self.version or "")
        least = parse_version(self.spec.minimum) if self.spec.minimum else None
        return found is not None and least is not None and found < least

    def to_json(self) -> dict[str, Any]:
        return {
            "program": self.program,
            "path": self.path,
            "version": self.version,
            "minimum": self.spec.minimum,
            "source": self.source,
            "problem": self.problem,
            "origin": self.origin,
        }

    def line(self) -> str:
        """One line for a person: `claude 2.1.332 (at least 2.1.332) /path ← source`."""
        version = self.version or "version unknown"
        least = f" (at least {self.spec.minimum})" if self.spec.minimum else ""
        text = f"{self.program} {version}{least} {self.path}"
        found = f"; found by {self.origin}" if self.origin else ""
        return f"{text}  ← {self.source if self.problem is None else self.problem}{found}"


def version_problem(found: ProgramVersion) -> str | None:
    """What keeps the program from running this policy, None when its version is new enough."""
    row = found.spec
    if row.minimum is None:
        return None
    if found.version is None or parse_version(found.version) is None:
        why = found.problem or "it named no version"
        return (
            f"the version of {row.title} at {found.path} could not be read ({why}); the "
            f"policy relies on {row.title} {row.minimum} or newer ({row.relies_on}): make "
            f"it one that says its version, or {row.upgrade}"
        )
    if found.too_old:
        return (
            f"{row.title} at {found.path} is version {found.version} (from {found.source}), "
            f"older than {row.minimum}, the oldest version whose settings this policy "
            f"relies on ({row.relies_on}): {row.upgrade}"
        )
    return None


def changed_problem(found: ProgramVersion, identity: str | None) -> str | None:
    """Why a round must not start with this program, `identity` being what its files are now:
    the program that would run is not the one whose version was read and checked (replaced or
    updated since the preparation; docs/decisions.md "The program that runs is the one
    checked"); None when unchanged or when there is nothing to compare."""
    if found.identity is None or identity == found.identity:
        return None
    return (
        f"{found.spec.title} at {found.path} changed after the run was prepared, when its "
        f"version {found.version} was read and checked (from {found.source}): the round is "
        "not started with a program nobody checked; start a new run to check the one now "
        "in place"
    )


def version_refusal(found: Sequence[ProgramVersion]) -> Refusal | None:
    """The refusal of the first program that is too old or whose version cannot be read, with
    its row's code, None when every one will do."""
    for program in found:
        problem = version_problem(program)
        if problem is None:
            continue
        message = program.spec.refused.replace("{problem}", problem)
        return Refusal(
            code=program.spec.code, reason=Reason.ENVIRONMENT, message=message, file=program.path
        )
    return None


def programs_document(found: Sequence[ProgramVersion]) -> dict[str, Any]:
    """The run directory's programs.json: each program as the preparation found it."""
    return {"programs": [program.to_json() for program in found]}


def programs_text(found: Sequence[ProgramVersion]) -> str:
    """programs.json's text: sorted keys, two-space indent, final newline."""
    return json.dumps(programs_document(found), indent=2, sort_keys=True) + "\n"


def parse_programs_document(data: object, programs: Programs) -> tuple[ProgramVersion, ...] | None:
    """programs.json read back (an account of an ended run) with the registered `programs`;
    None when it is not one, or names a program no registered backend runs."""
    if not isinstance(data, dict) or not isinstance(data.get("programs"), list):
        return None
    found: list[ProgramVersion] = []
    for entry in data["programs"]:
        if not isinstance(entry, dict) or entry.get("program") not in programs:
            return None
        try:
            found.append(
                ProgramVersion(
                    spec=programs[entry["program"]],
                    path=entry["path"],
                    version=entry["version"],
                    source=entry["source"],
                    problem=entry.get("problem"),
                    origin=entry.get("origin"),
                )
            )
        except (KeyError, ValueError):
            return None
    return tuple(found)
