"""Control groups in cgroupfs (issue 20): the real `ResourceGroups`.

What a machine gives is asked once (`enforcement`), from `/proc/self/cgroup` and the cgroup
filesystems under `root` (adapters/processes/cgroup_machine.py): cgroup v1 with the `pids` and
`memory` controllers, a cgroup v2 group that hands them to its children, or none and why.

The limits are files written once (`domain.configuration.resources.limit_writes`); a round's
process joins its group through `domain.configuration.resources.join_prefix` before it execs; a
group reads its own counters; closing a group kills what is left in it, reads its counters and
removes it. Everything here is a file read, a write, a `mkdir` or
an `rmdir`; no program runs.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import select
import signal
import threading
import time
from collections.abc import Callable

from concorde_workers.adapters.processes.cgroup_machine import Answer, ask_enforcement, read_small
from concorde_workers.domain.configuration.resources import (
    GROUP_PREFIX,
    Enforcement,
    GroupCounters,
    GroupKind,
    ResourceLimits,
    join_prefix,
    judge_use,
    limit_writes,
)
from concorde_workers.ports.processes.resources import GroupFailed, ResourceGroup, ResourceGroups

__all__ = ["CgroupGroup", "CgroupGroups", "close_check_group", "open_check_group"]

V1_PIDS_TICK_SECONDS = 1.0  # cgroup v1 never announces a refused fork: read it once a second
REMOVE_TRIES = 20  # a killed process leaves its group once the kernel has reaped it


def _field(text: str | None, key: str) -> int:
    """`key N` of a flat-keyed counter file (memory.events, pids.events, memory.oom_control)."""
    for line in (text or "").splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return 0


def _number(text: str | None) -> int | None:
    value = (text or "").strip()
    return int(value) if value.isdigit() else None


class CgroupGroup:
    """One round's group: its folder in each controller (v1) or its one folder (v2)."""

    def __init__(self, groups: CgroupGroups, name: str, folders: dict[str, str]) -> None:
        self.name = name
        self._groups = groups
        self._folders = folders  # controller ("" for v2) -> folder
        self._closed = False

    def _file(self, controller: str, file: str) -> str:
        folder = self._folders.get(controller) or self._folders.get("", "")
        return os.path.join(folder, file)

    def prefix(self) -> list[str]:
        procs = [os.path.join(folder, "cgroup.procs") for folder in self._folders.values()]
        return join_prefix(self._groups.shell, procs)

    def folders(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(os.path.realpath(f) for f in self._folders.values()))

    def reached(self) -> bool:
        return any(self._events())

    def watch(self, on_reached: Callable[[], None]) -> Callable[[], None]:
        return _Watch(self, on_reached).stop

    def counters(self) -> GroupCounters:
        refused, killed = self._events()
        if "" in self._folders:
            usage = _field(read_small(self._file("", "cpu.stat")), "usage_usec")
            peak = _number(read_small(self._file("", "memory.peak")))
            cpu = usage / 1e6 if usage else None
        else:
            peak = _number(read_small(self._file("memory", "memory.max_usage_in_bytes")))
            ns = (
                _number(read_small(self._file("cpuacct", "cpuacct.usage")))
                if ("cpuacct" in self._folders)
                else None
            )
            cpu = ns / 1e9 if ns is not None else None
        processes = _number(read_small(self._file("pids", "pids.peak")))
        return GroupCounters(
            memory_peak_bytes=peak,
            oom_kills=killed,
            processes_peak=processes,
            forks_refused=refused,
            cpu_seconds=cpu,
        )

    def close(self) -> GroupCounters:
        if self._closed:
            return GroupCounters()
        self._closed = True
        return self._groups.close(self)

    def _events(self) -> tuple[int, int]:
        """(forks refused, processes the kernel's OOM killer killed) so far."""
        if "" in self._folders:  # v2
            return (
                _field(read_small(self._file("", "pids.events")), "max"),
                _field(read_small(self._file("", "memory.events")), "oom_kill"),
            )
        return (
            _field(read_small(self._file("pids", "pids.events")), "max"),
            _field(read_small(self._file("memory", "memory.oom_control")), "oom_kill"),
        )


