"""The checks as a round validation (issue 13), over the host with fakes: every answer - pass,
repair, repair at the last round, unavailable, pre-existing - and what each leaves."""

from __future__ import annotations

import json
import posixpath

import pytest
from fakes.agent import Round
from fakes.checks import COPIES, HANG, FakeCheckRunner, FakeTree
from fakes.host_world import HostWorld, ok_result, write_file
from fakes.world import WORKTREE

from concorde_workers.application.checks.checks import ChecksValidation, place_for
from concorde_workers.application.runtime.cancellation import Cancellation
from concorde_workers.domain.run.checks import CHECKS_FAILED, CHECKS_UNAVAILABLE, Check

TESTS = "python -m pytest -q"


def suite_passes_unless_bug(tree: FakeTree) -> tuple[int, bytes]:
    """A test suite that fails while calc.py holds a bug, and writes its caches."""
    tree.write("src/app/.pytest_cache/v/cache/lastfailed", "{}")
    tree.write("src/app/__pycache__/calc.cpython-311.pyc", b"\0")
    if b"bug" in (tree.read("src/app/calc.py") or b""):
        return 1, b"F\nFAILED test_calc.py::test_add - assert 3 == 4\n1 failed in 0.01s\n"
    return 0, b".\n1 passed in 0.01s\n"


def always_fails(tree: FakeTree) -> tuple[int, bytes]:
    return 2, b"lint: 1 error in old.py\n"


def validation(world: HostWorld, runner: FakeCheckRunner, *checks: Check) -> ChecksValidation:
    request = world.request()
    return ChecksValidation(
        checks or (Check(id="tests", command=TESTS),), runner, world.fs, place_for(request)
    )


def run(
    world: HostWorld,
    runner: FakeCheckRunner,
    rounds: list[Round],
    *checks: Check,
    limits: dict[str, int] | None = None,
):
    with validation(world, runner, *checks) as checking:
        return world.run(rounds, validation=checking, limits=limits or {"rounds": 3})


def check_node(world: HostWorld, n: int, check_id: str = "tests") -> dict[str, object]:
    folder = posixpath.join(world.run_dir, "rounds", str(n), "checks", check_id)
    return dict(json.loads(world.text(posixpath.join(folder, "check.json"))))


@pytest.mark.req("The round validation's answer is recorded")
def test_all_checks_pass_nothing_to_repair() -> None:
    world = HostWorld()
    runner = FakeCheckRunner(world.fs, {TESTS: suite_passes_unless_bug})
    record = run(
        world, runner, [Round.ok(ok_result(), effects=write_file(world, "src/app/calc.py"))]
    )
    assert record.status == "ok" and len(record.rounds) == 1
    assert record.rounds[0].validation == "clean"
    [item] = record.rounds[0].evidence
    assert item["check"] == "tests" and item["status"] == "passed" and item["exit_code"] == 0
    assert item["log"] == posixpath.join(world.run_dir, "rounds/1/checks/tests/output.log")
    assert world.round_node(1)["content"]["evidence"][0]["log"] == "checks/tests/output.log"
    node = check_node(world, 1)
    assert node["status"] == "passed" and node["exit_code"] == 0 and "duration_seconds" in node
    # A passing check is never narrowed; every copy is gone, the worktree has no cache.
    assert [(c, runner.sources.get(t, t)) for c, t, _ in runner.runs] == [("tests", WORKTREE)]
    # The starting state's ro and names files were never copied (issue 32 §3).
    assert runner.completed == []
    assert runner.live == set()
    assert not world.exists(posixpath.join(WORKTREE, "src/app/.pytest_cache/v/cache/lastfailed"))
    assert not world.exists(posixpath.join(WORKTREE, "src/app/__pycache__/calc.cpython-311.pyc"))


