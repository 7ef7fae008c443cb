"""End-to-end: a runaway worker cannot take the machine (issue 20). Each round of the real agent
program of every backend (tests/e2e/backends.py, against its scripted model server) runs in a
control group of its own; a worker's Bash that
forks past the run's process limit or allocates past its memory limit is stopped by the
kernel, the round ends `worker_limit_reached` naming the limit, its value and what was using
it, and nothing of the group is left.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from e2e.backends import BackendWorld, backend_world
from e2e.conftest import ClaudeRun, ClaudeWorld, RecordedRun, ok_result
from e2e.conftest_pi import PiWorld, call, pi_world, reply, result_call
from e2e.test_claude_boundary_e2e import bash
from servers.anthropic_server import Reply
from timing import SLOW, Gate, Signal

from concorde_workers.adapters.processes.cgroups import CgroupGroups
from concorde_workers.domain.configuration.request import Limits
from concorde_workers.domain.configuration.resources import MIB, GroupKind
from concorde_workers.domain.evidence.links import HOST_LIMIT_ACTOR

pytestmark = pytest.mark.e2e
__all__ = ["backend_world", "pi_world"]  # the fixtures, imported for pytest


def told_as_the_host_s(run: RecordedRun, limit: str) -> None:
    """One shape on every backend (docs/decisions.md "A limit the host enforces is told as
    one"): worker_limit_reached's one cause is the host's own link, naming the limit, its value
    and the peak, never the agent program's link."""
    error = run.record.error
    assert error is not None
    [cause] = error.causes
    assert (cause.code, cause.level, cause.actor) == (
        "host_limit_reached",
        "component",
        HOST_LIMIT_ACTOR,
    ), cause
    assert cause.unhandled.reason == "exhausted"
    assert limit in cause.detail and "peak" in cause.detail, cause.detail


def resources_of(run: RecordedRun, round_number: int = 1) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (run.run_dir / "rounds" / str(round_number) / "resources.json").read_text()
    )
    return data


def no_group_left(run: RecordedRun) -> None:
    """Every group of the run is gone (they are named after its runtime directory)."""
    groups = CgroupGroups()
    assert groups.leftovers(Path(run.record.runtime_directory).name) == []


@pytest.fixture(autouse=True)
def _enforced() -> None:
    if CgroupGroups().enforcement().kind is GroupKind.NONE:
        pytest.fail(f"this machine enforces no limits: {CgroupGroups().enforcement().problem}")


@dataclass(frozen=True)
class Runaway:
    """One backend's runaway shell commands and the memory limit its agent program leaves room
    in: the hog allocates past `memory_mib`, which leaves the hog, not the agent program, the
    largest process of the group when it passes the limit (Claude Code's own node process holds
    some 300 MB: 768 MiB)."""

    bomb: str
    hog: str
    memory_mib: int
    peak_low_mib: int
    """The least memory peak the hog's group reaches before the kernel kills it."""
    peak_bounded: bool
    """Whether the peak is also at most the limit (Claude Code's group)."""


RUNAWAYS = {
    "pi": Runaway(
        bomb="for i in $(seq 400); do sleep 30 & done; echo spawned; wait",
        hog="python3 -c 'b = bytearray(900 * 1024 * 1024); b[::4096] = b\"x\" * len(b[::4096])'",
        memory_mib=512,
        peak_low_mib=500,
        peak_bounded=False,
    ),
    "codex": Runaway(
        bomb="for i in $(seq 400); do sleep 30 & done; echo spawned; wait",
        hog="python3 -c 'b = bytearray(900 * 1024 * 1024); b[::4096] = b\"x\" * len(b[::4096])'",
        memory_mib=512,
        peak_low_mib=500,
        peak_bounded=False,
    ),
    "claude": Runaway(
        bomb="for i in $(seq 400); do sleep 30 >/dev/null 2>&1 & done; echo spawned",
        hog=(
            "python3 -c 'b = bytearray(1536 * 1024 * 1024); "
            'b[::4096] = b"x" * len(b[::4096])\'; echo " rc=$?"'
        ),
        memory_mib=768,
        peak_low_mib=768 - 64,
        peak_bounded=True,
    ),
}