class _Watch:
    """A thread that waits on the kernel's word that a group's counter changed and calls
    `on_reached` once the group has reached a limit. cgroup v2 announces both: `pids.events`
    and `memory.events` wake a poll (POLLPRI) when they change. cgroup v1 announces an OOM
    through an eventfd registered on `memory.oom_control` but a refused fork not at all
    (measured here, kernel 6.18: `pids.events` never wakes a poll), so on v1 the counter is
    also read every `V1_PIDS_TICK_SECONDS` — one small file read a second, never a busy wait
    (docs/decisions.md "Per-run resource limits")."""

    def __init__(self, group: CgroupGroup, on_reached: Callable[[], None]) -> None:
        self._group = group
        self._on_reached = on_reached
        self._files: list[int] = []  # kernfs files re-read after each wake (it re-arms them)
        self._counters: list[int] = []  # eventfds read after each wake
        self._poller = select.poll()
        self._tick: float | None = None
        self._stop_read, self._stop_write = os.pipe()
        self._poller.register(self._stop_read, select.POLLIN)
        self._arm()
        self._thread = threading.Thread(
            target=self._run, name=f"cgroup-watch-{group.name}", daemon=True
        )
        self._thread.start()

    def _arm(self) -> None:
        group = self._group
        if "" in group._folders:  # v2
            for file in ("pids.events", "memory.events"):
                self._file(group._file("", file))
            return
        self._tick = V1_PIDS_TICK_SECONDS
        with contextlib.suppress(OSError):  # no eventfd: the tick reads the OOM count too
            control = os.open(group._file("memory", "memory.oom_control"), os.O_RDONLY)
            try:
                counter = os.eventfd(0, os.EFD_CLOEXEC)
                self._counters.append(counter)  # closed by stop, registered or not
                with open(group._file("memory", "cgroup.event_control"), "w") as handle:
                    handle.write(f"{counter} {control}")
                self._poller.register(counter, select.POLLIN)
            finally:
                os.close(control)

    def _file(self, path: str) -> None:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            self._tick = V1_PIDS_TICK_SECONDS  # a file missing: read the counters on the tick
            return
        self._files.append(fd)
        os.read(fd, 4096)  # a kernfs file wakes a poll only after it was read once
        self._poller.register(fd, select.POLLPRI | select.POLLERR)

    def _run(self) -> None:
        timeout = None if self._tick is None else int(self._tick * 1000)
        while True:
            ready = self._poller.poll(timeout)
            if any(fd == self._stop_read for fd, _ in ready):
                return
            for fd, _ in ready:
                with contextlib.suppress(OSError):
                    if fd in self._counters:
                        os.read(fd, 8)
                    else:
                        os.lseek(fd, 0, os.SEEK_SET)
                        os.read(fd, 4096)
            if self._group.reached():
                self._on_reached()
                return

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self._stop_write, b"x")
        self._thread.join()
        for fd in (*self._files, *self._counters, self._stop_read, self._stop_write):
            with contextlib.suppress(OSError):
                os.close(fd)


