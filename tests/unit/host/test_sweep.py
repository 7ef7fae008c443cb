"""The sweep over the fakes: a host killed mid-round (its fake disk frozen as the agent started)
leaves its runtime directory and a `running` record; the sweep removes the directory the way the
host's cleanup does (transcript kept, credential copies first, the rest, checked gone) and
finishes the record as interrupted, the host died. Live hosts, other users, links, young
directories without an owner record and run directories that are not the run's are left or
reported, never written.
"""

from __future__ import annotations

import copy
import io
import json
import posixpath
from typing import Any

import pytest
from dependency_injector import providers
from fakes.agent import Round, ScriptedBackend
from fakes.filesystem import FakeFileSystem
from fakes.host_world import TRACE_PARENT, HostWorld, ok_result
from fakes.liveness import FakeProcess, FakeProcessTable
from fakes.process import FakeStart
from fakes.world import PRIMARY, TEMP_ROOT

from concorde_workers.adapters.cli import main as cli
from concorde_workers.adapters.cli.views.display import account, outcome_of
from concorde_workers.application.sweep.sweep import Sweeper, SweepReport
from concorde_workers.application.tracing.reader import read_record
from concorde_workers.container import PROFILES, Container
from concorde_workers.contracts import validator as contract_validator
from concorde_workers.domain.evidence.records import RunRecord
from concorde_workers.domain.evidence.sweep import OWNERLESS_MARGIN_SECONDS, parse_owner_record

NODE = contract_validator("contract.tracing.node")
SWEEPER_PID = 7


def assert_node(node: dict[str, Any]) -> None:
    errors = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in NODE.iter_errors(node)]
    assert not errors, errors


class Killed:
    """What a host killed by SIGKILL as its agent started left on the world's fake disk."""

    def __init__(
        self, world: HostWorld, run_dir: str, runtime_dir: str, host_pid: int, start_ticks: int
    ) -> None:
        self.world = world
        self.run_dir = run_dir
        self.runtime_dir = runtime_dir
        self.host_pid = host_pid
        self.start_ticks = start_ticks

    @property
    def credential_copy(self) -> str:
        return f"{self.runtime_dir}/config/.credentials.json"

    def node(self) -> dict[str, Any]:
        return self.world.run_node(self.run_dir)


def kill_host(world: HostWorld, host_pid: int = 42, rounds: tuple[Round, ...] = ()) -> Killed:
    """Run the host as process `host_pid` and freeze the fake disk when the agent of its last
    round starts: what a SIGKILL of the host at that moment leaves behind."""
    world.process_table = FakeProcessTable(pid=host_pid)
    frozen: dict[str, Any] = {}

    def freeze(start: FakeStart) -> None:
        frozen.update(copy.deepcopy(world.fs.nodes))

    world.run([*rounds, Round.ok(ok_result(), effects=freeze)])
    world.fs.nodes.clear()
    world.fs.nodes.update(frozen)
    record = world.records.pop()
    assert world.exists(record.runtime_directory)
    return Killed(
        world,
        record.run_directory,
        record.runtime_directory,
        host_pid,
        world.process_table.processes[host_pid].start_ticks,
    )


def sweeper(world: HostWorld, table: FakeProcessTable | None = None) -> Sweeper:
    world.clock.advance(90)
    return Sweeper(
        fs=world.fs,
        table=table or FakeProcessTable(pid=SWEEPER_PID),
        clock=world.clock,
        runtime_parent=TEMP_ROOT,
        profiles=PROFILES,
    )


def alive(*killed: Killed, reused: bool = False) -> FakeProcessTable:
    """The sweeper's table in which the killed hosts live on (or their pids were reused)."""
    table = FakeProcessTable(pid=SWEEPER_PID)
    for k in killed:
        table.processes[k.host_pid] = FakeProcess(k.start_ticks + (5 if reused else 0))
    return table


def writes_under(fs: FakeFileSystem, folder: str) -> list[tuple[str, str]]:
    return [
        (op, p)
        for op, p in fs.ops
        if op in ("write_atomic", "remove", "rmtree", "chmod", "makedirs")
        and (p == folder or p.startswith(folder + "/"))
    ]


# --- the stale directory of a dead host -------------------------------------------------------


