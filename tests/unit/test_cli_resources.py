"""Limits asked for on a machine that cannot enforce them (issue 20 §2): `plan` says the run
would end launch_failed and exits 2; `run` ends launch_failed with its record and starts no
round; without limits asked, the run goes on and says they are not enforced."""

from __future__ import annotations

from dependency_injector import providers
from fakes.agent import Round
from fakes.resources import FakeResourceGroups
from unit.test_cli_run import REQUEST_FILE, RESULT, RunWorld, world

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
    assert ("the run would end launch_failed: the request asks for resource limits (processes "
            "512, memory 2048 MiB (swap off), CPU weight 100, tmp/ 512 MiB) and this machine "
            f"cannot enforce them: {NO_GROUPS}") in shown.out
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
