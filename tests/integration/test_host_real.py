"""Whole worker runs, for real: `WorkerHost.run` with the real Git adapter, the real filesystem,
the real SubprocessRunner and the ProgramBackend (tests/fakes/agent_programs/agent.py plays each
round as a real process), in a real repository with a real `.claude/worktrees/task` worktree.

Every run's returned record is checked against contract.workers.worker-run-record and every
trace.json of its run directory against contract.tracing.node (`HostHarness.run`); every test
also checks that the runtime directory, with its credential copy, is gone, and that the host left
no `index.lock` in the repository.

No test races the clock (tests/timing.py): a round's timeout passes, a cancellation comes, at the
step where the scenario signals it; a gate holds the agent at a step while the test looks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes.agent_stream import TestStreamReader
from fakes.program_backend import Step
from integration.conftest import build_project, isolate_environment
from integration.host_fixtures import (
    HostHarness,
    HostRun,
    alive,
    kill_left,
    ok_result,
    porcelain,
    wait_gone,
)
from timing import SLOW, Deadline, Gate, Signal, eventually

from concorde_workers.adapters.machine.filesystem import LocalFileSystem
from concorde_workers.adapters.repository.git import GitCliReader
from concorde_workers.application.rounds.worktree_state import WorktreeObserver
from concorde_workers.application.runtime.cancellation import Cancellation
from concorde_workers.application.runtime.validation import (
    LinkAnswer,
    ValidationInput,
    ValidationOutcome,
)
from concorde_workers.domain.configuration.request import Limits
from concorde_workers.domain.gitview.git_status import GitRepository
from concorde_workers.domain.ground.layout import STDERR_TAIL_BYTES
from concorde_workers.domain.run.stdout import MAX_LINE_BYTES
from concorde_workers.ports.repository.git import GitCommandFailed

pytestmark = pytest.mark.integration

MAIN = "{worktree}/src/app/main.py"
OPEN = (Step.session("s-1"), Step.transcript())
"""How a round opens: its session named, its transcript written. (The test backends'
`transcript()` names the file even when the round never wrote it, unlike both real backends,
which answer None; the host then cannot keep it and ends the run cleanup_failed.)"""
CLAUDE_ENVIRONMENT = {
    "PATH",
    "LANG",
    "HOME",
    "TMPDIR",
    "CLAUDE_CONFIG_DIR",
    "CLAUDE_CODE_DISABLE_CLAUDE_MDS",
    "CLAUDE_CODE_DISABLE_AUTO_MEMORY",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
}


@pytest.fixture
def harness(project: Any) -> HostHarness:
    return HostHarness(
        root=project.root,
        worktree=project.worktree,
        primary=project.primary,
        tmp=project.tmp,
        home=project.home,
        git_env=project.git_env,
    )


@pytest.fixture
def pids(harness: HostHarness) -> Iterator[Path]:
    """A pidfile for spawned children; whatever a failing test left running is killed."""
    path = harness.root / "children.pid"
    yield path
    if path.exists():
        kill_left(int(p) for p in path.read_text().split())


def assert_cleaned(harness: HostHarness, run: HostRun) -> None:
    """Nothing but the trace outlives the worker: no runtime directory (so no credential copy),
    nothing else of ours in the temporary root, no index.lock in the repository."""
    assert not run.runtime_dir.exists()
    if run.backend.context is not None:
        assert not Path(run.context.policy.runtime.copy_of(".credentials.json")).exists()
    assert [p.name for p in harness.tmp.iterdir()] == []
    assert not (harness.primary / ".git" / "index.lock").exists()
    assert not (harness.primary / ".git" / "worktrees" / "task" / "index.lock").exists()
    status = run.status()
    assert status["phase"] == "finished"
    assert status["status"] == (run.record.status if run.code != "interrupted" else "interrupted")
    assert run.trace()["status"] == run.record.status


def pidlist(path: Path) -> list[int]:
    return [int(p) for p in path.read_text().split()]


def run_in_thread(
    harness: HostHarness, *scenarios: Any, **options: Any
) -> tuple[threading.Thread, list[HostRun]]:
    runs: list[HostRun] = []
    thread = threading.Thread(target=lambda: runs.append(harness.run(*scenarios, **options)))
    thread.start()
    return thread, runs


def wait_for(predicate: Any, what: str = "the condition") -> Any:
    """The first true value of `predicate()`, for what another process rewrites (status.json)."""
    return eventually(predicate, what)


def timeout_here(harness: HostHarness) -> tuple[Deadline, dict[str, Any]]:
    """A deadline for `harness.run` and the scenario step at which the round's timeout passes:
    the agent has provably done every step before it."""
    deadline = Deadline()
    reached = Signal(harness.root / "timeout.fifo", then=deadline.expire)
    return deadline, Step.signal(reached.path)


def cancel_here(harness: HostHarness, cancel: Cancellation, reason: str) -> dict[str, Any]:
    """The scenario step at which `cancel` is cancelled from another thread."""
    reached = Signal(harness.root / "cancel.fifo", then=lambda: cancel.cancel(reason))
    return Step.signal(reached.path)


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return None


# --- a clean round ------------------------------------------------------------------------------


@pytest.mark.req("A running run shows its progress")
@pytest.mark.req("A run is recorded before its launch")
@pytest.mark.req("The worker never works in the worktree")
@pytest.mark.req("Nothing ambient reaches the worker")
def test_output_is_read_line_by_line_while_the_round_runs(harness: HostHarness) -> None:
    record = harness.root / "agent-record.json"
    first, second = "{worktree}/src/app/first.py", "{worktree}/src/app/second.py"
    after_first, after_second = (
        Gate(harness.root / "first.gate"),
        Gate(harness.root / "second.gate"),
    )
    thread, runs = run_in_thread(
        harness,
        [
            Step.session("s-1"),
            Step.record(str(record)),
            Step.write(first, "1\n"),
            Step.gate(after_first.path),
            Step.write(second, "2\n"),
            Step.gate(after_second.path),
            Step.transcript(),
            Step.result(ok_result()),
        ],
    )
    try:
        workers = harness.parent / "workers"
        status_file = wait_for(lambda: next(iter(workers.glob("*/status.json")), None))
        target = str(harness.worktree / "src/app/first.py")

        def shows(path: str) -> dict[str, Any] | None:
            status = read_json(status_file)
            action = (status or {}).get("last_action") or {}
            return status if action.get("target") == path else None

        status = wait_for(lambda: shows(target), "status.json showing the first write")
        # The round still runs (the agent waits at its gate): the host has not returned, the
        # phase is worker, the agent program is alive, and the second write has not happened.
        assert thread.is_alive()
        assert status["phase"] == "worker" and status["round"] == 1
        assert status["status"] is None and status["last_action"]["tool"] == "Write"
        assert alive(json.loads(record.read_text())["pid"])
        assert not (harness.worktree / "src/app/second.py").exists()
        run_dir = status_file.parent
        assert json.loads((run_dir / "trace.json").read_text())["status"] == "running"
        runtime = Path(json.loads(record.read_text())["cwd"]).parent
        assert (runtime / "config" / ".credentials.json").read_text().startswith("{")
        after_first.release()
        wait_for(
            lambda: shows(str(harness.worktree / "src/app/second.py")),
            "status.json showing the second write",
        )
        assert thread.is_alive()
    finally:
        after_first.release()
        after_second.release()
        thread.join(SLOW)
    run = runs[0]
    assert run.record.status == "ok", run.record.error
    seen = json.loads(record.read_text())
    assert seen["cwd"] == run.context.policy.runtime.work
    assert set(seen["env"]) == CLAUDE_ENVIRONMENT
    assert seen["env"]["HOME"] == run.context.policy.runtime.home
    assert_cleaned(harness, run)


@pytest.mark.req("Every round is audited")
@pytest.mark.req("The host creates no file for the worker")
@pytest.mark.req("The transcript is kept before the runtime directory goes")
@pytest.mark.req("Every round keeps its standard error")
def test_writes_inside_rw_end_ok_with_a_clean_audit(harness: HostHarness) -> None:
    before = porcelain(harness.git_env, harness.worktree)
    transcript = [{"type": "session", "id": "s-1"}, {"type": "message", "text": "wrote"}]
    run = harness.run(
        [
            Step.session("s-1"),
            Step.write(MAIN, "print('hello')\n"),
            Step.write("{worktree}/src/app/new.py", "NEW = 1\n"),
            Step.write("{worktree}/src/app/pkg/deep.py", "DEEP = 1\n", mode="755"),
            Step.stderr(text="a warning\n"),
            Step.transcript(transcript),
            Step.result(ok_result()),
        ]
    )
    assert run.record.status == "ok" and run.record.error is None
    assert run.audit() == {
        "verdict": "clean",
        "violations": [],
        "changed": ["src/app/main.py", "src/app/new.py", "src/app/pkg/deep.py"],
    }
    after = porcelain(harness.git_env, harness.worktree)
    assert sorted(set(after) - set(before)) == [
        " M src/app/main.py",
        "?? src/app/new.py",
        "?? src/app/pkg/deep.py",
    ]
    assert set(before) <= set(after)
    kept = run.run_dir / "transcript.jsonl"
    assert run.record.transcript == str(kept)
    assert [json.loads(line) for line in kept.read_text().splitlines()] == transcript
    assert (run.run_dir / "rounds" / "1" / "stderr.log").read_bytes() == b"a warning\n"
    assert run.trace("rounds/1/trace.json")["status"] == "ok"
    assert {"trace.json", "rounds/1/trace.json"} <= set(run.traces)
    assert_cleaned(harness, run)


@pytest.mark.req("The host creates no file for the worker")
def test_a_run_that_changes_nothing_leaves_the_worktree_byte_for_byte(
    harness: HostHarness, take_snapshot: Any
) -> None:
    gitdir = harness.primary / ".git" / "worktrees" / "task"
    before = take_snapshot([harness.worktree, gitdir])
    status = porcelain(harness.git_env, harness.worktree)
    run = harness.run([*OPEN, Step.result(ok_result())])
    assert run.record.status == "ok", run.record.error
    assert take_snapshot([harness.worktree, gitdir]) == before  # every entry, bytes and mode
    assert porcelain(harness.git_env, harness.worktree) == status
    assert_cleaned(harness, run)


def test_invalid_output_lines_are_ignored(harness: HostHarness) -> None:
    run = harness.run(
        [
            *OPEN,
            Step.print(
                "not json at all",
                "{broken",
                "[1, 2, 3]",
                '"a string"',
                '{"type": "nope"}',
                '{"type": "tool", "tool": 7}',
                '{"type": "result"}',
                "",
            ),
            Step.write(MAIN, "x = 2\n"),
            Step.print("}{"),
            Step.result(ok_result()),
        ]
    )
    assert run.record.status == "ok", run.record.error
    assert run.record.worker_result == ok_result()
    assert run.audit()["changed"] == ["src/app/main.py"]
    assert_cleaned(harness, run)


# --- the audit ----------------------------------------------------------------------------------


@pytest.mark.req("Every round is audited")
@pytest.mark.req("A violation is never retried")
def test_writes_outside_rw_are_violations(harness: HostHarness) -> None:
    run = harness.run(
        [
            *OPEN,
            Step.write(MAIN, "ok = 1\n"),  # rw
            Step.write("{worktree}/src/app/util.py", "changed\n"),  # ro below rw
            Step.write("{worktree}/docs/notes.md", "changed\n"),  # ro
            Step.write("{worktree}/README.md", "changed\n"),  # names
            Step.write("{worktree}/secrets/token.txt", "read\n"),  # hidden: no entry
            Step.write("{worktree}/src/other/new.py", "N = 1\n"),  # new, outside the grant
            Step.transcript(),
            Step.result(ok_result()),
        ],
        limits=Limits(timeout_seconds=SLOW, rounds=3, retries=3, retry_delay_seconds=0),
    )
    violations = [
        "README.md",
        "docs/notes.md",
        "secrets/token.txt",
        "src/app/util.py",
        "src/other/new.py",
    ]
    assert run.code == "audit_violation"
    assert run.record.error is not None and run.record.error.unhandled.reason.value == "permission"
    assert run.audit() == {
        "verdict": "violation",
        "violations": violations,
        "changed": sorted([*violations, "src/app/main.py"]),
    }
    assert len(run.record.rounds) == 1
    # the preparation's command line, then round 1's: no other round started
    assert [kind.value for kind, _ in run.backend.commands] == ["initial", "initial"]
    detail = run.record.error.detail
    assert all(v in detail for v in violations)
    assert run.trace("rounds/1/trace.json")["status"] == "failed"
    assert_cleaned(harness, run)


@pytest.mark.req("Every round is audited")
def test_deleting_a_tracked_rw_file_is_a_violation(harness: HostHarness) -> None:
    run = harness.run([*OPEN, Step.delete(MAIN), Step.result(ok_result())])
    assert run.code == "audit_violation"
    assert run.audit() == {
        "verdict": "violation",
        "changed": ["src/app/main.py"],
        "violations": ["src/app/main.py (deleted)"],
    }
    assert_cleaned(harness, run)


@pytest.mark.req("Every round is audited")
def test_a_changed_head_in_the_worktrees_git_directory_is_a_violation(harness: HostHarness) -> None:
    gitdir = harness.primary / ".git" / "worktrees" / "task"
    assert (harness.worktree / ".git").read_text().strip() == f"gitdir: {gitdir}"
    run = harness.run(
        [
            *OPEN,
            Step.write(str(gitdir / "HEAD"), "ref: refs/heads/main\n"),
            Step.result(ok_result()),
        ]
    )
    assert run.code == "audit_violation"
    assert run.audit() == {"verdict": "violation", "changed": [], "violations": ["HEAD"]}
    assert_cleaned(harness, run)


@pytest.mark.req("Every round is audited")
def test_a_moved_branch_in_the_common_git_directory_is_a_violation(
    harness: HostHarness, project: Any
) -> None:
    tree = project.git(harness.primary, "rev-parse", "HEAD^{tree}").strip()
    commit = project.git(
        harness.primary, "commit-tree", tree, "-p", "HEAD", "-m", "elsewhere"
    ).strip()
    ref = harness.primary / ".git" / "refs" / "heads" / "task"
    run = harness.run([*OPEN, Step.write(str(ref), commit + "\n"), Step.result(ok_result())])
    assert run.code == "audit_violation"
    assert run.audit()["violations"][0] == "HEAD"
    assert_cleaned(harness, run)


@pytest.mark.req("Every round is audited")
def test_a_removed_index_is_a_violation(harness: HostHarness) -> None:
    index = harness.primary / ".git" / "worktrees" / "task" / "index"
    run = harness.run([*OPEN, Step.delete(str(index)), Step.result(ok_result())])
    assert run.code == "audit_violation"
    # Without its index Git lists every file as untracked: the audit sees the index change
    # first, then every file outside rw that Git now lists as new.
    tracked_outside_rw = [
        ".concorde/workers.json",
        ".gitignore",
        "README.md",
        "docs/notes.md",
        "secrets/token.txt",
        "src/app/util.py",
        "src/other/lib.py",
    ]
    assert run.audit() == {
        "verdict": "violation",
        "violations": ["index", *tracked_outside_rw],
        "changed": sorted([*tracked_outside_rw, "src/app/main.py"]),
    }
    assert_cleaned(harness, run)


# --- endings ------------------------------------------------------------------------------------


@pytest.mark.req("No worker process outlives its round")
@pytest.mark.req("Any other error ends the run at once")
@pytest.mark.req("Nothing but the trace outlives a worker")
def test_a_round_past_its_timeout_is_killed_with_its_group(
    harness: HostHarness, pids: Path
) -> None:
    deadline, timeout = timeout_here(harness)
    run = harness.run(
        [
            *OPEN,
            Step.spawn(3600, grandchild=True, pidfile=str(pids)),
            Step.write(MAIN, "half\n"),
            timeout,
            Step.sleep(3600),
            Step.result(ok_result()),
        ],
        limits=Limits(timeout_seconds=SLOW, rounds=2, retries=2, retry_delay_seconds=0),
        deadline=deadline,
    )
    assert run.code == "worker_timeout"
    assert run.record.error is not None and run.record.error.unhandled.reason.value == "exhausted"
    assert len(run.record.rounds) == 1 and run.audit()["verdict"] == "clean"
    assert len(pidlist(pids)) == 2 and wait_gone(pidlist(pids))
    assert run.record.transcript == str(run.run_dir / "transcript.jsonl")
    assert_cleaned(harness, run)


@pytest.mark.req("No worker process outlives its round")
def test_children_left_running_are_dead_after_an_ok_round(harness: HostHarness, pids: Path) -> None:
    run = harness.run(
        [*OPEN, Step.spawn(3600, grandchild=True, pidfile=str(pids)), Step.result(ok_result())]
    )
    assert run.record.status == "ok", run.record.error
    assert len(pidlist(pids)) == 2 and wait_gone(pidlist(pids))
    assert_cleaned(harness, run)


@pytest.mark.req("A failed run explains itself")
@pytest.mark.req("Any other error ends the run at once")
def test_a_crash_mid_stream_is_the_backends_process_failure(harness: HostHarness) -> None:
    run = harness.run(
        [
            *OPEN,
            Step.write(MAIN, "partial\n"),
            Step.stderr(text="Traceback: it broke\n"),
            Step.crash("exit", status=3),
            Step.result(ok_result()),
        ],
        limits=Limits(timeout_seconds=SLOW, rounds=2, retries=2, retry_delay_seconds=0),
    )
    assert run.code == "claude_failed"
    error = run.record.error
    assert error is not None and error.unhandled.reason.value == "environment"
    assert [c.code for c in error.causes] == ["claude_error"]
    assert "3" in error.causes[0].detail and "it broke" in error.causes[0].detail
    assert run.record.rounds[0].exit == 3
    assert len(run.record.rounds) == 1
    assert run.audit() == {"verdict": "clean", "changed": ["src/app/main.py"], "violations": []}
    assert run.record.transcript is not None
    assert_cleaned(harness, run)


@pytest.mark.req("Every round keeps its standard error")
def test_megabytes_of_stderr_keep_exactly_the_last_80000_bytes(harness: HostHarness) -> None:
    size = 3 * 1024 * 1024 + 17
    chunk = b"E" * 1023 + b"\n"
    written = (chunk * (size // len(chunk) + 1))[:size] + b"THE END\n"
    run = harness.run(
        [*OPEN, Step.stderr(size), Step.stderr(text="THE END\n"), Step.result(ok_result())]
    )
    assert run.record.status == "ok", run.record.error
    kept = (run.run_dir / "rounds" / "1" / "stderr.log").read_bytes()
    assert len(kept) == STDERR_TAIL_BYTES == 80_000
    assert kept == written[-80_000:]
    assert run.record.stderr_tail.endswith("THE END\n")
    assert_cleaned(harness, run)


def test_an_overlong_line_and_junk_on_stdout_are_noted_in_the_round_trace(
    harness: HostHarness,
) -> None:
    overlong = "x" * (MAX_LINE_BYTES + 1)
    run = harness.run(
        [*OPEN, Step.print("not json", overlong, "still not json"), Step.result(ok_result())]
    )
    assert run.record.status == "ok", run.record.error
    assert run.trace("rounds/1/trace.json")["content"]["agent"]["stdout"] == {
        "ignored": 2,
        "ignored_last": ["not json", "still not json"],
        "overlong": 1,
        "overlong_bytes": MAX_LINE_BYTES + 1,
        "line_limit_bytes": MAX_LINE_BYTES,
    }
    assert_cleaned(harness, run)


@pytest.mark.req("Nothing but the trace outlives a worker")
@pytest.mark.parametrize("ending", ["ok", "worker_failed", "timeout", "crash", "no_result"])
def test_the_runtime_directory_and_credentials_go_however_the_run_ends(
    harness: HostHarness, ending: str
) -> None:
    last = {
        "ok": [Step.result(ok_result())],
        "worker_failed": [
            Step.result(
                ok_result(
                    status="failed",
                    error={
                        "code": "cannot",
                        "detail": "it cannot",
                        "evidence": [],
                        "attempts": [],
                        "unhandled": {"reason": "capability", "explanation": "no"},
                        "options": [],
                        "recommendation": "",
                    },
                )
            )
        ],
        "crash": [Step.crash("raise")],
        "no_result": [Step.line("text", text="I am done")],
    }.get(ending, [])
    deadline, timeout = timeout_here(harness)
    if ending == "timeout":
        last = [timeout, Step.sleep(3600)]
    run = harness.run(
        [*OPEN, *last],
        limits=Limits(timeout_seconds=SLOW, rounds=1, retries=0, retry_delay_seconds=0),
        deadline=deadline,
    )
    assert (
        run.code
        == {
            "ok": None,
            "worker_failed": "worker_failed",
            "timeout": "worker_timeout",
            "crash": "claude_failed",
            "no_result": "worker_result_invalid",
        }[ending]
    )
    assert (run.run_dir / "transcript.jsonl").is_file()
    assert_cleaned(harness, run)


# --- deletions ----------------------------------------------------------------------------------


@pytest.mark.req("Only the host deletes")
@pytest.mark.req("A repeated deletion is performed once")
@pytest.mark.req("An absent target is recorded, not refused")
@pytest.mark.req("Proposed deletions follow every clean last round")
def test_the_host_performs_the_proposed_deletions(harness: HostHarness) -> None:
    wt = harness.worktree
    run = harness.run(
        [
            *OPEN,
            Step.write("{worktree}/src/app/scratch.py", "tmp\n"),
            Step.symlink("{worktree}/src/app/link.py", "{worktree}/src/other/lib.py"),
            Step.symlink("{worktree}/src/app/outside", "{worktree}/src/other"),
            Step.result(
                ok_result(
                    "src/app/scratch.py",
                    f"{wt}/src/app/scratch.py",
                    "src/app/./scratch.py",
                    "src/app/link.py",  # a final link: the link goes, not its target
                    "src/app/outside/lib.py",  # through a directory link: src/other, not rw
                    "src/app/gone.py",  # absent
                    "../outside.txt",  # outside the worktree
                    "src/app/util.py",  # ro below rw
                    "src/app/",  # a directory
                )
            ),
        ]
    )
    assert run.record.status == "ok", run.record.error
    assert run.audit()["verdict"] == "clean"
    assert sorted(run.record.deleted) == ["src/app/link.py", "src/app/scratch.py"]
    assert run.record.deletions_absent == ("src/app/gone.py",)
    assert set(run.record.deletions_refused) == {
        "src/app/outside/lib.py",
        "../outside.txt",
        "src/app/util.py",
        "src/app/",
    }
    assert run.record.deletions_failed == ()
    assert not (wt / "src/app/scratch.py").exists()
    assert not os.path.lexists(wt / "src/app/link.py")
    assert (wt / "src/other/lib.py").read_text() == "X = 1\n"
    assert (wt / "src/app/util.py").is_file() and (wt / "src/app/outside").is_symlink()
    assert_cleaned(harness, run)


# --- cancellation and the worker's own mess ------------------------------------------------------


@pytest.mark.req("The transcript is kept before the runtime directory goes")
@pytest.mark.req("No worker process outlives its round")
def test_a_cancellation_from_another_thread_interrupts_the_round(
    harness: HostHarness, pids: Path
) -> None:
    cancel = Cancellation()
    run = harness.run(
        [
            *OPEN,
            Step.spawn(3600, grandchild=True, pidfile=str(pids)),
            Step.write("{worktree}/src/app/scratch.py", "tmp\n"),
            Step.result(ok_result("src/app/main.py", "src/app/scratch.py")),
            cancel_here(harness, cancel, "the operation run was cancelled"),
            Step.sleep(3600),
        ],
        cancel=cancel,
    )
    assert run.code == "interrupted" and run.record.status == "failed"
    assert run.trace()["outcome"] == "interrupted"
    assert "cancelled" in run.record.error.detail  # type: ignore[union-attr]
    assert wait_gone(pidlist(pids)) and len(pidlist(pids)) == 2
    assert run.record.deleted == ()
    assert (harness.worktree / "src/app/main.py").is_file()
    assert (harness.worktree / "src/app/scratch.py").is_file()
    assert run.record.transcript == str(run.run_dir / "transcript.jsonl")
    assert_cleaned(harness, run)


@pytest.mark.req("Nothing but the trace outlives a worker")
def test_an_unreadable_directory_in_work_is_removed(harness: HostHarness) -> None:
    run = harness.run(
        [
            *OPEN,
            Step.write("{cwd}/locked/inner/file.txt", "x\n"),
            Step.write("{tmp}/closed/file.txt", "y\n"),
            Step.chmod("{cwd}/locked/inner", "000"),
            Step.chmod("{cwd}/locked", "000"),
            Step.chmod("{tmp}/closed", "500"),
            Step.result(ok_result()),
        ]
    )
    assert run.record.status == "ok", run.record.error
    assert_cleaned(harness, run)


@pytest.mark.req("A failed run explains itself")
def test_an_interrupted_round_reports_its_write_outside_rw(harness: HostHarness) -> None:
    cancel = Cancellation()
    run = harness.run(
        [
            *OPEN,
            Step.write("{worktree}/docs/notes.md", "changed\n"),
            cancel_here(harness, cancel, "the operation run was cancelled"),
            Step.sleep(3600),
        ],
        cancel=cancel,
    )
    assert run.code == "interrupted"
    assert run.audit()["violations"] == ["docs/notes.md"]
    error = run.record.error
    assert error is not None
    assert "round 1" in error.detail and "docs/notes.md" in error.detail
    assert any(e.ref.endswith("transcript.jsonl") for e in error.evidence)
    assert_cleaned(harness, run)


# --- more rounds ----------------------------------------------------------------------------------


@pytest.mark.req("A transient model-service error is retried")
@pytest.mark.req("A retry continues the session")
@pytest.mark.req("Every round keeps its standard error")
def test_a_transient_error_is_retried_in_the_same_session(harness: HostHarness) -> None:
    run = harness.run(
        [
            *OPEN,
            Step.write(MAIN, "half\n"),
            Step.stderr(text="round one\n"),
            Step.error("API Error: 529 Overloaded"),
            Step.exit(1),
        ],
        [
            Step.session("s-1"),
            Step.transcript(),
            Step.write(MAIN, "whole\n"),
            Step.stderr(text="round two\n"),
            Step.result(ok_result()),
        ],
        limits=Limits(timeout_seconds=SLOW, rounds=0, retries=2, retry_delay_seconds=0),
    )
    assert run.record.status == "ok", run.record.error
    assert [r.prompt for r in run.record.rounds] == ["initial", "retry"]
    # the preparation's command line, round 1, then the retry continuing session s-1
    assert [(k.value, s) for k, s in run.backend.commands] == [
        ("initial", None),
        ("initial", None),
        ("retry", "s-1"),
    ]
    first = run.trace("rounds/1/trace.json")["content"]["transient"]
    assert first["retried"] is True and "529" in first["error"]
    assert (run.run_dir / "rounds/1/stderr.log").read_bytes() == b"round one\n"
    assert (run.run_dir / "rounds/2/stderr.log").read_bytes() == b"round two\n"
    assert (harness.worktree / "src/app/main.py").read_text() == "whole\n"
    assert_cleaned(harness, run)


@pytest.mark.req("The round validation follows every clean ok round")
@pytest.mark.req("Rounds only repair what the round validation reports")
@pytest.mark.req("Resume from the newest session")
def test_a_repair_resumes_the_session_with_the_repair_text(harness: HostHarness) -> None:
    seen: list[int] = []
    prompt = harness.root / "round-2.json"

    def validation(given: ValidationInput) -> ValidationOutcome:
        seen.append(given.round)
        assert Path(given.worktree) == harness.worktree
        return ValidationOutcome(repair="main.py still fails" if given.round == 1 else None)

    run = harness.run(
        [*OPEN, Step.write(MAIN, "bad\n"), Step.result(ok_result())],
        [
            Step.session("s-1"),
            Step.record(str(prompt)),
            Step.transcript(),
            Step.write(MAIN, "good\n"),
            Step.result(ok_result()),
        ],
        validation=validation,
        limits=Limits(timeout_seconds=SLOW, rounds=2, retries=0, retry_delay_seconds=0),
    )
    assert run.record.status == "ok", run.record.error
    assert seen == [1, 2]
    assert [r.prompt for r in run.record.rounds] == ["initial", "repair"]
    recorded = json.loads(prompt.read_text())
    assert recorded["stdin"] == "main.py still fails" and recorded["session"] == "s-1"
    assert run.trace("rounds/1/trace.json")["content"]["validation"] == "main.py still fails"
    assert_cleaned(harness, run)


@pytest.mark.req("The transcript is kept before the runtime directory goes")
def test_the_transcript_of_the_rounds_so_far_is_in_the_run_directory_once_a_round_ends(
    harness: HostHarness,
) -> None:
    """Issue 30 §2 and §3: the agent's space dies with a host killed by SIGKILL, so the host
    copies the latest session's transcript into the run directory after every round (the end
    still moves the whole of it there): a kill in round 2 leaves round 1's words. Seen from the
    round validation, which runs once round 1 ended."""
    first = [{"type": "session", "id": "s-1"}, {"type": "message", "text": "round one"}]
    second = [{"type": "message", "text": "round two"}]  # the session's file grows
    whole = [*first, *second]
    seen: list[list[dict[str, str]]] = []

    def validation(given: ValidationInput) -> ValidationOutcome:
        kept = Path(given.round_dir).parent.parent / "transcript.jsonl"
        seen.append([json.loads(line) for line in kept.read_text().splitlines()])
        return ValidationOutcome(repair="again" if given.round == 1 else None)

    run = harness.run(
        [Step.session("s-1"), Step.transcript(first), Step.result(ok_result())],
        [Step.session("s-1"), Step.transcript(second), Step.result(ok_result())],
        validation=validation,
        limits=Limits(timeout_seconds=SLOW, rounds=1, retries=0, retry_delay_seconds=0),
    )
    assert run.record.status == "ok", run.record.error
    assert seen == [first, whole]
    kept = run.run_dir / "transcript.jsonl"
    assert [json.loads(line) for line in kept.read_text().splitlines()] == whole
    assert_cleaned(harness, run)


@pytest.mark.req("Proposed deletions follow every clean last round")
def test_a_round_that_timed_out_after_its_result_still_performs_its_deletions(
    harness: HostHarness,
) -> None:
    deadline, timeout = timeout_here(harness)
    run = harness.run(
        [
            *OPEN,
            Step.write("{worktree}/src/app/scratch.py", "x\n"),
            Step.result(ok_result("src/app/scratch.py")),
            timeout,
            Step.sleep(3600),
        ],
        limits=Limits(timeout_seconds=SLOW, rounds=0, retries=0, retry_delay_seconds=0),
        deadline=deadline,
    )
    assert run.code == "worker_timeout"
    assert run.record.worker_result == ok_result("src/app/scratch.py")
    assert run.record.deleted == ("src/app/scratch.py",)
    assert not (harness.worktree / "src/app/scratch.py").exists()
    assert_cleaned(harness, run)


# --- the audit, through links and modes ---------------------------------------------------------


@pytest.mark.req("Every round is audited")
def test_a_write_through_a_link_in_rw_and_a_mode_change_are_violations(
    harness: HostHarness,
) -> None:
    run = harness.run(
        [
            *OPEN,
            Step.symlink("{worktree}/src/app/notes.md", "{worktree}/docs/notes.md"),
            Step.write("{worktree}/src/app/notes.md", "through the link\n"),
            Step.chmod("{worktree}/src/other/lib.py", "755"),
            Step.chmod(MAIN, "755"),
            Step.result(ok_result()),
        ]
    )
    assert run.code == "audit_violation"
    assert run.audit() == {
        "verdict": "violation",
        "violations": ["docs/notes.md", "src/other/lib.py"],
        "changed": ["docs/notes.md", "src/app/main.py", "src/app/notes.md", "src/other/lib.py"],
    }
    assert_cleaned(harness, run)


# --- refusals still leave a record and no runtime directory --------------------------------------


@pytest.mark.req("A worker runs only inside .claude/worktrees/")
@pytest.mark.req("Every run leaves a final record")
def test_a_run_in_the_primary_worktree_is_refused_with_a_record(harness: HostHarness) -> None:
    harness.worktree = harness.primary
    run = harness.run([*OPEN, Step.result(ok_result())])
    assert run.code == "worktree_misplaced"
    assert run.record.rounds == () and run.backend.commands == []
    assert set(run.traces) == {"trace.json"}
    assert_cleaned(harness, run)


@pytest.mark.req("A worker runs only inside .claude/worktrees/")
@pytest.mark.req("Every run leaves a final record")
def test_a_worktree_in_a_folder_taken_for_another_run_is_refused_with_a_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The repository in `<temp root>/concorde-mine/`, as the demo's was in /tmp: every tool
    of the worker would refuse every path of its worktree as another run's. Refused before
    anything is generated, naming why and the repair; nothing of the run is left."""
    built = build_project(tmp_path / "concorde-mine")
    isolate_environment(monkeypatch, built)
    harness = HostHarness(
        root=built.root,
        worktree=built.worktree,
        primary=built.primary,
        tmp=tmp_path,
        home=built.home,
        git_env=built.git_env,
    )
    run = harness.run([*OPEN, Step.result(ok_result())])
    assert run.code == "worktree_misplaced"
    assert "belongs to another worker run" in run.record.error.detail  # type: ignore[union-attr]
    assert run.record.rounds == () and run.backend.commands == []
    assert set(run.traces) == {"trace.json"} and run.status()["phase"] == "finished"
    assert not run.runtime_dir.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["concorde-mine"]


