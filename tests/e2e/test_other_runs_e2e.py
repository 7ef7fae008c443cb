"""End-to-end: nothing a worker or a check reads names another run, and nothing a worker makes
outlives its run (issue 30 §2; docs/decisions.md "No other run named"), with the real pi and the
real Claude Code against their scripted model servers.

Before the run the test makes what another run on the machine would hold: a control group named
as a round's (`concorde-<hex>-<hex>-r1`, beside the host's own, where this machine gives groups),
a System V shared memory segment and a listening Unix socket named as a runtime directory's. The
worker's Bash lists every control group filesystem, its own /proc/self/cgroup and
/proc/self/mountinfo, the System V segments and the Unix sockets, and makes a segment of its
own; the round's check lists the same. Neither names the other run's group, segment or socket,
and the worker's segment is gone with its run.
"""

from __future__ import annotations

import ctypes
import secrets
import shutil
import socket
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from e2e.backends import BackendWorld, backend_world
from e2e.test_check_attack_e2e import checked, checked_run
from timing import SLOW

from concorde_workers.adapters.processes.cgroups import CgroupGroups
from concorde_workers.domain.configuration.request import Limits
from concorde_workers.domain.configuration.resources import GroupKind, ResourceLimits
from concorde_workers.domain.run.checks import Check

pytestmark = pytest.mark.e2e
__all__ = ["backend_world"]  # the fixture, imported for pytest

IPC_CREAT, IPC_RMID = 0o1000, 0


@dataclass(frozen=True)
class Decoys:
    """What another run holds: its round's control group (None where this machine makes
    none) and a System V segment's key; and the key the worker's own segment takes."""

    group: str | None
    key: int
    worker_key: int
    socket: str


def segments() -> str:
    """The host's System V shared memory segments (keys in decimal)."""
    return Path("/proc/sysvipc/shm").read_text()


@pytest.fixture
def decoys() -> Iterator[Decoys]:
    groups = CgroupGroups()
    name = f"concorde-{secrets.token_hex(3)}-{secrets.token_hex(4)}-r1"
    group = (
        groups.open(name, ResourceLimits())
        if groups.enforcement().kind is not GroupKind.NONE
        else None
    )
    libc = ctypes.CDLL(None, use_errno=True)
    key = secrets.randbelow(2**30) + 1
    made = libc.shmget(key, 4096, IPC_CREAT | 0o600)
    assert made >= 0, ctypes.get_errno()
    worker_key = secrets.randbelow(2**30) + 1
    folder = Path(tempfile.mkdtemp(prefix="concorde-decoy-", dir="/tmp"))
    listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listening.bind(str(folder / "other-run.sock"))
    listening.listen()
    try:
        yield Decoys(None if group is None else name, key, worker_key, folder.name)
    finally:
        listening.close()
        shutil.rmtree(folder, ignore_errors=True)
        libc.shmctl(made, IPC_RMID, None)
        left = libc.shmget(worker_key, 0, 0)  # a worker's segment that outlived its run
        if left >= 0:
            libc.shmctl(left, IPC_RMID, None)
        if group is not None:
            group.close()


def listing(worker_key: int | None = None) -> str:
    """What a worker's Bash (or a check) reads that could name another run; with a key, it
    makes a System V segment of its own first."""
    make = (
        f'python3 -c \'import ctypes; print("made", ctypes.CDLL(None).shmget({worker_key}, '
        "4096, 0o1600))'; "
        if worker_key
        else ""
    )
    return (
        f"{make}"
        "echo CGROUPS; for m in $(grep -E ' - cgroup2? ' /proc/self/mountinfo | cut -d' ' -f5); "
        'do ls -R "$m" 2>/dev/null; done | grep concorde; '
        "echo SELF; cat /proc/self/cgroup; echo MOUNTS; cat /proc/self/mountinfo; "
        "echo IPC; cat /proc/sysvipc/shm; echo UNIX; cat /proc/net/unix; echo LISTED"
    )


def judge(said: str, decoys: Decoys) -> None:
    """Nothing of the other run is named; no control group at all is (its own is not
    named either: its control group namespace's root)."""
    assert "LISTED" in said, said
    cgroups = said.split("CGROUPS", 1)[1].split("SELF", 1)[0]
    assert "concorde" not in cgroups, cgroups
    own = said.split("SELF", 1)[1].split("MOUNTS", 1)[0]
    assert "concorde" not in own, own
    if decoys.group is not None:
        assert decoys.group not in said, said
    ipc = said.split("IPC", 1)[1].split("UNIX", 1)[0]
    assert str(decoys.key) not in ipc, ipc
    assert decoys.socket not in said, said


@pytest.mark.req("Nothing but the trace outlives a worker")
def test_the_worker_s_shell_names_no_other_run_and_leaves_no_segment(
    backend_world: BackendWorld, decoys: Decoys
) -> None:
    w = backend_world
    limits = Limits(timeout_seconds=SLOW, max_turns=6, rounds=0, retries=0, retry_delay_seconds=0)
    run, said = w.command(listing(decoys.worker_key), limits=limits)
    assert run.record.status == "ok", run.explain()
    assert "made " in said and "made -1" not in said, said
    judge(said, decoys)
    assert str(decoys.worker_key) not in segments()
    w.assert_cleaned(run)


CHECK = Check(id="listing", command=listing() + "; false", timeout_seconds=SLOW)
"""Failing from the start, it is never blamed on the worker (the run ends ok); its log is
the check node's output.log."""
LIMITS = Limits(timeout_seconds=SLOW, max_turns=10, rounds=1, retries=0, retry_delay_seconds=0)


def check_logs(run_dir: Path) -> str:
    return "".join(p.read_text() for p in run_dir.rglob("output.log"))


def test_a_check_names_no_other_run(backend_world: BackendWorld, decoys: Decoys) -> None:
    w = backend_world
    w.answer(2)
    request = checked(w.request(LIMITS))
    run = checked_run(w.environ, w.temp_root, request, w.observed_backend(), (CHECK,))
    judge(check_logs(run.run_dir), decoys)
