"""The agent programs found without environment variables (issue 12 §2), with the real pi.

- A fresh clone after ./scripts/setup: `concorde-workers plan` and `run` (the console script, a
  process of its own) on a repository of the user's own, with no CONCORDE_* variable, no pi on
  PATH, the model map and pi's configuration where a user keeps them: the host finds the
  checkout's pinned pi and sandbox-runtime, says so, and the run ends ok.
- A pip install: the programs in the user data folder (~/.local/share/concorde-workers, which
  `install-agents` fills) lie under the home the confinement hides; the run still starts them
  confined (their node_modules bound back read-only), its bash still has no network; and
  Claude Code from the same folder runs a round confined, and so does the Codex CLI's native
  program (issue 33 §1), its own sandbox nested.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from dependency_injector import providers
from e2e.conftest import ok_result
from e2e.conftest_codex import CodexWorld, codex_world, exec_call, result_turn
from e2e.conftest_pi import CHECKOUT, MODEL, call, pi_world, reply, require_programs, result_call
from servers.anthropic_server import Reply
from servers.claude_wrapper import write_wrapper
from timing import SLOW
from worlds.repository import GRANT

from concorde_workers.container import host_facts, production
from concorde_workers.domain.configuration.discovery import installations
from concorde_workers.domain.configuration.request import Limits, RunRequest

pytestmark = pytest.mark.e2e
__all__ = ["codex_world", "pi_world"]

PLAIN_PATH = "/usr/local/bin:/usr/bin:/bin"
CLI = Path(sys.executable).parent / "concorde-workers"
WORKERS = {
    "schema_version": 2,
    "enabled_models": {"m-local": {}},
    "default": {"model": "m-local", "backend": "pi"},
}


def _user_setup(world: Any) -> dict[str, str]:
    """What a user keeps outside the repository: the model map in ~/.config/concorde/, pi's
    configuration in ~/.pi/agent; the environment has nothing else of concorde-workers."""
    config = world.home / ".config" / "concorde"
    config.mkdir(parents=True, exist_ok=True)
    (config / "models.json").write_text(
        json.dumps({"schema_version": 1, "models": {"m-local": {"pi": MODEL}}})
    )
    shutil.copytree(world.pi_dir, world.home / ".pi" / "agent")
    assert shutil.which("pi", path=PLAIN_PATH) is None, "a pi on PATH would hide the checkout's"
    return {"PATH": PLAIN_PATH, "HOME": str(world.home), "LANG": "C.UTF-8"}


def _commit_workers_json(world: Any) -> None:
    target = world.worktree / ".concorde" / "workers.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(WORKERS))
    world.git(world.worktree, "add", "-A")
    world.git(world.worktree, "commit", "-q", "-m", "workers")


def _cli(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    assert not any(k.startswith("CONCORDE_") for k in env), env
    return subprocess.run(
        [str(CLI), *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=SLOW,
        check=False,
        cwd="/",
    )


def test_a_fresh_clone_plans_and_runs_the_users_repository_with_no_variable_set(
    pi_world: Any,
) -> None:
    world = pi_world
    env = _user_setup(world)
    _commit_workers_json(world)
    grant = world.root / "grant.json"
    grant.write_text(json.dumps(GRANT))
    flags = [
        "--worktree",
        str(world.worktree),
        "--task-type",
        "implement",
        "--grant",
        str(grant),
        "--instructions",
        "Write the note.",
        "--operation",
        "implement",
        "--worker",
        "worker",
    ]
    planned = _cli(env, "plan", *flags, "--json")
    assert planned.returncode == 0, planned.stdout + planned.stderr
    programs = {p["program"]: p for p in json.loads(planned.stdout)["programs"]}
    checkout_modules = str(CHECKOUT / "node_modules")
    assert programs["pi"]["path"] == f"{checkout_modules}/.bin/pi"
    assert programs["pi"]["origin"].startswith("this checkout's node_modules")
    assert programs["sandbox-runtime"]["origin"].startswith("this checkout's node_modules")
    text = _cli(env, "plan", *flags)
    assert "the pi program in this checkout's node_modules" in text.stdout, text.stdout
    assert (
        f"/.bin/pi  ← {checkout_modules}/@mariozechner/pi-coding-agent/package.json; found by "
        "this checkout's node_modules" in text.stdout
    ), text.stdout

    world.server.add(
        reply(call("write", "w1", path=world.path("src/app/note.py"), content="x = 1\n")),
        reply(result_call("r1", summary="wrote the note")),
    )
    parent = world.root / "trace"
    parent.mkdir()
    ran = _cli(env, "run", *flags, "--parent", str(parent), "--json")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    record = json.loads(ran.stdout)
    assert record["status"] == "ok"
    assert (world.worktree / "src/app/note.py").read_text() == "x = 1\n"
    kept = json.loads((Path(record["run_directory"]) / "programs.json").read_text())
    assert {p["program"]: p["origin"].split(" (")[0] for p in kept["programs"]} == {
        "pi": "this checkout's node_modules",
        "sandbox-runtime": "this checkout's node_modules",
    }


def _user_data_copy(home: Path) -> Path:
    """The pinned programs as `install-agents` leaves them, under the user's home: a copy of the
    checkout's node_modules made of hard links (same files, no second 600 MB)."""
    folder = home / ".local" / "share" / "concorde-workers"
    folder.mkdir(parents=True)
    source = CHECKOUT / "node_modules"
    made = subprocess.run(
        ["cp", "-al", str(source), str(folder / "node_modules")],
        capture_output=True,
        text=True,
        check=False,
    )
    if made.returncode != 0:  # another filesystem: a real copy
        shutil.copytree(source, folder / "node_modules", symlinks=True)
    return folder / "node_modules"