@pytest.mark.req("Nothing is generated from a malformed grant")
@pytest.mark.req("Every run leaves a final record")
def test_a_malformed_grant_generates_nothing(harness: HostHarness) -> None:
    grant = {**harness.request().grant, "entries": [{"path": "/abs", "level": "rw"}]}
    run = harness.run([*OPEN, Step.result(ok_result())], grant=grant)
    assert run.code == "grant_malformed"
    assert "entry 1" in run.record.error.detail  # type: ignore[union-attr]
    assert run.backend.contexts == [] and run.record.settings_digest is None
    assert_cleaned(harness, run)


# --- the audit step's Git commands side by side ---------------------------------------------------


def test_the_parallel_observation_sees_what_the_sequential_one_sees(
    harness: HostHarness, project: Any
) -> None:
    """WorktreeObserver runs HEAD and the index digest beside `git status` (docs/benchmarks.md);
    it observes exactly what one command after another observes, and fails alike."""
    git = GitCliReader(environ=project.git_env)
    fs = LocalFileSystem()
    git_dir, common = git.git_dirs(str(harness.worktree))
    repo = GitRepository(worktree=str(harness.worktree), git_dir=git_dir, common_dir=common)
    parallel, sequential = (
        WorktreeObserver(git, fs, repo),
        WorktreeObserver(git, fs, repo, parallel=False),
    )
    snapshot = parallel.snapshot()
    assert snapshot == sequential.snapshot()
    (harness.worktree / "src/app/main.py").write_text("changed\n")
    (harness.worktree / "docs/new.md").write_text("new\n")
    gitdir = harness.primary / ".git" / "worktrees" / "task"
    (gitdir / "HEAD").write_text("ref: refs/heads/main\n")
    seen = parallel.observe(snapshot)
    assert seen == sequential.observe(snapshot)
    assert seen.head_branch == "refs/heads/main"
    (gitdir / "HEAD").write_text("not a ref\n")  # Git no longer reads this worktree
    for observer in (parallel, sequential):
        with pytest.raises(GitCommandFailed):
            observer.observe(snapshot)


