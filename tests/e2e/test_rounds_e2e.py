"""End-to-end: a run's rounds, once per backend (tests/e2e/backends.py; issue 33 §5), each
backend's real program against its scripted model server, the script said in backend-neutral
moves (`Shell`, `Result`, `Transient`): a repair round and a retry round each continue the
round before's session (its context reaches the model again), and the host performs the proposed
deletions the grant allows. Each backend's own tests hold its wording of the same (its prompts,
its session flags, its transcript): tests/e2e/test_claude_e2e.py, tests/e2e/test_pi_e2e.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from e2e.backends import BackendWorld, Result, Shell, Stall, Transient, backend_world
from e2e.conftest import ok_result
from e2e.test_pi_e2e import RepairOnce
from timing import SLOW, Deadline

from concorde_workers.domain.configuration.request import Limits

pytestmark = pytest.mark.e2e
__all__ = ["backend_world"]  # the fixture, imported for pytest

REPAIR = "Also give greet.py a module docstring."


def limits(rounds: int = 0, retries: int = 0) -> Limits:
    return Limits(
        timeout_seconds=SLOW,
        max_turns=10,
        rounds=rounds,
        retries=retries,
        retry_delay_seconds=0.05,
    )


@pytest.mark.req("Resume from the newest session")
def test_a_repair_round_continues_the_session_with_its_context(
    backend_world: BackendWorld,
) -> None:
    w = backend_world
    greet = w.worktree / "src" / "app" / "greet.py"
    first = w.request_count()
    run = w.play(
        Shell(f"echo 'X = 1' > {greet}; echo ROUND-ONE-OUTPUT-k3"),
        Result(ok_result(summary="written")),
        Shell(f'printf \'"""Greeting."""\\nX = 1\\n\' > {greet}; echo rc=$?'),
        Result(ok_result(summary="docstring added")),
        limits=limits(rounds=1),
        validation=RepairOnce(REPAIR),
    )
    assert run.record.status == "ok", run.explain()
    r1, r2 = run.data["rounds"]
    assert (r1["prompt"], r2["prompt"]) == ("initial", "repair"), run.explain()
    assert r1["session"] is not None and r1["session"] == r2["session"], run.explain()
    sent = w.sent_since(first)
    repaired = [body for body in sent if REPAIR in body]
    assert repaired, sent[-1][-2000:]
    # Round 2's first request carries round 1's conversation: its task and its call's output.
    task = w.request(limits()).instructions
    assert task in repaired[0] and "ROUND-ONE-OUTPUT-k3" in repaired[0], repaired[0][-3000:]
    assert greet.read_text() == '"""Greeting."""\nX = 1\n'
    assert run.record.worker_result == ok_result(summary="docstring added")
    w.assert_cleaned(run)


@pytest.mark.req("A transient model-service error is retried")
@pytest.mark.req("A retry continues the session")
@pytest.mark.req("Every retry is recorded")
def test_a_transient_error_gets_a_retry_round_in_the_same_session(
    backend_world: BackendWorld,
) -> None:
    w = backend_world
    new = w.worktree / "src" / "app" / "new.py"
    first = w.request_count()
    run = w.play(
        Shell(f"echo 'x = 1' > {new}; echo BEFORE-THE-ERROR-p8"),
        Transient(),
        Result(ok_result(summary="after the retry")),
        limits=limits(retries=2),
    )
    assert run.record.status == "ok", run.explain()
    first_round, second = run.data["rounds"]
    assert first_round["transient"]["retried"] is True, first_round
    assert 0.025 <= first_round["transient"]["delay_seconds"] <= 0.05, first_round
    assert second["prompt"] == "retry" and second["session"] == first_round["session"]
    assert "BEFORE-THE-ERROR-p8" in w.sent_since(first)[-1]
    assert second["audit"]["changed"] == ["src/app/new.py"], second
    assert run.record.worker_result == ok_result(summary="after the retry")
    w.assert_cleaned(run)


@pytest.mark.req("Proposed deletions follow every clean last round")
def test_proposed_deletions_are_performed_by_the_host(backend_world: BackendWorld) -> None:
    w = backend_world
    old = w.worktree / "src" / "app" / "old.py"
    if not old.exists():
        old.write_text("# to be deleted\n")
        w.commit("src/app/old.py")
    proposed: dict[str, Any] = ok_result(
        "src/app/old.py", "src/app/util.py", "src/app/absent.py", "../outside.txt"
    )
    run = w.play(Result(proposed), limits=limits())
    assert run.record.status == "ok", run.explain()
    assert not old.exists()
    assert run.record.deleted == ("src/app/old.py",)
    assert run.record.deletions_refused == ("src/app/util.py", "../outside.txt")
    assert run.record.deletions_absent == ("src/app/absent.py",)
    assert (w.worktree / "src/app/util.py").exists()
    assert run.data["rounds"][0]["audit"]["changed"] == []  # the worker itself deleted nothing
    w.assert_cleaned(run)


@pytest.mark.req("Nothing but the trace outlives a worker")
def test_a_round_past_its_timeout_is_worker_timeout_and_keeps_its_transcript(
    backend_world: BackendWorld,
) -> None:
    w = backend_world
    deadline = Deadline()
    first = w.request_count()
    run = w.play(Shell("echo working"), Stall(deadline), limits=limits(), deadline=deadline)
    assert run.code == "worker_timeout", run.explain()
    assert deadline.expired and len(w.sent_since(first)) == 2
    # The round had named its session: the transcript was kept.
    assert run.data["rounds"][0]["session"], run.explain()
    assert (run.run_dir / "transcript.jsonl").exists()
    w.assert_cleaned(run)


@pytest.mark.req("A failed run explains itself")
def test_a_run_past_its_turns_is_worker_limit_reached(backend_world: BackendWorld) -> None:
    w = backend_world
    first = w.request_count()
    run = w.play(
        *(Shell(f"echo turn {i}") for i in range(1, 6)),
        limits=Limits(
            timeout_seconds=SLOW, max_turns=2, rounds=0, retries=0, retry_delay_seconds=0
        ),
    )
    assert run.code == "worker_limit_reached", run.explain()
    error = run.record.error
    assert error is not None
    (cause,) = error.causes
    assert cause.code == f"{w.backend}_limit_reached", cause
    assert len(w.sent_since(first)) <= 3, len(w.sent_since(first))  # no call past the limit
    w.assert_cleaned(run)
