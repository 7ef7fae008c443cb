"""A machine's own resource setting (issue 20): its default limits, and what a run gets on a
machine that cannot enforce them, in `resources.json` beside the model map (or the absolute
path `$CONCORDE_RESOURCES`), never in a worktree.

    {"schema_version": 1,
     "defaults": {"processes": 256, "memory_mib": 2048},
     "without_groups": "refuse-when-asked"}

- `defaults`: any of `ResourceLimits`' fields; the rest keep the built-in defaults. A run's
  request (or the CLI's flags) overrides them field by field.
- `without_groups`: where the kernel gives no control groups, `refuse-when-asked` (the
  default) refuses a run whose request asked for limits and runs the others without, said;
  `refuse` refuses every run; `run` runs every run without them, said in plan, doctor and each
  round's resources.json.

Pure: the file's text comes in; application/setup/resources.py reads it (bounded).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from pydantic import ValidationError

from concorde_workers.domain.configuration.machine import MachineFileSpec, machine_file_location
from concorde_workers.domain.configuration.resources import DEFAULT_LIMITS, ResourceLimits
from concorde_workers.domain.ground import json_limits

__all__ = [
    "MAX_RESOURCES_BYTES",
    "RESOURCES_FILE",
    "RESOURCES_SPEC",
    "MachineResources",
    "WithoutGroups",
    "parse_machine_resources",
    "resources_location",
]

RESOURCES_FILE = "resources.json"
MAX_RESOURCES_BYTES = 64 * 1024
RESOURCES_SPEC = MachineFileSpec(
    variable="CONCORDE_RESOURCES",
    name=RESOURCES_FILE,
    max_bytes=MAX_RESOURCES_BYTES,
    shape='README "Resource limits" shows its shape',
)


class WithoutGroups(StrEnum):
    """What a machine without control groups does with a run."""

    REFUSE_WHEN_ASKED = "refuse-when-asked"
    REFUSE = "refuse"
    RUN = "run"


@dataclass(frozen=True)
class MachineResources:
    """The machine's setting; `problem` says why its file cannot be used (every run is then
    refused with it: a bound the machine's owner set must not silently fall away)."""

    defaults: ResourceLimits = DEFAULT_LIMITS
    without_groups: WithoutGroups = WithoutGroups.REFUSE_WHEN_ASKED
    file: str | None = None
    problem: str | None = None

    def limits(self, requested: ResourceLimits | None) -> ResourceLimits:
        """The limits in force: the request's fields over the machine's defaults."""
        if requested is None:
            return self.defaults
        return ResourceLimits.model_validate(
            {**self.defaults.model_dump(), **requested.model_dump(exclude_unset=True)}
        )

    def refusal(
        self, asked: bool, problem: str | None, limits: ResourceLimits = DEFAULT_LIMITS
    ) -> str | None:
        """Why no round may start on a machine whose groups are missing (`problem`: why) or
        None; `asked`: the request asked for `limits`."""
        if self.problem is not None:
            return self.problem
        if problem is None or self.without_groups is WithoutGroups.RUN:
            return None
        if self.without_groups is WithoutGroups.REFUSE:
            return (
                f"this machine cannot enforce resource limits ({problem}) and its "
                f'{self.file} says "without_groups": "refuse"'
            )
        if asked:
            return (
                f"the request asks for resource limits ({limits.text()}) and this machine "
                f"cannot enforce them: {problem}"
            )
        return None

    def text(self) -> str:
        where = self.file or "no resources.json"
        return f"{where}: without groups, {self.without_groups.value}"


def resources_location(environ: Mapping[str, str]) -> str | None:
    """`$CONCORDE_RESOURCES` when set and absolute, else `resources.json` beside the model map;
    None when neither can be found (a relative variable is that case too, said by the reader:
    domain/configuration/machine.py `machine_file_location`)."""
    return machine_file_location(environ, RESOURCES_SPEC).file


def parse_machine_resources(text: str, file: str) -> MachineResources:
    """The setting the file holds, or one whose `problem` names what is wrong and the repair."""

    def bad(why: str) -> MachineResources:
        return MachineResources(file=file, problem=f"{file} {why}")

    try:
        data = json_limits.loads(text)
    except ValueError as error:
        return bad(f"is not JSON ({error}): repair it or remove it")
    if not isinstance(data, dict) or data.get("schema_version") != 1:
        return bad('must be a JSON object with "schema_version": 1')
    unknown = sorted(set(data) - {"schema_version", "defaults", "without_groups"})
    if unknown:
        return bad(
            f'has the unknown field {unknown[0]!r}: it holds "defaults" and "without_groups"'
        )
    try:
        defaults = ResourceLimits.model_validate(data.get("defaults", {}))
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        if not field:
            return bad(
                'has an invalid "defaults": it is an object of limits, such as {"memory_mib": 2048}'
            )
        return bad(
            f"has an invalid defaults.{field}: {first['msg']}; repair it as README "
            '"Resource limits" shows, or remove it'
        )
    choice = data.get("without_groups", WithoutGroups.REFUSE_WHEN_ASKED.value)
    if choice not in {c.value for c in WithoutGroups}:
        return bad('has an invalid "without_groups": it is "refuse-when-asked", "refuse" or "run"')
    return MachineResources(defaults=defaults, without_groups=WithoutGroups(choice), file=file)