# --- found as defects, fixed in host.py / rounds.py --------------------------------------------


@pytest.mark.req("Proposed deletions follow every clean last round")
def test_a_cancellation_during_the_round_validation_interrupts_without_deletions(
    harness: HostHarness,
) -> None:
    cancel = Cancellation()

    def validation(given: ValidationInput) -> ValidationOutcome:
        cancel.cancel("the operation run was cancelled")  # arrives while the caller validates
        return ValidationOutcome()

    run = harness.run(
        [
            *OPEN,
            Step.write("{worktree}/src/app/scratch.py", "x\n"),
            Step.result(ok_result("src/app/scratch.py")),
        ],
        validation=validation,
        cancel=cancel,
    )
    assert (harness.worktree / "src/app/scratch.py").exists()  # interruption changes nothing
    assert run.record.deleted == ()
    assert run.code == "interrupted"
    assert run.trace()["outcome"] == "interrupted"


@pytest.mark.req("A running run shows its progress")
def test_a_held_back_action_is_shown_while_the_worker_is_silent(harness: HostHarness) -> None:
    # The tool line comes within a second of the phase write, so it is held back; then the
    # worker runs one long command without printing anything: it waits at a gate the test
    # releases only once status.json has shown the call.
    silent = Gate(harness.root / "silent.gate")
    thread, runs = run_in_thread(
        harness,
        [
            *OPEN,
            Step.line("tool", tool="Bash", target="pytest -q"),
            Step.gate(silent.path),
            Step.result(ok_result()),
        ],
    )

    def shown() -> dict[str, Any] | None:
        for status_file in (harness.parent / "workers").glob("*/status.json"):
            status = read_json(status_file)
            if status and status.get("last_action") and status["phase"] == "worker":
                return status
        return None

    try:
        status = wait_for(shown, "status.json showing the running Bash call during the round")
    finally:
        silent.release()
        thread.join(SLOW)
    assert runs and runs[0].record.status == "ok"
    assert status["last_action"]["target"] == "pytest -q"