def test_programs_in_the_user_data_folder_run_confined_under_the_hidden_home(pi_world: Any) -> None:
    require_programs()
    world = pi_world
    modules = _user_data_copy(world.home)
    env = {**_user_setup(world), "PI_CODING_AGENT_DIR": str(world.pi_dir)}
    # As a pip install sees it: no checkout beside the package, the user data folder only.
    facts = dataclasses.replace(host_facts(env), installations=installations(None, env))
    container = production(env)
    container.host.override(facts)
    container.temp_root.override(providers.Object(str(world.temp_root)))
    probe = (
        f"echo reached > {world.path('src/app/bash.txt')}; "
        f"curl -sS -m 3 {world.server.base_url}/models; echo curl_exit=$?"
    )
    world.server.add(
        reply(call("bash", "b1", command=probe)), reply(result_call("r1", summary="probed"))
    )
    parent = world.root / "trace" / "op"
    parent.mkdir(parents=True)
    request = RunRequest.model_validate(
        {
            "backend": "pi",
            "worktree": str(world.worktree),
            "parent": str(parent),
            "task_type": "implement",
            "grant": GRANT,
            "instructions": "Probe.",
            "limits": Limits(
                timeout_seconds=SLOW, max_turns=10, rounds=0, retries=0, retry_delay_seconds=0
            ).model_dump(),
            "local_model": MODEL,
        }
    )
    prepared = container.planner().plan(request).prepared
    assert prepared is not None and prepared.confinement is not None
    mounts = {m.path: m.kind.value for m in prepared.confinement.mounts}
    assert str(modules) in mounts, mounts
    hiding = [
        path
        for path, kind in mounts.items()
        if kind == "empty directory" and str(modules).startswith(path + "/")
    ]
    assert hiding, f"the home around the user data folder is hidden: {mounts}"
    assert mounts[str(modules)] == "read-only", "and its node_modules bound back read-only"
    record = container.worker_host().run(request)
    assert record.status == "ok", record.error
    assert (world.worktree / "src/app/bash.txt").read_text() == "reached\n"
    said = world.server.tool_results()["b1"]
    assert "curl_exit=" in said and "curl_exit=0" not in said, said
    kept = json.loads((Path(record.run_directory) / "programs.json").read_text())
    origins = {p["program"]: p["origin"] for p in kept["programs"]}
    assert origins["pi"].startswith("the user data folder"), origins
    assert kept["programs"][0]["path"].startswith(str(modules)), kept
    assert os.path.isdir(modules)