@pytest.mark.req("Rounds only repair what the round validation reports")
def test_a_check_broken_by_the_round_is_a_repair_whose_text_reaches_the_next_round() -> None:
    world = HostWorld()
    runner = FakeCheckRunner(world.fs, {TESTS: suite_passes_unless_bug})
    record = run(
        world,
        runner,
        [
            Round.ok(ok_result(), effects=write_file(world, "src/app/calc.py", "bug\n")),
            Round.ok(
                ok_result(), effects=write_file(world, "src/app/calc.py", "fixed\n"), session="s-1"
            ),
        ],
    )
    assert record.status == "ok" and len(record.rounds) == 2
    prompt = world.runner.starts[1].stdin_text or ""
    assert "check tests: `python -m pytest -q`" in prompt
    assert "status: failed" in prompt and "exit code: 1" in prompt
    assert "FAILED test_calc.py::test_add - assert 3 == 4" in prompt
    first, second = (r.evidence[0] for r in record.rounds)
    assert first["judgement"] == "failed: a repair" and first["before"]["status"] == "passed"
    assert second["judgement"] == "passed"
    assert check_node(world, 1)["status"] == "failed"
    assert check_node(world, 1)["exit_code"] == 1
    before = json.loads(
        world.text(posixpath.join(world.run_dir, "rounds/1/checks/tests/before/check.json"))
    )
    assert before["state"] == "the run's starting state" and before["status"] == "passed"
    assert check_node(world, 2)["status"] == "passed"
    # The narrowing ran on the starting state: a copy of the worktree made before round 1
    # (copy-1); each unconfined round's checks over a copy of the worktree of their own.
    assert [t for _, t, _ in runner.runs] == [
        f"{COPIES}/copy-2",
        f"{COPIES}/copy-1",
        f"{COPIES}/copy-3",
    ]
    assert {runner.sources[t] for _, t, _ in runner.runs} == {WORKTREE}
    assert runner.live == set()


def test_the_repair_names_the_last_20000_bytes_of_the_log() -> None:
    world = HostWorld()
    log = b"A" * 30_000 + b"THE END\n"

    def noisy(tree: FakeTree) -> tuple[int, bytes]:
        return (1, log) if tree.read("src/app/calc.py") else (0, b"")

    runner = FakeCheckRunner(world.fs, {TESTS: noisy})
    record = run(
        world,
        runner,
        [Round.ok(ok_result(), effects=write_file(world, "src/app/calc.py"))],
        limits={"rounds": 0},
    )
    assert record.error is not None
    repair = record.rounds[0].validation or ""
    tail = log[-20_000:].decode()
    assert tail.rstrip() in repair and "A" * 20_001 not in repair


@pytest.mark.req("A run has at most its configured resume rounds")
def test_checks_still_failing_when_no_rounds_are_left_end_checks_failed_with_a_link_each() -> None:
    world = HostWorld()

    def lint(tree: FakeTree) -> tuple[int, bytes]:
        return (1, b"lint: bad style\n") if tree.read("src/app/calc.py") else (0, b"")

    runner = FakeCheckRunner(world.fs, {TESTS: suite_passes_unless_bug, "ruff check": lint})
    record = run(
        world,
        runner,
        [
            Round.ok(ok_result(), effects=write_file(world, "src/app/calc.py", "bug\n")),
            Round.ok(ok_result(), session="s-1"),
        ],
        Check(id="tests", command=TESTS),
        Check(id="lint", command="ruff check"),
        limits={"rounds": 1},
    )
    assert record.status == "failed" and len(record.rounds) == 2
    assert record.error is not None
    link = record.error.causes[0] if record.error.code == "workers" else record.error
    assert link.code == CHECKS_FAILED and link.unhandled.reason == "exhausted"
    assert [c.code for c in link.causes] == ["check_failed", "check_failed"]
    assert ["tests" in link.causes[0].actor, "lint" in link.causes[1].actor] == [True, True]
    assert link.causes[0].evidence[0].ref.endswith("rounds/2/checks/tests/output.log")
    assert len(link.attempts) == 2


@pytest.mark.parametrize("runner_kind", ["timeout", "cannot start"])
def test_a_check_that_times_out_or_cannot_start_ends_checks_unavailable(runner_kind: str) -> None:
    world = HostWorld()
    runner = (
        FakeCheckRunner(world.fs, {TESTS: HANG})
        if runner_kind == "timeout"
        else FakeCheckRunner(world.fs, unstartable=frozenset({TESTS}))
    )
    record = run(
        world,
        runner,
        [Round.ok(ok_result(), effects=write_file(world, "src/app/calc.py"))],
        Check(id="tests", command=TESTS, timeout_seconds=5),
    )
    assert record.status == "failed" and len(record.rounds) == 1
    assert record.error is not None and record.error.code == CHECKS_UNAVAILABLE
    assert record.error.unhandled.reason == "environment"
    [cause] = record.error.causes
    assert cause.code == "check_unavailable"
    assert (
        "timed out after 5 s" if runner_kind == "timeout" else "could not start"
    ) in cause.detail
    assert runner.live == set()