class CgroupGroups:
    """The real `ResourceGroups` over cgroupfs at `root`."""

    def __init__(
        self,
        root: str = "/sys/fs/cgroup",
        self_cgroup: str = "/proc/self/cgroup",
        shell: str = "/bin/sh",
        remove_dir: Callable[[str], None] = os.rmdir,
        kill: Callable[[int, int], None] = os.kill,
    ) -> None:
        self._root = root
        self._self_cgroup = self_cgroup
        self.shell = shell
        self._remove_dir = remove_dir
        self._kill = kill
        self._answer: Answer | None = None
        self._lock = threading.Lock()

    # --- what this machine gives ----------------------------------------------------------

    def enforcement(self) -> Enforcement:
        return self._probe()[0]

    def _probe(self) -> Answer:
        with self._lock:
            if self._answer is None:
                self._answer = ask_enforcement(self._root, self._self_cgroup)
            return self._answer

    # --- a round's group ------------------------------------------------------------------

    def open(self, name: str, limits: ResourceLimits) -> CgroupGroup:
        enforcement, parents = self._probe()
        if enforcement.kind is GroupKind.NONE:
            raise GroupFailed(f"no resource group can be made: {enforcement.problem}")
        folders = {controller: os.path.join(parent, name) for controller, parent in parents.items()}
        group = CgroupGroup(self, name, folders)
        made: dict[str, str] = {}  # real path -> the folder this open made there
        try:
            for folder in folders.values():
                real = os.path.realpath(folder)
                if real not in made:  # controllers mounted together (cpu,cpuacct): one folder
                    os.mkdir(folder, 0o755)
                    made[real] = folder
            memsw = os.path.exists(
                os.path.join(folders.get("memory", ""), "memory.memsw.limit_in_bytes")
            )
            for controller, file, value in limit_writes(
                enforcement.kind, limits, enforcement.cpu, memsw
            ):
                with open(group._file(controller, file), "w") as handle:
                    handle.write(value)
        except OSError as error:
            # only what this open made: a folder that was there (a group of the same name)
            # stays whole
            self._remove_folders(CgroupGroup(self, name, made))
            raise GroupFailed(f"the resource group {name} could not be made: {error}") from error
        return group

    def close(self, group: CgroupGroup) -> GroupCounters:
        self._kill_all(group)
        counters = group.counters()
        left = self._remove_folders(group)
        if left:
            raise GroupFailed(f"the resource group {group.name} stays: {left}")
        return counters

    def _kill_all(self, group: CgroupGroup) -> None:
        procs = read_small(group._file("pids", "cgroup.procs"), 1 << 20) or ""
        for pid in procs.split():
            if pid.isdigit():
                with contextlib.suppress(OSError):  # gone already
                    self._kill(int(pid), signal.SIGKILL)

    def _remove_folders(self, group: CgroupGroup) -> str:
        left = ""
        for folder in group._folders.values():
            for attempt in range(REMOVE_TRIES):
                try:
                    if os.path.isdir(folder):
                        self._remove_dir(folder)
                    break
                except OSError as error:
                    if attempt == REMOVE_TRIES - 1:
                        left = f"{folder}: {error.strerror}"
                    time.sleep(0.01 * (attempt + 1))  # the kernel reaps a killed process
        return left

    # --- the sweep ------------------------------------------------------------------------

    def leftovers(self, prefix: str) -> list[str]:
        _, parents = self._probe()
        parent = parents.get("pids") or parents.get("")
        if parent is None:
            return []
        try:
            return sorted(
                n
                for n in os.listdir(parent)
                if n.startswith(prefix) and os.path.isdir(os.path.join(parent, n))
            )
        except OSError:
            return []

    def idle(self, prefix: str, older_than_seconds: float) -> list[str]:
        _, parents = self._probe()
        parent = parents.get("pids") or parents.get("")
        found: list[str] = []
        for name in self.leftovers(prefix):
            folder = os.path.join(parent or "", name)
            try:
                made = os.stat(folder).st_ctime
            except OSError:
                continue
            procs = (read_small(os.path.join(folder, "cgroup.procs"), 1 << 20) or "").split()
            if not procs and time.time() - made >= older_than_seconds:
                found.append(name)
        return found

    def remove(self, name: str) -> GroupCounters:
        _, parents = self._probe()
        folders = {
            c: os.path.join(p, name)
            for c, p in parents.items()
            if os.path.isdir(os.path.join(p, name))
        }
        if not folders:  # nothing there: no file to read or kill from (never the cwd's)
            return GroupCounters()
        return self.close(CgroupGroup(self, name, folders))


def open_check_group(
    groups: ResourceGroups | None, limits: ResourceLimits
) -> ResourceGroup | str | None:
    """A check's control group with the run's limits (issue 20): None where this machine has
    none, the text of why when it could not be made."""
    if groups is None or groups.enforcement().kind is GroupKind.NONE:
        return None
    try:
        return groups.open(f"{GROUP_PREFIX}check-{secrets.token_hex(6)}", limits)
    except GroupFailed as failed:
        return failed.text


def close_check_group(group: ResourceGroup | None, limits: ResourceLimits) -> str:
    """The limits a check reached, said ("" none, or no group)."""
    if group is None:
        return ""
    try:
        return "; ".join(judge_use(group.close(), limits).reached)
    except GroupFailed as failed:
        return failed.text
