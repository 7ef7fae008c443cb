"""A run's resource limits over its rounds (issue 20): each round's control group, made before
the round and closed after it, and what the run's trace says of them.

The limits are the request's (`RunRequest.resources`) over the machine's defaults (its
resources.json, domain/configuration/machine_resources.py); what this machine gives is asked once
(`ResourceGroups.enforcement`). A machine that cannot enforce them runs without and says so,
unless the request asked for limits: then the round does not start (launch_failed), since a
caller that asked for a bound must not get a run without one; the machine's setting may
refuse every run, or run every run without.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

from concorde_workers.application.setup.machine_files import read_machine_file
from concorde_workers.domain.configuration.machine_resources import (
    RESOURCES_SPEC,
    MachineResources,
    parse_machine_resources,
)
from concorde_workers.domain.configuration.resources import (
    GROUP_PREFIX,
    Enforcement,
    GroupKind,
    ResourceLimits,
    judge_use,
)
from concorde_workers.ports.machine.filesystem import BoundedReading
from concorde_workers.ports.processes.resources import GroupFailed, ResourceGroup, ResourceGroups

__all__ = ["RunResources", "group_name", "read_machine_resources", "sweep_groups"]


def group_name(runtime_dir: str, round_number: int) -> str:
    """A round's group: its runtime directory's name and the round (the sweep's key)."""
    return f"{posixpath.basename(runtime_dir.rstrip('/'))}-r{round_number}"


IDLE_SECONDS = 60.0
"""How long a group must have held no process before a sweep takes it for a dead host's."""


def sweep_groups(
    groups: ResourceGroups | None, older_than: float = IDLE_SECONDS, prefix: str = GROUP_PREFIX
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Remove the idle groups dead hosts left (a host killed by SIGKILL removes none; its
    rounds' processes die with it): (removed, each failure said)."""
    if groups is None or groups.enforcement().kind is GroupKind.NONE:
        return (), ()
    removed: list[str] = []
    failed: list[str] = []
    for name in groups.idle(prefix, older_than):
        try:
            groups.remove(name)
            removed.append(name)
        except GroupFailed as failure:
            failed.append(failure.text)
    return tuple(removed), tuple(failed)


def read_machine_resources(fs: BoundedReading, environ: Mapping[str, str]) -> MachineResources:
    """The machine's resources.json (domain/configuration/machine_resources.py) through the one
    reader of machine files (application/setup/machine_files.py): the built-in setting when there is
    none beside the model map; a problem (every run refused) for one that cannot be used, or
    that `$CONCORDE_RESOURCES` names and is not there."""
    found = read_machine_file(fs, environ, RESOURCES_SPEC)
    if found.problem is not None:
        return MachineResources(file=found.file, problem=found.problem)
    if found.file is None or found.text is None:
        return MachineResources()
    return parse_machine_resources(found.text, found.file)


class RunResources:
    """The groups of one run's rounds; `limits` are the request's over the machine's defaults
    (`MachineResources.limits`)."""

    def __init__(
        self,
        groups: ResourceGroups | None,
        requested: ResourceLimits | None,
        runtime_dir: str,
        machine: MachineResources | None = None,
    ) -> None:
        self._groups = groups
        self._machine = machine or MachineResources()
        self.limits = self._machine.limits(requested)
        self._requested = requested is not None
        self._runtime_dir = runtime_dir
        self.enforcement = (
            groups.enforcement()
            if groups is not None
            else Enforcement(
                kind=GroupKind.NONE, problem="this host was wired without resource groups"
            )
        )

    def metadata(self) -> dict[str, object]:
        """The run node's `resources`: the limits in force, how they are enforced, and the
        machine's setting."""
        return {
            "limits": self.limits.model_dump(),
            "enforced": self.enforced,
            "enforcement": self.enforcement.text(),
            "machine": self._machine.text(),
        }

    @property
    def enforced(self) -> bool:
        return self.enforcement.kind is not GroupKind.NONE

    def refused(self) -> str | None:
        """Why no round of this run may start: limits asked for that this machine cannot
        enforce (None: the rounds start, with or without groups)."""
        return self._machine.refusal(
            self._requested,
            None if self.enforced else (self.enforcement.problem or "no control groups"),
            self.limits,
        )

    def open(self, round_number: int) -> tuple[ResourceGroup | None, str | None]:
        """The round's group (None: limits not enforced), or why the round cannot start: a
        machine setting that cannot be used refuses every round on every machine, as `plan`
        says (issue 31 §1: it was looked at only where groups were not enforced)."""
        if self._machine.problem is not None:
            return None, self._machine.problem
        if self._groups is None or not self.enforced:
            return None, self.refused()
        try:
            return self._groups.open(group_name(self._runtime_dir, round_number), self.limits), None
        except GroupFailed as failed:
            return None, failed.text

    def close(
        self,
        group: ResourceGroup | None,
        stderr: bytes = b"",
        space_used: Mapping[str, int] | None = None,
    ) -> tuple[dict[str, Any] | None, tuple[str, ...]]:
        """The round's resources.json (the limits in force, how they are enforced, the use its
        group counted, and what each of the run's writable spaces held at the round's end,
        `space_used_bytes`) and the limits it reached (`stderr`: the agent's tail, which says
        when node aborted at the heap the memory limit gave it). A group that cannot be removed
        is said there, never raised: the round's own ending stands. None for a host wired
        without groups."""
        if self._groups is None:
            return None, ()
        said = self.metadata()
        if space_used:
            said["space_used_bytes"] = dict(space_used)
        if group is None:
            return said, ()
        try:
            use = judge_use(group.close(), self.limits, stderr.decode("utf-8", "replace"))
        except GroupFailed as failed:
            return {**said, "group_left": failed.text}, ()
        return {**said, **use.to_json()}, use.reached

    @classmethod
    def none(cls) -> RunResources:
        """No groups and the defaults, said as not enforced (tests' worlds without groups)."""
        return cls(None, None, "")
