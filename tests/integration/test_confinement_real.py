"""The confinement for real (domain/isolation/confinement.py, application/preparation/confinement.py): whole
`WorkerHost.run` calls with the real adapters, the real bwrap, and the ProgramBackend asking to be
confined, so agent.py plays each round inside the namespace the production plan builds.

A child that left the process group (setsid) escapes every group kill; inside the confinement it
is a process of the run's PID namespace, which dies with the round: at a normal end, at the
timeout, at a cancellation. Without the confinement each of these tests leaves the child alive.
The processes are found in the host's /proc (their pids inside are the namespace's): by the
runtime directory their command line or environment names.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e.agent_processes import NamespaceHolder, processes_with
from fakes.program_backend import Step
from integration.host_fixtures import HostHarness, HostRun, ok_result
from timing import SLOW, Deadline, Signal

from concorde_workers.application.runtime.cancellation import Cancellation
from concorde_workers.domain.configuration.request import Limits

pytestmark = pytest.mark.integration

OPEN = (Step.session("s-1"), Step.transcript())


@pytest.fixture
def harness(project: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[HostHarness]:
    """The integration project with the system's own bwrap (the project's bin/ holds stubs)."""
    monkeypatch.setenv("PATH", "/usr/local/bin:/usr/bin:/bin")
    made = HostHarness(
        root=project.root,
        worktree=project.worktree,
        primary=project.primary,
        tmp=project.tmp,
        home=project.home,
        git_env=project.git_env,
    )
    yield made
    for pid in processes_with(str(project.tmp)):  # what a failing test left, by its id
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def left_of(run: HostRun) -> dict[int, list[str]]:
    """The run's processes still alive right after `WorkerHost.run` returned: a round ends only
    once its PID namespace is empty, so there must be none at once, not after a while."""
    return processes_with(str(run.runtime_dir))


def events_of(harness: HostHarness) -> Path:
    """A folder for the tests' named pipes that the confined agent can open: a runtime path of
    the request (read-only inside, which a named pipe does not mind); /tmp is not there."""
    path = harness.root / "events"
    path.mkdir(exist_ok=True)
    return path


def escaping_child() -> list[dict[str, Any]]:
    """A child in a session of its own (and its grandchild), sleeping for an hour; they append
    their pids to a file in the runtime directory, which is what finds them later."""
    return [*OPEN, Step.spawn(3600, grandchild=True, session=True, pidfile="{tmp}/pids")]


@pytest.mark.req("No worker process outlives its round")
def test_a_child_that_left_the_group_dies_with_an_ok_round(harness: HostHarness) -> None:
    run = harness.run([*escaping_child(), Step.result(ok_result())], confined=True)
    assert run.record.status == "ok", run.record.error
    assert left_of(run) == {}


@pytest.mark.req("No worker process outlives its round")
def test_the_run_returns_only_once_the_namespace_has_ended(harness: HostHarness) -> None:
    """A process of the run's PID namespace that the test keeps from being reaped (its parent
    is outside: NamespaceHolder) keeps the namespace's init from finishing its exit, as a slow
    teardown would: the cancelled run does not return until it has, and then nothing is left."""
    running = Signal(events_of(harness) / "running")
    cancel = Cancellation()
    runs: list[HostRun] = []
    worker = threading.Thread(
        target=lambda: runs.append(
            harness.run(
                [*OPEN, Step.signal(running.path), Step.sleep(3600), Step.result(ok_result())],
                cancel=cancel,
                confined=True,
                runtime_paths=[running.path.parent],
            )
        )
    )
    worker.start()
    running.wait()
    ours = os.readlink("/proc/self/ns/pid")
    inside = next(
        pid
        for pid in processes_with(str(harness.tmp))
        if os.readlink(f"/proc/{pid}/ns/pid") != ours
    )  # the run's only namespace
    holder = NamespaceHolder(inside)
    try:
        cancel.cancel("the operation run was cancelled")
        worker.join(1.0)  # only a failure returns; the init cannot end before the release
        assert worker.is_alive(), "the run returned while its PID namespace was still ending"
    finally:
        holder.release()
    worker.join(SLOW)
    (run,) = runs
    assert run.code == "interrupted", run.record.error
    assert left_of(run) == {}


@pytest.mark.req("No worker process outlives its round")
def test_a_child_that_left_the_group_dies_with_a_timed_out_round(harness: HostHarness) -> None:
    # The round's timeout passes once the children are up (an event), not after seconds the
    # confinement's start-up may or may not fit in.
    deadline = Deadline()
    spawned = Signal(events_of(harness) / "spawned", then=deadline.expire)
    run = harness.run(
        [*escaping_child(), Step.signal(spawned.path), Step.sleep(3600), Step.result(ok_result())],
        limits=Limits(timeout_seconds=SLOW, rounds=0, retries=0, retry_delay_seconds=0),
        confined=True,
        deadline=deadline,
        runtime_paths=[spawned.path.parent],
    )
    assert run.code == "worker_timeout", run.record.error
    assert left_of(run) == {}


@pytest.mark.req("No worker process outlives its round")
def test_a_child_that_left_the_group_dies_with_a_cancelled_run(harness: HostHarness) -> None:
    cancel = Cancellation()
    spawned = Signal(
        events_of(harness) / "spawned",
        then=lambda: cancel.cancel("the operation run was cancelled"),
    )
    run = harness.run(
        [*escaping_child(), Step.signal(spawned.path), Step.sleep(3600), Step.result(ok_result())],
        cancel=cancel,
        confined=True,
        runtime_paths=[spawned.path.parent],
    )
    assert run.code == "interrupted", run.record.error
    assert left_of(run) == {}


@pytest.mark.req("A failed run explains itself")
@pytest.mark.parametrize(
    ("how", "status", "recorded"),
    [
        ("exit", 130, 130),  # an exit status that bwrap's 128 + n would have read as SIGINT
        ("exit", 0 + 143, 143),
        ("signal", signal.SIGTERM, -signal.SIGTERM),
        ("signal", signal.SIGKILL, -signal.SIGKILL),
    ],
)
def test_the_record_keeps_the_confined_agent_s_exact_exit_status(
    harness: HostHarness, how: str, status: int, recorded: int
) -> None:
    """bwrap reports an initial process killed by signal n as the exit status 128 + n; the
    confinement's waiter reports the agent's own wait status, so the record says which it was."""
    run = harness.run([*OPEN, Step.crash(how, status)], confined=True)
    assert run.record.rounds[0].exit == recorded, run.record.rounds[0]
