"""A real host killed by SIGKILL while the real pi runs: `concorde-workers run` (production
wiring, the pinned pi and sandbox-runtime, tests/fakes/cli_launcher.py in a process of its own)
against the scripted model server, which answers pi's first request with a tool call and never
answers the second. The host is SIGKILLed once the server holds that second request: pi has
written its session and the record says `running`. The copies of the user's auth.json and
models.json and pi's session lived in the run's writable space (issue 30 §2), which the kernel
frees with the host: the disk never held them, and nothing of them is left. `concorde-workers
sweep --json` then removes the directory, finishes the record as interrupted because the host
died (no transcript to keep), and `show` says so.

The host's runtime parent is a directory of the test's own (FAKE_RUNTIME_PARENT), so no other
sweep on the machine sees it.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
from e2e.conftest_pi import PiWorld, call, pi_world, reply
from fakes.cli_launcher import program_container
from servers.openai_server import Hang
from timing import SLOW

from concorde_workers.adapters.cli.main import main
from concorde_workers.domain.configuration.request import Limits

__all__ = ["pi_world"]  # the fixture, imported for pytest

pytestmark = pytest.mark.e2e


LAUNCHER = str(Path(__file__).resolve().parents[1] / "fakes" / "cli_launcher.py")


def children(pid: int) -> list[int]:
    """The direct children of `pid` (every thread's), from /proc."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            found += [int(p) for p in (task / "children").read_text().split()]
    return found


@pytest.mark.req("Nothing but the trace outlives a worker")
def test_sweep_cleans_up_after_a_sigkilled_host_of_a_real_pi_run(pi_world: PiWorld) -> None:
    w = pi_world
    held = threading.Event()

    def hold(body: dict[str, Any]) -> Hang:
        held.set()  # the server has pi's second request: the test goes on from this event
        return Hang(3600)

    w.server.add(reply(call("read", "call_1", path=w.path("src/app/main.py"))), hold)
    request = w.request(
        Limits(timeout_seconds=600, max_turns=30, rounds=0, retries=0, retry_delay_seconds=0)
    )
    request_file = w.root / "request.json"
    request_file.write_text(json.dumps(request.model_dump(mode="json")))
    assert request.parent is not None
    runtime_parent = Path(tempfile.mkdtemp(prefix="swe-", dir="/tmp"))
    agents: list[int] = []
    proc = subprocess.Popen(
        [sys.executable, LAUNCHER, "-", "run", str(request_file), "--json"],
        cwd=w.root,
        env={**w.environ, "FAKE_RUNTIME_PARENT": str(runtime_parent)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # the second request held: pi has its first answer (and its session file) and waits
        assert held.wait(SLOW), f"pi's second request never came: {proc.poll()}"
        assert proc.poll() is None, proc.communicate()
        [runtime_dir] = list(runtime_parent.iterdir())
        run_dir = next((Path(request.parent) / "workers").iterdir())
        agents = children(proc.pid)
        assert agents, "the host has no agent process"
        proc.kill()
        proc.communicate(timeout=60)
        assert proc.returncode == -signal.SIGKILL

        # what SIGKILL leaves: the owner record and a record still running; no credential
        # copy and no session: they lived in the run's space, never on the disk
        assert (runtime_dir / "control" / "owner.json").is_file()
        left = [p for d in ("config", "home", "tmp", "work") for p in (runtime_dir / d).rglob("*")]
        assert left == []
        node = json.loads((run_dir / "trace.json").read_text())
        assert node["status"] == "running"

        out, err = io.StringIO(), io.StringIO()
        status = main(
            ["sweep", "--json"],
            out,
            err,
            container=program_container(None, runtime_parent=str(runtime_parent)),
        )

        assert (status, err.getvalue()) == (0, "")
        report = json.loads(out.getvalue())
        [stale] = report["stale"]
        assert stale["runtime_directory"] == str(runtime_dir) and stale["removed"] is True
        assert stale["host_pid"] == proc.pid
        assert stale["record"]["outcome"] == "finished"
        assert stale["record"]["transcript_kept"] is False
        assert not runtime_dir.exists()

        node = json.loads((run_dir / "trace.json").read_text())
        assert (node["status"], node["outcome"]) == ("failed", "interrupted")
        assert node["error"]["code"] == "interrupted"
        assert node["error"]["detail"].startswith(
            f"the host process (pid {proc.pid}) died without a chance to act"
        )
        assert not (run_dir / "transcript.jsonl").exists()
        progress = json.loads((run_dir / "status.json").read_text())
        assert (progress["phase"], progress["status"]) == ("finished", "interrupted")

        out = io.StringIO()
        assert main(["show", str(run_dir)], out, io.StringIO()) == 0
        assert out.getvalue().startswith(f"run {node['id']}: failed (interrupted): interrupted")
        assert f"the host process (pid {proc.pid}) died without a chance to act" in out.getvalue()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        for pid in agents:  # pi's process group, orphaned by the host (until it dies with it)
            with contextlib.suppress(OSError):
                if b"node" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    os.killpg(pid, signal.SIGKILL)
        shutil.rmtree(runtime_parent, ignore_errors=True)