def test_claude_in_the_user_data_folder_runs_confined_under_the_hidden_home(
    claude_world: Any, claude_program: Path
) -> None:
    """Claude Code as install-agents leaves it, in ~/.local/share/concorde-workers/node_modules
    (here the test wrapper that points it at the scripted server, beside a hard link of the
    claude under test): found there with no CONCORDE_CLAUDE, started confined, the round ends
    ok and the file it wrote lands."""
    world = claude_world
    env = {k: v for k, v in world.environ.items() if k != "CONCORDE_CLAUDE"}
    modules = Path(env["HOME"]) / ".local" / "share" / "concorde-workers" / "node_modules"
    (modules / ".bin").mkdir(parents=True)
    real = modules / "claude-under-test"
    try:
        os.link(claude_program, real)
    except OSError:
        shutil.copy2(claude_program, real)
    write_wrapper(modules / ".bin" / "claude", real, world.server.url)
    facts = dataclasses.replace(host_facts(env), installations=installations(None, env))
    container = production(env)
    container.host.override(facts)
    container.temp_root.override(providers.Object(str(world.temp_root)))
    target = world.worktree / "src" / "app" / "from_data.py"
    world.server.push(
        Reply.tools(("Write", {"file_path": str(target), "content": "ok = 1\n"})),
        Reply.structured(ok_result(summary="written")),
    )
    request = world.request(
        limits=Limits(timeout_seconds=SLOW, max_turns=5, rounds=0, retries=0, retry_delay_seconds=0)
    )
    prepared = container.planner().plan(request).prepared
    assert prepared is not None and prepared.confinement is not None
    assert {m.path: m.kind.value for m in prepared.confinement.mounts}.get(
        str(modules)
    ) == "read-only"
    record = container.worker_host().run(request)
    assert record.status == "ok", record.error
    assert target.read_text() == "ok = 1\n"
    kept = json.loads((Path(record.run_directory) / "programs.json").read_text())
    [claude] = kept["programs"]
    assert claude["path"] == str(modules / ".bin" / "claude")
    assert claude["origin"].startswith("the user data folder"), claude


def test_codex_in_the_user_data_folder_runs_confined_under_the_hidden_home(
    codex_world: CodexWorld,
) -> None:
    """The Codex CLI as install-agents leaves it (issue 33 §1): the native program of its
    platform package in ~/.local/share/concorde-workers/node_modules, found there with no
    CONCORDE_CODEX and nothing on PATH, its whole node_modules bound back read-only under the
    hidden home, and its own sandbox nested: the command it runs writes into the grant."""
    world = codex_world
    modules = _user_data_copy(world.home)
    env = {k: v for k, v in world.environ.items() if k != "CONCORDE_CODEX"}
    env["PATH"] = PLAIN_PATH
    assert shutil.which("codex", path=PLAIN_PATH) is None, "a codex on PATH would be found first"
    facts = dataclasses.replace(host_facts(env), installations=installations(None, env))
    container = production(env)
    container.host.override(facts)
    container.temp_root.override(providers.Object(str(world.temp_root)))
    world.server.add(
        exec_call(f"echo reached > {world.worktree / 'src/app/codex.txt'}", "c1"),
        result_turn(summary="probed"),
    )
    request = world.request(
        Limits(timeout_seconds=SLOW, max_turns=10, rounds=0, retries=0, retry_delay_seconds=0)
    )
    prepared = container.planner().plan(request).prepared
    assert prepared is not None and prepared.confinement is not None
    mounts = {m.path: m.kind.value for m in prepared.confinement.mounts}
    assert mounts.get(str(modules)) == "read-only", mounts
    assert any(
        kind == "empty directory" and str(modules).startswith(path + "/")
        for path, kind in mounts.items()
    ), f"the home around the user data folder is hidden: {mounts}"
    record = container.worker_host().run(request)
    assert record.status == "ok", record.error
    assert (world.worktree / "src/app/codex.txt").read_text() == "reached\n"
    kept = json.loads((Path(record.run_directory) / "programs.json").read_text())
    [codex] = kept["programs"]
    assert codex["path"].startswith(str(modules)), codex
    assert codex["origin"].startswith("the user data folder"), codex