# --- endings that still name a write outside rw, and deletions after them --------------------------


@pytest.mark.req("A failed run explains itself")
@pytest.mark.parametrize("ending", ["timeout", "crash"])
def test_a_timeout_or_crash_names_the_rounds_write_outside_rw(
    harness: HostHarness, ending: str
) -> None:
    deadline, timeout = timeout_here(harness)
    last = [timeout, Step.sleep(3600)] if ending == "timeout" else [Step.crash("exit", status=5)]
    run = harness.run(
        [*OPEN, Step.write("{worktree}/docs/notes.md", "changed\n"), *last],
        limits=Limits(timeout_seconds=SLOW, rounds=0, retries=0, retry_delay_seconds=0),
        deadline=deadline,
    )
    assert run.code == {"timeout": "worker_timeout", "crash": "claude_failed"}[ending]
    assert run.audit()["violations"] == ["docs/notes.md"]
    assert "docs/notes.md" in run.record.error.detail  # type: ignore[union-attr]
    assert_cleaned(harness, run)


FAILED_RESULT = ok_result(
    "src/app/scratch.py",
    status="failed",
    error={
        "code": "cannot",
        "detail": "it cannot",
        "evidence": [],
        "attempts": [],
        "unhandled": {"reason": "capability", "explanation": "no"},
        "options": [],
        "recommendation": "",
    },
)


