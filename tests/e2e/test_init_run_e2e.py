"""Issue 19 "Done means", the user's path from a fresh repository to a first run, through the
installed command line with the real pi against the scripted server on 127.0.0.1: `init --task
t1` in the user's own project (pi's settings name its default model, so init maps it), then the
`plan` init prints, then `run` with the same flags. Nothing but what init wrote configures it.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from e2e.conftest_pi import PI, SANDBOX_RUNTIME, call, reply, result_call
from servers.openai_server import DEFAULT_MODEL, DEFAULT_PROVIDER, ScriptedModelServer
from timing import SLOW
from worlds.repository import remove_temp_root

from concorde_workers.adapters.demo.scripted_model_server import write_pi_config

pytestmark = pytest.mark.e2e

SCRIPT = Path(sys.executable).parent / "concorde-workers"


@pytest.fixture
def server() -> Iterator[ScriptedModelServer]:
    started = ScriptedModelServer().start()
    try:
        yield started
    finally:
        started.stop()


def test_init_then_plan_then_run_on_a_user_s_own_project(
    tmp_path: Path, server: ScriptedModelServer
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    repo = tmp_path / "calc"
    (repo / "src" / "calc").mkdir(parents=True)
    (repo / "src" / "calc" / "__init__.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "README.md").write_text("# calc\n")
    pi_dir = home / ".pi" / "agent"
    write_pi_config(pi_dir, server.base_url)
    (pi_dir / "settings.json").write_text(
        json.dumps({"defaultProvider": DEFAULT_PROVIDER, "defaultModel": DEFAULT_MODEL})
    )
    temp_root = Path(tempfile.mkdtemp(prefix="cie-", dir="/tmp"))
    env = {
        "PATH": f"{SCRIPT.parent}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": str(home),
        "TMPDIR": str(temp_root),
        "CONCORDE_PI": str(PI),
        "CONCORDE_SANDBOX_RUNTIME": str(SANDBOX_RUNTIME),
        "GIT_CONFIG_NOSYSTEM": "1",
    }

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, capture_output=True)

    def cw(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(SCRIPT), *argv],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=SLOW,
            check=False,
        )

    try:
        subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], env=env, check=True)
        git("config", "--global", "user.name", "Ada")
        git("config", "--global", "user.email", "ada@example.invalid")
        git("add", "-A")
        git("commit", "-qm", "calc")
        made = cw("init", "--task", "t1", "--json")
        assert made.returncode == 0, made.stdout + made.stderr
        done = json.loads(made.stdout)
        worktree = Path(done["worktree"])
        argv = shlex.split(done["next"].replace("What the worker should do", "Fix add."))
        assert argv[:2] == ["concorde-workers", "plan"]
        planned = cw(*argv[1:])
        assert planned.returncode == 0, planned.stdout + planned.stderr
        fixed = "def add(a, b):\n    return a + b\n"
        target = worktree / "src" / "calc" / "__init__.py"
        server.add(
            reply(call("write", "c1", path=str(target), content=fixed)),
            reply(result_call("c2", summary="add adds")),
        )
        parent = tmp_path / "trace"
        parent.mkdir()
        ran = cw("run", *argv[2:], "--parent", str(parent), "--json")
        assert ran.returncode == 0, ran.stdout + ran.stderr
        record = json.loads(ran.stdout)
        assert record["status"] == "ok" and record["backend"] == "pi", record
        assert record["local_model"] == f"{DEFAULT_PROVIDER}/{DEFAULT_MODEL}"
        assert target.read_text() == fixed
        assert os.listdir(temp_root) == []  # the runtime directory is gone
    finally:
        remove_temp_root(temp_root)
