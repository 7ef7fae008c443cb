"""A host killed by SIGKILL, for real: `concorde-workers run` in a process of its own (the
production container, its agent backend agent.py in real processes, tests/fakes/cli_launcher.py)
is killed while its agent runs; its runtime directory, with the credential copy, stays and its
record says `running`. Then `concorde-workers sweep --json` (and, separately, a later `run`)
removes the directory and finishes the record as interrupted, the host died; `show` says so.
Live hosts beside it are never touched.

Each test gives its hosts a runtime parent of its own (FAKE_RUNTIME_PARENT), so no other sweep
on the machine sees its directories and its sweeps see no one else's.
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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fakes.cli_launcher import program_container
from fakes.program_backend import Step
from timing import Signal

from concorde_workers.adapters.cli.main import main

pytestmark = pytest.mark.integration

LAUNCHER = str(Path(__file__).resolve().parents[1] / "fakes" / "cli_launcher.py")
RESULT: dict[str, Any] = {
    "status": "ok",
    "summary": "greeting added",
    "error": None,
    "proposed_deletions": [],
    "output": {},
}
SECRET = '{"local": {"type": "api_key", "key": "the user\'s own"}}\n'
"""The user's auth.json, as pi takes it (a run refuses one pi would not: issue 31 §1)."""


@dataclass
class Host:
    """One `concorde-workers run` in a process of its own, its agent hanging in round 1."""

    proc: subprocess.Popen[str]
    run_dir: Path
    runtime_dir: Path
    agent: dict[str, Any]

    @property
    def credential_copy(self) -> Path:
        return self.runtime_dir / "config" / "auth.json"

    def node(self) -> dict[str, Any]:
        return dict(json.loads((self.run_dir / "trace.json").read_text()))

    def status(self) -> dict[str, Any]:
        return dict(json.loads((self.run_dir / "status.json").read_text()))


@dataclass
class Hosts:
    root: Path
    parent: Path
    runtime_parent: Path
    credentials: Path
    request_file: Path
    started: list[Host]
    project: Any = None

    def request_for(self, name: str) -> Path:
        """A request of its own worktree (`.claude/worktrees/<name>`) for each host: one run at a
        time works in a worktree (issue 19 §3), and these hosts live side by side."""
        request = json.loads(self.request_file.read_text())
        worktree = self.project.primary / ".claude" / "worktrees" / name
        self.project.git(
            self.project.primary, "worktree", "add", "-q", "-b", f"host-{name}", str(worktree)
        )
        path = self.root / f"{name}.request.json"
        path.write_text(json.dumps({**request, "worktree": str(worktree)}))
        return path

    def start(self, name: str) -> Host:
        """A host whose agent writes its transcript, says it runs a command and sleeps; once
        the agent runs (its record written) the host is returned."""
        record = self.root / f"{name}.agent.json"
        running = Signal(self.root / f"{name}.running.fifo")
        scenario = [
            Step.session(f"s-{name}"),
            Step.transcript(),
            Step.record(str(record)),
            Step.line("tool", tool="Bash", target="sleep 600"),
            Step.signal(str(running.path)),
            Step.sleep(600),
            Step.result(RESULT),
        ]
        scenarios = self.root / f"{name}.scenarios.json"
        scenarios.write_text(json.dumps([scenario]))
        env = dict(
            os.environ,
            FAKE_RUNTIME_PARENT=str(self.runtime_parent),
            FAKE_CREDENTIALS=str(self.credentials),
        )
        proc = subprocess.Popen(
            [
                sys.executable,
                LAUNCHER,
                str(scenarios),
                "run",
                str(self.request_for(name)),
                "--parent",
                str(self.parent),
                "--json",
            ],
            cwd=self.root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        before = {h.run_dir for h in self.started}
        running.wait()  # the agent runs: its record is written, its run directory made
        assert proc.poll() is None, proc.communicate()
        agent = json.loads(record.read_text())
        [run_dir] = {p for p in (self.parent / "workers").glob("w-*")} - before
        runtime_dir = Path(agent["cwd"]).parent
        host = Host(proc=proc, run_dir=run_dir, runtime_dir=runtime_dir, agent=agent)
        self.started.append(host)
        return host

    def sigkill(self, host: Host) -> None:
        """SIGKILL the host, and reap it (its pid is then free for reuse)."""
        host.proc.kill()
        host.proc.communicate(timeout=60)
        assert host.proc.returncode == -signal.SIGKILL

    def container(self, scenarios: list[Any] | None = None) -> Any:
        return program_container(
            scenarios or [],
            runtime_parent=str(self.runtime_parent),
            credentials=str(self.credentials),
        )


@pytest.fixture
def hosts(project: Any) -> Iterator[Hosts]:
    parent = project.root / "trace"
    parent.mkdir()
    credentials = project.home / "auth.json"
    credentials.write_text(SECRET)
    credentials.chmod(0o600)
    runtime_parent = Path(tempfile.mkdtemp(prefix="sweep-rt-", dir="/tmp"))
    made = Hosts(
        root=project.root,
        parent=parent,
        runtime_parent=runtime_parent,
        credentials=credentials,
        request_file=project.request_file,
        started=[],
        project=project,
    )
    try:
        yield made
    finally:
        for host in made.started:
            if host.proc.poll() is None:
                host.proc.kill()
                host.proc.communicate()
            kill_orphan(host.agent["pgid"])
        shutil.rmtree(runtime_parent, ignore_errors=True)


def kill_orphan(pgid: int) -> None:
    """The agent a killed host orphaned (until the agent tree dies with its host: issue 9,
    confine), by its own process group, and only while that group's leader is still our
    agent.py (a pid is never killed once it may belong to someone else)."""
    try:
        cmdline = Path(f"/proc/{pgid}/cmdline").read_bytes()
    except OSError:
        return
    if b"agent.py" in cmdline:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)