def test_a_worktree_that_cannot_be_copied_is_unavailable_not_a_repair() -> None:
    world = HostWorld()
    runner = FakeCheckRunner(world.fs, {TESTS: suite_passes_unless_bug})
    with validation(world, runner) as checking:
        runner.copy_fails = True
        record = world.run([Round.ok(ok_result())], validation=checking)
    assert record.error is not None and record.error.code == CHECKS_UNAVAILABLE
    assert "could not be copied" in record.error.detail


def test_a_check_failing_on_the_starting_state_too_is_pre_existing_not_a_repair() -> None:
    world = HostWorld()
    runner = FakeCheckRunner(world.fs, {"make lint": always_fails, TESTS: suite_passes_unless_bug})
    record = run(
        world,
        runner,
        [
            Round.ok(ok_result(), effects=write_file(world, "src/app/calc.py", "bug\n")),
            Round.ok(
                ok_result(), effects=write_file(world, "src/app/calc.py", "ok\n"), session="s-1"
            ),
        ],
        Check(id="lint", command="make lint"),
        Check(id="tests", command=TESTS),
    )
    assert record.status == "ok" and len(record.rounds) == 2
    prompt = world.runner.starts[1].stdin_text or ""
    assert "check tests" in prompt and "check lint" not in prompt
    lint_first, lint_second = (r.evidence[0] for r in record.rounds)
    assert (
        lint_first["judgement"]
        == lint_second["judgement"]
        == ("failed before the run too: pre-existing, not a repair")
    )
    assert lint_first["before"]["exit_code"] == 2
    # The starting state is judged once per run: round 2 keeps round 1's answer.
    befores = [check for check, tree, _ in runner.runs if tree == f"{COPIES}/copy-1"]
    assert befores.count("lint") == 1
    assert runner.live == set()


def test_only_pre_existing_failures_end_the_run_ok_at_once() -> None:
    world = HostWorld()
    runner = FakeCheckRunner(world.fs, {"make lint": always_fails})
    record = run(world, runner, [Round.ok(ok_result())], Check(id="lint", command="make lint"))
    assert record.status == "ok" and len(record.rounds) == 1
    assert record.rounds[0].validation == "clean"


def test_the_checks_run_where_the_worker_runs_with_the_run_records_and_primary_hidden() -> None:
    world = HostWorld()
    runner = FakeCheckRunner(world.fs, {TESTS: suite_passes_unless_bug})
    run(world, runner, [Round.ok(ok_result())])
    _, _, place = runner.runs[0]
    assert place.worktree == WORKTREE
    assert posixpath.join("/work/trace", "workers") in place.hidden
    assert posixpath.dirname(posixpath.dirname(posixpath.dirname(WORKTREE))) in place.hidden


def test_a_check_sees_only_what_the_grant_lets_the_worker_read() -> None:
    world = HostWorld()
    world.fs.write(posixpath.join(WORKTREE, "secrets/token.txt"), "not for workers\n")
    world.fs.write(posixpath.join(WORKTREE, "README.md"), "# names only\n")
    seen: list[tuple[bytes | None, bytes | None]] = []

    def prints_all(tree: FakeTree) -> tuple[int, bytes]:
        seen.append((tree.read("secrets/token.txt"), tree.read("README.md")))
        return 0, b""

    runner = FakeCheckRunner(world.fs, {TESTS: prints_all})
    run(world, runner, [Round.ok(ok_result())])
    assert seen == [(None, b"")]


def test_a_run_cancelled_while_a_check_runs_kills_it_runs_no_other_and_ends_interrupted() -> None:
    world = HostWorld()
    cancel = Cancellation()

    def interrupted(tree: FakeTree) -> tuple[int, bytes]:
        cancel.cancel("SIGINT")  # Ctrl-C while the check runs
        return 1, b"partial\n"

    runner = FakeCheckRunner(world.fs, {TESTS: interrupted, "make lint": always_fails})
    checking = ChecksValidation(
        (Check(id="tests", command=TESTS), Check(id="lint", command="make lint")),
        runner,
        world.fs,
        place_for(world.request()),
        cancel=cancel,
    )
    with checking:
        record = world.run(
            [Round.ok(ok_result(), effects=write_file(world, "src/app/calc.py"))],
            validation=checking,
            cancel=cancel,
            limits={"rounds": 3},
        )
    assert record.status == "failed" and record.error is not None
    assert record.error.code == "interrupted" and len(record.rounds) == 1
    assert [check for check, _, _ in runner.runs] == ["tests"]  # no narrowing, no next check
    assert runner.live == set()


