"""The ResourceGroups contract (issue 20): CgroupGroups and FakeResourceGroups pass the same
tests.

Worlds:

- "real-v1": this machine's cgroupfs (cgroup v1 pids, memory, cpu, cpuacct), `CgroupGroups()`;
  every group is named with a prefix of this test's own and swept after it.
- "v2-layout": `CgroupGroups` over a temporary folder laid out as a cgroup v2 hierarchy whose
  host group (`0::/some/group`) delegates pids, memory and cpu: its files are regular files,
  so a process "joins" by writing its pid into the group's `cgroup.procs`, and the counters are
  what the test writes. Its kills are recorded, never sent (a pid written there may be reused).
- "fake": FakeResourceGroups; its prefix is `/usr/bin/env` setting the group's tag, which the
  test reads back from the process's environment.

A process is started behind `group.prefix()`, prints its pid and waits on its stdin: the test
waits on that line, never on time.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from fakes.resources import ENV, FakeResourceGroups, member_of
from timing import SLOW

from concorde_workers.adapters.processes.cgroups import CgroupGroups
from concorde_workers.domain.configuration.resources import (
    MIB,
    GroupCounters,
    GroupKind,
    ResourceLimits,
    judge_use,
)
from concorde_workers.ports.processes.resources import GroupFailed, ResourceGroup, ResourceGroups

V1_ROOT = "/sys/fs/cgroup"
V1_CONTROLLERS = ("pids", "memory", "cpu", "cpuacct")
LIMITS = ResourceLimits(processes=64, memory_mib=256, cpu_weight=50)
WAITS = "echo $$; read line; exit 0"  # prints its pid, then waits until the test closes its stdin


def _own_v1_groups() -> dict[str, str]:
    own: dict[str, str] = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(","):
            if controller:
                own[controller] = path
    return own


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@dataclass
class World:
    kind: str
    groups: ResourceGroups
    prefix: str
    parents: dict[str, str] = field(default_factory=dict)  # controller ("" for v2) -> folder
    kills: list[tuple[int, int]] = field(default_factory=list)
    started: list[subprocess.Popen[str]] = field(default_factory=list)

    def name(self, tail: str) -> str:
        return f"{self.prefix}{tail}"

    def folders(self, name: str) -> list[str]:
        """The group's folders that exist now (the fake: its name while it is open)."""
        if isinstance(self.groups, FakeResourceGroups):
            return [name] if name in self.groups.live else []
        return [
            p
            for p in (os.path.join(parent, name) for parent in self.parents.values())
            if os.path.isdir(p)
        ]

    def exists(self, name: str) -> bool:
        return bool(self.folders(name))

    def file(self, controller: str, name: str, file: str) -> Path:
        parent = self.parents.get(controller, self.parents.get(""))
        assert parent is not None
        return Path(parent, name, file)

    def read_limits(self, name: str) -> ResourceLimits:
        """The limits the group holds, read back from its files (the fake: as it recorded)."""
        if isinstance(self.groups, FakeResourceGroups):
            return self.groups.live[name].limits
        if self.kind == "real-v1":

            def read(controller: str, file: str) -> int:
                return int(self.file(controller, name, file).read_text())

            return ResourceLimits(
                processes=read("pids", "pids.max"),
                memory_mib=read("memory", "memory.limit_in_bytes") // MIB,
                cpu_weight=read("cpu", "cpu.shares") * 100 // 1024,
            )

        def read2(file: str) -> int:
            return int(self.file("", name, file).read_text())

        return ResourceLimits(
            processes=read2("pids.max"),
            memory_mib=read2("memory.max") // MIB,
            cpu_weight=read2("cpu.weight"),
        )

    def start(self, group: ResourceGroup, script: str = WAITS) -> tuple[subprocess.Popen[str], int]:
        proc = subprocess.Popen(
            [*group.prefix(), "sh", "-c", script],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.started.append(proc)
        if isinstance(self.groups, FakeResourceGroups):  # what the fake cannot see: said
            self.groups.busy.add(group.name)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip().isdigit(), (line, proc.wait(SLOW), proc.stderr and proc.stderr.read())
        return proc, int(line)

    def holds(self, group: ResourceGroup, pid: int) -> bool:
        """Whether the process `pid` is in the group: listed in each of its folders'
        cgroup.procs (the fake: its environment carries the group's tag)."""
        if isinstance(self.groups, FakeResourceGroups):
            return member_of(pid) == self.groups.live[group.name].tag
        folders = self.folders(group.name)
        return bool(folders) and all(
            str(pid) in Path(f, "cgroup.procs").read_text().split() for f in folders
        )

    def ends_after_close(self, proc: subprocess.Popen[str], pid: int) -> int:
        """What became of a process still waiting when its group was closed: the real
        hierarchy's close killed it; the layout's asked to kill it (recorded) and the fake's
        cannot know it, so the test lets it end."""
        if self.kind == "real-v1":
            return proc.wait(SLOW)
        if self.kind == "v2-layout":
            assert self.kills == [(pid, signal.SIGKILL)]
        assert proc.poll() is None, "a process the group did not kill ended"
        assert proc.stdin is not None
        proc.stdin.close()
        return proc.wait(SLOW)


def _real_v1() -> World:
    own = _own_v1_groups()
    parents = {c: os.path.join(V1_ROOT, c, own[c].lstrip("/")) for c in V1_CONTROLLERS}
    return World("real-v1", CgroupGroups(), f"cwtest-{uuid.uuid4().hex[:10]}-", parents)


def _sweep_v1(world: World) -> list[str]:
    """Remove whatever the test left (through the adapter, then by hand); the names left."""
    left = world.groups.leftovers(world.prefix)
    for name in left:
        with contextlib.suppress(GroupFailed):
            world.groups.remove(name)
    stuck: list[str] = []
    for parent in world.parents.values():
        for name in os.listdir(parent):
            folder = os.path.join(parent, name)
            if name.startswith(world.prefix) and os.path.isdir(folder):
                for pid in Path(folder, "cgroup.procs").read_text().split():
                    with contextlib.suppress(OSError):
                        os.kill(int(pid), signal.SIGKILL)
                try:
                    os.rmdir(folder)
                except OSError:
                    stuck.append(folder)
    return left + stuck


def v2_layout(
    tmp: Path,
    remove_dir: Callable[[str], None] = shutil.rmtree,
    own: str = "/some/group",
    subtree: str = "pids memory cpu",
) -> World:
    """A cgroup v2 hierarchy in `tmp`: the host's group `own` hands `subtree` down."""
    root = tmp / "cgroup2"
    _write(root / "cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n")
    _write(root / "cgroup.subtree_control", "cpu memory pids\n")
    parent = root / own.lstrip("/")
    _write(parent / "cgroup.controllers", "cpu memory pids\n")
    _write(parent / "cgroup.subtree_control", f"{subtree}\n")
    _write(parent / "cgroup.procs", f"{os.getpid()}\n")
    _write(tmp / "self-cgroup", f"0::{own}\n")
    kills: list[tuple[int, int]] = []
    groups = CgroupGroups(
        root=str(root),
        self_cgroup=str(tmp / "self-cgroup"),
        remove_dir=remove_dir,
        kill=lambda pid, sig: kills.append((pid, sig)),
    )
    return World("v2-layout", groups, "run-", {"": str(parent)}, kills)


@pytest.fixture(params=["real-v1", "v2-layout", "fake"])
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    if request.param == "real-v1":
        made = _real_v1()
    elif request.param == "v2-layout":
        made = v2_layout(tmp_path)
    else:
        made = World("fake", FakeResourceGroups(), "run-")
    try:
        yield made
    finally:
        for proc in made.started:
            if proc.poll() is None:
                proc.kill()
            proc.wait(SLOW)
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
        if made.kind == "real-v1":
            assert _sweep_v1(made) == [], "the test left control groups behind"


@pytest.fixture
def real_v1() -> Iterator[World]:
    made = _real_v1()
    try:
        yield made
    finally:
        assert _sweep_v1(made) == [], "the test left control groups behind"


# --- every world ----------------------------------------------------------------------------


def test_a_machine_with_groups_says_it_enforces(world: World) -> None:
    answer = world.groups.enforcement()
    assert answer.kind is not GroupKind.NONE and answer.problem is None
    assert answer.cpu is True
    assert answer.text().startswith("enforced by the kernel (cgroup v")
    if world.kind != "fake":
        assert [os.path.normpath(p) for p in answer.parents] == [
            os.path.normpath(p) for p in world.parents.values()
        ]
        assert answer.kind is (GroupKind.V1 if world.kind == "real-v1" else GroupKind.V2)


def test_open_writes_the_limits(world: World) -> None:
    name = world.name("limits")
    group = world.groups.open(name, LIMITS)
    try:
        assert group.name == name
        assert world.exists(name)
        assert world.read_limits(name) == LIMITS
        assert group.reached() is False
    finally:
        group.close()


def test_a_process_behind_the_prefix_lands_in_the_group_and_close_kills_what_is_left(
    world: World,
) -> None:
    name = world.name("lands")
    group = world.groups.open(name, LIMITS)
    proc, pid = world.start(group)
    assert pid == proc.pid  # the join execs: the round's command is the process started
    assert world.holds(group, pid)
    counters = group.close()
    assert isinstance(counters, GroupCounters)
    assert (counters.forks_refused, counters.oom_kills) == (0, 0)
    code = world.ends_after_close(proc, pid)
    assert code == (-signal.SIGKILL if world.kind == "real-v1" else 0)
    assert not world.exists(name)


def test_folders_are_the_group_s_own_each_hierarchy_once(world: World) -> None:
    """What a confined round sees as its control group filesystems (issue 30 §2): its own
    group's folder in each hierarchy, absolute, named after the group, none twice."""
    name = world.name("folders")
    group = world.groups.open(name, LIMITS)
    try:
        folders = group.folders()
        assert folders and len(set(folders)) == len(folders)
        assert all(os.path.isabs(f) and os.path.basename(f) == name for f in folders)
        if world.kind != "fake":
            assert all(os.path.isdir(f) for f in folders)
    finally:
        group.close()


def test_close_removes_the_group_returns_its_counters_and_a_second_close_is_nothing(
    world: World,
) -> None:
    name = world.name("close")
    group = world.groups.open(name, LIMITS)
    assert world.exists(name)
    counters = group.close()
    assert not world.exists(name)
    assert judge_use(counters, LIMITS).reached == ()
    if world.kind == "real-v1":  # the kernel's counters of a group nothing ran in
        assert counters == GroupCounters(memory_peak_bytes=0, processes_peak=0, cpu_seconds=0.0)
    assert group.close() == GroupCounters()
    assert world.groups.leftovers(world.prefix) == []


def test_leftovers_lists_the_open_groups_and_remove_closes_one(world: World) -> None:
    a, b, c = (world.name(t) for t in ("a", "b", "c"))
    groups = {n: world.groups.open(n, LIMITS) for n in (a, b, c)}
    try:
        groups[b].close()
        assert world.groups.leftovers(world.prefix) == [a, c]
        assert world.groups.leftovers(world.name("c")) == [c]
        assert world.groups.leftovers(world.name("zz")) == []
        counters = world.groups.remove(a)
        assert (counters.forks_refused, counters.oom_kills) == (0, 0)
        assert not world.exists(a)
        assert world.groups.leftovers(world.prefix) == [c]
    finally:
        for group in groups.values():
            group.close()
    assert world.groups.leftovers(world.prefix) == []


def test_idle_lists_the_groups_that_hold_no_process(world: World) -> None:
    a, b = world.name("quiet"), world.name("running")
    quiet, running = world.groups.open(a, LIMITS), world.groups.open(b, LIMITS)
    try:
        _, pid = world.start(running)
        assert world.holds(running, pid)
        assert world.groups.idle(world.prefix, 0) == [a]
        assert world.groups.idle(world.prefix, 3600) == []  # made just now: maybe a live host's
        assert world.groups.idle(world.name("zz"), 0) == []
    finally:
        quiet.close()
        running.close()
    assert world.groups.idle(world.prefix, 0) == []


def test_remove_of_a_name_that_is_not_there_reads_and_kills_nothing(
    world: World,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No folder, no group: nothing is read or killed, not even files of the same names in
    the host's working folder (a decoy `cgroup.procs` listing a live process of the test's)."""
    decoy = subprocess.Popen(["sleep", "1000"])
    try:
        here = tmp_path / "cwd"
        _write(here / "cgroup.procs", f"{decoy.pid}\n")
        _write(here / "pids.events", "max 9\n")
        _write(here / "memory.events", "oom_kill 4\n")
        _write(here / "memory.oom_control", "oom_kill 4\n")
        _write(here / "memory.max_usage_in_bytes", "999\n")
        monkeypatch.chdir(here)
        assert world.groups.remove(world.name("ghost")) == GroupCounters()
        assert decoy.poll() is None, "remove killed a process listed in the working folder"
        assert world.kills == []
    finally:
        decoy.kill()
        decoy.wait(SLOW)


def test_opening_an_open_name_fails_and_leaves_the_first_group_whole(world: World) -> None:
    name = world.name("twice")
    first = world.groups.open(name, LIMITS)
    try:
        with pytest.raises(GroupFailed) as failed:
            world.groups.open(name, ResourceLimits(processes=32))
        assert name in failed.value.text and "could not be made" in failed.value.text
        assert world.exists(name)
        if world.kind == "real-v1":  # every controller's folder is still there
            assert len(world.folders(name)) == len(V1_CONTROLLERS)
        assert world.read_limits(name) == LIMITS
        _, pid = world.start(first)
        assert world.holds(first, pid)
        assert world.groups.leftovers(world.prefix) == [name]
    finally:
        first.close()
    assert not world.exists(name)


# --- a machine without groups (the real adapter when /proc/self/cgroup cannot be read) -------


@pytest.fixture(params=["real", "fake"])
def unenforced(request: pytest.FixtureRequest, tmp_path: Path) -> ResourceGroups:
    if request.param == "real":
        return CgroupGroups(root=str(tmp_path), self_cgroup=str(tmp_path / "no-such-file"))
    return FakeResourceGroups.unenforced("/proc/self/cgroup cannot be read")


def test_a_machine_without_groups_says_why_and_makes_none(unenforced: ResourceGroups) -> None:
    answer = unenforced.enforcement()
    assert answer.kind is GroupKind.NONE
    assert answer.problem is not None and "cannot be read" in answer.problem
    assert answer.text() == f"not enforced: {answer.problem}"
    with pytest.raises(GroupFailed) as failed:
        unenforced.open("run-r1", LIMITS)
    assert failed.value.text == f"no resource group can be made: {answer.problem}"
    assert unenforced.leftovers("") == []


# --- a group that cannot be removed --------------------------------------------------------


@pytest.fixture(params=["v2-layout", "fake"])
def sticky(request: pytest.FixtureRequest, tmp_path: Path) -> World:
    """A world whose group folders cannot be removed: the layout's are not empty (os.rmdir),
    the fake's are told to stay."""
    if request.param == "v2-layout":
        return v2_layout(tmp_path, remove_dir=os.rmdir)
    fake = FakeResourceGroups()
    fake.stays.add("run-stuck")
    return World("fake", fake, "run-")


def test_a_group_that_stays_is_said_and_left_for_the_sweep(sticky: World) -> None:
    name = sticky.name("stuck")
    group = sticky.groups.open(name, LIMITS)
    with pytest.raises(GroupFailed) as failed:
        group.close()
    assert failed.value.text.startswith(f"the resource group {name} stays: ")
    assert sticky.exists(name)
    assert sticky.groups.leftovers(sticky.prefix) == [name]
    if isinstance(sticky.groups, FakeResourceGroups):
        sticky.groups.stays.clear()
    else:  # what made the folder stay goes: the sweep removes it
        for entry in Path(sticky.folders(name)[0]).iterdir():
            entry.unlink()
    sticky.groups.remove(name)
    assert not sticky.exists(name)
    assert sticky.groups.leftovers(sticky.prefix) == []


# --- real cgroup v1: the kernel's own limits --------------------------------------------------


def test_real_v1_writes_each_controller_s_files(real_v1: World) -> None:
    name = real_v1.name("files")
    group = real_v1.groups.open(name, LIMITS)
    try:

        def read(controller: str, file: str) -> str:
            return real_v1.file(controller, name, file).read_text().strip()

        assert read("pids", "pids.max") == "64"
        assert read("memory", "memory.limit_in_bytes") == str(256 * MIB)
        assert read("memory", "memory.memsw.limit_in_bytes") == str(256 * MIB)
        assert read("cpu", "cpu.shares") == "512"
        assert len(real_v1.folders(name)) == len(V1_CONTROLLERS)
    finally:
        group.close()
    assert real_v1.folders(name) == []


def test_real_v1_prefix_passes_the_environment_unchanged(real_v1: World) -> None:
    group = real_v1.groups.open(real_v1.name("environment"), LIMITS)
    try:
        ran = subprocess.run(
            [*group.prefix(), "/usr/bin/env"],
            env={"A": "1", "LANG": "C.UTF-8"},
            capture_output=True,
            text=True,
            timeout=SLOW,
            check=True,
        )
    finally:
        group.close()
    assert sorted(ran.stdout.splitlines()) == ["A=1", "LANG=C.UTF-8"]  # no PWD of the shell's


def test_real_v1_refuses_a_process_past_the_process_limit_and_says_so(real_v1: World) -> None:
    limits = ResourceLimits(processes=16)
    group = real_v1.groups.open(real_v1.name("forks"), limits)
    try:
        forks = (
            'i=0; while [ "$i" -lt 40 ]; do sleep 1000 </dev/null >/dev/null 2>&1 & '
            'i=$((i + 1)); done; echo "made $i"'
        )
        ran = subprocess.run(
            [*group.prefix(), "sh", "-c", forks],
            capture_output=True,
            text=True,
            timeout=SLOW,
            check=False,
        )
        assert "made 40" not in ran.stdout, (ran.stdout, ran.stderr)
        assert group.reached() is True
        counters = group.close()  # kills the sleeps: the group can go
    finally:
        group.close()
    assert counters.forks_refused >= 1
    assert counters.processes_peak == 16
    assert counters.oom_kills == 0
    reached = judge_use(counters, limits).reached
    assert len(reached) == 1
    assert reached[0].startswith("the run's process limit (16 processes) refused ")
    assert reached[0].endswith(", peak 16")
    assert not real_v1.exists(group.name)


def test_real_v1_kills_a_process_past_the_memory_limit_and_counts_it(real_v1: World) -> None:
    limits = ResourceLimits(memory_mib=128)
    group = real_v1.groups.open(real_v1.name("memory"), limits)
    try:
        hog = "b = b'x' * (400 << 20); print(len(b))"
        ran = subprocess.run(
            [*group.prefix(), sys.executable, "-c", hog],
            capture_output=True,
            text=True,
            timeout=SLOW,
            check=False,
        )
        assert ran.returncode == -signal.SIGKILL, (ran.returncode, ran.stdout, ran.stderr)
        assert group.reached() is True
        counters = group.close()
    finally:
        group.close()
    assert counters.oom_kills >= 1
    assert counters.memory_peak_bytes is not None
    assert 64 * MIB < counters.memory_peak_bytes <= 128 * MIB
    assert counters.forks_refused == 0
    assert counters.cpu_seconds is not None and counters.cpu_seconds > 0
    reached = judge_use(counters, limits).reached
    assert len(reached) == 1
    assert reached[0].startswith(
        "the run's memory limit (128 MiB, swap off) made the kernel "
        f"kill {counters.oom_kills} process(es), peak "
    )


# --- the v2 layout: counters parsed, enforcement asked ---------------------------------------


def test_v2_layout_writes_the_group_s_files(tmp_path: Path) -> None:
    world = v2_layout(tmp_path)
    group = world.groups.open(world.name("files"), LIMITS)
    folder = Path(world.parents[""], group.name)
    assert {
        f: (folder / f).read_text()
        for f in ("pids.max", "memory.max", "memory.swap.max", "cpu.weight")
    } == {
        "pids.max": "64",
        "memory.max": str(256 * MIB),
        "memory.swap.max": "0",
        "cpu.weight": "50",
    }
    assert group.prefix()[-1] == str(folder / "cgroup.procs")
    group.close()
    assert not folder.exists()


def test_v2_layout_counters_are_read_from_the_group_s_files(tmp_path: Path) -> None:
    world = v2_layout(tmp_path)
    group = world.groups.open(world.name("counted"), LIMITS)
    folder = Path(world.parents[""], group.name)
    assert group.reached() is False
    _write(folder / "memory.peak", "123456789\n")
    _write(folder / "memory.events", "low 0\nhigh 0\nmax 5\noom 2\noom_kill 2\n")
    _write(folder / "pids.peak", "7\n")
    _write(folder / "pids.events", "max 3\n")
    _write(folder / "cpu.stat", "usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\n")
    assert group.reached() is True
    counters = group.close()
    assert counters == GroupCounters(
        memory_peak_bytes=123456789, oom_kills=2, processes_peak=7, forks_refused=3, cpu_seconds=1.5
    )
    assert judge_use(counters, LIMITS).reached == (
        "the run's process limit (64 processes) refused 3 new process(es), peak 7",
        "the run's memory limit (256 MiB, swap off) made the kernel kill 2 process(es), "
        "peak 118 MiB",
    )


def test_v2_layout_without_memory_delegated_is_not_enforced_and_names_the_file(
    tmp_path: Path,
) -> None:
    world = v2_layout(tmp_path, subtree="pids cpu")
    answer = world.groups.enforcement()
    assert answer.kind is GroupKind.NONE
    assert answer.problem is not None
    assert f"{world.parents['']} hands no memory controller" in answer.problem
    assert "(cgroup.subtree_control)" in answer.problem
    with pytest.raises(GroupFailed):
        world.groups.open("run-r1", LIMITS)
    assert not Path(world.parents[""], "run-r1").exists()


def test_v2_at_the_root_enables_the_controllers_it_needs(tmp_path: Path) -> None:
    world = v2_layout(tmp_path, own="/", subtree="")
    root = Path(world.parents[""])
    answer = world.groups.enforcement()
    assert answer.kind is GroupKind.V2
    assert [os.path.normpath(p) for p in answer.parents] == [str(root)]
    assert (root / "cgroup.subtree_control").read_text() == "+pids +memory"
    assert answer.cpu is False  # cpu was not enabled, and is not needed
    group = world.groups.open("run-r1", LIMITS)
    assert (root / "run-r1" / "pids.max").read_text() == "64"
    assert not (root / "run-r1" / "cpu.weight").exists()
    group.close()


def test_v2_at_the_root_whose_subtree_control_refuses_is_not_enforced(tmp_path: Path) -> None:
    world = v2_layout(tmp_path, own="/", subtree="")
    root = Path(world.parents[""])
    (root / "cgroup.subtree_control").unlink()
    (root / "cgroup.subtree_control").mkdir()  # opening it for writing fails
    answer = world.groups.enforcement()
    assert answer.kind is GroupKind.NONE
    assert answer.problem is not None
    assert answer.problem.startswith(str(root))
    assert answer.problem.endswith(
        "/cgroup.subtree_control refused pids and memory: Is a directory"
    )


def test_an_unreadable_self_cgroup_is_not_enforced(tmp_path: Path) -> None:
    missing = tmp_path / "gone" / "cgroup"
    groups = CgroupGroups(root=str(tmp_path), self_cgroup=str(missing))
    answer = groups.enforcement()
    assert answer.kind is GroupKind.NONE
    assert answer.problem == f"{missing} cannot be read"


# --- a v1 layout whose cpu and cpuacct are mounted together (systemd's usual) ---------------


def test_v1_layout_with_cpu_and_cpuacct_mounted_together_makes_one_folder_for_both(
    tmp_path: Path,
) -> None:
    """/sys/fs/cgroup/cpu and /sys/fs/cgroup/cpuacct are links to cpu,cpuacct: the group's
    folder in them is one folder, made once."""
    root = tmp_path / "cgroup"
    for controller in ("pids", "memory", "cpu,cpuacct"):
        (root / controller / "host").mkdir(parents=True)
    (root / "cpu").symlink_to("cpu,cpuacct")
    (root / "cpuacct").symlink_to("cpu,cpuacct")
    _write(tmp_path / "self-cgroup", "5:pids:/host\n4:memory:/host\n3:cpu,cpuacct:/host\n0::/\n")
    kills: list[tuple[int, int]] = []
    groups = CgroupGroups(
        root=str(root),
        self_cgroup=str(tmp_path / "self-cgroup"),
        remove_dir=shutil.rmtree,
        kill=lambda p, s: kills.append((p, s)),
    )
    assert groups.enforcement().kind is GroupKind.V1
    group = groups.open("run-r1", LIMITS)
    folder = root / "cpu,cpuacct" / "host" / "run-r1"
    assert (folder / "cpu.shares").read_text() == "512"
    assert sorted(group.folders()) == sorted(
        str(root / c / "host" / "run-r1") for c in ("pids", "memory", "cpu,cpuacct")
    )
    assert (root / "pids" / "host" / "run-r1" / "pids.max").read_text() == "64"
    assert (root / "memory" / "host" / "run-r1" / "memory.limit_in_bytes").read_text() == str(
        256 * MIB
    )
    _write(folder / "cpuacct.usage", "2500000000\n")
    assert groups.leftovers("run-") == ["run-r1"]
    counters = group.close()
    assert counters.cpu_seconds == 2.5
    assert not folder.exists() and not (root / "pids" / "host" / "run-r1").exists()


# --- the fake's own knobs -------------------------------------------------------------------


def test_the_fake_records_and_says_what_a_test_scripted() -> None:
    fake = FakeResourceGroups()
    scripted = GroupCounters(memory_peak_bytes=5 * MIB, oom_kills=1, processes_peak=3)
    fake.script("run-r1", scripted)
    fake.script("run-r2", GroupCounters(), reached=True)
    one = fake.open("run-r1", LIMITS)
    defaults = ResourceLimits()
    two = fake.open("run-r2", defaults)
    three = fake.open("run-r3", LIMITS)
    assert (one.reached(), two.reached(), three.reached()) == (True, True, False)
    assert one.prefix()[0] == ENV and one.prefix()[1].endswith("=" + one.tag)
    assert one.close() == scripted
    assert fake.remove("run-r2") == GroupCounters()
    assert fake.opened == [("run-r1", LIMITS), ("run-r2", defaults), ("run-r3", LIMITS)]
    assert (fake.closed, fake.removed) == (["run-r1", "run-r2"], ["run-r2"])
    assert list(fake.live) == ["run-r3"]
    assert fake.enforcement().kind is GroupKind.V2 and fake.enforcement_asked == 1


def test_the_fake_s_idle_groups_follow_its_clock_and_what_a_test_says_is_busy() -> None:
    now = [1000.0]
    fake = FakeResourceGroups(clock=lambda: now[0])
    fake.open("run-old", LIMITS)
    now[0] += 30
    fake.open("run-new", LIMITS)
    fake.open("run-busy", LIMITS)
    fake.busy.add("run-busy")
    assert fake.idle("run-", 60) == []
    now[0] += 31
    assert fake.idle("run-", 60) == ["run-old"]
    now[0] += 30
    assert fake.idle("run-", 60) == ["run-new", "run-old"]
    fake.remove("run-busy")
    assert "run-busy" not in fake.busy and fake.idle("run-", 0) == ["run-new", "run-old"]


# --- watching for the moment a limit is reached ----------------------------------------------


def test_a_watch_stopped_before_any_limit_never_calls(world: World) -> None:
    group = world.groups.open(world.name("quiet"), LIMITS)
    try:
        called = threading.Event()
        stop = group.watch(called.set)
        proc, _ = world.start(group)
        stop()  # returns once its thread has ended
        assert not called.is_set()
        assert proc.stdin is not None
        proc.stdin.close()
        assert proc.wait(SLOW) == 0
    finally:
        group.close()


def test_fake_watch_is_told_when_a_script_says_a_limit_was_reached() -> None:
    fake = FakeResourceGroups()
    group = fake.open("run-r1", LIMITS)
    called = threading.Event()
    stop = group.watch(called.set)
    assert not called.is_set()
    fake.script("run-r1", GroupCounters(forks_refused=1), reached=True)
    assert called.wait(SLOW)
    stop()
    late = threading.Event()
    group.watch(late.set)()  # a watch of a group past its limit is told at once
    assert late.wait(SLOW)


def test_real_v1_watch_is_told_of_a_refused_fork_while_the_forker_runs_on(real_v1: World) -> None:
    """cgroup v1 never announces a refused fork: the watch reads the counter on its tick."""
    group = real_v1.groups.open(real_v1.name("watch-forks"), ResourceLimits(processes=16))
    try:
        called = threading.Event()
        stop = group.watch(called.set)
        forks = (
            "echo $$; (for i in $(seq 40); do sleep 1000 </dev/null >/dev/null 2>&1 & "
            "done) 2>/dev/null; read line"
        )  # the subshell dies at its refused fork
        proc, _ = real_v1.start(group, forks)
        assert called.wait(SLOW), "the watch never said the process limit was reached"
        assert proc.poll() is None  # told while the forker still runs, not at its end
        stop()
    finally:
        group.close()


def test_real_v1_watch_is_told_of_a_process_killed_at_the_memory_limit(real_v1: World) -> None:
    """cgroup v1 announces an OOM through an eventfd on memory.oom_control."""
    group = real_v1.groups.open(real_v1.name("watch-memory"), ResourceLimits(memory_mib=128))
    try:
        called = threading.Event()
        stop = group.watch(called.set)
        hog = f"echo $$; {sys.executable} -c \"b = b'x' * (400 << 20)\"; read line"
        proc, _ = real_v1.start(group, hog)
        assert called.wait(SLOW), "the watch never said the memory limit was reached"
        stop()
        assert proc.poll() is None
    finally:
        group.close()