def _raises(given: ValidationInput) -> ValidationOutcome:
    raise RuntimeError("the checks could not start")


def _violation(given: ValidationInput) -> ValidationOutcome:
    return ValidationOutcome(
        violation=LinkAnswer(code="audit_violation", detail="GLOSSARY.md#cart (owner: shop)")
    )


@pytest.mark.req("Proposed deletions follow every clean last round")
@pytest.mark.parametrize(
    ("case", "code", "deleted"),
    [
        ("worker_failed", "worker_failed", True),
        ("validation_raises", "validation_unavailable", True),
        ("validation_violation", "audit_violation", False),
    ],
)
def test_deletions_follow_a_failed_worker_or_validation_but_not_a_violation(
    harness: HostHarness, case: str, code: str, deleted: bool
) -> None:
    result = FAILED_RESULT if case == "worker_failed" else ok_result("src/app/scratch.py")
    validation = {
        "worker_failed": None,
        "validation_raises": _raises,
        "validation_violation": _violation,
    }[case]
    run = harness.run(
        [*OPEN, Step.write("{worktree}/src/app/scratch.py", "x\n"), Step.result(result)],
        validation=validation,
    )
    assert run.code == code
    assert run.record.deleted == (("src/app/scratch.py",) if deleted else ())
    assert (harness.worktree / "src/app/scratch.py").exists() is not deleted
    assert_cleaned(harness, run)


