"""The sweep removes the control groups a dead host left (issue 20 §3), with the real cgroupfs
of this machine: an idle group goes, a group holding a live process stays, and so does one made
moments ago (a live round's, before its process joined)."""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from concorde_workers.adapters.processes.cgroups import CgroupGroups
from concorde_workers.application.setup.resources import sweep_groups
from concorde_workers.domain.configuration.resources import GroupKind, ResourceLimits


@pytest.fixture
def groups() -> Iterator[CgroupGroups]:
    made = CgroupGroups()
    if made.enforcement().kind is GroupKind.NONE:
        pytest.fail(f"this machine enforces no limits: {made.enforcement().problem}")
    yield made
    for name in made.leftovers(f"concorde-sweeptest-{os.getpid()}"):
        made.remove(name)


def test_a_dead_host_s_idle_group_is_removed_and_a_live_one_kept(groups: CgroupGroups) -> None:
    base = f"concorde-sweeptest-{os.getpid()}"
    groups.open(f"{base}-dead-r1", ResourceLimits())  # its host died: never closed
    live = groups.open(f"{base}-live-r1", ResourceLimits())
    with tempfile.TemporaryDirectory() as folder:
        fifo = Path(folder) / "go"
        os.mkfifo(fifo)
        held = subprocess.Popen([*live.prefix(), "/bin/sh", "-c", f"echo in > {fifo}; sleep 60"])
        try:
            assert fifo.read_text() == "in\n"  # the process is in its group now
            # only this test's own groups: another test's may be between its making and its join
            removed, failed = sweep_groups(groups, older_than=0, prefix=base)
            assert failed == ()
            assert f"{base}-dead-r1" in removed and f"{base}-live-r1" not in removed
            assert groups.leftovers(base) == [f"{base}-live-r1"]
        finally:
            held.kill()
            held.wait()
    live.close()
    assert groups.leftovers(base) == []


def test_a_group_made_moments_ago_is_not_taken_for_a_dead_host_s(groups: CgroupGroups) -> None:
    base = f"concorde-sweeptest-{os.getpid()}"
    fresh = groups.open(f"{base}-fresh-r1", ResourceLimits())
    removed, _ = sweep_groups(groups, prefix=base)
    assert f"{base}-fresh-r1" not in removed
    assert groups.leftovers(base) == [f"{base}-fresh-r1"]
    fresh.close()
