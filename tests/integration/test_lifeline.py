"""The lifeline (domain/isolation/launch.py `LIFELINE_SCRIPT`): a PID namespace of bubblewrap's
ends with the host that started it, even when bwrap's init never set its parent-death signal.

bwrap's init sets that signal only after it forked the command; a host killed in between leaves
the namespace alive for good. Under load that happened in 1 run of 9 of
tests/integration/test_check_host_killed.py (the check's bwrap, pid 1 of its namespace, asleep
under pid 1 of the machine with the check's sleeps below it). Here the lost race is made
certain: the namespace's bwrap runs without `--die-with-parent` at all, so nothing but the
lifeline can end it. A host (a Python process of its own, the production process runner) starts
it and is SIGKILLed once the namespace's two sleeps run, one of them in a session of its own:

- with the lifeline, within 2 seconds no process of the namespace (bwrap's launcher and init
  included) is alive;
- without it (the control), they are all still alive: the test does reproduce the hole.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from e2e.agent_processes import processes_with
from timing import SLOW

from concorde_workers.domain.isolation.launch import LIFELINE_SHELL, lifeline

pytestmark = pytest.mark.integration

DEADLINE = 2.0  # seconds after the host's death, as for a check (issue 9 §1)
NO_DEATH_SIGNAL = (
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--unshare-all",
    "--unshare-user",
    "--uid",
    "65534",
    "--gid",
    "65534",
    "--new-session",
)

HOST = """
import json, os, sys, time
from concorde_workers.adapters.processes.process import SubprocessRunner
argv, env, busy = json.loads(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])
held = [os.open("/dev/null", os.O_RDONLY) for _ in range(busy)]  # a host with files open
handle = SubprocessRunner().start(argv, env, "/")
print(handle.pid, flush=True)
time.sleep(3000)
"""


class Namespace:
    """A host process that starts one bwrap namespace through the production runner."""

    def __init__(self, with_lifeline: bool, busy: int = 0) -> None:
        bwrap = shutil.which("bwrap")
        assert bwrap is not None, "bubblewrap is not installed (./scripts/setup installs it)"
        self.mark = f"lifeline-{os.getpid()}-{time.monotonic_ns()}"
        script = "setsid sleep 3000 </dev/null >/dev/null 2>&1 & sleep 3000"
        inside = (
            [*lifeline(LIFELINE_SHELL), "/bin/sh", "-c", script]
            if with_lifeline
            else ["/bin/sh", "-c", script]
        )
        argv = [bwrap, *NO_DEATH_SIGNAL, "--", *inside]
        env = {"PATH": "/usr/bin:/bin", "CONCORDE_TEST_MARK": self.mark}
        self.host = subprocess.Popen(
            [sys.executable, "-c", HOST, json.dumps(argv), json.dumps(env), str(busy)],
            stdout=subprocess.PIPE,
            text=True,
        )

    def running(self) -> None:
        """Returns once both sleeps run (the namespace's command has started)."""
        assert self.host.stdout is not None
        assert self.host.stdout.readline().strip().isdigit(), "the host never started bwrap"
        deadline = time.monotonic() + SLOW
        while sum(argv[:1] == ["sleep"] for argv in processes_with(self.mark).values()) < 2:
            assert time.monotonic() < deadline, "the namespace's sleeps never ran"
            time.sleep(0.02)

    def kill_host(self) -> float:
        self.host.kill()
        self.host.wait(timeout=SLOW)
        return time.monotonic()

    def alive_after(self, died: float, seconds: float) -> list[int]:
        while time.monotonic() - died < seconds:
            if not processes_with(self.mark):
                return []
            time.sleep(0.02)
        return sorted(processes_with(self.mark))

    def end(self) -> None:
        if self.host.poll() is None:
            self.host.kill()
            self.host.wait()
        for pid in processes_with(self.mark):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def namespaces() -> Iterator[list[Namespace]]:
    made: list[Namespace] = []
    try:
        yield made
    finally:
        for namespace in made:
            namespace.end()


@pytest.mark.req("Nothing but the trace outlives a worker")
@pytest.mark.parametrize("busy", [0, 24], ids=["few files open", "a host with files open"])
def test_a_namespace_with_the_lifeline_ends_with_its_host_even_without_a_death_signal(
    namespaces: list[Namespace], busy: int
) -> None:
    """With files open in the host the lifeline's descriptor is 10 or more, which dash cannot
    redirect from (`<&"$fd"` is then a syntax error and the watcher is gone at once): the
    scripts run in bash, which can."""
    namespace = Namespace(with_lifeline=True, busy=busy)
    namespaces.append(namespace)
    namespace.running()
    assert namespace.alive_after(namespace.kill_host(), DEADLINE) == []


def test_without_the_lifeline_such_a_namespace_outlives_its_host(
    namespaces: list[Namespace],
) -> None:
    namespace = Namespace(with_lifeline=False)
    namespaces.append(namespace)
    namespace.running()
    alive = namespace.alive_after(namespace.kill_host(), DEADLINE)
    assert len(alive) >= 3, alive  # bwrap's launcher and init, the sh and its two sleeps