@pytest.mark.req("Nothing but the trace outlives a worker")
def test_a_dead_hosts_directory_goes_credential_copies_first_and_its_record_ends_interrupted() -> (
    None
):
    world = HostWorld()
    k = kill_host(world)
    assert world.exists(k.credential_copy)
    assert k.node()["status"] == "running" and world.status(k.run_dir)["phase"] == "worker"
    world.fs.ops.clear()

    report = sweeper(world).sweep()

    assert report.failures == [] and report.left == ()
    [stale] = report.stale
    assert (stale.runtime_directory, stale.removed, stale.host_pid) == (k.runtime_dir, True, 42)
    assert stale.reason == "its host (pid 42) is gone"
    assert stale.record is not None and stale.record.outcome == "finished"
    assert stale.record.transcript_kept
    assert not world.exists(k.runtime_dir)
    ops = world.fs.ops
    kept = ops.index(("write_atomic", f"{k.run_dir}/transcript.jsonl"))
    copy_removed = ops.index(("remove", k.credential_copy))
    assert kept < copy_removed < ops.index(("rmtree", k.runtime_dir))

    node = k.node()
    assert_node(node)
    assert (node["status"], node["outcome"]) == ("failed", "interrupted")
    error = node["error"]
    assert error["code"] == "interrupted"
    assert error["unhandled"]["reason"] == "environment"
    assert error["detail"].startswith(
        "the host process (pid 42) died without a chance to act, as by SIGKILL or the "
        "out-of-memory killer, while the run was in round 1 (phase worker"
    )
    assert (
        f"its host (pid 42) is gone; a sweep (pid {SWEEPER_PID}) found its runtime "
        f"directory {k.runtime_dir}" in error["detail"]
    )
    assert [e["kind"] for e in error["evidence"]] == ["trace", "transcript"]
    assert node["content"]["transcript"] == "transcript.jsonl"
    assert {f["path"] for f in node["files"]} >= {"status.json", "transcript.jsonl"}
    assert node["ended_at"] >= node["started_at"]
    round_node = world.round_node(1, k.run_dir)
    assert_node(round_node)
    assert (round_node["status"], round_node["outcome"]) == ("failed", "interrupted")
    progress = world.status(k.run_dir)
    assert (progress["phase"], progress["status"]) == ("finished", "interrupted")

    record = read_record(world.fs, k.run_dir)
    assert isinstance(record, RunRecord), record
    assert outcome_of(record) == "interrupted" and record.status == "failed"
    assert "died without a chance to act" in account(record)


def test_a_transcript_the_host_already_kept_is_named_when_none_is_left() -> None:
    world = HostWorld()
    k = kill_host(world)
    transcripts = [p for p in world.under(k.runtime_dir) if p.endswith(".jsonl")]
    for path in transcripts:  # the host died after keeping it, in its own cleanup
        world.fs.write(f"{k.run_dir}/transcript.jsonl", world.text(path), 0o600)
        del world.fs.nodes[path]
    [stale] = sweeper(world).sweep().stale
    assert stale.record is not None and stale.record.transcript_kept
    assert k.node()["content"]["transcript"] == "transcript.jsonl"


@pytest.mark.parametrize(
    ("table", "reason"),
    [
        ("reused", "pid 42 now belongs to another process"),
        ("zombie", "has exited (a zombie"),
        ("other boot", "ran before the machine last started"),
    ],
)
def test_a_pid_that_is_no_longer_the_host_does_not_keep_its_directory(
    table: str, reason: str
) -> None:
    world = HostWorld()
    k = kill_host(world)
    sweeping = alive(k, reused=table == "reused")
    if table == "zombie":
        sweeping.exit(42)
    if table == "other boot":
        sweeping.boot_id = "another-boot"
    [stale] = sweeper(world, sweeping).sweep().stale
    assert reason in stale.reason and stale.removed
    assert not world.exists(k.runtime_dir)
    assert reason in k.node()["error"]["detail"]


# --- what is never touched ------------------------------------------------------------------------


