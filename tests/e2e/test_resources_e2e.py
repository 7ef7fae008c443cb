"""End-to-end: a runaway worker cannot take the machine (issue 20). Each round of the real pi
(against the scripted model server) runs in a control group of its own; a worker's Bash that
forks past the run's process limit or allocates past its memory limit is stopped by the
kernel, the round ends `worker_limit_reached` naming the limit, its value and what was using
it, and nothing of the group is left.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from e2e.conftest_pi import PiRun, PiWorld, call, pi_world, reply, result_call

from concorde_workers.adapters.cgroups import CgroupGroups
from concorde_workers.domain.resources import GroupKind

pytestmark = pytest.mark.e2e
__all__ = ["pi_world"]  # the fixture, imported for pytest


def resources_of(run: PiRun, round_number: int = 1) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (run.run_dir / "rounds" / str(round_number) / "resources.json").read_text())
    return data


def no_group_left(run: PiRun) -> None:
    """Every group of the run is gone (they are named after its runtime directory)."""
    groups = CgroupGroups()
    assert groups.leftovers(Path(run.record.runtime_directory).name) == []


@pytest.fixture(autouse=True)
def _enforced() -> None:
    if CgroupGroups().enforcement().kind is GroupKind.NONE:
        pytest.fail(f"this machine enforces no limits: {CgroupGroups().enforcement().problem}")


@pytest.mark.req("Bash runs sandboxed without network")
def test_a_fork_bomb_in_pi_s_bash_ends_the_round_at_the_process_limit(pi_world: PiWorld) -> None:
    w = pi_world
    bomb = "for i in $(seq 400); do sleep 30 & done; echo spawned; wait"
    run = w.run(reply(call("bash", "call_bomb", command=bomb)), reply(result_call("call_r")),
                resources={"processes": 100})
    assert run.record.status == "failed", run.explain()
    assert run.code == "worker_limit_reached", run.explain()
    assert run.record.error is not None
    assert ("the host ended the round at a limit of its control group: the run's process limit "
            "(100 processes) refused") in run.record.error.detail
    used = resources_of(run)
    assert used["limits"]["processes"] == 100 and used["enforced"] is True
    assert used["forks_refused"] > 0 and used["processes_peak"] == 100, used
    no_group_left(run)


@pytest.mark.req("Bash runs sandboxed without network")
def test_a_memory_hog_in_pi_s_bash_is_killed_at_the_memory_limit(pi_world: PiWorld) -> None:
    w = pi_world
    hog = "python3 -c 'b = bytearray(900 * 1024 * 1024); b[::4096] = b\"x\" * len(b[::4096])'"
    run = w.run(reply(call("bash", "call_hog", command=hog)), reply(result_call("call_r")),
                resources={"memory_mib": 512})
    assert run.code == "worker_limit_reached", run.explain()
    assert run.record.error is not None
    assert "the run's memory limit (512 MiB, swap off) made the kernel kill" in (
        run.record.error.detail)
    used = resources_of(run)
    assert used["oom_kills"] >= 1 and used["memory_peak_bytes"] >= 500 * 1024 * 1024, used
    no_group_left(run)


def test_a_round_within_its_limits_ends_ok_and_keeps_its_resource_profile(
        pi_world: PiWorld) -> None:
    w = pi_world
    run = w.run(reply(call("bash", "call_ls", command="ls")), reply(result_call("call_r")))
    assert run.record.status == "ok", run.explain()
    used = resources_of(run)
    assert used["limits"] == {"processes": 512, "memory_mib": 1024, "cpu_weight": 100,
                              "tmp_mib": 512}
    assert used["limits_reached"] == [] and used["processes_peak"] > 1, used
    assert used["memory_peak_bytes"] > 10 * 1024 * 1024 and used["cpu_seconds"] > 0, used
    files = [f["path"] for f in json.loads((run.run_dir / "rounds" / "1" / "trace.json")
                                           .read_text())["files"]]
    assert "resources.json" in files
    no_group_left(run)
