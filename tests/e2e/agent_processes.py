"""The host's view of a run's processes, for the end-to-end tests.

A confined agent runs in its own PID namespace: the pids it sees (and a wrapper could log) are the
namespace's. The host's /proc shows every process of every namespace below it, so the tests find
a run's processes there: each one's command line or environment holds the run's runtime
directory (the agent's settings or extension path, HOME, TMPDIR), or a marker a test put into a
command it made the worker run.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["agent_pid", "processes_with"]


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
            found[int(entry.name)] = [a.decode(errors="replace") for a in cmdline.split(b"\0")
                                      if a]
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
