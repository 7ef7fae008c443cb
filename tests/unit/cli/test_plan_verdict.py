"""Issue 31 §2, plan's first line is its verdict: the first line says whether a run would
launch, or that it would be refused with the first reason and its repair; the exit status is 0
only when a run would launch and every check could start; `plan --json` carries the same
verdict; and a run whose check cannot start is refused before round 1, as plan says, instead
of spending a model round to end checks_unavailable after it."""

from __future__ import annotations

import json

from dependency_injector import providers
from fakes.agent import Round
from fakes.checks import FakeCheckRunner
from fakes.resources import FakeResourceGroups
from unit.cli.test_cli_run import REQUEST_FILE, RESULT, RunWorld, world

from concorde_workers.domain.configuration.machine_resources import MachineResources

KNOWN = "make test"
MISSING = "python -m pytest -q"  # not one of the fake's programs: found nowhere in its view
BROKEN_RESOURCES = (
    "/etc/concorde/resources.json is not valid JSON: Expecting value at line 1 column 1; "
    "repair the file"
)


def with_checks(made: RunWorld) -> FakeCheckRunner:
    runner = FakeCheckRunner(made.fs, {KNOWN: lambda tree: (0, b"ok\n")})
    made.container.check_runner.override(providers.Object(runner))
    return runner


def test_plan_s_first_line_says_a_check_that_cannot_start_and_exits_2() -> None:
    made = world(Round.ok(RESULT))
    with_checks(made)
    shown = made.main("plan", REQUEST_FILE, "--check", KNOWN, "--check", MISSING)
    assert shown.status == 2, shown.out
    first = shown.out.splitlines()[0]
    assert first == (
        "concorde-workers plan — a run would be refused: checks_unavailable: the check check-2 "
        "(python -m pytest -q) cannot start in any round: `python` is found nowhere in the "
        "check's view: install it, or give the check a program its PATH holds; or give the "
        "project's Python with --interpreter"
    )
    as_json = made.main("plan", REQUEST_FILE, "--check", KNOWN, "--check", MISSING, "--json")
    assert as_json.status == 2
    data = as_json.json()
    assert data["verdict"] == "refused"
    assert data["refusal"]["code"] == "checks_unavailable"
    assert [r["code"] for r in data["refusals"]] == ["checks_unavailable"]
    assert [c["unavailable"] is None for c in data["checks"]] == [True, False]
    ok = made.main("plan", REQUEST_FILE, "--check", KNOWN)
    assert ok.status == 0 and ok.out.splitlines()[0].endswith("— a run would launch")


def test_run_with_a_check_that_cannot_start_is_refused_before_round_1() -> None:
    """The run spent a whole model round before it ended checks_unavailable; now it is refused
    before it exists, with the words plan gives."""
    made = world(Round.ok(RESULT))
    runner = with_checks(made)
    result = made.run("--check", MISSING)
    assert result.status == 2, result.out + result.err
    assert made.runner.starts == []  # no model round
    assert made.run_dirs() == []  # no run made
    assert runner.runs == [] and runner.live == set()  # nothing copied, nothing run
    assert result.err.startswith("concorde-workers: refused: checks_unavailable (environment)\n")
    assert "the check check-1 (python -m pytest -q) cannot start in any round" in result.err
    as_json = made.run("--check", MISSING, "--json")
    assert as_json.json()["refusal"]["code"] == "checks_unavailable"


def test_a_check_the_worker_may_yet_write_does_not_refuse_the_run() -> None:
    """A script in the grant's rw part may be the round's own work: plan says it is not
    there yet and the run goes on (the check's run after the round says)."""
    made = world(Round.ok(RESULT))
    with_checks(made)
    shown = made.main("plan", REQUEST_FILE, "--check", "./src/app/check.sh")
    assert shown.status == 0, shown.out
    assert "`./src/app/check.sh` is not there yet" in shown.out


