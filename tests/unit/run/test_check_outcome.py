"""How a check's run is judged from how its sandboxed process ended (adapters/sandboxes/check_outcome.py,
pure since issue 34 §3 took it out of the runner): what ended it first decides - the run's
cancellation, a limit its control group reached, its timeout, a sandbox that never reached the
command (no marker) - and only a check that started and exited by itself has its exit judged.
The contract and integration tests hold the same through the real sandbox; these hold the
order where the real processes cannot show each pair at once."""

from __future__ import annotations

import pytest

from concorde_workers.adapters.sandboxes.check_outcome import (
    CANCELLED,
    Ended,
    check_run,
)
from concorde_workers.domain.run.checks import Check, CheckStatus

CHECK = Check(id="tests", command="python -m pytest -q", timeout_seconds=5)


def ended(**changes: object) -> Ended:
    values: dict[str, object] = {
        "exit_code": 1,
        "duration": 2.5,
        "log": b"1 failed\n",
        "view": "layer",
        "cancelled": False,
        "reached_limits": None,
        "started": True,
        "timed_out": False,
    }
    values.update(changes)
    return Ended(**values)  # type: ignore[arg-type]


def test_a_cancelled_check_failed_whatever_else_was_seen() -> None:
    run = check_run(
        ended(cancelled=True, reached_limits="memory", timed_out=True, started=False), CHECK
    )
    assert (run.status, run.problem) == (CheckStatus.FAILED, CANCELLED)
    assert (run.exit_code, run.duration_seconds, run.log, run.view) == (
        1,
        2.5,
        b"1 failed\n",
        "layer",
    )


def test_a_limit_reached_comes_before_the_timeout_and_the_missing_marker() -> None:
    run = check_run(ended(reached_limits="memory 64 MiB", timed_out=True, started=False), CHECK)
    assert (run.status, run.problem) == (CheckStatus.LIMIT_REACHED, "memory 64 MiB")


def test_a_timed_out_check_says_its_timeout_even_before_its_marker() -> None:
    run = check_run(ended(timed_out=True, started=False, exit_code=-15), CHECK)
    assert (run.status, run.problem) == (CheckStatus.TIMED_OUT, "timed out after 5 s")


@pytest.mark.parametrize(
    ("log", "said"),
    [
        (b"bwrap: Can't mount proc\n", "bwrap: Can't mount proc"),
        (b"", "exit status 1"),
    ],
)
def test_a_run_without_the_marker_never_reached_the_check(log: bytes, said: str) -> None:
    run = check_run(ended(started=False, log=log), CHECK)
    assert run.status is CheckStatus.NOT_STARTED
    assert run.problem == f"the sandbox could not be built: {said}"


def test_a_check_that_started_has_its_exit_judged_with_its_view() -> None:
    passed = check_run(ended(exit_code=0, log=b"ok\n", view="copy"), CHECK)
    failed = check_run(ended(exit_code=1), CHECK)
    assert (passed.status, passed.view, passed.problem) == (CheckStatus.PASSED, "copy", "")
    assert (failed.status, failed.view) == (CheckStatus.FAILED, "layer")
