"""Each check runs in a control group of its own with the run's limits (issue 20 §1): a check
the worker wrote to fork or allocate without end is stopped by the kernel and said as having
reached a limit (unavailable, never evidence), with the real sandbox and this machine's
cgroupfs; no group is left."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from concorde_workers.adapters.machine.filesystem import LocalFileSystem
from concorde_workers.adapters.processes.cgroups import CgroupGroup, CgroupGroups
from concorde_workers.adapters.processes.process import SubprocessRunner
from concorde_workers.adapters.sandboxes.checks import SandboxedCheckRunner
from concorde_workers.container import layer_tools
from concorde_workers.domain.configuration.resources import GroupKind, ResourceLimits
from concorde_workers.domain.isolation.check_sandbox import CheckPlace
from concorde_workers.domain.run.checks import UNAVAILABLE_STATUSES, Check, CheckStatus


def runner(tmp_path: Path, groups: OwnGroups) -> SandboxedCheckRunner:
    bwrap = shutil.which("bwrap")
    assert bwrap is not None, "run ./scripts/setup"
    folder = tmp_path / "folders"
    folder.mkdir()
    return SandboxedCheckRunner(
        SubprocessRunner(),
        LocalFileSystem(),
        bwrap,
        {"PATH": "/usr/bin:/bin"},
        (),
        str(folder),
        layer_tools=layer_tools(),
        groups=groups,
    )


class OwnGroups(CgroupGroups):
    """The real groups, remembering the names this test's checks opened: other runs on this
    machine (a CI run beside a developer's) make `concorde-check-*` groups of their own."""

    def __init__(self) -> None:
        super().__init__()
        self.opened: list[str] = []

    def open(self, name: str, limits: ResourceLimits) -> CgroupGroup:
        self.opened.append(name)
        return super().open(name, limits)

    def left(self) -> list[str]:
        assert self.opened, "the check opened no group"
        return [name for name in self.leftovers("concorde-check-") if name in self.opened]


@pytest.fixture
def groups() -> OwnGroups:
    made = OwnGroups()
    if made.enforcement().kind is GroupKind.NONE:
        pytest.fail(f"this machine enforces no limits: {made.enforcement().problem}")
    return made


def place(tmp_path: Path, limits: ResourceLimits) -> CheckPlace:
    worktree = tmp_path / "w"
    worktree.mkdir(exist_ok=True)
    return CheckPlace(worktree=str(worktree), resources=limits)


@pytest.mark.parametrize(
    ("limits", "command", "said"),
    [
        (
            ResourceLimits(processes=32),
            "for i in $(seq 100); do sleep 5 & done; wait",
            "the run's process limit (32 processes) refused",
        ),
        (
            ResourceLimits(memory_mib=128),
            "python3 -c 'b = bytearray(400 * 1024 * 1024)'",
            "the run's memory limit (128 MiB, swap off) made the kernel kill",
        ),
    ],
)
def test_a_check_past_the_run_s_limits_is_stopped_and_said(
    tmp_path: Path, groups: OwnGroups, limits: ResourceLimits, command: str, said: str
) -> None:
    ran = runner(tmp_path, groups).run(
        Check(id="x", command=command), str(tmp_path / "w"), place(tmp_path, limits)
    )
    assert ran.status is CheckStatus.LIMIT_REACHED, ran
    assert ran.status in UNAVAILABLE_STATUSES
    assert said in ran.problem, ran.problem
    assert groups.left() == []


def test_a_check_within_its_limits_passes_in_its_group(tmp_path: Path, groups: OwnGroups) -> None:
    # 20 processes at once: within the default 512 (the sandbox's cgroup namespace shows the
    # check its own group as "/", so the limits above are what proves it is in one)
    command = "for i in $(seq 20); do sleep 0.1 & done; wait"
    ran = runner(tmp_path, groups).run(
        Check(id="x", command=command), str(tmp_path / "w"), place(tmp_path, ResourceLimits())
    )
    assert ran.status is CheckStatus.PASSED, ran
    assert groups.left() == []