def test_two_live_hosts_keep_their_directories_and_records_untouched() -> None:
    world = HostWorld()
    first, second = kill_host(world, 42), kill_host(world, 43)
    dead = kill_host(world, 44)
    assert len({first.runtime_dir, second.runtime_dir, dead.runtime_dir}) == 3
    world.fs.ops.clear()

    report = sweeper(world, alive(first, second)).sweep()

    assert [s.runtime_directory for s in report.stale] == [dead.runtime_dir]
    assert sorted((e.runtime_directory, e.verdict) for e in report.left) == sorted(
        [(first.runtime_dir, "live"), (second.runtime_dir, "live")]
    )
    for live in (first, second):
        assert world.exists(live.credential_copy)
        assert writes_under(world.fs, live.runtime_dir) == []
        assert writes_under(world.fs, live.run_dir) == []
        assert live.node()["status"] == "running"
    assert not world.exists(dead.runtime_dir)
    assert dead.node()["outcome"] == "interrupted"


def test_a_sweep_inside_a_live_host_leaves_its_own_runs_alone() -> None:
    world = HostWorld()
    k = kill_host(world, 42)
    table = FakeProcessTable(pid=42)  # the sweeping process is the host itself (in process)
    table.processes[42] = FakeProcess(k.start_ticks)
    report = sweeper(world, table).sweep()
    assert report.stale == () and [e.verdict for e in report.left] == ["live"]
    assert world.exists(k.credential_copy)


def test_another_users_directory_is_left_as_it_is() -> None:
    world = HostWorld()
    k = kill_host(world)
    world.fs.own(k.runtime_dir, 0)
    world.fs.ops.clear()
    report = sweeper(world).sweep()
    assert report.stale == ()
    assert [e.reason for e in report.left] == ["it belongs to user 0, not to user 1000"]
    assert writes_under(world.fs, k.runtime_dir) == [] and world.exists(k.credential_copy)


def test_a_link_named_like_a_runtime_directory_is_never_followed() -> None:
    world = HostWorld()
    world.fs.write("/home/dev/keep/.credentials.json", "mine", 0o600)
    world.fs.symlink("/home/dev/keep", f"{TEMP_ROOT}/concorde-abc123-1inkd1r")
    world.fs.write(f"{TEMP_ROOT}/concorde-abc123-afile", "x")
    report = sweeper(world).sweep()
    assert report.stale == ()
    assert sorted(e.reason for e in report.left) == [
        "not a directory but a file: never followed",
        "not a directory but a symlink: never followed",
    ]
    assert world.text("/home/dev/keep/.credentials.json") == "mine"
    assert world.fs.is_symlink(f"{TEMP_ROOT}/concorde-abc123-1inkd1r")


def test_other_entries_of_the_runtime_parent_are_not_looked_at() -> None:
    world = HostWorld()
    for name in ("tmp8jm5fujy", "concorde-notahex-x", "pytest-of-root"):
        world.fs.mkdir(f"{TEMP_ROOT}/{name}")
    world.fs.ops.clear()
    report = sweeper(world).sweep()
    assert report == SweepReport(runtime_parent=TEMP_ROOT)
    assert [op for op in world.fs.ops if op[0] != "listdir"] == []


def test_what_the_worker_planted_in_its_own_directories_is_removed_never_followed() -> None:
    world = HostWorld()
    world.fs.write("/home/dev/project/keep.txt", "precious")
    k = kill_host(world)
    world.fs.symlink("/home/dev/project", f"{k.runtime_dir}/work/out")
    world.fs.symlink("/home/dev/project/keep.txt", f"{k.runtime_dir}/home/link.txt")
    world.fs.mkdir(f"{k.runtime_dir}/tmp/locked/deeper", 0o000)
    world.fs.node_at(f"{k.runtime_dir}/tmp/locked").mode = 0o000  # type: ignore[union-attr]
    [stale] = sweeper(world).sweep().stale
    assert stale.removed and not world.exists(k.runtime_dir)
    assert world.text("/home/dev/project/keep.txt") == "precious"


# --- no usable owner record -------------------------------------------------------------------


