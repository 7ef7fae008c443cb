"""The record never lies after a kill (issue 30 §3), over the fakes: the host's fake disk is frozen
at one chosen filesystem operation (`Freeze`: what a SIGKILL at that instant leaves), a sweep
finishes what it left, and the record then says what the host did up to that instant, no more and
no less. The same instants with the real programs and a real SIGKILL are
tests/e2e/test_killed_host_e2e.py; this module walks every instant of a run the host writes.
"""

from __future__ import annotations

import copy
import json
import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from fakes.agent import Round
from fakes.host_world import RUN_ID, RUNTIME_DIR, TRACE_PARENT, HostWorld, ok_result
from fakes.liveness import FakeProcessTable
from fakes.world import TEMP_ROOT, WORKTREE

from concorde_workers.application.runtime.cancellation import Cancellation
from concorde_workers.application.runtime.validation import ValidationOutcome
from concorde_workers.application.sweep.sweep import Sweeper, SweepReport
from concorde_workers.container import PROFILES
from concorde_workers.contracts import validator

RUN_DIR = f"{TRACE_PARENT}/workers/{RUN_ID}"
JOURNAL = f"{RUN_DIR}/deletions.jsonl"
NODE = validator("contract.tracing.node")
PROPOSED = [f"src/app/d{i}.py" for i in range(1, 5)]
HOST_PID = 42


@dataclass
class Freeze:
    """Freezes the world's fake disk at the `nth` call of `op` on `path` (before or after it;
    for a write, only one whose data holds `contains`): `thaw` then sets the disk back to that
    instant, as a SIGKILL there would have left it."""

    world: HostWorld
    op: str
    path: str
    nth: int = 1
    when: str = "before"
    contains: str | None = None
    frozen: dict[str, Any] | None = None
    seen: int = 0
    calls: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        real: Callable[..., Any] = getattr(self.world.fs, self.op)

        def watched(*args: Any, **kwargs: Any) -> Any:
            moment = self._is_the_moment(args)
            if moment and self.when == "before":
                self._freeze()
            result = real(*args, **kwargs)
            if moment and self.when == "after":
                self._freeze()
            return result

        setattr(self.world.fs, self.op, watched)

    def _is_the_moment(self, args: tuple[Any, ...]) -> bool:
        if not str(args[0]).endswith(self.path):
            return False
        if self.contains is not None:
            data = args[1]
            text = data.decode() if isinstance(data, bytes) else str(data)
            if self.contains not in text:
                return False
        self.seen += 1
        return self.seen == self.nth

    def _freeze(self) -> None:
        if self.frozen is None:
            self.frozen = copy.deepcopy(self.world.fs.nodes)

    def thaw(self) -> None:
        assert self.frozen is not None, f"the run never reached {self.op} {self.path}"
        setattr(
            self.world.fs, self.op, getattr(type(self.world.fs), self.op).__get__(self.world.fs)
        )
        self.world.fs.nodes.clear()
        self.world.fs.nodes.update(self.frozen)


def killed_world() -> HostWorld:
    world = HostWorld()
    world.process_table = FakeProcessTable(pid=HOST_PID)
    return world


def sweep(world: HostWorld) -> SweepReport:
    """A sweep by another process, in which the killed host is gone."""
    world.clock.advance(90)
    return Sweeper(
        fs=world.fs,
        table=FakeProcessTable(pid=7),
        clock=world.clock,
        runtime_parent=TEMP_ROOT,
        profiles=PROFILES,
    ).sweep()


def assert_nodes(world: HostWorld) -> None:
    """Every node the run left holds to its contract and lists its files with their digests."""
    for path in world.under(RUN_DIR):
        if not path.endswith("/trace.json"):
            continue
        node = world.read_json(path)
        errors = [e.message for e in NODE.iter_errors(node)]
        assert not errors, (path, errors)
        folder = posixpath.dirname(path)
        for listed in node["files"]:
            found = world.fs.file_digest(posixpath.join(folder, listed["path"]))
            assert found == listed["digest"], (path, listed)


def plant(world: HostWorld, paths: list[str]) -> None:
    for rel in paths:
        world.fs.write(posixpath.join(WORKTREE, rel), f"# {rel}\n")


def present(world: HostWorld) -> list[str]:
    return [rel for rel in PROPOSED if world.exists(posixpath.join(WORKTREE, rel))]


def journal_lines(world: HostWorld) -> list[dict[str, Any]]:
    return [json.loads(line) for line in world.text(JOURNAL).splitlines()]


# --- the deletions: a phase of their own, a journal as they go ---------------------------------