def test_without_a_copy_of_the_starting_state_a_failing_check_is_unavailable_not_blamed() -> None:
    world = HostWorld()
    runner = FakeCheckRunner(world.fs, {TESTS: suite_passes_unless_bug}, copy_fails=True)
    checking = validation(world, runner)
    checking.start()  # the starting state cannot be copied
    runner.copy_fails = False
    record = world.run(
        [Round.ok(ok_result(), effects=write_file(world, "src/app/calc.py", "bug\n"))],
        validation=checking,
        limits={"rounds": 3},
    )
    checking.close()
    assert record.error is not None and record.error.code == CHECKS_UNAVAILABLE
    assert (
        "the run's starting state could not be copied: No space left on device"
        in record.error.causes[0].detail
    )


def test_a_starting_state_copy_that_cannot_be_removed_is_told_not_raised() -> None:
    world = HostWorld()
    runner = FakeCheckRunner(world.fs, {TESTS: suite_passes_unless_bug})
    checking = validation(world, runner)
    checking.start()
    [start] = runner.live
    runner.discard_fails = True
    checking.close()
    assert checking.leftover is not None and start in checking.leftover
    assert "Device or resource busy" in checking.leftover


def test_a_python_caller_asks_before_the_run_whether_every_check_could_start() -> None:
    """Issue 31 §2: `refusal_before_run`, asked before `WorkerHost.run` as the command line asks
    it: checks_unavailable for a check no round can make start, None otherwise; nothing is
    copied or run to answer."""
    world = HostWorld()
    runner = FakeCheckRunner(world.fs, {TESTS: suite_passes_unless_bug})
    missing = validation(world, runner, Check(id="lint", command="ruff check ."))
    refused = missing.refusal_before_run()
    assert refused is not None and refused.code == CHECKS_UNAVAILABLE
    assert refused.message.startswith(
        "the check lint (ruff check .) cannot start in any round: `ruff` is found nowhere"
    )
    assert validation(world, runner).refusal_before_run() is None
    assert runner.runs == [] and runner.live == set()


def sees_the_starting_state(tree: FakeTree) -> tuple[int, bytes]:
    """Fails while calc.py holds the bug; prints what it sees of the ro and names files."""
    seen = f"notes={tree.read('docs/notes.md')!r} readme={tree.read('README.md')!r}\n".encode()
    return (1 if b"bug" in (tree.read("src/app/calc.py") or b"") else 0), seen


def bug_then_nothing(world: HostWorld) -> list[Round]:
    return [
        Round.ok(ok_result(), effects=write_file(world, "src/app/calc.py", "bug\n")),
        Round.ok(ok_result(), session="s-1"),
    ]


def test_the_starting_state_s_ro_and_names_files_are_copied_when_a_check_first_fails() -> None:
    """Only the rw files are copied before round 1; the ro and names files, which no round
    can write, when the narrowing first needs them, once a run (issue 32 §3)."""
    world = HostWorld()
    world.fs.write(posixpath.join(WORKTREE, "docs/notes.md"), "the notes\n")
    runner = FakeCheckRunner(world.fs, {TESTS: sees_the_starting_state})
    checks = (Check(id="tests", command=TESTS), Check(id="again", command=TESTS))
    record = run(world, runner, bug_then_nothing(world), *checks, limits={"rounds": 1})
    assert record.status == "failed" and len(record.rounds) == 2
    assert runner.completed == [f"{COPIES}/copy-1"]  # once, for both checks and both rounds
    before = world.text(posixpath.join(world.run_dir, "rounds/1/checks/tests/before/output.log"))
    assert before == "notes=b'the notes\\n' readme=b''\n"
    assert runner.live == set()


def test_an_ro_file_changed_after_the_audit_makes_the_narrowing_unavailable_not_a_guess() -> None:
    """A change of an ro file during a round is the audit's violation; one after it (not the
    worker's: here the check's own program reaches out) leaves no starting state to judge
    by, and the failing check is unavailable, the file named."""
    world = HostWorld()
    notes = posixpath.join(WORKTREE, "docs/notes.md")
    world.fs.write(notes, "the notes\n")

    def changes_the_notes(tree: FakeTree) -> tuple[int, bytes]:
        world.fs.write(notes, "other notes\n")
        return sees_the_starting_state(tree)

    runner = FakeCheckRunner(world.fs, {TESTS: changes_the_notes})
    record = run(world, runner, bug_then_nothing(world), limits={"rounds": 1})
    assert record.error is not None
    link = record.error.causes[0] if record.error.code == "workers" else record.error
    assert link.code == CHECKS_UNAVAILABLE, record.error
    assert f"{notes}: it changed after the run started" in str(record.error.model_dump())
    assert runner.live == set()