@pytest.mark.parametrize("spoil", ["missing", "garbled", "link", "group-writable"])
def test_a_directory_without_a_usable_owner_record_goes_only_once_old(spoil: str) -> None:
    world = HostWorld()
    k = kill_host(world)
    owner = f"{k.runtime_dir}/control/owner.json"
    if spoil == "missing":
        del world.fs.nodes[owner]
    elif spoil == "garbled":
        world.fs.write(owner, "{not json", 0o600)
    elif spoil == "link":
        del world.fs.nodes[owner]
        world.fs.write("/home/dev/forged.json", world.text(f"{k.run_dir}/status.json"))
        world.fs.symlink("/home/dev/forged.json", owner)
    else:
        world.fs.node_at(owner).mode = 0o666  # type: ignore[union-attr]

    report = sweeper(world).sweep()
    assert report.stale == () and world.exists(k.credential_copy)
    assert "no usable owner record" in report.left[0].reason

    world.clock.advance(OWNERLESS_MARGIN_SECONDS)
    [stale] = sweeper(world).sweep().stale
    assert stale.removed and not world.exists(k.runtime_dir)
    assert stale.record is None and stale.run_id is None
    assert k.node()["status"] == "running"  # no owner record: no run to finish


# --- the run directory the owner record names -------------------------------------------------


@pytest.mark.parametrize(
    ("spoil", "problem"),
    [
        ("missing", "is missing: nothing was written"),
        ("garbled", "not JSON"),
        ("other run", "is the node of run w-20990101T000000-ffffff"),
        ("link", "is a symlink, not a directory"),
    ],
)
def test_a_run_directory_that_is_not_the_runs_is_reported_never_written(
    spoil: str, problem: str
) -> None:
    world = HostWorld()
    k = kill_host(world)
    trace = f"{k.run_dir}/trace.json"
    if spoil == "missing":
        for path in [*world.under(k.run_dir), k.run_dir]:
            world.fs.nodes.pop(path, None)
    elif spoil == "garbled":
        world.fs.write(trace, "{")
    elif spoil == "other run":
        node = k.node() | {"id": "w-20990101T000000-ffffff"}
        world.fs.write(trace, json.dumps(node))
    else:
        moved = "/home/dev/elsewhere"
        for path in [k.run_dir, *world.under(k.run_dir)]:
            world.fs.nodes[moved + path[len(k.run_dir) :]] = world.fs.nodes.pop(path)
        world.fs.symlink(moved, k.run_dir)
    before = {
        p: copy.deepcopy(n)
        for p, n in world.fs.nodes.items()
        if p.startswith("/home/dev/elsewhere") or p.startswith(k.run_dir)
    }
    world.fs.ops.clear()

    report = sweeper(world).sweep()

    [stale] = report.stale
    assert stale.removed and not world.exists(k.runtime_dir)
    assert stale.record is not None and stale.record.outcome == "not_found"
    assert problem in stale.record.detail
    assert report.failures == []  # nothing the sweep could have done
    assert writes_under(world.fs, k.run_dir) == []
    assert writes_under(world.fs, "/home/dev/elsewhere") == []
    assert {p: n for p, n in world.fs.nodes.items() if p in before} == before


def test_a_record_that_already_ended_is_not_rewritten() -> None:
    world = HostWorld()
    k = kill_host(world)
    ended = k.node() | {
        "status": "failed",
        "outcome": "failed",
        "ended_at": k.node()["started_at"],
        "error": {
            "level": "workers",
            "actor": "a",
            "code": "launch_failed",
            "detail": "d",
            "evidence": [],
            "attempts": [],
            "unhandled": {"reason": "environment", "explanation": "e"},
            "options": [],
            "recommendation": "",
            "causes": [],
        },
    }
    world.fs.write(f"{k.run_dir}/trace.json", json.dumps(ended))
    [stale] = sweeper(world).sweep().stale
    assert stale.removed
    assert stale.record is not None and stale.record.outcome == "already_ended"
    assert k.node() == ended


# --- what fails ---------------------------------------------------------------------------------


def test_a_directory_that_resists_removal_is_reported_and_the_record_says_so() -> None:
    world = HostWorld()
    k = kill_host(world)
    world.fs.fail("rmtree", k.runtime_dir, "Device or resource busy", 16)
    report = sweeper(world).sweep()
    [stale] = report.stale
    assert not stale.removed
    assert stale.remains == (f"{k.runtime_dir}: Device or resource busy",)
    assert not world.exists(k.credential_copy)  # the credential copies went first all the same
    assert report.failures == [
        f"{k.runtime_dir} was not removed: {k.runtime_dir}: Device or resource busy"
    ]
    error = k.node()["error"]
    assert error["code"] == "cleanup_failed"
    assert [c["code"] for c in error["causes"]] == ["interrupted"]
    # finished again once the root resisted: still with the phase the dead host left
    assert "(phase worker, last written" in error["causes"][0]["detail"]
    record = read_record(world.fs, k.run_dir)
    assert isinstance(record, RunRecord) and outcome_of(record) == "interrupted"


