"""Issue 33: the real Codex CLI (the pinned 0.171.0) run by `concorde-workers run` and shown by
`plan`, through exactly the configuration a user writes (workers.json naming codex, the model
map's `codex` id, the machine's codex.json with a base URL and a key variable's name), against
a small scripted Responses API server on 127.0.0.1 this file starts. The generic backend tests
and the security parity run on codex through the shared scripted server (issue 33 §5-6); this is
the backend's own smoke test: Codex's own sandbox nested in the confinement runs commands, keeps
the grant, never sees the key, and leaves nothing of its placeholders in the worktree."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

CHECKOUT = Path(__file__).resolve().parents[2]
CLI = CHECKOUT / ".venv" / "bin" / "concorde-workers"
KEY = "codex-key-never-in-a-command-7731"


@dataclass
class Responses:
    """A scripted Responses API: each POST /v1/responses takes the next turn (a list of output
    items: `{"cmd": ...}` an exec_command call, `{"text": ...}` an assistant message), streamed
    as Codex reads it (response.created, output items, response.completed with usage)."""

    turns: list[list[dict[str, str]]]
    requests: list[dict[str, Any]] = field(default_factory=list)
    port: int = 0
    stop: Callable[[], None] = lambda: None

    def serve(self) -> http.server.ThreadingHTTPServer:
        script = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                return

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                n = len(script.requests)
                script.requests.append(
                    {"auth": self.headers.get("authorization"), "body": json.loads(body)}
                )
                turn = script.turns[min(n, len(script.turns) - 1)]
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                self._event({"type": "response.created", "response": {"id": f"r{n}"}})
                for i, part in enumerate(turn):
                    item = _item(n, i, part)
                    self._event(
                        {"type": "response.output_item.done", "output_index": i, "item": item}
                    )
                usage = {"input_tokens": 100, "output_tokens": 20, "total_tokens": 120}
                self._event(
                    {"type": "response.completed", "response": {"id": f"r{n}", "usage": usage}}
                )
                self.close_connection = True

            def _event(self, data: dict[str, Any]) -> None:
                self.wfile.write(b"data: " + json.dumps(data).encode() + b"\n\n")
                self.wfile.flush()

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = server.server_address[1]
        self.stop = server.shutdown
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server

    def outputs(self) -> list[str]:
        """Every command output Codex sent back to the model."""
        return [
            item["output"]
            for request in self.requests
            for item in request["body"].get("input", [])
            if item.get("type") == "function_call_output"
        ]


def _item(n: int, i: int, part: dict[str, str]) -> dict[str, Any]:
    if "cmd" in part:
        return {
            "type": "function_call",
            "id": f"fc{n}{i}",
            "call_id": f"call{n}{i}",
            "name": "exec_command",
            "arguments": json.dumps({"cmd": part["cmd"]}),
        }
    return {
        "type": "message",
        "id": f"m{n}{i}",
        "role": "assistant",
        "content": [{"type": "output_text", "text": part["text"]}],
    }


RESULT = json.dumps(
    {
        "status": "ok",
        "summary": "added",
        "error": None,
        "proposed_deletions": [],
        "output": json.dumps({"written": "src/app/new.py"}),
    }
)
GRANT = {
    "task_type": "implement",
    "entries": [
        {"path": "src/app/", "level": "rw"},
        {"path": "docs/notes.md", "level": "ro"},
        {"path": "README.md", "level": "names"},
    ],
    "context_identity": "sha256:" + "1" * 64,
}


@dataclass
class World:
    root: Path
    worktree: Path
    env: dict[str, str]
    server: Responses

    def cli(self, command: str, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                str(CLI),
                command,
                "--worktree",
                str(self.worktree),
                "--task-type",
                "implement",
                "--grant",
                str(self.root / "grant.json"),
                "--instructions",
                "add a file",
                "--backend",
                "codex",
                *args,
            ],
            env=self.env,
            cwd=self.worktree,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def make_world(tmp_path: Path, turns: list[list[dict[str, str]]]) -> World:
    """The project, its worktree on a codex configuration, the machine's files, the server."""
    server = Responses(turns=turns)
    server.serve()
    project = tmp_path / "proj"
    for rel, text in {
        "README.md": "# app\n",
        "src/app/main.py": "m\n",
        "docs/notes.md": "notes\n",
    }.items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(text)
    _git(project, "init", "-q")
    _git(project, "add", "-A")
    _git(project, "commit", "-qm", "init")
    _git(project, "worktree", "add", "-q", ".claude/worktrees/task", "-b", "task")
    with (project / ".git" / "info" / "exclude").open("a") as exclude:
        exclude.write(".claude/worktrees/\n")
    worktree = project / ".claude" / "worktrees" / "task"
    (worktree / ".concorde").mkdir()
    (worktree / ".concorde" / "workers.json").write_text(
        json.dumps(
            {
                "schema_version": 2,
                "enabled_models": {"coder": {}},
                "default": {"model": "coder", "backend": "codex"},
            }
        )
    )
    _git(worktree, "add", ".concorde/workers.json")
    _git(worktree, "commit", "-qm", "config")
    home = tmp_path / "home"
    machine = home / ".config" / "concorde"
    machine.mkdir(parents=True)
    (machine / "models.json").write_text(
        json.dumps({"schema_version": 1, "models": {"coder": {"codex": "gpt-5.5"}}})
    )
    (machine / "codex.json").write_text(
        json.dumps(
            {
                "schema_version": 1,
                "base_url": f"http://127.0.0.1:{server.port}/v1",
                "key_env": "LOCAL_LLM_API_KEY",
            }
        )
    )
    (tmp_path / "grant.json").write_text(json.dumps(GRANT))
    (tmp_path / "trace").mkdir()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "LOCAL_LLM_API_KEY": KEY,
    }
    return World(root=tmp_path, worktree=worktree, env=env, server=server)


