"""Limits asked for on a machine that cannot enforce them (issue 20 §2): `plan` says the run
would end launch_failed and exits 2; `run` ends launch_failed with its record and starts no
round; without limits asked, the run goes on and says they are not enforced."""

from __future__ import annotations

from typing import Any

import pytest
from dependency_injector import providers
from fakes.agent import Round
from fakes.resources import FakeResourceGroups
from unit.cli.test_cli_run import REQUEST_FILE, RESULT, RunWorld, world

from concorde_workers.adapters.cli.views.display import resources_line
from concorde_workers.domain.configuration.machine_resources import MachineResources, WithoutGroups
from concorde_workers.domain.configuration.resources import ResourceLimits

NO_GROUPS = "no cgroup v1 pids and memory controllers and no cgroup v2 hierarchy here"


def unenforced(made: RunWorld) -> FakeResourceGroups:
    groups = FakeResourceGroups.unenforced(NO_GROUPS)
    made.container.resource_groups.override(providers.Object(groups))
    return groups


def test_plan_of_limits_this_machine_cannot_enforce_says_the_run_would_be_refused() -> None:
    made = world(Round.ok(RESULT))
    unenforced(made)
    shown = made.main("plan", REQUEST_FILE, "--max-memory", "2g")
    assert shown.status == 2, shown.out + shown.err
    assert f"not enforced: {NO_GROUPS}" in shown.out
    assert (
        "the run would end launch_failed: the request asks for resource limits (processes "
        "512, memory 2048 MiB (swap off), CPU weight 100, runtime spaces 512 MiB each (config/; home/, tmp/, work/)) and this machine "
        f"cannot enforce them: {NO_GROUPS}"
    ) in shown.out
    assert made.main("plan", REQUEST_FILE).status == 0  # the defaults: said, not refused


def test_a_run_that_asks_for_limits_this_machine_cannot_enforce_starts_no_round() -> None:
    made = world(Round.ok(RESULT))
    groups = unenforced(made)
    result = made.run("--max-processes", "64", "--json")
    assert result.status == 1, result.out
    record = result.json()
    assert record["error"]["code"] == "launch_failed"
    assert "cannot enforce them" in record["error"]["detail"]
    assert made.runner.starts == [] and groups.opened == []


def test_without_limits_asked_a_run_on_such_a_machine_goes_on_without_them() -> None:
    made = world(Round.ok(RESULT))
    unenforced(made)
    result = made.run("--json")
    assert result.status == 0, result.out
    assert len(made.runner.starts) == 1


def test_a_machine_set_to_refuse_refuses_even_a_run_that_asked_for_no_limits() -> None:
    made = world(Round.ok(RESULT))
    groups = unenforced(made)
    made.container.machine_resources.override(
        providers.Object(
            MachineResources(
                without_groups=WithoutGroups.REFUSE, file="/etc/concorde/resources.json"
            )
        )
    )
    shown = made.main("plan", REQUEST_FILE)
    assert shown.status == 2, shown.out + shown.err
    said = (
        f"this machine cannot enforce resource limits ({NO_GROUPS}) and its "
        '/etc/concorde/resources.json says "without_groups": "refuse"'
    )
    assert said in shown.out
    result = made.run("--json")
    assert result.status == 1, result.out
    assert result.json()["error"]["code"] == "launch_failed"
    assert said in result.json()["error"]["detail"]
    assert made.runner.starts == [] and groups.opened == []


def test_a_machine_set_to_run_runs_a_run_that_asked_for_limits_without_them_and_says_so() -> None:
    made = world(Round.ok(RESULT))
    unenforced(made)
    made.container.machine_resources.override(
        providers.Object(
            MachineResources(without_groups=WithoutGroups.RUN, file="/etc/concorde/resources.json")
        )
    )
    shown = made.main("plan", REQUEST_FILE, "--max-processes", "64", "--json")
    assert shown.status == 0, shown.out + shown.err
    said = shown.json()["resources"]
    assert said["enforced"] is False and said["refused"] is None
    assert said["machine"] == "/etc/concorde/resources.json: without groups, run"
    result = made.run("--max-processes", "64", "--json")
    assert result.status == 0, result.out
    assert len(made.runner.starts) == 1


def test_a_machine_s_defaults_are_the_limits_under_the_request_s_own() -> None:
    made = world(Round.ok(RESULT))
    made.container.resource_groups.override(providers.Object(FakeResourceGroups()))
    made.container.machine_resources.override(
        providers.Object(
            MachineResources(
                defaults=ResourceLimits(processes=256, memory_mib=2048), file="/m/resources.json"
            )
        )
    )
    limits = made.main("plan", REQUEST_FILE, "--max-memory", "1g", "--json").json()["resources"][
        "limits"
    ]
    assert limits == {"processes": 256, "memory_mib": 1024, "cpu_weight": 100, "space_mib": 512}
    groups = FakeResourceGroups()
    made.container.resource_groups.override(providers.Object(groups))
    assert made.run("--max-memory", "1g", "--json").status == 0
    assert [limits for _, limits in groups.opened] == [
        ResourceLimits(processes=256, memory_mib=1024)
    ]


def test_the_space_flag_sets_the_run_s_space_and_the_former_tmp_flag_is_refused() -> None:
    """Issue 30 §2: `--max-space` is the size of the runtime directory's writable space, which
    `plan --json` carries; `--max-tmp`, which sized tmp/ alone, is refused with the repair."""
    made = world(Round.ok(RESULT))
    limits = made.main("plan", REQUEST_FILE, "--max-space", "64m", "--json").json()["resources"][
        "limits"
    ]
    assert limits["space_mib"] == 64
    refused = made.main("plan", REQUEST_FILE, "--max-tmp", "64m")
    assert refused.status != 0
    assert "--max-tmp is now --max-space" in refused.out + refused.err


@pytest.mark.parametrize(
    ("used", "line"),
    [
        pytest.param(
            {
                "enforced": True,
                "memory_peak_bytes": 300 * 1048576,
                "processes_peak": 25,
                "cpu_seconds": 1.5,
                "limits": {"space_mib": 32},
                "space_used_bytes": {"agent": 1048576, "worker": 32 * 1048576},
            },
            "resources: memory peak 300 MiB, processes peak 25, CPU 1.5 s, "
            "agent's space 1 of 32 MiB, worker's space 32 of 32 MiB used",
            id="enforced, the worker's space full",
        ),
        pytest.param(
            {
                "enforced": False,
                "enforcement": "not enforced: no groups",
                "limits": {"space_mib": 512},
                "space_used_bytes": {"worker": 2 * 1048576},
            },
            "resources: limits not enforced: no groups, worker's space 2 of 512 MiB used",
            id="not enforced: the space is bounded all the same",
        ),
        pytest.param(
            {"enforced": True, "processes_peak": 3, "limits": {"space_mib": 512}},
            "resources: processes peak 3",
            id="an unconfined round: no space said",
        ),
    ],
)
def test_a_round_s_account_says_what_its_space_held(used: dict[str, Any], line: str) -> None:
    """Issue 30 §2: a fill of the run's space is told truthfully in the round's account."""
    assert resources_line(used) == line