@pytest.mark.req("Bash runs sandboxed without network")
def test_a_fork_bomb_in_the_worker_s_shell_ends_the_round_at_the_process_limit(
    backend_world: BackendWorld,
) -> None:
    w = backend_world
    run = w.shell_run(RUNAWAYS[w.backend].bomb, {"processes": 100})
    assert run.record.status == "failed", w.explain(run)
    assert run.code == "worker_limit_reached", w.explain(run)
    assert run.record.error is not None
    assert (
        "the host ended the round at a limit of its control group: the run's process limit "
        "(100 processes) refused"
    ) in run.record.error.detail
    told_as_the_host_s(run, "the run's process limit (100 processes)")
    used = resources_of(run)
    assert used["limits"]["processes"] == 100 and used["enforced"] is True, used
    assert used["forks_refused"] > 0 and used["processes_peak"] == 100, used
    print(f"{w.backend} fork bomb: {used}")
    no_group_left(run)
    w.assert_cleaned(run)


@pytest.mark.req("Bash runs sandboxed without network")
def test_a_memory_hog_in_the_worker_s_shell_is_killed_at_the_memory_limit(
    backend_world: BackendWorld,
) -> None:
    w = backend_world
    runaway = RUNAWAYS[w.backend]
    limit = runaway.memory_mib
    run = w.shell_run(runaway.hog, {"memory_mib": limit})
    assert run.code == "worker_limit_reached", w.explain(run)
    assert run.record.error is not None
    assert f"the run's memory limit ({limit} MiB, swap off) made the kernel kill" in (
        run.record.error.detail
    ), run.record.error.detail
    told_as_the_host_s(run, f"the run's memory limit ({limit} MiB, swap off)")
    used = resources_of(run)
    assert used["limits"]["memory_mib"] == limit, used
    assert used["oom_kills"] >= 1, used
    assert used["memory_peak_bytes"] >= runaway.peak_low_mib * MIB, used
    if runaway.peak_bounded:
        assert used["memory_peak_bytes"] <= limit * MIB, used
    print(f"{w.backend} memory hog: {used}")
    no_group_left(run)
    w.assert_cleaned(run)


def test_a_round_within_its_limits_ends_ok_and_keeps_its_resource_profile(
    pi_world: PiWorld,
) -> None:
    w = pi_world
    run = w.run(reply(call("bash", "call_ls", command="ls")), reply(result_call("call_r")))
    assert run.record.status == "ok", run.explain()
    used = resources_of(run)
    assert used["limits"] == {
        "processes": 512,
        "memory_mib": 1024,
        "cpu_weight": 100,
        "space_mib": 512,
    }
    assert used["limits_reached"] == [] and used["processes_peak"] > 1, used
    assert used["memory_peak_bytes"] > 10 * 1024 * 1024 and used["cpu_seconds"] > 0, used
    files = [
        f["path"]
        for f in json.loads((run.run_dir / "rounds" / "1" / "trace.json").read_text())["files"]
    ]
    assert "resources.json" in files
    no_group_left(run)


def test_an_oversized_result_that_makes_pi_grow_ends_at_the_memory_limit(pi_world: PiWorld) -> None:
    """A 200 KiB structured result made pi grow to about 4 GB (26 GB virtual) for 143 s when
    nothing bounded it; node sizes its heap from the group's memory limit (half of it), so under
    512 MiB pi aborts at its heap within seconds and the round names the memory limit."""
    started = time.monotonic()
    run = pi_world.run(
        reply(result_call("call_r", output={"blob": "x" * (200 * 1024)})),
        resources={"memory_mib": 512},
    )
    seconds = time.monotonic() - started
    assert run.code == "worker_limit_reached", run.explain()
    assert run.record.error is not None
    assert (
        "the run's memory limit (512 MiB, swap off) bounded the agent's JavaScript heap "
        "(node sizes it to half the limit) and the agent ran out of it, peak "
    ) in (run.record.error.detail), run.record.error.detail
    told_as_the_host_s(run, "the run's memory limit (512 MiB, swap off)")
    used = resources_of(run)
    assert used["memory_peak_bytes"] <= 512 * MIB, used
    print(f"pi oversized result: ended in {seconds:.1f} s; {used}")
    no_group_left(run)


# --- Claude Code ----------------------------------------------------------------------------------