FIRST_ROUND = [
    [
        {
            "cmd": "echo x > src/app/new.py; echo y > docs/notes.md; cat README.md; env; "
            "touch /tmp/from-command; ls -a"
        }
    ],
    [{"text": RESULT}],
]


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    made = make_world(tmp_path, FIRST_ROUND)
    yield made
    made.server.stop()


def test_plan_shows_the_whole_codex_launch(world: World) -> None:
    done = world.cli("plan")
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "codex 0.171.0 (at least 0.171.0)" in out
    assert "exec --json --strict-config --skip-git-repo-check -s workspace-write" in out
    assert f'base_url = \\"http://127.0.0.1:{world.server.port}/v1\\"' in out
    assert 'env_key = \\"LOCAL_LLM_API_KEY\\"' in out and KEY not in out
    for name in (".git", ".codex", ".agents", ".aws"):
        assert f"empty directory {world.worktree}/{name}  (a placeholder" in out, name
    assert "private writable /tmp/codex-daemon-" in out
    assert "CODEX_HOME=/tmp/concorde-" in out and world.server.requests == []


def test_a_codex_run_keeps_the_grant_with_its_own_sandbox_nested_and_never_shows_the_key(
    world: World,
) -> None:
    done = world.cli("run", "--parent", str(world.root / "trace"), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    record = json.loads(done.stdout)
    assert record["status"] == "ok", record
    assert record["worker_result"]["output"] == {"written": "src/app/new.py"}
    [output] = world.server.outputs()
    assert "error building bubblewrap command" not in output, output
    assert "docs/notes.md: Read-only file system" in output
    assert "/tmp/from-command" in output and "Read-only file system" in output
    assert KEY not in output and "LOCAL_LLM_API_KEY" not in output
    assert {r["auth"] for r in world.server.requests} == {f"Bearer {KEY}"}
    assert (world.worktree / "src/app/new.py").read_text() == "x\n"
    assert (world.worktree / "docs/notes.md").read_text() == "notes\n"
    for name in (".codex", ".agents", ".aws"):  # the placeholders lived in the namespace only
        assert not (world.worktree / name).exists(), name
    [round_] = record["rounds"]
    assert round_["audit"]["verdict"] == "clean" and round_["codex"]["thread_id"]


def test_a_repair_round_resumes_the_codex_thread_and_counts_only_its_own_usage(
    tmp_path: Path,
) -> None:
    """A check that the first round breaks asks for a repair: the second round is `exec resume`
    of the same thread (the model is sent the whole history), and its usage is its own, not the
    thread's cumulative figure Codex reports."""
    fixed = json.dumps(
        {
            "status": "ok",
            "summary": "fixed",
            "error": None,
            "proposed_deletions": [],
            "output": "{}",
        }
    )
    w = make_world(
        tmp_path,
        [
            [{"cmd": "echo x > src/app/new.py"}],
            [{"text": RESULT}],
            [{"cmd": "echo y > src/app/fixed.py"}],
            [{"text": fixed}],
        ],
    )
    try:
        check = "test ! -f src/app/new.py || test -f src/app/fixed.py"
        done = w.cli("run", "--parent", str(w.root / "trace"), "--json", "--check", check)
    finally:
        w.server.stop()
    assert done.returncode == 0, done.stdout + done.stderr
    record = json.loads(done.stdout)
    first, second = record["rounds"]
    assert (first["prompt"], second["prompt"]) == ("initial", "repair")
    assert first["codex"]["thread_id"] == second["codex"]["thread_id"]
    assert second["codex"]["tool_calls"] == 1
    # 2 requests a round, 100 input tokens each: the thread's total after round 2 is 400
    assert (first["usage"]["tokens_in"], second["usage"]["tokens_in"]) == (200, 200)
    inputs = [len(r["body"]["input"]) for r in w.server.requests]
    assert inputs == sorted(inputs) and inputs[2] > inputs[1]  # the history is sent again
    assert (w.worktree / "src/app/fixed.py").is_file()


def test_a_budget_without_the_machine_s_prices_is_refused_before_launch(tmp_path: Path) -> None:
    """Codex reports tokens, never a cost: a budget holds only priced by the host, so without
    codex.json's prices `plan` and `run` refuse it, naming the repair (never a budget silently
    unenforced)."""
    w = make_world(tmp_path, [[{"text": RESULT}]])
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"limits": {"max_budget_usd": 1.0}}))
    try:
        done = w.cli("plan", str(request))
    finally:
        w.server.stop()
    assert done.returncode == 2, done.stdout + done.stderr
    assert "max_budget_usd 1 cannot hold on the Codex CLI" in done.stdout + done.stderr
    assert "prices" in done.stdout and w.server.requests == []