def test_a_record_write_the_system_refuses_is_a_failure() -> None:
    world = HostWorld()
    k = kill_host(world)
    world.fs.fail("write_atomic", f"{k.run_dir}/trace.json", "Read-only file system", 30)
    report = sweeper(world).sweep()
    [stale] = report.stale
    assert stale.removed
    assert stale.record is not None and stale.record.outcome == "failed"
    assert "Read-only file system" in stale.record.detail
    assert len(report.failures) == 1 and "was not finished" in report.failures[0]


def test_a_runtime_parent_that_cannot_be_listed_is_a_problem_and_nothing_is_done() -> None:
    world = HostWorld()
    world.fs.fail("listdir", TEMP_ROOT, "Permission denied", 13)
    report = sweeper(world).sweep()
    assert report.problem == f"the runtime parent {TEMP_ROOT} cannot be listed: Permission denied"


# --- the host records its ownership -----------------------------------------------------------


def test_the_host_records_who_owns_the_runtime_directory_before_any_credential_copy() -> None:
    world = HostWorld()
    world.process_table = FakeProcessTable(pid=42)
    seen: dict[str, str] = {}

    def look(start: FakeStart) -> None:
        root = posixpath.dirname(start.cwd)
        seen["owner"] = world.text(f"{root}/control/owner.json")
        seen["root"] = root

    record = world.run([Round.ok(ok_result(), effects=look)])
    owner = parse_owner_record(seen["owner"])
    assert not isinstance(owner, str), owner
    assert (owner.run_id, owner.run_directory, owner.backend) == (
        record.run_id,
        record.run_directory,
        "pi",
    )
    assert owner.host == world.process_table.own()
    written = [p for op, p in world.fs.ops if op == "write_atomic"]
    assert written.index(f"{seen['root']}/control/owner.json") < written.index(
        f"{seen['root']}/config/.credentials.json"
    )


# --- the command line ---------------------------------------------------------------------------


def cli_container(
    world: HostWorld, table: FakeProcessTable, rounds: tuple[Round, ...] = ()
) -> Container:
    container = world.container()
    scripted = ScriptedBackend("pi", world.fs, rounds=list(rounds))
    scripted.credentials = []
    container.backends.override(
        providers.Dict(pi=providers.Object(scripted), claude=providers.Object(scripted))
    )
    container.processes.override(providers.Object(scripted.runner()))
    container.host_pid.override(providers.Object(table.pid))
    container.process_table.override(providers.Object(table))
    return container