@pytest.mark.req("Proposed deletions follow every clean last round")
@pytest.mark.req("A running run shows its progress")
def test_the_deletions_have_a_phase_and_a_journal_that_the_record_names() -> None:
    world = HostWorld()
    plant(world, PROPOSED)
    phases: list[str] = []
    real = world.fs.write_atomic

    def spy(path: str, data: bytes | str, mode: int = 0o644, *, durable: bool = False) -> None:
        real(path, data, mode, durable=durable)
        if path == f"{RUN_DIR}/status.json":
            phases.append(json.loads(data)["phase"])

    world.fs.write_atomic = spy  # type: ignore[method-assign]
    record = world.run([Round.ok(ok_result(proposed_deletions=[*PROPOSED, "../out", "gone.py"]))])

    assert record.status == "ok" and record.deleted == tuple(PROPOSED)
    assert phases[-2:] == ["deletions", "finished"]
    plan, *outcomes = journal_lines(world)
    assert plan == {
        "kind": "concorde-workers.deletions",
        "version": 1,
        "worktree": WORKTREE,
        "delete": PROPOSED,
        "refused": ["../out", "gone.py"],  # outside the worktree; outside rw
        "absent": [],
    }
    assert outcomes == [{"path": rel} for rel in PROPOSED]
    assert "deletions.jsonl" in {f["path"] for f in world.run_node()["files"]}
    # the plan durable before the first unlink, the whole journal synced before the record
    assert world.fs.durable.count(JOURNAL) == 2
    assert_nodes(world)


def test_a_run_proposing_no_deletion_has_no_deletions_phase_and_no_journal() -> None:
    world = HostWorld()
    world.run([Round.ok(ok_result())])
    assert not world.exists(JOURNAL) and world.status()["phase"] == "finished"


@pytest.mark.req("Proposed deletions follow every clean last round")
@pytest.mark.parametrize("when,deleted", [("before", 1), ("after", 2)])
def test_a_host_killed_among_its_deletions_is_finished_with_what_it_deleted(
    when: str, deleted: int
) -> None:
    world = killed_world()
    plant(world, PROPOSED)
    freeze = Freeze(world, "remove", PROPOSED[1], when=when)
    world.run([Round.ok(ok_result(proposed_deletions=PROPOSED))])
    freeze.thaw()
    assert present(world) == PROPOSED[deleted:]

    report = sweep(world)

    [stale] = report.stale
    assert stale.record is not None and stale.record.outcome == "finished"
    node = world.run_node()
    assert (node["status"], node["outcome"]) == ("failed", "interrupted")
    assert node["content"]["deleted"] == PROPOSED[:deleted]
    detail = node["error"]["detail"]
    assert "(phase deletions" in detail
    assert f"performed {deleted} of the 4 deletions" in detail
    assert (
        "not performed, left as the interruption found them: " + ", ".join(PROPOSED[deleted:])
        in detail
    )
    assert world.status()["status"] == "interrupted"
    assert_nodes(world)


def test_a_host_killed_before_its_journal_had_a_plan_had_deleted_nothing() -> None:
    world = killed_world()
    plant(world, PROPOSED)
    freeze = Freeze(world, "write_atomic", JOURNAL)
    world.run([Round.ok(ok_result(proposed_deletions=PROPOSED))])
    freeze.thaw()
    assert present(world) == PROPOSED and world.status()["phase"] == "deletions"
    sweep(world)
    node = world.run_node()
    assert node["content"]["deleted"] == []
    assert "it had performed none of the proposed deletions" in node["error"]["detail"]


def test_a_journal_line_cut_short_by_the_kill_is_no_line() -> None:
    world = killed_world()
    plant(world, PROPOSED)
    freeze = Freeze(world, "remove", PROPOSED[2])
    world.run([Round.ok(ok_result(proposed_deletions=PROPOSED))])
    freeze.thaw()
    journal = world.fs.nodes[JOURNAL]
    journal.data = journal.data[:-5]  # the second outcome line written only in part
    sweep(world)
    # its path is gone, so the deletion it was to tell of is still named
    assert world.run_node()["content"]["deleted"] == PROPOSED[:2]


def test_a_journal_that_is_not_the_hosts_claims_nothing_and_says_so() -> None:
    world = killed_world()
    plant(world, PROPOSED)
    freeze = Freeze(world, "remove", PROPOSED[1])
    world.run([Round.ok(ok_result(proposed_deletions=PROPOSED))])
    freeze.thaw()
    world.fs.nodes[JOURNAL].data = b'{"path": "src/app/d1.py"}\n'
    sweep(world)
    node = world.run_node()
    assert node["content"]["deleted"] == []
    assert "its journal of deletions could not be read" in node["error"]["detail"]