# --- runs that never get a worker going -------------------------------------------------------------


def test_a_run_cancelled_before_its_launch_starts_no_worker(harness: HostHarness) -> None:
    cancel = Cancellation()
    cancel.cancel("the operation run was cancelled")
    run = harness.run([*OPEN, Step.write(MAIN, "x\n"), Step.result(ok_result())], cancel=cancel)
    assert run.code == "interrupted" and run.record.rounds == ()
    assert (harness.worktree / "src/app/main.py").read_text() == "print('main')\n"
    assert_cleaned(harness, run)


@pytest.mark.req("A failed run explains itself")
def test_a_round_whose_program_cannot_start_is_launch_failed_without_audit(
    harness: HostHarness,
) -> None:
    run = harness.run(
        [*OPEN, Step.result(ok_result())], interpreter=str(harness.root / "no-such-python")
    )
    assert run.code == "launch_failed"
    assert "no-such-python" in run.record.error.detail  # type: ignore[union-attr]
    assert [r.audit for r in run.record.rounds] == [None]
    assert run.trace("rounds/1/trace.json")["content"]["audit"] is None
    assert_cleaned(harness, run)


@pytest.mark.req("No worker process outlives its round")
def test_a_child_holding_stdout_open_does_not_hold_the_round(
    harness: HostHarness, pids: Path
) -> None:
    # The children sleep for an hour holding stdout: had the round waited for them, this test
    # would not end; wait_gone shows the group kill ended them.
    run = harness.run(
        [
            *OPEN,
            Step.spawn(3600, grandchild=True, pidfile=str(pids), keep_stdout=True),
            Step.result(ok_result()),
        ]
    )
    assert run.record.status == "ok", run.record.error
    assert wait_gone(pidlist(pids))
    assert_cleaned(harness, run)