def main(container: Container, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = cli.main(list(argv), out, err, container=container)
    assert "Traceback" not in out.getvalue() + err.getvalue()
    return status, out.getvalue(), err.getvalue()


def test_sweep_json_prints_what_it_removed_and_finished_and_exits_0() -> None:
    world = HostWorld()
    k = kill_host(world)
    world.clock.advance(90)
    status, out, err = main(
        cli_container(world, FakeProcessTable(pid=SWEEPER_PID)), "sweep", "--json"
    )
    assert (status, err) == (0, "")
    data = json.loads(out)
    assert data["runtime_parent"] == TEMP_ROOT and data["failures"] == []
    [stale] = data["stale"]
    assert stale["runtime_directory"] == k.runtime_dir and stale["removed"] is True
    assert stale["record"]["outcome"] == "finished"
    assert stale["record"]["run_directory"] == k.run_dir

    status, out, _ = main(cli_container(world, FakeProcessTable(pid=SWEEPER_PID)), "sweep")
    assert (status, out) == (0, f"sweep of {TEMP_ROOT}: no stale runtime directory\n")

    status, out, _ = main(
        cli_container(world, FakeProcessTable(pid=SWEEPER_PID)), "show", k.run_dir
    )
    assert status == 0
    assert out.startswith(f"run {k.node()['id']}: failed (interrupted): interrupted\n")
    assert "the host process (pid 42) died without a chance to act" in out


def test_sweep_says_what_it_did_and_exits_1_when_a_directory_remains() -> None:
    world = HostWorld()
    k = kill_host(world)
    world.fs.fail("rmtree", k.runtime_dir, "Device or resource busy", 16)
    status, out, _ = main(cli_container(world, FakeProcessTable(pid=SWEEPER_PID)), "sweep")
    assert status == 1
    assert out.splitlines()[:3] == [
        f"sweep of {TEMP_ROOT}: 1 stale runtime directory",
        f"  NOT removed {k.runtime_dir} (run {k.node()['id']}): its host (pid 42) is gone",
        f"    remains {k.runtime_dir}: Device or resource busy",
    ]


@pytest.mark.parametrize("as_json", [False, True])
def test_sweep_refuses_with_2_when_the_runtime_parent_cannot_be_listed(as_json: bool) -> None:
    world = HostWorld()
    world.fs.fail("listdir", TEMP_ROOT, "Permission denied", 13)
    status, out, err = main(
        cli_container(world, FakeProcessTable(pid=SWEEPER_PID)),
        "sweep",
        *(["--json"] if as_json else []),
    )
    assert status == 2
    if as_json:
        refusal = json.loads(out)["refusal"]
        assert refusal["code"] == "runtime_parent_unreadable"
        assert refusal["file"] == TEMP_ROOT
    else:
        assert err.startswith("concorde-workers: refused: runtime_parent_unreadable")


def test_every_run_sweeps_first_and_says_so_on_stderr() -> None:
    world = HostWorld()
    k = kill_host(world)
    world.fs.write(f"{PRIMARY}/grant.json", json.dumps(world.request().grant))
    world.fs.write(
        f"{PRIMARY}/request.json",
        json.dumps(
            {
                k2: v
                for k2, v in world.request().model_dump(mode="json").items()
                if k2 in ("worktree", "task_type", "grant", "instructions")
            }
        ),
    )
    table = FakeProcessTable(pid=SWEEPER_PID)
    container = cli_container(world, table, (Round.ok(ok_result()),))
    status, out, err = main(
        container, "run", f"{PRIMARY}/request.json", "--parent", TRACE_PARENT, "--json"
    )
    assert status == 0, out + err
    assert f"concorde-workers: sweep of {TEMP_ROOT}: 1 stale runtime directory\n" in err
    assert (
        f"concorde-workers:   removed {k.runtime_dir} (run {k.node()['id']}): its host "
        "(pid 42) is gone\n" in err
    )
    assert not world.exists(k.runtime_dir)
    assert k.node()["outcome"] == "interrupted"
    assert json.loads(out)["status"] == "ok"  # the new run itself


def test_a_run_with_nothing_to_sweep_says_nothing_about_it() -> None:
    world = HostWorld()
    world.fs.write(
        f"{PRIMARY}/request.json",
        json.dumps(
            {
                k2: v
                for k2, v in world.request().model_dump(mode="json").items()
                if k2 in ("worktree", "task_type", "grant", "instructions")
            }
        ),
    )
    container = cli_container(world, FakeProcessTable(pid=SWEEPER_PID), (Round.ok(ok_result()),))
    status, _, err = main(
        container, "run", f"{PRIMARY}/request.json", "--parent", TRACE_PARENT, "--json"
    )
    assert status == 0 and "sweep" not in err


def test_a_transcript_that_cannot_be_kept_is_a_failure_and_the_record_says_so() -> None:
    world = HostWorld()
    k = kill_host(world)
    world.fs.fail("write_atomic", f"{k.run_dir}/transcript.jsonl", "No space left on device", 28)
    report = sweeper(world).sweep()
    [stale] = report.stale
    assert stale.removed and stale.transcript_error is not None
    assert "No space left on device" in stale.transcript_error
    assert report.failures == [f"the transcript could not be kept: {stale.transcript_error}"]
    node = k.node()
    assert node["error"]["code"] == "cleanup_failed" and node["content"]["transcript"] is None
    assert [c["code"] for c in node["error"]["causes"]] == ["interrupted"]


def test_an_unreadable_progress_file_is_left_and_said() -> None:
    world = HostWorld()
    k = kill_host(world)
    world.fs.write(f"{k.run_dir}/status.json", "{garbled")
    [stale] = sweeper(world).sweep().stale
    assert stale.record is not None and stale.record.outcome == "finished"
    assert f"not written: {k.run_dir}/status.json: not JSON" in stale.record.detail
    assert world.text(f"{k.run_dir}/status.json") == "{garbled"
    assert k.node()["outcome"] == "interrupted"
