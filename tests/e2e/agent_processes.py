"""The host's view of a run's processes, for the end-to-end tests.

A confined agent runs in its own PID namespace: the pids it sees (and a wrapper could log) are the
namespace's. The host's /proc shows every process of every namespace below it, so the tests find
a run's processes there: each one's command line or environment holds the run's runtime
directory (the agent's settings or extension path, HOME, TMPDIR), or a marker a test put into a
command it made the worker run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

__all__ = ["NamespaceHolder", "agent_pid", "namespace_processes", "processes_with"]


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:  # the process ended, or its environment is not ours to read
        return b""


def processes_with(marker: str) -> dict[int, list[str]]:
    """Every live process (pid -> argv) whose command line or environment holds `marker`;
    zombies (already dead, waiting to be reaped) are not alive and not listed."""
    found: dict[int, list[str]] = {}
    needle = marker.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        stat = _read(entry / "stat")
        if not stat or stat[stat.rfind(b")") + 2 :].startswith(b"Z"):
            continue
        cmdline = _read(entry / "cmdline")
        if needle in cmdline or needle in _read(entry / "environ"):
            found[int(entry.name)] = [a.decode(errors="replace") for a in cmdline.split(b"\0") if a]
    return found


def agent_pid(runtime_dir: str, executable: str) -> int | None:
    """The host pid of the run's agent program: among the processes of the run whose runtime
    directory is `runtime_dir`, the one whose executable's name starts with `executable`
    (bwrap's launcher and init carry the agent's command line too, but are bwrap)."""
    for pid in sorted(processes_with(runtime_dir)):
        try:
            exe = os.path.basename(os.readlink(f"/proc/{pid}/exe"))
        except OSError:
            continue
        if exe.startswith(executable):
            return pid
    return None


def _zombie(entry: Path) -> bool:
    stat = _read(entry / "stat")
    return not stat or stat[stat.rfind(b")") + 2 :].startswith(b"Z")


def namespace_processes(namespace: str) -> dict[int, list[str]]:
    """Every live process (pid -> argv) of the PID namespace `namespace` (the text of its
    /proc/<pid>/ns/pid link, e.g. "pid:[4026532180]"); zombies have ended and are not listed."""
    found: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(entry / "ns" / "pid") != namespace:
                continue
        except OSError:
            continue
        if not _zombie(entry):
            found[int(entry.name)] = [
                a.decode(errors="replace") for a in _read(entry / "cmdline").split(b"\0") if a
            ]
    return found


# A process of the host's namespace that forks a child into another PID namespace (setns) and
# reaps it only once its stdin ends: until then the namespace's init cannot finish its exit (the
# kernel waits for every process of a dying namespace to be reaped, also one whose parent lies
# outside). A test holds a dying namespace open with it, to see what waits for the end.
_HOLDER = """
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(sys.argv[1], os.O_RDONLY)
if libc.setns(fd, 0x20000000) != 0:  # CLONE_NEWPID: this process's children are born there
    sys.exit("setns: " + os.strerror(ctypes.get_errno()))
child = os.fork()
if child == 0:
    time.sleep(3600)
    os._exit(0)
print(child, flush=True)
sys.stdin.read()
os.waitpid(child, 0)
"""


class NamespaceHolder:
    """Holds the PID namespace of process `pid` open (see `_HOLDER`) until `release()`."""

    def __init__(self, pid: int) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, f"/proc/{pid}/ns/pid"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline()
        assert line.strip().isdigit(), f"the holder could not enter the namespace: {line!r}"
        self.child = int(line)

    def release(self) -> None:
        """Let the child be reaped (the namespace may then end); waits for the holder."""
        if self._proc.stdin is not None and not self._proc.stdin.closed:
            self._proc.stdin.close()
        self._proc.wait()