def claude_explain(run: ClaudeRun) -> str:
    """What to print when an assertion on a Claude Code run fails."""
    stderr = [p.read_text()[-1500:] for p in sorted(run.run_dir.glob("rounds/*/stderr.log"))]
    used = [p.read_text() for p in sorted(run.run_dir.glob("rounds/*/resources.json"))]
    return json.dumps(
        {
            "error": run.data["error"],
            "rounds": run.data["rounds"],
            "resources": used,
            "failures": run.server.failures,
            "stderr": stderr,
        },
        indent=1,
    )[:8000]


def claude_bash_run(
    world: ClaudeWorld, command: str, resources: dict[str, int] | None = None
) -> ClaudeRun:
    """One Claude Code run whose model asks for one Bash call, then gives its result (a round
    ended at a limit never asks for it)."""
    limits = Limits(timeout_seconds=SLOW, max_turns=4, rounds=0, retries=0, retry_delay_seconds=0)
    return world.run(
        Reply.tool(*bash(command, timeout=SLOW_MS)),
        Reply.structured(ok_result(summary="ran")),
        limits=limits,
        resources=resources,
    )


SLOW_MS = int(SLOW * 1000)
"""Claude Code's Bash timeout of the scripted calls (its default is 2 minutes)."""


# --- a neighbour ----------------------------------------------------------------------------------


def test_a_run_beside_a_runaway_one_ends_ok(claude_world: ClaudeWorld, pi_world: PiWorld) -> None:
    """A Claude Code worker holds 60 processes and spins on both CPUs of this machine until
    the test lets it go; a pi run started beside it (its own repository, server and groups)
    ends ok; only then is the runaway released, forks past its process limit and is ended
    there."""
    app = claude_world.worktree / "src" / "app"
    spawned = Signal(app / "spawned")
    gate = Gate(app / "gate")
    spin = f"(while [ ! -e {app}/released ]; do :; done) &"
    runaway = (
        f"for i in $(seq 60); do sleep 600 >/dev/null 2>&1 & done; {spin} {spin} "
        f": > {spawned.path}; cat {gate.path} >/dev/null; : > {app}/released; "
        "for i in $(seq 400); do sleep 600 >/dev/null 2>&1 & done; echo forked"
    )

    started = time.monotonic()
    alone = pi_world.run(reply(call("bash", "call_ls", command="ls")), reply(result_call("call_r")))
    alone_seconds = time.monotonic() - started
    assert alone.record.status == "ok", alone.explain()

    ended: dict[str, Any] = {}

    def run_runaway() -> None:
        try:
            ended["run"] = claude_bash_run(claude_world, runaway, {"processes": 100})
        except BaseException as error:  # reported by the test's thread
            ended["error"] = error
        finally:
            ended["at"] = time.monotonic()
            spawned.seen.set()  # a run that ended before its Bash ran wakes the test too

    thread = threading.Thread(target=run_runaway, name="runaway", daemon=True)
    thread.start()
    spawned.wait()
    if "run" in ended:  # it ended before its Bash spawned: say why
        pytest.fail(f"the runaway run ended early: {claude_explain(ended['run'])}")
    assert "error" not in ended, ended  # the runaway runs on

    started = time.monotonic()
    beside = pi_world.run(
        reply(call("bash", "call_ls2", command="ls")), reply(result_call("call_r2"))
    )
    beside_seconds = time.monotonic() - started
    assert beside.record.status == "ok", beside.explain()
    assert "run" not in ended and "error" not in ended, ended  # it was beside it all along

    gate.release()
    released = time.monotonic()
    thread.join(SLOW)
    assert not thread.is_alive(), "the runaway run never ended"
    assert "error" not in ended, ended["error"]
    run: ClaudeRun = ended["run"]
    assert run.code == "worker_limit_reached", claude_explain(run)
    used = resources_of(run)
    assert used["forks_refused"] > 0 and used["processes_peak"] == 100, used
    assert resources_of(beside)["limits_reached"] == [], resources_of(beside)
    print(
        f"neighbour: alone {alone_seconds:.1f} s, beside the runaway {beside_seconds:.1f} s; "
        f"the runaway ended {ended['at'] - released:.1f} s after its release; "
        f"runaway {used}; neighbour {resources_of(beside)}"
    )
    no_group_left(run)
    no_group_left(beside)
    claude_world.assert_cleaned(run)