def run_main(container: Any, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), out, err, container=container)
    assert "Traceback" not in out.getvalue() + err.getvalue()
    assert "internal error" not in err.getvalue(), err.getvalue()
    return status, out.getvalue(), err.getvalue()


def assert_finished_as_host_died(host: Host) -> dict[str, Any]:
    node = host.node()
    assert (node["status"], node["outcome"]) == ("failed", "interrupted")
    error = node["error"]
    assert error["code"] == "interrupted"
    pid = host.proc.pid
    assert error["detail"].startswith(
        f"the host process (pid {pid}) died without a chance to act, as by SIGKILL or the "
        "out-of-memory killer, while the run was in round 1 (phase worker"
    )
    assert f"its host (pid {pid}) is gone" in error["detail"]
    assert node["content"]["transcript"] == "transcript.jsonl"
    assert (host.run_dir / "transcript.jsonl").is_file()
    progress = host.status()
    assert (progress["phase"], progress["status"]) == ("finished", "interrupted")
    round_node = json.loads((host.run_dir / "rounds" / "1" / "trace.json").read_text())
    assert (round_node["status"], round_node["outcome"]) == ("failed", "interrupted")
    status, out, err = run_main(None, "show", str(host.run_dir))
    assert status == 0, err
    assert out.startswith(f"run {node['id']}: failed (interrupted): interrupted\n")
    assert f"the host process (pid {pid}) died without a chance to act" in out
    return node


@pytest.mark.req("Nothing but the trace outlives a worker")
def test_sweep_removes_what_a_sigkilled_host_left_and_finishes_its_record(hosts: Hosts) -> None:
    host = hosts.start("killed")
    hosts.sigkill(host)
    # what SIGKILL leaves: the directory with the credential copy, a record still running
    assert host.credential_copy.read_text() == SECRET
    assert host.node()["status"] == "running" and host.status()["phase"] == "worker"

    status, out, err = run_main(hosts.container(), "sweep", "--json")

    assert (status, err) == (0, "")
    report = json.loads(out)
    assert report["runtime_parent"] == str(hosts.runtime_parent)
    assert report["failures"] == [] and report["left"] == []
    [stale] = report["stale"]
    assert stale["runtime_directory"] == str(host.runtime_dir)
    assert stale["removed"] is True and stale["remains"] == []
    assert stale["host_pid"] == host.proc.pid
    assert stale["reason"] == f"its host (pid {host.proc.pid}) is gone"
    assert stale["record"]["outcome"] == "finished"
    assert stale["record"]["run_directory"] == str(host.run_dir)
    assert stale["record"]["transcript_kept"] is True
    assert not host.runtime_dir.exists()
    assert list(hosts.runtime_parent.iterdir()) == []
    assert_finished_as_host_died(host)

    status, out, _ = run_main(hosts.container(), "sweep", "--json")
    assert status == 0 and json.loads(out)["stale"] == []


@pytest.mark.req("Nothing but the trace outlives a worker")
def test_a_later_run_sweeps_first(hosts: Hosts) -> None:
    host = hosts.start("killed")
    hosts.sigkill(host)
    assert host.credential_copy.exists()
    ok = [Step.session("s-1"), Step.transcript(), Step.result(RESULT)]

    status, out, err = run_main(
        hosts.container([ok]),
        "run",
        str(hosts.request_file),
        "--parent",
        str(hosts.parent),
        "--json",
    )

    assert status == 0, out + err
    assert f"concorde-workers: sweep of {hosts.runtime_parent}: 1 stale runtime directory\n" in err
    assert f"concorde-workers:   removed {host.runtime_dir} " in err
    assert not host.runtime_dir.exists()
    assert_finished_as_host_died(host)
    record = json.loads(out)
    assert record["status"] == "ok" and record["run_directory"] != str(host.run_dir)
    assert list(hosts.runtime_parent.iterdir()) == []


def test_two_live_hosts_beside_a_dead_one_are_never_touched(hosts: Hosts) -> None:
    first, dead, second = hosts.start("first"), hosts.start("dead"), hosts.start("second")
    hosts.sigkill(dead)

    status, out, _ = run_main(hosts.container(), "sweep", "--json")

    assert status == 0
    report = json.loads(out)
    assert [s["runtime_directory"] for s in report["stale"]] == [str(dead.runtime_dir)]
    assert sorted(
        (e["runtime_directory"], e["verdict"], e["reason"]) for e in report["left"]
    ) == sorted(
        (str(h.runtime_dir), "live", f"its host (pid {h.proc.pid}) is alive")
        for h in (first, second)
    )
    for live in (first, second):
        assert live.credential_copy.read_text() == SECRET
        assert live.node()["status"] == "running" and live.status()["phase"] == "worker"
        assert not (live.run_dir / "transcript.jsonl").exists()
    assert not dead.runtime_dir.exists()
    assert dead.node()["outcome"] == "interrupted"

    # the live hosts end as they would have: SIGTERM, interrupted, their own cleanup
    for live in (first, second):
        live.proc.send_signal(signal.SIGTERM)
        out, err = live.proc.communicate(timeout=60)
        assert live.proc.returncode == 130, out + err
        record = json.loads(out)
        assert record["error"]["code"] == "interrupted" and "SIGTERM" in record["error"]["detail"]
        assert not live.runtime_dir.exists()
