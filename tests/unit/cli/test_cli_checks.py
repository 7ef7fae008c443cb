"""`concorde-workers run --check` and the request file's `checks` against the fakes: the checks
become the run's round validation, a bad check is refused naming its entry, and the account of
`run` and `show` lists each round's checks."""

from __future__ import annotations

import json

import pytest
from dependency_injector import providers
from fakes.agent import Round
from fakes.checks import FakeCheckRunner, FakeTree
from fakes.world import WORKTREE
from unit.cli.test_cli_run import PARENT, REQUEST_FILE, RESULT, RunWorld, world, write
from worlds.repository import GRANT

TESTS = "python -m pytest -q"
CALC = f"{WORKTREE}/src/app/calc.py"


def suite(tree: FakeTree) -> tuple[int, bytes]:
    if b"bug" in (tree.read("src/app/calc.py") or b""):
        return 1, b"FAILED test_calc.py::test_add\n"
    return 0, b"1 passed\n"


def with_checks(made: RunWorld) -> FakeCheckRunner:
    runner = FakeCheckRunner(made.fs, {TESTS: suite, "make lint": lambda tree: (2, b"old\n")})
    made.container.check_runner.override(providers.Object(runner))
    return runner


def test_run_check_sends_a_broken_check_back_as_a_repair_and_lists_the_checks() -> None:
    made = world(
        Round.ok(RESULT, effects=write(CALC, "bug\n")),
        Round.ok(RESULT, effects=write(CALC, "fixed\n")),
    )
    runner = with_checks(made)
    result = made.run("--check", TESTS)
    assert result.status == 0, result.out + result.err
    assert "FAILED test_calc.py::test_add" in (made.runner.starts[1].stdin_text or "")
    assert (
        "check check-1: failed: a repair (exit 1, 0s); on the starting state: passed "
        "(exit 0)" in result.out
    )
    assert "check check-1: passed (exit 0, 0s)" in result.out
    assert runner.live == set()
    run_dir = f"{PARENT}/workers/{made.run_dirs()[0]}"
    shown = made.main("show", run_dir)
    assert shown.status == 0
    assert "check check-1: failed: a repair" in shown.out
    assert "checks/check-1/output.log" in shown.out


def test_request_file_checks_with_id_and_timeout_and_a_pre_existing_failure() -> None:
    made = world(Round.ok(RESULT, effects=write(CALC, "ok\n")))
    made.fs.write(
        REQUEST_FILE,
        json.dumps(
            {
                "worktree": WORKTREE,
                "task_type": "implement",
                "grant": GRANT,
                "instructions": "x",
                "checks": [{"id": "lint", "command": "make lint", "timeout_seconds": 30}],
            }
        ),
    )
    with_checks(made)
    result = made.run("--check", TESTS, "--json")
    assert result.status == 0, result.out
    [lint, tests] = result.json()["rounds"][0]["evidence"]
    assert lint["check"] == "lint" and lint["judgement"].startswith("failed before the run")
    assert tests["check"] == "check-2" and tests["judgement"] == "passed"


@pytest.mark.parametrize(
    ("checks", "names"),
    [
        ([{"command": "x", "id": "a b"}], "checks[0] gives the id 'a b'"),
        ({"command": "x"}, '"checks" is a dict'),
        ([{"command": "x", "timeout_seconds": -1}], "checks[0] gives timeout_seconds -1"),
    ],
)
def test_a_bad_check_in_the_request_file_is_refused_before_any_run(
    checks: object, names: str
) -> None:
    made = world(Round.ok(RESULT))
    made.fs.write(
        REQUEST_FILE,
        json.dumps(
            {
                "worktree": WORKTREE,
                "task_type": "implement",
                "grant": GRANT,
                "instructions": "x",
                "checks": checks,
            }
        ),
    )
    with_checks(made)
    result = made.run()
    assert result.status == 2 and made.run_dirs() == []
    assert "request_invalid" in result.err and names in result.err
    assert REQUEST_FILE in result.err


def test_an_empty_check_flag_is_refused_naming_it() -> None:
    made = world(Round.ok(RESULT))
    with_checks(made)
    result = made.run("--check", " ", "--json")
    assert result.status == 2 and made.run_dirs() == []
    assert "--check ' ' gives no command" in json.dumps(result.json())


def test_plan_lists_the_checks_of_the_request_file_and_the_flags() -> None:
    made = world()
    with_checks(made)
    made.fs.write(
        REQUEST_FILE,
        json.dumps(
            {
                "worktree": WORKTREE,
                "task_type": "implement",
                "grant": GRANT,
                "instructions": "x",
                "checks": [{"id": "lint", "command": "make lint", "timeout_seconds": 30}],
            }
        ),
    )
    shown = made.main("plan", REQUEST_FILE, "--check", TESTS, "--check", "nosuch -x")
    assert shown.status == 2  # a check that cannot start refuses the run (issue 31 §2)
    assert "with a clean audit, over a view of its own (the fake's copy), in a" in shown.out
    assert "  lint: make lint (timeout 30 s)\n    `make` is /fake/bin/make\n" in shown.out
    assert "  check-2: python -m pytest -q (timeout 600 s)" in shown.out
    assert (
        "  check-3: nosuch -x (timeout 600 s)\n    `nosuch` is found nowhere in the check's "
        "view: install it, or give the check a program its PATH holds; a run would be refused "
        "with checks_unavailable before round 1\n"
    ) in shown.out
    as_json = made.main("plan", REQUEST_FILE, "--json").json()
    assert as_json["verdict"] == "launch"
    assert as_json["checks"] == [
        {
            "id": "lint",
            "command": "make lint",
            "timeout_seconds": 30.0,
            "program": "`make` is /fake/bin/make",
            "unavailable": None,
        }
    ]
    assert as_json["check_view"] == "over a view of its own (the fake's copy)"
    refused = made.main("plan", REQUEST_FILE, "--check", "")
    assert refused.status == 2 and "--check '' gives no command" in refused.err
