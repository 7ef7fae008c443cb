"""ProcessTable contract: ProcTable over the real /proc and FakeProcessTable alike.

A live process is alive with its start time; once it has exited and before its parent reaps it
(a zombie) it is exited, with the same start time; once reaped it is absent. This process's own
identity names its pid, start time, boot and PID namespace, and is stable.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fakes.liveness import FakeProcessTable

from concorde_workers.adapters.processes.liveness import ProcTable
from concorde_workers.ports.processes.liveness import ProcessState, ProcessTable


class RealTable:
    def __init__(self) -> None:
        self.table = ProcTable()
        self.own_pid = os.getpid()
        self.uid = os.geteuid()
        self._children: dict[int, subprocess.Popen[bytes]] = {}

    def spawn(self) -> int:
        child = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(600)"], stdin=subprocess.DEVNULL
        )
        self._children[child.pid] = child
        return child.pid

    def exit(self, pid: int) -> None:
        self._children[pid].kill()
        # wait until it has exited, without reaping it: a zombie from here on
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)

    def reap(self, pid: int) -> None:
        self._children.pop(pid).wait()

    def close(self) -> None:
        for child in self._children.values():
            child.kill()
            child.wait()


class FakeTable:
    def __init__(self) -> None:
        self.table = FakeProcessTable()
        self.own_pid = self.table.pid
        self.uid = self.table.uid

    def spawn(self) -> int:
        return self.table.spawn()

    def exit(self, pid: int) -> None:
        self.table.exit(pid)

    def reap(self, pid: int) -> None:
        self.table.reap(pid)

    def close(self) -> None:
        pass


@pytest.fixture(params=["real", "fake"])
def world(request: pytest.FixtureRequest) -> Any:
    made = RealTable() if request.param == "real" else FakeTable()
    yield made
    made.close()


def test_implements_the_port(world: Any) -> None:
    assert isinstance(world.table, ProcessTable)


def test_own_identity_names_pid_start_boot_and_namespace(world: Any) -> None:
    own = world.table.own()
    assert own.pid == world.own_pid
    assert own.start_ticks is not None and own.boot_id and own.pid_namespace
    assert world.table.own() == own
    assert world.table.own_uid() == world.uid


def test_this_process_is_alive_with_its_own_start(world: Any) -> None:
    own = world.table.own()
    seen = world.table.observe(own.pid)
    assert (seen.state, seen.start_ticks) == (ProcessState.ALIVE, own.start_ticks)


def test_a_process_is_alive_then_exited_then_absent(world: Any) -> None:
    pid = world.spawn()
    alive = world.table.observe(pid)
    assert alive.state is ProcessState.ALIVE
    assert alive.start_ticks is not None
    assert alive.start_ticks >= world.table.own().start_ticks  # started after this process
    world.exit(pid)
    zombie = world.table.observe(pid)
    assert (zombie.state, zombie.start_ticks) == (ProcessState.EXITED, alive.start_ticks)
    world.reap(pid)
    assert world.table.observe(pid).state is ProcessState.ABSENT


@pytest.mark.parametrize("pid", [0, -1])
def test_a_pid_no_process_can_have_is_absent(world: Any, pid: int) -> None:
    assert world.table.observe(pid).state is ProcessState.ABSENT


def test_an_unreadable_or_garbled_stat_is_unknown_never_absent(tmp_path: Path) -> None:
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "stat").write_text("garbage without fields\n")
    (tmp_path / "8" / "stat").mkdir(parents=True)  # reading a directory fails: EISDIR
    table = ProcTable(proc=str(tmp_path))
    for pid in (7, 8):
        seen = table.observe(pid)
        assert seen.state is ProcessState.UNKNOWN, seen
        assert seen.problem and f"/{pid}/stat" in seen.problem
    assert table.observe(9).state is ProcessState.ABSENT
