"""Runs every block of README.md as a user copies it, in order, on a fresh project (issue 31 §1),
inside a network namespace of its own — started by tests/e2e/test_readme_e2e.py as

    unshare --net -- python tests/e2e/readme_walkthrough.py ROOT

— so that the README's own addresses are free and its scripted model servers the only ones
there: Claude Code's gateway at 127.0.0.1:4000 (a scripted Messages API) and pi's local
provider at 127.0.0.1:8000/v1 (a scripted OpenAI-compatible API). Nothing else is reachable.

What a user has before the README begins is made here, and only that: a home (ROOT/home) with
their Git identity, their project `~/src/myproject` (a Git repository with `src/app/` and
`tests/`), `cw` on PATH for this checkout's `concorde-workers`, and the two secrets the README
says to export (`GATEWAY_TOKEN`, `LOCAL_API_KEY`). Every block then runs as written: a `json`
block is written at the path it names, a `sh` block runs in bash (`-euo pipefail`) from the
home — the Quickstart's from this clone, as it says —, a `python` block with this checkout's
interpreter; a `text` block is only shown. The first block that fails ends the walk.

ROOT/report.json holds, per block, its line, kind, exit status and the ends of its output, and
what each scripted server was asked.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1]
CHECKOUT = TESTS.parent
sys.path.insert(0, str(TESTS))

from readme_blocks import Block, readme_blocks  # noqa: E402
from servers.anthropic_server import AnthropicServer  # noqa: E402
from servers.anthropic_server import Reply as ClaudeReply  # noqa: E402
from servers.openai_server import Reply, ScriptedModelServer, ToolCall, Usage  # noqa: E402

GATEWAY_PORT = 4000
LOCAL_PORT = 8000
GATEWAY_TOKEN = "gw-readme-token-31"
LOCAL_API_KEY = "sk-readme-local-31"
FORM = (
    "def validate(name):\n    if not name:\n        raise ValueError('a name')\n    return name\n"
)
TAIL = 6000
BLOCK_SECONDS = 900.0
"""A bound that only ends a hung block (never a timed assertion)."""


def result(summary: str) -> dict[str, Any]:
    return {
        "status": "ok",
        "summary": summary,
        "error": None,
        "proposed_deletions": [],
        "output": {},
    }


def user(root: Path) -> dict[str, str]:
    """The user's home, project and environment, as they stand before the README begins."""
    home, bin_dir = root / "home", root / "bin"
    project = home / "src" / "myproject"
    for folder in (project / "src" / "app", project / "tests", bin_dir):
        folder.mkdir(parents=True)
    (project / "src" / "app" / "__init__.py").write_text("")
    (project / "tests" / "test_app.py").write_text("def test_app():\n    assert True\n")
    (project / "README.md").write_text("# myproject\n")
    (bin_dir / "cw").symlink_to(CHECKOUT / ".venv" / "bin" / "concorde-workers")
    env = {
        "HOME": str(home),
        "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "GATEWAY_TOKEN": GATEWAY_TOKEN,
        "LOCAL_API_KEY": LOCAL_API_KEY,
    }
    git = ["git", "-C", str(project)]
    for argv in (
        ["git", "config", "--global", "user.name", "Ada"],
        ["git", "config", "--global", "user.email", "ada@example.invalid"],
        ["git", "init", "-q", "-b", "main", str(project)],
        [*git, "add", "-A"],
        [*git, "commit", "-qm", "myproject"],
    ):
        subprocess.run(argv, env=env, check=True, capture_output=True)
    return env


def servers(home: Path) -> tuple[AnthropicServer, ScriptedModelServer]:
    """The gateway Claude Code's run of step 8 reaches (it writes src/app/form.py, then ends
    ok) and pi's local provider the Python example's run reaches (it ends ok)."""
    form = home / "src/myproject/.claude/worktrees/task-1/src/app/form.py"
    gateway = AnthropicServer(
        [
            ClaudeReply.tool("Write", {"file_path": str(form), "content": FORM}),
            ClaudeReply.structured(result("validation added")),
        ]
    ).start(GATEWAY_PORT)
    call = ToolCall(name="concorde_result", arguments=result("nothing to change"), id="call_r")
    local = ScriptedModelServer(
        [
            Reply(
                text=None, tool_calls=(call,), usage=Usage(prompt_tokens=1000, completion_tokens=50)
            )
        ]
    ).start(LOCAL_PORT)
    return gateway, local


def run_block(block: Block, env: dict[str, str]) -> dict[str, Any]:
    """One block as a user takes it; its outcome."""
    said: dict[str, Any] = {"line": block.line, "kind": block.kind, "target": block.target}
    home = Path(env["HOME"])
    if block.kind == "json":
        path = home / (block.target or "")[2:]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(block.body)
        return {**said, "status": 0}
    if block.kind == "sh":
        argv = ["bash", "-euo", "pipefail", "-c", block.body]
    elif block.kind == "python":
        argv = [sys.executable, "-c", block.body]
    else:
        return {**said, "status": 0, "shown": True}
    cwd = CHECKOUT if block.section == "Quickstart" else home
    done = subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=BLOCK_SECONDS,
        check=False,
    )
    return {
        **said,
        "status": done.returncode,
        "stdout_head": done.stdout[:TAIL],
        "stdout": done.stdout[-TAIL:],
        "stderr": done.stderr[-TAIL:],
    }


def main(root: Path) -> int:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    env = user(root)
    gateway, local = servers(Path(env["HOME"]))
    ran: list[dict[str, Any]] = []
    try:
        for block in readme_blocks():
            ran.append(run_block(block, env))
            if ran[-1]["status"] != 0:
                break
    finally:
        gateway.stop()
        local.stop()

    def asked(log: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Each request's path and bearer token (the test compares it, never prints more)."""
        heads = [{k.lower(): v for k, v in dict(r["headers"]).items()} for r in log]
        return [
            {"path": r["path"], "authorization": h.get("authorization")}
            for r, h in zip(log, heads, strict=True)
        ]

    report = {
        "blocks": ran,
        "gateway": asked(gateway.log),
        "gateway_failures": gateway.failures,
        "local": asked(local.requests),
    }
    (root / "report.json").write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
