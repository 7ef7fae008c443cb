"""`concorde-workers doctor` with the real programs (issue 12 §1): the console script, a process
of its own, in a worktree of a real repository, with the checkout's pinned claude, pi and
sandbox-runtime, the real bubblewrap sandbox tried for its network, and credentials whose values
must never be printed. And the sandbox probe itself, held to both answers: inside the real
sandbox it cannot reach 127.0.0.1; with a stand-in "sandbox" that runs the command as it is,
the same probe sees the connection (so a sandbox with network would fail doctor)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from integration.conftest import build_project

from concorde_workers.adapters.processes.process import SubprocessRunner
from concorde_workers.adapters.sandboxes.sandbox_probe import SrtSandboxProbe

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
CLI = Path(sys.executable).parent / "concorde-workers"
SRT = REPO / "node_modules" / "@anthropic-ai" / "sandbox-runtime"
SECRET = "sk-ant-doctor-never-prints-1234"
OAUTH = "oauth-doctor-never-prints-5678"
PI_KEY = "pi-doctor-never-prints-9012"


def _doctor(env: dict[str, str], cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CLI), "doctor", *argv],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _user(tmp_path: Path) -> tuple[dict[str, str], Path]:
    project = build_project(tmp_path)
    home = project.home
    (home / ".claude").mkdir()
    (home / ".claude" / ".credentials.json").write_text(
        json.dumps({"claudeAiOauth": {"accessToken": OAUTH}})
    )
    (home / ".pi" / "agent").mkdir(parents=True, exist_ok=True)  # models.json is the project's
    (home / ".pi" / "agent" / "auth.json").write_text(
        json.dumps({"local": {"type": "api_key", "key": PI_KEY}})
    )
    (home / ".codex").mkdir()  # the Codex CLI's login (issue 33): hidden, never copied
    (home / ".codex" / "auth.json").write_text(json.dumps({"OPENAI_API_KEY": SECRET}))
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "ANTHROPIC_API_KEY": SECRET,
        # The Codex CLI's key, by the variable a run takes it from without codex.json: its
        # auth.json above is no credential of a run (issue 33).
        "OPENAI_API_KEY": SECRET,
    }
    return env, project.worktree


def test_doctor_passes_on_a_set_up_checkout_in_a_worktree_and_prints_no_secret(
    tmp_path: Path,
) -> None:
    env, worktree = _user(tmp_path)
    done = _doctor(env, worktree)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("backends judged: claude, pi (those "), lines[0]
    assert all(line.startswith("[ok]") for line in lines[1:-1]), done.stdout
    assert lines[-1] == "all prerequisites hold"
    assert any("found by this checkout's node_modules" in line for line in lines)
    assert any(
        line.startswith("[ok] a command in the worker's Bash sandbox, without network")
        for line in lines
    )
    assert any(
        f"[ok] workers.json of this worktree: {worktree}/.concorde/workers.json" in line
        for line in lines
    )
    as_json = _doctor(env, worktree, "--json")
    assert as_json.returncode == 0 and json.loads(as_json.stdout)["ok"] is True
    for said in (done.stdout + done.stderr, as_json.stdout + as_json.stderr):
        for secret in (SECRET, OAUTH, PI_KEY):
            assert secret not in said


def test_doctor_exits_0_for_a_claude_user_with_only_a_gateway(tmp_path: Path) -> None:
    """Issue 31 §1: no login, no ANTHROPIC_API_KEY — Claude Code's requests go to a gateway
    that endpoints.json names, with the token of the host variable it names. plan and run took
    it; doctor said "credentials … none found" and never exited 0."""
    env, worktree = _user(tmp_path)
    home = Path(env["HOME"])
    (home / ".claude" / ".credentials.json").unlink()
    del env["ANTHROPIC_API_KEY"]
    (home / ".config" / "concorde" / "endpoints.json").write_text(
        json.dumps(
            {
                "schema_version": 1,
                "claude": {"base_url": "http://127.0.0.1:4000", "token_env": "GATEWAY_TOKEN"},
            }
        )
    )
    env["GATEWAY_TOKEN"] = SECRET
    done = _doctor(env, worktree, "--backend", "claude")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "[ok] credentials of the claude backend: present: $GATEWAY_TOKEN" in done.stdout
    assert (
        "[ok] Claude Code's endpoints.json: "
        f"{home}/.config/concorde/endpoints.json: Claude Code's requests go to "
        "http://127.0.0.1:4000, with the token of $GATEWAY_TOKEN as a bearer token"
    ) in done.stdout
    assert SECRET not in done.stdout + done.stderr


def test_doctor_names_what_is_missing_and_exits_2(tmp_path: Path) -> None:
    env, _ = _user(tmp_path)
    env["CONCORDE_MODEL_MAP"] = str(tmp_path / "no-map.json")
    env["CONCORDE_PI"] = str(tmp_path / "no-pi")
    done = _doctor(env, tmp_path)
    assert done.returncode == 2, done.stdout
    failed = [line for line in done.stdout.splitlines() if line.startswith("[FAILED]")]
    assert len(failed) == 2, done.stdout
    assert failed[0].startswith(
        "[FAILED] pi (@mariozechner/pi-coding-agent): not found "
        f"(looked at $CONCORDE_PI ({tmp_path}/no-pi))"
    )
    assert "concorde-workers install-agents" in failed[0]
    assert failed[1].startswith(f"[FAILED] model map: {tmp_path}/no-map.json ($CONCORDE_MODEL_MAP)")
    assert "workers.json" not in done.stdout  # not run inside a worktree


def _probe() -> SrtSandboxProbe:
    return SrtSandboxProbe(
        SubprocessRunner(),
        {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/root")},
    )


def test_the_real_sandbox_runs_the_probe_and_keeps_it_from_127_0_0_1() -> None:
    fact = _probe().network("/usr/bin/node" if Path("/usr/bin/node").exists() else "node", str(SRT))
    assert fact.ran and not fact.reached, fact


def test_the_probe_sees_a_connection_where_there_is_no_sandbox(tmp_path: Path) -> None:
    """A stand-in for sandbox-runtime that runs the command with the host's network: the probe
    must see the connection, or doctor could not tell a sandbox that leaks."""
    fake = tmp_path / "srt"
    (fake / "dist").mkdir(parents=True)
    (fake / "dist" / "cli.js").write_text(
        "const {spawnSync} = require('child_process');\n"
        "const i = process.argv.indexOf('-c');\n"
        "const r = spawnSync('sh', ['-c', process.argv[i + 1]], {stdio: 'inherit'});\n"
        "process.exit(r.status ?? 1);\n"
    )
    fact = _probe().network("node", str(fake))
    assert fact.ran and fact.reached, fact