def test_a_machine_without_a_sandbox_refuses_every_check_before_round_1() -> None:
    made = world(Round.ok(RESULT))
    runner = FakeCheckRunner(
        made.fs, {KNOWN: lambda tree: (0, b"")}, unstartable=frozenset({KNOWN})
    )
    made.container.check_runner.override(providers.Object(runner))
    shown = made.main("plan", REQUEST_FILE, "--check", KNOWN)
    assert shown.status == 2
    assert shown.out.splitlines()[0].startswith(
        "concorde-workers plan — a run would be refused: checks_unavailable: the check check-1 "
        "(make test) cannot start in any round: bwrap: No such file or directory"
    )
    result = made.run("--check", KNOWN)
    assert result.status == 2 and made.runner.starts == [] and made.run_dirs() == []


def test_a_broken_resources_file_is_the_first_line_and_the_json_verdict() -> None:
    """The report: the first line said "would launch", the exit was 2 and the reason was on the
    last of 205 lines; --json said "launch"."""
    made = world(Round.ok(RESULT))
    made.container.resource_groups.override(
        providers.Object(FakeResourceGroups.unenforced("no control groups here"))
    )
    made.container.machine_resources.override(
        providers.Object(
            MachineResources(file="/etc/concorde/resources.json", problem=BROKEN_RESOURCES)
        )
    )
    shown = made.main("plan", REQUEST_FILE)
    assert shown.status == 2
    assert shown.out.splitlines()[0] == (
        f"concorde-workers plan — a run would be refused: launch_failed: {BROKEN_RESOURCES}"
    )
    data = made.main("plan", REQUEST_FILE, "--json").json()
    assert data["verdict"] == "refused" and data["refusal"]["code"] == "launch_failed"
    assert data["refusal"]["message"] == BROKEN_RESOURCES
    assert data["resources"]["refused"] == BROKEN_RESOURCES


def test_every_reason_is_listed_in_the_order_run_meets_them() -> None:
    """A check that cannot start is asked before the run exists, so it comes before the
    launch's own refusal; both are listed, the first on the first line."""
    made = world(Round.ok(RESULT))
    with_checks(made)
    made.container.resource_groups.override(
        providers.Object(FakeResourceGroups.unenforced("no control groups here"))
    )
    shown = made.main("plan", REQUEST_FILE, "--check", MISSING, "--max-memory", "2g")
    assert shown.status == 2
    first = shown.out.splitlines()[0]
    assert first.startswith("concorde-workers plan — a run would be refused: checks_unavailable:")
    assert first.endswith("(and 1 more below)")
    blocks = [line for line in shown.out.splitlines() if line.startswith("REFUSED ")]
    assert blocks == [
        "REFUSED checks_unavailable (reason environment)",
        "REFUSED launch_failed (reason environment)",
    ]
    data = made.main("plan", REQUEST_FILE, "--check", MISSING, "--max-memory", "2g", "--json")
    assert [r["code"] for r in data.json()["refusals"]] == ["checks_unavailable", "launch_failed"]


def test_a_parent_the_request_file_names_is_judged_by_plan_as_run_judges_it() -> None:
    """plan has no --parent, but a request file's "parent" was dropped by it while run refused
    it: the plan's verdict now says the same."""
    made = world(Round.ok(RESULT))
    data = json.loads(made.fs.read_text(REQUEST_FILE))
    made.fs.write(REQUEST_FILE, json.dumps({**data, "parent": "/work/none"}))
    shown = made.main("plan", REQUEST_FILE)
    assert shown.status == 2
    assert shown.out.splitlines()[0].startswith(
        "concorde-workers plan — a run would be refused: request_invalid: the parent trace node "
        f'folder /work/none (the "parent" field of the request file {REQUEST_FILE}) does not '
        "exist"
    )
    ran = made.main("run", REQUEST_FILE)
    assert ran.status == 2 and "/work/none" in ran.err and made.run_dirs() == []
