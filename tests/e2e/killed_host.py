"""A real host killed by SIGKILL at a moment the test chooses, on every backend (issue 30 §3;
tests/e2e/backends.py).

`concorde-workers run` runs in a process of its own (tests/fakes/cli_launcher.py, production
wiring and the real Claude Code or pi against the test's scripted model server) with FAKE_PAUSE:
its filesystem stops the host's thread at one chosen operation and tells the test through a named
pipe (timing.Signal); the test then SIGKILLs it there, never a moment earlier or later, and reaps
it. `concorde-workers sweep` (in process, the production container over the test's runtime
parent) then does what a later run would. What the record says afterwards is judged against what
the host did up to the kill: the files it names with their digests, the worktree, the progress
file, `show`.
"""

from __future__ import annotations

import hashlib
import io
import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from e2e.backends import BackendWorld
from e2e.conftest import ClaudeWorld
from e2e.conftest_pi import PiWorld
from fakes.cli_launcher import program_container
from timing import SLOW, Signal

from concorde_workers.adapters.cli.main import main
from concorde_workers.domain.configuration.request import Limits

__all__ = ["KillWorld", "KilledHost", "digests_hold", "kill_world"]

LAUNCHER = str(Path(__file__).resolve().parents[1] / "fakes" / "cli_launcher.py")


@dataclass
class KillWorld:
    """One backend's world (the Claude Code or pi end-to-end world), driven through the CLI in
    a process of its own."""

    generic: BackendWorld
    killed: list[KilledHost] = field(default_factory=list)

    @property
    def backend(self) -> str:
        return self.generic.backend

    @property
    def world(self) -> ClaudeWorld | PiWorld:
        return self.generic.world

    @property
    def worktree(self) -> Path:
        return self.world.worktree

    @property
    def runtime_parent(self) -> Path:
        return self.world.temp_root

    @property
    def parent(self) -> Path:
        path = self.world.root / "trace" / "op-1"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def answer(self, result: dict[str, Any]) -> None:
        """The model's one answer: the worker result `result`, at once."""
        self.generic.answer_result(result)

    def transient(self) -> None:
        """The model's answer: a transient model-service error the agent program gives up on."""
        self.generic.transient()

    def request_file(self, limits: Limits | None = None) -> Path:
        limits = limits or Limits(
            timeout_seconds=SLOW, max_turns=30, rounds=0, retries=0, retry_delay_seconds=0
        )
        request = self.generic.request(limits).model_copy(update={"parent": str(self.parent)})
        path = self.world.root / "request.json"
        path.write_text(json.dumps(request.model_dump(mode="json")))
        return path

    def start(
        self,
        pause: Callable[[Path], str] | None,
        *extra: str,
        ready: Callable[[], object] | None = None,
        limits: Limits | None = None,
    ) -> KilledHost:
        """The host, returned once it stands still at the moment `pause(signal_path)` chooses
        (a `pause_spec`), or, without a pause, once `ready()` holds (a process of its own the
        test waits for, such as a check's); `extra` are further `run` arguments (`--check`)."""
        env = {**self.world.environ, "FAKE_RUNTIME_PARENT": str(self.runtime_parent)}
        reached: Callable[[], object]
        if pause is not None:
            fifo = self.world.root / f"paused-{len(self.killed)}.fifo"
            paused = Signal(fifo)
            env["FAKE_PAUSE"] = pause(fifo)
            reached = lambda: paused.seen.wait(0.2)  # noqa: E731
        else:
            assert ready is not None, "a pause or what to wait for"
            reached = lambda: ready() or time.sleep(0.05)  # noqa: E731
        proc = subprocess.Popen(
            [
                sys.executable,
                LAUNCHER,
                "-",
                "run",
                str(self.request_file(limits)),
                *extra,
                "--json",
            ],
            cwd=self.world.root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        host = KilledHost(proc=proc, world=self)
        self.killed.append(host)
        # The pause (or what `ready` waits for), or a host that ended without reaching it.
        while not reached():
            if proc.poll() is not None:
                out, err = proc.communicate()
                pytest.fail(f"the host never reached its pause:\n{out[-3000:]}\n{err[-3000:]}")
        return host

    def sweep(self) -> dict[str, Any]:
        """`concorde-workers sweep --json` over this world's runtime parent: its report."""
        out, err = io.StringIO(), io.StringIO()
        status = main(
            ["sweep", "--json"],
            out,
            err,
            container=program_container(None, runtime_parent=str(self.runtime_parent)),
        )
        assert (status, err.getvalue()) == (0, ""), out.getvalue() + err.getvalue()
        report: dict[str, Any] = json.loads(out.getvalue())
        return report


@dataclass
class KilledHost:
    proc: subprocess.Popen[str]
    world: KillWorld

    def kill(self) -> None:
        """SIGKILL the paused host and reap it."""
        self.proc.kill()
        self.proc.communicate(timeout=SLOW)
        assert self.proc.returncode == -signal.SIGKILL

    @property
    def run_dir(self) -> Path:
        [run_dir] = (self.world.parent / "workers").iterdir()
        return run_dir

    def node(self, *parts: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.run_dir.joinpath(*parts, "trace.json").read_text())
        return data

    def status(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.run_dir / "status.json").read_text())
        return data

    def show(self) -> str:
        out, err = io.StringIO(), io.StringIO()
        assert main(["show", str(self.run_dir)], out, err) == 0, err.getvalue()
        return out.getvalue()

    def end(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def digests_hold(node: dict[str, Any], folder: Path) -> list[str]:
    """Each file the node lists that is not in `folder` with its digest (none: all hold)."""
    wrong = []
    for listed in node["files"]:
        path = folder / listed["path"]
        found = (
            "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
        )
        if found != listed["digest"]:
            wrong.append(f"{listed['path']}: listed {listed['digest']}, found {found}")
    return wrong


@pytest.fixture
def kill_world(backend_world: BackendWorld) -> Iterator[KillWorld]:
    """Each backend's world in turn (tests/e2e/backends.py)."""
    made = KillWorld(backend_world)
    try:
        yield made
    finally:
        for host in made.killed:
            host.end()
