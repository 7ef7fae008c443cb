"""The checks' copies in the sweep (issue 9 §1 for issue 13's checks; domain/isolation/check_copies.py,
application/sweep/copy_sweep.py): a copy's folder whose host is dead is removed, one whose host lives
is never touched, and one that is not the host's or whose liveness cannot be told is left; the
report says which. Against the fake filesystem and process table; the real SIGKILLed host is
tests/integration/test_check_host_killed.py."""

from __future__ import annotations

import pytest
from fakes.filesystem import FAKE_NOW, FakeFileSystem
from fakes.liveness import FakeProcessTable

from concorde_workers.application.sweep.copy_sweep import sweep_copies
from concorde_workers.application.sweep.sweep import SweepReport, sweep_account
from concorde_workers.domain.evidence.sweep import OWNERLESS_MARGIN_SECONDS
from concorde_workers.domain.isolation.check_copies import (
    CopyOwner,
    copy_owner_text,
    is_copy_name,
    parse_copy_owner,
)

PARENT = "/tmp"
COPY = f"{PARENT}/concorde-check-0123456789ab"
HOST = 4242


def world(host_alive: bool) -> tuple[FakeFileSystem, FakeProcessTable]:
    """A copy's folder made by host HOST (alive or dead), swept by another process."""
    fs, table = FakeFileSystem(), FakeProcessTable(pid=7)
    table.spawn(HOST)
    owner = CopyOwner.of(table.identity(HOST))
    fs.write(f"{COPY}/owner.json", copy_owner_text(owner), mode=0o600)
    fs.write(f"{COPY}/tree/a.txt", "alpha\n")
    fs.mkdir(f"{COPY}/tree/locked", 0o500)
    if not host_alive:
        table.exit(HOST)
        table.reap(HOST)
    return fs, table


def sweep(
    fs: FakeFileSystem, table: FakeProcessTable, now: float = FAKE_NOW
) -> list[dict[str, object]]:
    found = sweep_copies(
        fs, table, PARENT, fs.listdir(PARENT), own=table.own(), uid=table.own_uid(), now=now
    )
    return [c.to_json() for c in found]


@pytest.mark.req("Nothing but the trace outlives a worker")
def test_a_dead_hosts_copy_is_removed_with_its_owner_record() -> None:
    fs, table = world(host_alive=False)
    [found] = sweep(fs, table)
    assert (found["verdict"], found["removed"], found["host_pid"]) == ("stale", True, HOST)
    assert found["reason"] == f"its host (pid {HOST}) is gone"
    assert not fs.lexists(COPY)


@pytest.mark.req("Nothing but the trace outlives a worker")
def test_a_live_hosts_copy_is_never_touched() -> None:
    fs, table = world(host_alive=True)
    before = dict(fs.nodes)
    [found] = sweep(fs, table)
    assert (found["verdict"], found["removed"]) == ("live", False)
    assert fs.nodes == before


def test_a_reused_pid_does_not_keep_a_dead_hosts_copy() -> None:
    fs, table = world(host_alive=False)
    table.reuse(HOST)
    [found] = sweep(fs, table)
    assert found["verdict"] == "stale" and "now belongs to another process" in str(found["reason"])


@pytest.mark.parametrize(
    ("spoil", "verdict"),
    [
        ("another user's folder", "left"),
        ("an owner record writable by others", "left"),
        ("no owner record", "left"),
        ("no owner record, older than the margin", "stale"),
        ("a link named like a copy", "left"),
    ],
)
def test_what_is_not_plainly_a_dead_hosts_copy_is_left_until_old(spoil: str, verdict: str) -> None:
    fs, table = world(host_alive=False)
    now = FAKE_NOW
    if spoil == "another user's folder":
        fs.own(COPY, 0)
    elif spoil == "an owner record writable by others":
        fs.chmod(f"{COPY}/owner.json", 0o622)
    elif spoil.startswith("no owner record"):
        fs.remove(f"{COPY}/owner.json")
        if "older" in spoil:
            now += OWNERLESS_MARGIN_SECONDS + 1
    else:
        fs.rmtree(COPY)
        fs.mkdir("/elsewhere")
        fs.symlink("/elsewhere", COPY)
    [found] = sweep(fs, table, now)
    assert found["verdict"] == verdict, found
    assert fs.lexists(COPY) is (verdict != "stale")
    assert fs.lexists("/elsewhere") or spoil != "a link named like a copy"


def test_only_copy_folders_are_looked_at() -> None:
    fs, table = world(host_alive=False)
    for name in ("concorde-check-xyz", "concorde-check-0123456789abc", "concorde-0a1b2c-x"):
        fs.mkdir(f"{PARENT}/{name}")
    assert [c["path"] for c in sweep(fs, table)] == [COPY]
    assert is_copy_name("concorde-check-0123456789ab")
    assert not is_copy_name("concorde-check-0123456789ab/..")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("{", "not JSON"),
        ('{"kind": "concorde-workers.runtime-owner"}', "not a copy's owner record"),
        ('{"kind": "concorde-workers.check-copy-owner", "version": 1}', "host: Field required"),
    ],
)
def test_a_bad_owner_record_says_what_is_wrong(text: str, said: str) -> None:
    parsed = parse_copy_owner(text)
    assert isinstance(parsed, str) and parsed.startswith(said), parsed


def test_a_copy_that_resists_removal_is_a_failure_of_the_sweep() -> None:
    fs, table = world(host_alive=False)
    fs.fail("rmtree", COPY)
    found = sweep_copies(
        fs, table, PARENT, fs.listdir(PARENT), own=table.own(), uid=table.own_uid(), now=FAKE_NOW
    )
    [only] = found
    assert (only.verdict, only.removed) == ("stale", False)
    assert only.remains == (f"{COPY}: Permission denied",)
    report = SweepReport(runtime_parent=PARENT, copies=found)
    assert report.failures == [f"{COPY} was not removed: {COPY}: Permission denied"]
    assert f"NOT removed check copy {COPY}: its host (pid {HOST}) is gone" in sweep_account(report)
