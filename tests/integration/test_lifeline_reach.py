"""docs/decisions.md "What the lifeline reaches": nothing a check's or a round's program started
outlives its host, whatever moment the host dies at and whatever the worker inside does to the
lifeline. A host (a Python process of its own, the production process runner) starts the
production command line with the real bubblewrap and is SIGKILLed:

- before bwrap reported its namespace (a gate in front of bwrap holds the program until the host
  is dead): bwrap's launcher then dies writing its report to the dead host (SIGPIPE) before it
  released the namespace's first process, which waits for it for good, before anything inside
  the namespace runs;
- once a check's command killed the lifeline's watcher inside its namespace (it runs as the
  check's uid there), its bwrap having no death signal;
- once a check's command opened the lifeline it inherited for writing (through /proc/self/fd)
  and keeps it in a process of a session of its own, its bwrap having no death signal (the lost
  race of test_lifeline.py, made certain).

Each waits, on pidfds, for the program's leader to end and then for every process of the run
(those in the leader's session or holding the test's mark); SLOW only bounds a failure.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from e2e.agent_processes import processes_with
from timing import SLOW, Gate, wait_dead

from concorde_workers.domain.gitview.git_commands import SANDBOX_ARGS
from concorde_workers.domain.isolation.check_sandbox import CheckPlace, check_argv
from concorde_workers.domain.isolation.confinement import Confinement, ConfinementTools

pytestmark = pytest.mark.integration

HOST = """
import json, sys, time
from concorde_workers.adapters.processes.process import SubprocessRunner
argv, env, prefix = (json.loads(a) for a in sys.argv[1:4])
handle = SubprocessRunner().start(argv, env, "/", prefix=prefix)
print(handle.pid, flush=True)
for line in handle.lines():
    print(line, flush=True)
time.sleep(3000)
"""

# A check's command that kills what its shell did not start (the lifeline's watcher, forked by
# the sh that became this one), then leaves a sleep in a session of its own and waits.
KILLS_THE_WATCHER = (
    'for child in $(cat /proc/$$/task/$$/children); do kill -s KILL "$child"; done; '
    "setsid sleep 3000 </dev/null >/dev/null 2>&1 & echo ready; exec sleep 3000"
)
# A check's command that opens every pipe or socket it inherited (the lifeline among them) for
# writing, as fds 7, 8, 9 (those that open: a subshell tries first, as a failed `exec` would end
# the shell), and leaves a sleep holding them in a session of its own.
KEEPS_THE_LIFELINE = (
    'i=7; for f in /proc/$$/fd/*; do n=${f##*/}; [ "$n" -gt 2 ] || continue; '
    'case $(readlink "$f") in pipe:*|socket:*) '
    '[ "$i" -le 9 ] && (: >"$f") 2>/dev/null && eval "exec $i>$f" && i=$((i + 1));; esac; '
    "done; "
    "setsid sleep 3000 </dev/null >/dev/null 2>&1 & echo ready; exec sleep 3000"
)


def _session(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    return None if fields[0] == "Z" else int(fields[3])


def _described(pids: Sequence[int]) -> dict[int, str]:
    """Each process: its namespaced pids, where it sleeps in the kernel, its command line."""
    told: dict[int, str] = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            nspid = [
                line
                for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                if line.startswith("NSpid:")
            ]
            wchan = Path(f"/proc/{pid}/wchan").read_text()
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:3]
            told[pid] = f"{nspid} {wchan} {[a.decode(errors='replace')[:40] for a in argv]}"
    return told


class Host:
    """A host process that starts one program through the production process runner."""

    def __init__(self, tmp_path: Path) -> None:
        self.mark = f"reach-{os.getpid()}-{time.monotonic_ns()}"
        self.tmp = tmp_path
        self.env = {"PATH": "/usr/bin:/bin", "CONCORDE_TEST_MARK": self.mark}
        self.proc: subprocess.Popen[str] | None = None
        self.leader = 0
        self._leader_fd: int | None = None
        self._lines: queue.Queue[str] = queue.Queue()

    def start(self, argv: Sequence[str], prefix: Sequence[str] = ()) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                HOST,
                json.dumps(list(argv)),
                json.dumps(self.env),
                json.dumps(list(prefix)),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        threading.Thread(target=self._read, daemon=True).start()
        self.leader = int(self.line())
        self._leader_fd = os.pidfd_open(self.leader)  # held: the pid is never another's

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line.strip())
        self._lines.put("")  # the host is gone

    def line(self) -> str:
        line = self._lines.get(timeout=SLOW)
        assert line, "the host ended before it said so"
        return line

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(timeout=SLOW)

    def survivors(self) -> dict[int, str]:
        """Once the program's leader has ended, what of the run is still alive when every
        process of it found then has ended or SLOW has passed (none, when all is well)."""
        assert self._leader_fd is not None
        poller = select.poll()
        poller.register(self._leader_fd, select.POLLIN)
        if not poller.poll(SLOW * 1000):
            return _described(self._found())
        found = self._found()
        return {} if wait_dead(found, SLOW) else _described(self._found())

    def _found(self) -> list[int]:
        ours = set(processes_with(self.mark))
        ours.update(
            p
            for p in map(int, filter(str.isdigit, os.listdir("/proc")))
            if _session(p) == self.leader
        )
        return sorted(ours)

    def end(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for pid in self._found():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if self._leader_fd is not None:
            os.close(self._leader_fd)


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Host]:
    made = Host(tmp_path)
    try:
        yield made
    finally:
        made.end()


def _bwrap() -> str:
    bwrap = shutil.which("bwrap", path="/usr/local/bin:/usr/bin:/bin")
    assert bwrap is not None, "bubblewrap is not installed (./scripts/setup installs it)"
    return bwrap


def _kind(path: str) -> str | None:
    if os.path.islink(path):
        return "link"
    if os.path.isdir(path):
        return "dir"
    return "file" if os.path.exists(path) else None


def a_check(tmp_path: Path, command: str, death_signal: bool = True) -> list[str]:
    """The production command line of a check running `command` over `tmp_path`/tree;
    without bwrap's death signal when `death_signal` is False (the lost race made certain)."""
    tree = tmp_path / "tree"
    tree.mkdir(exist_ok=True)
    place = CheckPlace(worktree=str(tree))
    argv = check_argv(_bwrap(), place, ["--bind", str(tree), str(tree)], command, (), _kind)
    assert "--die-with-parent" in SANDBOX_ARGS
    return argv if death_signal else [a for a in argv if a != "--die-with-parent"]


