"""The record never lies after a kill (issue 30 §3), on every backend with the real programs: the
host is SIGKILLed at a moment the test chooses (tests/e2e/killed_host.py), a sweep finishes what
it left, and the record then says exactly what the host did up to the kill.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from e2e.agent_processes import processes_with
from e2e.backends import backend_world
from e2e.conftest import ok_result
from e2e.killed_host import KillWorld, digests_hold, kill_world
from fakes.cli_launcher import pause_spec, release_gate
from timing import SLOW, Signal

from concorde_workers.domain.configuration.request import Limits

__all__ = ["backend_world", "kill_world"]  # the fixtures, imported for pytest

pytestmark = pytest.mark.e2e

PROPOSED = [f"src/app/d{i}.py" for i in range(1, 7)]


def _plant(worktree: Path, paths: list[str]) -> None:
    for rel in paths:
        (worktree / rel).write_text(f"# {rel}\n")


@pytest.mark.req("Proposed deletions follow every clean last round")
@pytest.mark.parametrize("when", ["before", "after"])
def test_a_host_killed_during_its_deletions_leaves_a_record_of_what_it_deleted(
    kill_world: KillWorld, when: str
) -> None:
    w = kill_world
    _plant(w.worktree, PROPOSED)
    w.answer(ok_result(*PROPOSED))
    # The host stands still just before (or just after) it unlinks the third file.
    host = w.start(lambda fifo: pause_spec("remove", r"/src/app/d3\.py$", fifo, when=when))
    host.kill()

    report = w.sweep()

    [stale] = report["stale"]
    assert stale["record"]["outcome"] == "finished", stale
    gone = [rel for rel in PROPOSED if not (w.worktree / rel).exists()]
    assert gone == PROPOSED[: 2 if when == "before" else 3]
    node = host.node()
    content = node["content"]
    assert content["deleted"] == gone, content
    assert (content["deletions_failed"], content["deletions_refused"]) == ([], [])
    assert (node["status"], node["outcome"]) == ("failed", "interrupted")
    detail = node["error"]["detail"]
    assert "(phase deletions" in detail, detail
    for rel in PROPOSED[len(gone) :]:
        assert rel in detail, detail  # what the interruption left, named
    assert digests_hold(node, host.run_dir) == []
    assert "deletions.jsonl" in {f["path"] for f in node["files"]}
    progress = host.status()
    assert (progress["phase"], progress["status"]) == ("finished", "interrupted")
    shown = host.show()
    assert shown.startswith(f"run {node['id']}: failed (interrupted): interrupted")


RUNTIME_ROOT = r"/concorde-[0-9a-f]{6}-[A-Za-z0-9_]+"
END_STEPS = {
    # step: (the pause: op, path, when, contains), whether the host's own final record was made
    "keeping the transcript": (  # the end's keep: the first write is the copy after round 1
        ("write_atomic", r"/workers/w-[^/]+/transcript\.jsonl$", "before", None, 2),
        False,
    ),
    "removing the credential copies": (
        ("remove", RUNTIME_ROOT + r"/config/(auth\.json|\.credentials\.json)$", "before", None),
        False,
    ),
    "removing the rest of the runtime directory": (
        ("open_up", RUNTIME_ROOT + "$", "after", None),
        False,
    ),
    "before the progress file says finished": (
        ("write_atomic", r"/workers/w-[^/]+/status\.json$", "before", '"phase": "finished"'),
        False,
    ),
    "after the progress file says finished": (
        ("write_atomic", r"/workers/w-[^/]+/status\.json$", "after", '"phase": "finished"'),
        False,
    ),
    "before the final record": (
        ("write_atomic", r"/workers/w-[^/]+/trace\.json$", "before", '"outcome": "ok"'),
        False,
    ),
    "after the final record": (
        ("write_atomic", r"/workers/w-[^/]+/trace\.json$", "after", '"outcome": "ok"'),
        True,
    ),
    "syncing the runtime parent once the runtime directory went": (
        ("sync_directory", "{runtime_parent}$", "before", None),
        True,
    ),
}


BACKEND_STEPS: dict[str, dict[str, Any]] = {
    "codex": {
        # Codex's key reaches its rounds by a variable: no credential copy is made, and the
        # instant its removal would take is the one before the runtime directory is opened up.
        "removing the credential copies": (("open_up", RUNTIME_ROOT + "$", "before", None), False),
    }
}


@pytest.mark.req("Every run leaves a final record")
@pytest.mark.req("Nothing but the trace outlives a worker")
@pytest.mark.parametrize("step", sorted(END_STEPS))
def test_a_host_killed_at_any_step_of_its_end_leaves_a_final_record(
    kill_world: KillWorld, step: str
) -> None:
    w = kill_world
    (op, path, when, contains, *nth), recorded = BACKEND_STEPS.get(w.backend, {}).get(
        step, END_STEPS[step]
    )
    path = path.replace("{runtime_parent}", re.escape(str(w.runtime_parent)))
    w.answer(ok_result())
    host = w.start(
        lambda fifo: pause_spec(
            op, path, fifo, when=when, contains=contains, nth=nth[0] if nth else 1
        )
    )
    host.kill()

    w.sweep()

    node = host.node()
    assert node["status"] != "running", step
    assert list(w.runtime_parent.iterdir()) == []
    progress = host.status()
    assert (progress["phase"], progress["status"]) == ("finished", node["outcome"])
    if recorded:  # the host's own ending stands
        assert (node["status"], node["outcome"], node["error"]) == ("ok", "ok", None)
    else:  # the host died before it could record its ending: the sweep says so
        assert (node["status"], node["outcome"]) == ("failed", "interrupted")
        assert "died without a chance to act" in node["error"]["detail"]
    assert node["content"]["transcript"] == "transcript.jsonl"
    assert digests_hold(node, host.run_dir) == []
    assert "transcript.jsonl" in {f["path"] for f in node["files"]}
    round_node = host.node("rounds", "1")
    assert round_node["status"] == "ok" and round_node["content"]["audit"]["verdict"] == "clean"
    assert digests_hold(round_node, host.run_dir / "rounds" / "1") == []
    assert host.show().startswith(f"run {node['id']}: ")


@pytest.mark.req("Every round is audited")
@pytest.mark.req("Every round keeps its standard error")
def test_a_host_killed_during_a_check_leaves_a_round_node_with_what_the_round_did(
    kill_world: KillWorld,
) -> None:
    w = kill_world
    mark = f"killed-check-{os.getpid()}-{time.monotonic_ns()}"
    w.answer(ok_result())

    def check_runs() -> bool:
        return any(argv == ["sleep", "3000"] for argv in processes_with(mark).values())

    host = w.start(None, "--check", f"CONCORDE_TEST_MARK={mark} sleep 3000", ready=check_runs)
    host.kill()

    w.sweep()

    node = host.node()
    assert (node["status"], node["outcome"]) == ("failed", "interrupted")
    assert "(phase validation" in node["error"]["detail"], node["error"]["detail"]
    round_dir = host.run_dir / "rounds" / "1"
    round_node = host.node("rounds", "1")
    assert (round_node["status"], round_node["outcome"]) == ("failed", "interrupted")
    content = round_node["content"]
    assert content["audit"] is not None and content["audit"]["verdict"] == "clean", content
    assert content["exit"] == 0 and content["session"], content
    kept = {"stderr.log", "resources.json", "changes.patch"}
    assert (
        {f["path"] for f in round_node["files"]}
        == {p.name for p in round_dir.iterdir() if p.name in kept}
        >= {"stderr.log", "changes.patch"}
    )
    assert digests_hold(round_node, round_dir) == []
    assert digests_hold(node, host.run_dir) == []


@pytest.mark.req("Every retry is recorded")
def test_a_host_killed_while_it_waits_to_retry_leaves_a_round_that_says_no_retry_followed(
    kill_world: KillWorld,
) -> None:
    w = kill_world
    w.transient()
    waiting = pause_spec(
        "write_atomic",
        r"/workers/w-[^/]+/status\.json$",
        "{fifo}",
        when="after",
        contains='"phase": "waiting"',
    )
    host = w.start(
        lambda fifo: waiting.replace("{fifo}", str(fifo)),
        limits=Limits(
            timeout_seconds=SLOW, max_turns=30, rounds=0, retries=1, retry_delay_seconds=3600
        ),
    )
    assert host.node("rounds", "1")["content"]["transient"]["retried"] is True  # as announced
    host.kill()

    w.sweep()

    node = host.node()
    assert (node["outcome"], node["content"]["rounds"]) == ("interrupted", 1)
    assert "(phase waiting" in node["error"]["detail"]
    transient = host.node("rounds", "1")["content"]["transient"]
    assert (transient["retried"], transient["delay_seconds"]) == (False, None), transient
    assert digests_hold(host.node("rounds", "1"), host.run_dir / "rounds" / "1") == []


@pytest.mark.req("Proposed deletions follow every clean last round")
def test_sigterm_among_the_deletions_stops_them_and_the_record_names_what_was_left(
    kill_world: KillWorld,
) -> None:
    w = kill_world
    _plant(w.worktree, PROPOSED)
    w.answer(ok_result(*PROPOSED))
    gate = w.world.root / "deletions-gate.fifo"
    os.mkfifo(gate)
    cancelled = Signal(w.world.root / "cancelled.fifo")
    host = w.start(
        lambda fifo: pause_spec(
            "remove", r"/src/app/d3\.py$", fifo, gate=gate, cancelled=cancelled.path
        )
    )
    host.proc.send_signal(signal.SIGTERM)
    cancelled.wait()  # the CLI's handler has cancelled the run
    release_gate(gate)  # the third unlink goes on; no deletion after it
    out, err = host.proc.communicate(timeout=SLOW)

    assert host.proc.returncode == 130, out + err
    record = json.loads(out)
    assert record["error"]["code"] == "interrupted", record["error"]
    assert record["deleted"] == PROPOSED[:3]
    assert [rel for rel in PROPOSED if (w.worktree / rel).exists()] == PROPOSED[3:]
    detail = record["error"]["detail"]
    assert (
        "SIGTERM" in detail
        and "not performed, left as the interruption found them: " + (", ".join(PROPOSED[3:]))
        in detail
    )
    node = host.node()
    assert (node["outcome"], node["content"]["deleted"]) == ("interrupted", PROPOSED[:3])
    assert digests_hold(node, host.run_dir) == []
    assert list(w.runtime_parent.iterdir()) == []