# --- what decides which files Git lists is part of the Git state (docs/decisions.md) ----------------


def test_a_changed_exclude_file_cannot_hide_a_write_outside_rw(harness: HostHarness) -> None:
    exclude = harness.primary / ".git" / "info" / "exclude"
    run = harness.run(
        [
            *OPEN,
            Step.write(str(exclude), "secrets/\n"),
            Step.write("{worktree}/secrets/planted.txt", "planted\n"),
            Step.result(ok_result()),
        ]
    )
    assert run.code == "audit_violation", run.audit()
    assert "Git configuration" in run.audit()["violations"]


@pytest.mark.req("Workers never see Git")
def test_git_metadata_planted_in_an_rw_directory_is_a_violation(harness: HostHarness) -> None:
    # Git never lists a `.git` entry, so a repository a worker's bash makes inside rw (whose
    # config could run code for whoever later runs Git there) is found by walking rw directories.
    run = harness.run(
        [
            *OPEN,
            Step.write(
                "{worktree}/src/app/.git/config", "[core]\n\tfsmonitor = touch /tmp/planted\n"
            ),
            Step.write("{worktree}/src/app/sub/.git/HEAD", "ref: refs/heads/x\n"),
            Step.result(ok_result()),
        ]
    )
    assert run.code == "audit_violation", run.audit()
    violations = run.audit()["violations"]
    assert "src/app/.git" in violations
    assert "src/app/sub/.git" in violations


