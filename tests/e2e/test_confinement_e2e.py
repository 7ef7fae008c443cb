"""End-to-end: the whole agent process tree runs confined (domain/isolation/confinement.py), proved with the
real Claude Code and the real pi against the scripted model servers.

- A link swapped between check and use (issue 8 §7): while the worker reads a link in its rw
  directory a few hundred times, the link flips between an allowed file and a hidden one. Claude
  Code's Read judges the path, then opens whatever the link points to by then; inside the
  confinement the hidden file is not there to open. (pi's extension judges the opened file; its
  test guards that both layers keep holding.) The test flips the link on the host for both
  programs: a worker's own loop would need a background Bash, which the generated settings
  disable on Claude Code (docs/decisions.md "Claude Code 2.1.332") and pi's sandbox ends with
  its call; the host's flips are seen inside the confinement all the same.
- A host killed by SIGKILL (issue 9 §1): the agent hangs in a Bash call that left a child behind
  in a session of its own (setsid); within 2 seconds of the host's death no process of the run is
  alive. Without the confinement the agent and its children ran on, unaudited, with no timeout.
- The interpreter that runs Claude Code's hooks lies in a home the confinement hides: the plan
  keeps its installation, and a write the deny rules let through is still refused by the hook.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e.agent_processes import processes_with
from e2e.backends import BackendWorld, backend_world
from e2e.conftest import ClaudeWorld, hook_denial, ok_result
from e2e.conftest_codex import CodexWorld, codex_world, exec_call, result_turn
from e2e.conftest_pi import PiWorld, call, pi_world, reply, result_call
from servers.anthropic_server import Reply, last_tool_result, tool_results

from concorde_workers.domain.configuration.request import Limits

pytestmark = pytest.mark.e2e
__all__ = ["backend_world", "codex_world", "pi_world"]  # the fixtures, imported for pytest

HIDDEN = "RACE-HIDDEN-CONTENT-x7q2"
ALLOWED = "RACE-ALLOWED-CONTENT-p4n8"
LINES = 80
BATCHES, PER_BATCH = 10, 30  # 300 reads of the link
CLI = Path(sys.executable).with_name("concorde-workers")
KILL_DEADLINE = 2.0
"""Seconds after the host's death by which no process of its run is alive: issue 9 §1's own
requirement, the one wall-clock bound the suite keeps, counted from the death itself."""


def plant(worktree: Path) -> Path:
    """A hidden file (not in the grant), an allowed one in rw, and the link the race flips;
    both files have many numbered lines, so every read (at its own offset) really reads."""
    (worktree / "secrets" / "race.txt").write_text("".join(f"{HIDDEN}-{i}\n" for i in range(LINES)))
    app = worktree / "src" / "app"
    (app / "allowed.txt").write_text("".join(f"{ALLOWED}-{i}\n" for i in range(LINES)))
    (app / "link").symlink_to("allowed.txt")
    return app / "link"


def offset(batch: int, i: int) -> int:
    return 1 + (batch * PER_BATCH + i) % (LINES - 5)


# --- the race, Claude Code -----------------------------------------------------------------------


@pytest.mark.req("File tools cannot read what the grant withheld when the rules were generated")
def test_a_link_swapped_between_check_and_use_never_shows_claude_the_hidden_file(
    claude_world: ClaudeWorld,
) -> None:
    w = claude_world
    link = plant(w.worktree)
    reads = [
        Reply.tools(
            *[
                ("Read", {"file_path": str(link), "offset": offset(b, i), "limit": 3})
                for i in range(PER_BATCH)
            ]
        )
        for b in range(BATCHES)
    ]
    flipper = Flipper(link)
    try:
        run = w.run(
            flipper.first(reads[0]),
            *reads[1:],
            flipper.last(Reply.structured(ok_result())),
            limits=Limits(
                timeout_seconds=600,
                max_turns=BATCHES + 5,
                rounds=0,
                retries=0,
                retry_delay_seconds=0,
            ),
        )
    finally:
        flipper.end()

    assert run.server.failures == []
    assert flipper.flips > BATCHES
    results = [
        r
        for entry in run.server.log
        if isinstance(entry.get("body"), dict)
        for r in tool_results(entry["body"])
    ]
    texts = json.dumps(results)
    assert HIDDEN not in texts
    # The reads really ran, and the link really pointed at both files while they did.
    assert texts.count(f"{ALLOWED}-") >= 3, texts[:2000]
    assert run.record.status == "ok", run.record.error
    w.assert_cleaned(run)


# --- the race, pi --------------------------------------------------------------------------------


class Flipper:
    """Flips the link on the host while the agent reads it, the way a worker's loop would (swap
    by rename), from the model's first call to its last: after the host's snapshot and before
    its audit, so the spare link the flips go through is never there for either to see (a name
    the snapshot saw and the audit does not would be a deletion, which only the host may make).
    """

    def __init__(self, link: Path) -> None:
        self.link, self.flips = link, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="flipper", daemon=True)

    def _run(self) -> None:
        spare = self.link.with_name(".flip")
        targets = ("../../secrets/race.txt", "allowed.txt")
        while not self._stop.is_set():
            spare.unlink(missing_ok=True)
            spare.symlink_to(targets[self.flips % 2])
            os.replace(spare, self.link)
            self.flips += 1
            time.sleep(0)  # let the agent run on a busy machine

    def first(self, answer: Any) -> Callable[[dict[str, Any]], Any]:
        """A script step answering `answer` once the flips have begun."""

        def step(body: dict[str, Any]) -> Any:
            if not self._thread.is_alive():
                self._thread.start()
            return answer

        return step

    def last(self, answer: Any) -> Callable[[dict[str, Any]], Any]:
        """A script step answering `answer` once the flips have ended."""

        def step(body: dict[str, Any]) -> Any:
            self.end()
            return answer

        return step

    def end(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()


@pytest.mark.req("pi file tools are checked before they act")
@pytest.mark.req("Both backends enforce the same grant")
def test_a_link_swapped_between_check_and_use_never_shows_pi_the_hidden_file(
    pi_world: PiWorld,
) -> None:
    w = pi_world
    link = plant(w.worktree)
    batches = [
        reply(
            *[
                call("read", f"c{b}_{i}", path=str(link), offset=offset(b, i), limit=3)
                for i in range(PER_BATCH)
            ]
        )
        for b in range(BATCHES)
    ]
    flipper = Flipper(link)
    try:
        # One read before the flips begin proves the link reads at all; during the flips pi
        # checks, then opens, and a busy machine may refuse every racing read (denied or
        # ENOENT): the secure answer, so only the hidden text's absence is asserted there.
        run = w.run(
            reply(call("read", "c_before", path=str(link), offset=1, limit=3)),
            flipper.first(batches[0]),
            *batches[1:],
            flipper.last(reply(result_call("call_r"))),
            limits=Limits(
                timeout_seconds=600,
                max_turns=BATCHES + 6,
                rounds=0,
                retries=0,
                retry_delay_seconds=0,
            ),
        )
    finally:
        flipper.end()
    assert run.record.status == "ok", run.explain()
    texts = [run.tool_result(f"c{b}_{i}") for b in range(BATCHES) for i in range(PER_BATCH)]
    assert f"{ALLOWED}-1" in run.tool_result("c_before")
    assert not [t for t in texts if HIDDEN in t]
    assert flipper.flips > BATCHES


@pytest.mark.req("Both backends enforce the same grant")
def test_a_link_swapped_between_check_and_use_never_shows_codex_the_hidden_file(
    codex_world: CodexWorld,
) -> None:
    """Codex has no file-reading tool: its shell reads (issue 33 §6, link races). One command
    reads the link 300 times while the host flips it; inside the confinement the hidden file is
    not there to open, whatever the link points to when a read opens it."""
    w = codex_world
    link = plant(w.worktree)
    reads = f"for i in $(seq 300); do head -c 26 {link} 2>&1; echo; done | sort | uniq -c"
    flipper = Flipper(link)
    try:
        run = w.run(
            exec_call(f"head -c 26 {link}", "c_before"),
            flipper.first(exec_call(reads, "c_race")),
            flipper.last(result_turn()),
        )
    finally:
        flipper.end()
    assert run.record.status == "ok", run.explain()
    assert ALLOWED in run.tool_result("c_before")
    said = run.tool_result("c_race")
    assert HIDDEN not in said, said
    assert ALLOWED in said, said  # the reads really ran, some of them on the allowed file
    assert flipper.flips > BATCHES


# --- the host killed -----------------------------------------------------------------------------


def hang_command(mark: str) -> str:
    """A child that leaves the process group (setsid) and a foreground sleep: the Bash call, and
    with it the agent, hangs."""
    return (
        f"CONCORDE_TEST_MARK={mark} setsid sleep 3000 < /dev/null > /dev/null 2>&1 & "
        f"CONCORDE_TEST_MARK={mark} sleep 3000"
    )


def wait_for(what: Callable[[], bool], seconds: float, step: float = 0.05) -> bool:
    """Wait until `what` holds (a test's observation of processes, never a production poll)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if what():
            return True
        time.sleep(step)
    return what()


def runtime_directory_of(parent: Path) -> Path | None:
    """The run's runtime directory, from its run id (`concorde-<6 hex of the run id>-*`)."""
    runs = list((parent / "workers").glob("*")) if (parent / "workers").is_dir() else []
    if len(runs) != 1:
        return None
    found = list(Path("/tmp").glob(f"concorde-{runs[0].name[-6:]}-*"))
    return found[0] if len(found) == 1 else None


@pytest.fixture
def killed_host_leftovers() -> Iterator[list[str]]:
    """Markers of the runs a test killed the host of: whatever of them is still alive after the
    test is killed by its id, and their runtime directories removed (a killed host cannot)."""
    marks: list[str] = []
    yield marks
    for mark in marks:
        for pid in processes_with(mark):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if mark.startswith("/tmp/concorde-"):
            shutil.rmtree(mark, ignore_errors=True)


def kill_host_and_count(
    request: dict[str, Any], environ: dict[str, str], parent: Path, mark: str, leftovers: list[str]
) -> tuple[list[int], list[int]]:
    """Start `concorde-workers run`, wait until the worker's hanging Bash call and its setsid
    child run, SIGKILL the host; return the run's processes alive just before and those still
    alive 2 seconds after the host's death."""
    request_file = parent.parent / "request.json"
    request_file.write_text(json.dumps(request))
    host = subprocess.Popen(
        [str(CLI), "run", str(request_file), "--parent", str(parent)],
        env=environ,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    leftovers.append(mark)
    handles: dict[int, int] = {}
    try:
        assert wait_for(lambda: len(processes_with(mark)) >= 2, 120), "the Bash call never ran"
        runtime = runtime_directory_of(parent)
        assert runtime is not None
        leftovers.append(str(runtime))
        before = sorted({*processes_with(mark), *processes_with(str(runtime))})
        handles = pidfds(before)  # before the kill: a pid reused later is not mistaken for one
    finally:
        host.send_signal(signal.SIGKILL)
        host.wait()
    died = time.monotonic()
    try:
        # the 2 seconds run from the host's death, whatever the test did before or the machine's
        # load: each process's end is waited on on its pidfd, no /proc scan in the count
        alive = still_running(handles, until=died + KILL_DEADLINE)
    finally:
        for fd in handles.values():
            os.close(fd)
    born_later = {*processes_with(mark), *processes_with(str(runtime))} - set(before)
    return before, sorted({*alive, *born_later})


def pidfds(pids: list[int]) -> dict[int, int]:
    """A pidfd for each process still running (one that already ended needs none)."""
    handles: dict[int, int] = {}
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            handles[pid] = os.pidfd_open(pid)
    return handles


def still_running(handles: dict[int, int], until: float) -> list[int]:
    """The processes whose pidfd has not become readable (they have not ended; a zombie has) by
    the monotonic time `until`: waited on all at once, woken by each end, never polled."""
    poller = select.poll()
    by_fd = {fd: pid for pid, fd in handles.items()}
    for fd in by_fd:
        poller.register(fd, select.POLLIN)
    while by_fd:
        left = until - time.monotonic()
        events = poller.poll(max(0.0, left) * 1000)
        if not events:
            break
        for fd, _ in events:
            poller.unregister(fd)
            by_fd.pop(fd, None)
    return sorted(by_fd.values())


@pytest.mark.req("No worker process outlives its round")
def test_no_process_of_a_run_outlives_its_host_killed(
    backend_world: BackendWorld, killed_host_leftovers: list[str]
) -> None:
    w = backend_world
    mark = f"hang-{os.getpid()}-{time.monotonic_ns()}"
    w.hang(hang_command(mark))
    request = w.request(
        Limits(timeout_seconds=600, max_turns=5, rounds=0, retries=0, retry_delay_seconds=0)
    ).model_dump(mode="json")
    parent = Path(request.pop("parent"))
    before, after = kill_host_and_count(request, w.environ, parent, mark, killed_host_leftovers)
    assert len(before) >= 3, before  # the agent, the sleeps (and what runs them)
    assert after == [], after


# --- the hooks' interpreter in a hidden home -----------------------------------------------------


@pytest.mark.req("Only rw paths are writable by file tools")
def test_the_write_hook_still_runs_when_its_interpreter_lies_in_a_hidden_home(
    claude_world: ClaudeWorld,
) -> None:
    """The host's HOME is the folder the host interpreter is installed in: the confinement hides
    that home and must keep the interpreter's installation, or the hook could not start and
    Claude Code would let the write through. A Write through a link in rw to a ro file passes
    the deny rules; only the hook refuses it, with its reason."""
    w = claude_world
    w.environ["HOME"] = os.path.dirname(os.path.realpath(sys.base_prefix))
    app = w.worktree / "src" / "app"
    util, link = app / "util.py", app / "hooked.py"
    link.symlink_to("util.py")
    before = util.read_text()
    results: list[tuple[str, bool]] = []

    def result(body: dict[str, Any]) -> Reply:
        results.append(last_tool_result(body) or ("", False))
        return Reply.structured(ok_result())

    run = w.run(
        Reply.tool("Read", {"file_path": str(link)}),  # Claude Code reads before a Write
        Reply.tool("Write", {"file_path": str(link), "content": "hacked\n"}),
        result,
    )
    assert run.record.status == "ok", run.record.error
    ((text, is_error),) = results
    reason = hook_denial(text)
    assert is_error and reason is not None and "read-only" in reason, text
    assert util.read_text() == before
    listed = run.round(1)["claude"]["permission_denials"]
    assert [(d["tool_name"], d["tool_input"]["file_path"]) for d in listed] == [
        ("Write", str(link))
    ]