@pytest.mark.req("Proposed deletions follow every clean last round")
def test_a_cancellation_stops_the_deletions_and_the_record_names_what_it_left() -> None:
    world = HostWorld()
    plant(world, PROPOSED)
    cancel = Cancellation()
    real = world.fs.remove

    def remove(path: str) -> None:
        real(path)
        if path.endswith(PROPOSED[1]):
            cancel.cancel("the test cancelled the run")

    world.fs.remove = remove  # type: ignore[method-assign]
    record = world.run([Round.ok(ok_result(proposed_deletions=PROPOSED))], cancel=cancel)

    assert record.status == "failed" and world.run_node()["outcome"] == "interrupted"
    assert record.deleted == tuple(PROPOSED[:2]) and present(world) == PROPOSED[2:]
    assert record.error is not None and record.error.code == "interrupted"
    assert "not performed, left as the interruption found them: src/app/d3.py, src/app/d4.py" in (
        record.error.detail
    )
    assert world.status()["status"] == "interrupted"
    assert_nodes(world)


def test_an_exception_raised_among_the_deletions_leaves_the_record_exact() -> None:
    world = HostWorld()
    plant(world, PROPOSED)
    real = world.fs.remove

    def remove(path: str) -> None:
        real(path)  # the unlink is done, then the exception comes
        if path.endswith(PROPOSED[2]):
            raise KeyboardInterrupt

    world.fs.remove = remove  # type: ignore[method-assign]
    with pytest.raises(KeyboardInterrupt):
        world.run([Round.ok(ok_result(proposed_deletions=PROPOSED))])

    node = world.run_node(RUN_DIR)
    assert node["content"]["deleted"] == PROPOSED[:3] and present(world) == PROPOSED[3:]
    assert node["error"]["code"] == "interrupted"
    assert "during its deletions phase" in node["error"]["detail"]
    assert (
        "not performed, left as the interruption found them: src/app/d4.py"
        in (node["error"]["detail"])
    )
    assert not world.exists(RUNTIME_DIR)


# --- the end: every step, and the final record --------------------------------------------------

FINAL = '"outcome": "ok"'
END_STEPS = {
    # step: (op, path, when, contains), whether the host's own ending stands[, which call]
    "saying finished": ("write_atomic", f"{RUN_DIR}/status.json", "after", '"finished"', False),
    "keeping the transcript": (  # the end's: the first is the copy after round 1
        "write_atomic",
        f"{RUN_DIR}/transcript.jsonl",
        "before",
        None,
        False,
        2,
    ),
    "removing the credential copy": ("remove", "/config/.credentials.json", "before", None, False),
    "emptying the runtime directory": ("open_up", RUNTIME_DIR, "after", None, False),
    "writing the final record": ("write_atomic", f"{RUN_DIR}/trace.json", "before", FINAL, False),
    "after the final record": ("write_atomic", f"{RUN_DIR}/trace.json", "after", FINAL, True),
    "removing the owner record": ("rmtree", RUNTIME_DIR, "before", None, True),
    "syncing the runtime parent": ("sync_directory", TEMP_ROOT, "before", None, True),
}


@pytest.mark.req("Every run leaves a final record")
@pytest.mark.parametrize("step", sorted(END_STEPS))
def test_a_host_killed_at_any_step_of_its_end_leaves_a_record_a_sweep_makes_final(
    step: str,
) -> None:
    op, path, when, contains, stands, *nth = END_STEPS[step]
    world = killed_world()
    freeze = Freeze(world, op, path, when=when, contains=contains, nth=nth[0] if nth else 1)
    world.run([Round.ok(ok_result())])
    freeze.thaw()

    sweep(world)

    node = world.run_node()
    assert node["status"] != "running" and not world.exists(RUNTIME_DIR)
    assert world.status()["status"] == node["outcome"]
    if stands:
        assert (node["status"], node["outcome"]) == ("ok", "ok")
    else:
        assert (node["status"], node["outcome"]) == ("failed", "interrupted")
        detail = node["error"]["detail"]
        assert "died without a chance to act" in detail
        # the progress file said how the run ended before the cleanup began
        assert "the run had ended ok (phase finished" in detail, detail
    assert node["content"]["transcript"] == "transcript.jsonl"
    assert_nodes(world)