def a_round(tmp_path: Path, command: str) -> list[str]:
    """The production confinement's command line (no mounts, no waiter) running `command`."""
    tools = ConfinementTools(bwrap=_bwrap())
    plan = Confinement(mounts=(), empty_file="/dev/null", tools=tools, as_root=False)
    return [*plan.prefix(), "/bin/sh", "-c", command]


def gate(path: Path) -> tuple[Gate, list[str]]:
    """A gate, and the prefix that holds the program there until it is released."""
    return Gate(path), ["/bin/sh", "-c", ': < "$0"; exec "$@"', str(path)]


@pytest.mark.req("Nothing but the trace outlives a worker")
@pytest.mark.parametrize("program", [a_check, a_round], ids=["check", "round"])
def test_a_host_killed_before_bwrap_reported_its_namespace_leaves_nothing(
    host: Host,
    tmp_path: Path,
    program: object,
) -> None:
    held, prefix = gate(tmp_path / "gate")
    argv = program(tmp_path, f"echo {host.mark}; sleep 3000")  # type: ignore[operator]
    host.start(argv, prefix)
    host.kill()
    held.release()  # bwrap starts with its host dead
    assert host.survivors() == {}


@pytest.mark.req("Nothing but the trace outlives a worker")
def test_a_check_that_kills_the_watcher_inside_does_not_outlive_its_host(
    host: Host,
    tmp_path: Path,
) -> None:
    host.start(a_check(tmp_path, KILLS_THE_WATCHER, death_signal=False))
    assert host.line() == "ready"
    host.kill()
    assert host.survivors() == {}


@pytest.mark.req("Nothing but the trace outlives a worker")
def test_a_check_that_keeps_the_lifeline_open_does_not_outlive_its_host(
    host: Host,
    tmp_path: Path,
) -> None:
    host.start(a_check(tmp_path, KEEPS_THE_LIFELINE, death_signal=False))
    assert host.line() == "ready"
    host.kill()
    assert host.survivors() == {}