@pytest.mark.req("Workers never see Git")
def test_a_bare_looking_git_directory_planted_in_rw_is_a_violation(harness: HostHarness) -> None:
    """A directory with a HEAD, objects/ and refs/ is a Git directory to Git whatever its name:
    whoever `cd`s into it (or a shell prompt there) runs Git with its configuration, which can
    name a work tree and a filter. It is Git metadata like a `.git`, moved out as evidence."""
    evil = "{worktree}/src/app/evil"
    run = harness.run(
        [
            *OPEN,
            Step.mkdir(f"{evil}/objects"),
            Step.mkdir(f"{evil}/refs"),
            Step.write(f"{evil}/HEAD", "ref: refs/heads/main\n"),
            Step.write(
                f"{evil}/config",
                "[core]\n\tbare = false\n\tworktree = ..\n"
                '[filter "x"]\n\tclean = touch /tmp/planted\n',
            ),
            Step.result(ok_result()),
        ]
    )
    assert run.code == "audit_violation", run.audit()
    assert "src/app/evil" in run.audit()["violations"]
    detail = run.record.error.detail  # type: ignore[union-attr]
    assert "a directory Git takes for a repository" in detail
    assert "filter.x.clean = touch /tmp/planted" in detail
    assert not (harness.worktree / "src/app/evil").exists()  # moved into the run directory
    assert (run.run_dir / "planted-git" / "1.tar").is_file()


@pytest.mark.req("Workers never see Git")
def test_git_metadata_an_interrupted_run_left_is_refused_by_the_next_run(
    harness: HostHarness,
) -> None:
    """An interrupted run leaves what its worker planted (seed 000: an interruption leaves the
    worktree as it found it). For the next run the repository is there before its snapshot,
    hidden from its worker like any nested repository: were that run to end ok, its record
    would say nothing of a repository whose configuration runs a program for whoever next uses
    Git there. The next run is refused before launch instead, naming it and the repair."""
    cancel = Cancellation()
    first = harness.run(
        [
            *OPEN,
            Step.write(
                "{worktree}/src/app/x/.git/config", '[filter "x"]\n\tclean = touch /tmp/planted\n'
            ),
            Step.write("{worktree}/src/app/x/.git/HEAD", "ref: refs/heads/x\n"),
            cancel_here(harness, cancel, "the operation run was cancelled"),
            Step.sleep(3600),
        ],
        cancel=cancel,
    )
    assert first.code == "interrupted"
    assert (harness.worktree / "src/app/x/.git/config").is_file()  # left as it was
    second = harness.run([*OPEN, Step.result(ok_result())])
    assert second.code == "launch_failed", second.record.error
    detail = second.record.error.detail  # type: ignore[union-attr]
    assert "src/app/x/.git" in detail and "filter.x.clean = touch /tmp/planted" in detail
    assert f"rm -rf -- {harness.worktree}/src/app/x/.git" in detail
    assert second.record.rounds == ()  # refused before launch: nothing generated, no round
    assert_cleaned(harness, second)


@pytest.mark.req("Workers never see Git")
def test_a_nested_repository_that_runs_nothing_does_not_stop_a_run(harness: HostHarness) -> None:
    nested = harness.worktree / "src/app/vendored/.git"
    (nested / "objects").mkdir(parents=True)
    (nested / "refs").mkdir()
    (nested / "HEAD").write_text("ref: refs/heads/main\n")
    (nested / "config").write_text(
        '[core]\n\tbare = false\n[remote "origin"]\n\turl = https://example.invalid/x.git\n'
    )
    run = harness.run([*OPEN, Step.result(ok_result())])
    assert run.record.status == "ok", run.record.error


@pytest.mark.req("No worker process outlives its round")
@pytest.mark.req("Nothing but the trace outlives a worker")
def test_an_exception_of_the_host_mid_round_kills_the_group_and_removes_the_runtime(
    harness: HostHarness, pids: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = TestStreamReader.feed

    def feed(self: TestStreamReader, line: str) -> Any:
        if "Read" in line:
            raise RuntimeError("a defect of the host's own stream reading")
        return original(self, line)

    monkeypatch.setattr(TestStreamReader, "feed", feed)
    with pytest.raises(RuntimeError, match="a defect"):  # not after the agent's hour
        harness.run(
            [
                *OPEN,
                Step.spawn(3600, grandchild=True, pidfile=str(pids)),
                Step.line("tool", tool="Read", target="x"),
                Step.sleep(3600),
                Step.result(ok_result()),
            ]
        )
    assert len(pidlist(pids)) == 2 and wait_gone(pidlist(pids))
    assert [p.name for p in harness.tmp.iterdir()] == []  # runtime and credential copy gone


# --- one run at a time in a worktree (issue 19 §3) ---------------------------------------------


def test_the_host_takes_no_lock_of_its_own_and_readers_go_on(harness: HostHarness) -> None:
    """Seed 000 "Audit": "The host takes no lock of its own for this" and "Readers may go on":
    a reading run made while another works in the worktree goes on and ends ok, and so does
    the first (the caller keeps other writers away: in Concorde the workspace lock, at a shell
    the command line's, tests/unit/cli/test_cli_run.py)."""
    inside = Signal(harness.root / "inside.fifo")
    gate = Gate(harness.root / "first.gate")
    thread, runs = run_in_thread(
        harness,
        [
            Step.session("s-1"),
            Step.write("{worktree}/src/app/first.py", "1\n"),
            Step.signal(inside.path),
            Step.gate(gate.path),
            Step.result(ok_result()),
        ],
    )
    reading = {
        "task_type": "review-architecture",
        "entries": [{"path": "src/", "level": "ro"}],
        "context_identity": "sha256:" + "2" * 64,
    }
    try:
        inside.wait()
        second = harness.run([Step.session("s-2"), Step.result(ok_result())], grant=reading)
    finally:
        gate.release()
        thread.join(SLOW)
    assert second.code is None, second.record.error
    assert runs[0].code is None, runs[0].record.error
    assert not list(harness.worktree.parent.glob("../../.git/worktrees/*/concorde-workers.lock"))


def test_the_lock_of_a_host_killed_by_sigkill_is_free_at_once(tmp_path: Path) -> None:
    """The kernel's lock (flock) goes with its process: a dead host's run is never in the way."""
    lock = str(tmp_path / "concorde-workers.lock")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from concorde_workers.adapters.machine.filesystem import LocalFileSystem\n"
            "held = LocalFileSystem().hold_lock(sys.argv[1], 'the killed host')\n"
            "print('held' if not isinstance(held, str) else held, flush=True)\n"
            "time.sleep(600)\n",
            lock,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert LocalFileSystem().hold_lock(lock, "me") == "the killed host"
    finally:
        holder.kill()
        holder.wait(SLOW)
    taken = LocalFileSystem().hold_lock(lock, "me")
    assert not isinstance(taken, str), taken
    taken.release()