def test_a_runtime_directory_that_outlives_the_final_record_fails_it_with_cleanup_failed() -> None:
    world = HostWorld()
    world.fs.fail("rmtree", RUNTIME_DIR, "Device or resource busy", 16)
    record = world.run([Round.ok(ok_result())])
    assert record.error is not None and record.error.code == "cleanup_failed"
    assert RUNTIME_DIR in record.error.detail and "Device or resource busy" in record.error.detail
    node = world.run_node()
    assert (node["status"], node["error"]["code"]) == ("failed", "cleanup_failed")
    assert world.status()["status"] == "failed"
    assert_nodes(world)


# --- a round: what it did, up to the kill -------------------------------------------------------


@pytest.mark.req("Every round is audited")
def test_a_host_killed_during_its_round_validation_leaves_the_rounds_audit_and_files() -> None:
    world = killed_world()
    freeze = Freeze(world, "write_atomic", f"{RUN_DIR}/status.json", when="after")
    freeze.contains = '"validation"'
    world.run(
        [Round.ok(ok_result(), stderr=b"said\n")], validation=lambda given: ValidationOutcome()
    )
    freeze.thaw()

    sweep(world)

    node = world.round_node(1)
    assert (node["status"], node["outcome"]) == ("failed", "interrupted")
    content = node["content"]
    assert content["audit"] is not None and content["audit"]["verdict"] == "clean"
    assert content["exit"] == 0 and content["session"] == "s-1"
    assert [f["path"] for f in node["files"]] == ["stderr.log"]
    assert "(phase validation" in world.run_node()["error"]["detail"]
    assert_nodes(world)


def test_a_round_whose_files_were_written_after_its_last_node_lists_them_once_swept() -> None:
    world = killed_world()
    # frozen just after the round's stderr.log was written, before any node of its end
    freeze = Freeze(world, "write_atomic", f"{RUN_DIR}/rounds/1/stderr.log", when="after")
    world.run([Round.ok(ok_result(), stderr=b"said\n")])
    freeze.thaw()
    assert world.round_node(1)["files"] == []

    sweep(world)

    assert [f["path"] for f in world.round_node(1)["files"]] == ["stderr.log"]
    assert_nodes(world)


@pytest.mark.req("Every retry is recorded")
def test_a_host_killed_while_it_waited_to_retry_says_no_retry_followed() -> None:
    world = killed_world()
    freeze = Freeze(world, "write_atomic", f"{RUN_DIR}/status.json", when="after")
    freeze.contains = '"waiting"'
    world.run([Round.transient(), Round.ok(ok_result())], limits={"retries": 1})
    freeze.thaw()
    assert world.round_node(1)["content"]["transient"]["retried"] is True

    sweep(world)

    transient = world.round_node(1)["content"]["transient"]
    assert (transient["retried"], transient["delay_seconds"]) == (False, None)
    assert world.run_node()["content"]["rounds"] == 1
    assert_nodes(world)


def test_a_round_the_run_node_does_not_count_yet_is_found_and_ended() -> None:
    world = killed_world()
    # frozen once round 2's first node is written, before the run node counts it
    freeze = Freeze(world, "write_atomic", f"{RUN_DIR}/rounds/2/trace.json", when="after")
    world.run([Round.transient(), Round.ok(ok_result())], limits={"retries": 1})
    freeze.thaw()
    assert world.run_node()["content"]["rounds"] == 1

    sweep(world)

    assert world.run_node()["content"]["rounds"] == 2
    assert world.round_node(2)["outcome"] == "interrupted"
    assert world.round_node(1)["content"]["transient"]["retried"] is True
    assert_nodes(world)


# --- the sweep itself killed ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "op,path,when",
    [
        ("write_atomic", f"{RUN_DIR}/trace.json", "before"),
        ("rmtree", RUNTIME_DIR, "before"),
    ],
    ids=["before its record", "after its record"],
)
def test_a_sweep_killed_on_its_way_leaves_the_next_sweep_the_same_to_finish(
    op: str, path: str, when: str
) -> None:
    world = killed_world()
    freeze_host = Freeze(world, "write_atomic", f"{RUN_DIR}/status.json", when="after")
    freeze_host.contains = '"audit"'
    world.run([Round.ok(ok_result())])
    freeze_host.thaw()
    freeze = Freeze(
        world, op, path, when=when, contains='"interrupted"' if "trace" in path else None
    )
    sweep(world)
    freeze.thaw()
    assert world.exists(f"{RUNTIME_DIR}/control/owner.json")

    report = sweep(world)

    [stale] = report.stale
    assert stale.removed and not world.exists(RUNTIME_DIR)
    node = world.run_node()
    assert (node["status"], node["outcome"]) == ("failed", "interrupted")
    assert_nodes(world)
