"""Recapture tests/fixtures/claude/ with the Claude Code under test against the scripted Messages
API: `python tests/servers/capture_claude.py [name ...]` (every capture without names).

Each capture runs the real claude as a round does (`-p`, stream-json, bypassPermissions, the
worker result schema inline, --max-turns), with its own scratch folder standing for the runtime
directory: `<scratch>/work` is the working directory, HOME, TMPDIR and CLAUDE_CONFIG_DIR lie
beside it, and every occurrence of the scratch folder in what it prints is rewritten to `<rt>`.
It writes `<name>.stdout.jsonl`, `<name>.stderr` and `<name>.rc` (`rc=<exit> elapsed=<s>`).
Nothing but 127.0.0.1 is contacted. `err529_nonroot` is not captured here (docs/decisions.md
"Claude Code stream fixtures").
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from concorde_workers.contracts import worker_result_schema  # noqa: E402
from concorde_workers.domain.isolation.launch import schema_text  # noqa: E402
from servers.anthropic_server import AnthropicServer, Reply  # noqa: E402
from servers.claude_wrapper import PINNED_CLAUDE  # noqa: E402

FIXTURES = HERE.parent / "fixtures" / "claude"
OK = {
    "status": "ok",
    "summary": "Created hello.txt as asked.",
    "error": None,
    "proposed_deletions": [],
    "output": {"note": "fake server result"},
}
INVALID = {"status": "maybe", "summary": ""}
BOGUS_SESSION = "11111111-2222-3333-4444-555555555555"
TOOLS = "Bash,Edit,Glob,Grep,Read,Write"


def write_then_result(work: Path) -> list[Reply]:
    return [
        Reply.tool(
            "Write",
            {"file_path": str(work / "hello.txt"), "content": "hello from fake\n"},
            text="I will create the file.",
        ),
        Reply.tool("StructuredOutput", OK, text="Here is the result."),
    ]


def glob(work: Path) -> Reply:
    return Reply.tool("Glob", {"pattern": "*", "path": str(work)})


Scenario = dict[str, Any]


def scenarios(work: Path) -> dict[str, Scenario]:
    """name -> script (replies in order), repeat (after them), extra argv, environment."""
    error = Reply.error
    return {
        "round1": {"script": write_then_result(work)},
        "round1_resume": {"script": write_then_result(work), "resume": "round1"},
        "text_only": {
            "script": [Reply.text("I refuse to call tools.")],
            "repeat": Reply.text("I refuse to call tools."),
        },
        "budget": {"repeat": glob(work), "argv": ["--max-budget-usd", "0.0025"], "tokens": 1000},
        "loop": {"repeat": glob(work), "turns": "4"},
        "always_invalid20": {"repeat": Reply.structured(INVALID), "turns": "20"},
        "invalid_then_valid": {
            "script": [
                Reply.structured(INVALID),
                Reply.tool("StructuredOutput", OK, text="Here is the result."),
            ]
        },
        "hook_json": {
            "script": [
                Reply.tool("Write", {"file_path": str(work / "forbidden.txt"), "content": "x\n"}),
                Reply.tool("StructuredOutput", OK, text="Here is the result."),
            ],
            "hook": True,
        },
        "err400": {
            "repeat": error(400, "invalid_request_error", "fake bad request"),
            "retries": "1",
        },
        "err429": {
            "repeat": Reply.error(
                429,
                "rate_limit_error",
                "Number of request tokens has exceeded your per-minute rate limit (fake)",
                retry_after=0,
            ),
            "retries": "1",
        },
        "err500": {"repeat": Reply.server_error(), "retries": "1"},
        "err529": {"repeat": Reply.overloaded(), "retries": "1"},
        "connrefused": {"refused": True, "retries": "1"},
        "resume_bogus": {"resume_id": BOGUS_SESSION},
        "resume_notuuid": {"resume_id": "not-a-uuid"},
    }


HOOK = """import json, sys
call = json.load(sys.stdin)
path = call["tool_input"]["file_path"]
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
      "permissionDecision": "deny",
      "permissionDecisionReason": f"write_hook: {path} is not in the grant's rw list"}}))
"""


def run(name: str, scenario: Scenario, root: Path, sessions: dict[str, str]) -> None:
    work = root / "work"
    server = AnthropicServer(scenario.get("script", []), repeat=scenario.get("repeat")).start()
    tokens = scenario.get("tokens")
    if tokens:
        server.repeat.input_tokens = tokens  # type: ignore[union-attr]
    try:
        settings: dict[str, Any] = {"env": {"IS_SANDBOX": "1"}}
        if scenario.get("hook"):
            (root / "hook.py").write_text(HOOK)
            settings["hooks"] = {
                "PreToolUse": [
                    {
                        "matcher": "Write",
                        "hooks": [
                            {"type": "command", "command": f"{sys.executable} {root / 'hook.py'}"}
                        ],
                    }
                ]
            }
        (root / "settings.json").write_text(json.dumps(settings))
        argv = [
            str(PINNED_CLAUDE),
            "-p",
            "--settings",
            str(root / "settings.json"),
            "--tools",
            TOOLS,
            "--json-schema",
            schema_text(worker_result_schema(None)),
            "--output-format",
            "stream-json",
            "--verbose",
            "--permission-mode",
            "bypassPermissions",
            "--strict-mcp-config",
            "--max-turns",
            scenario.get("turns", "5"),
            *scenario.get("argv", []),
        ]
        resume = scenario.get("resume_id") or sessions.get(scenario.get("resume", ""))
        if resume:
            argv += ["--resume", resume]
        base = "http://127.0.0.1:9" if scenario.get("refused") else server.url
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "HOME": str(root / "home"),
            "TMPDIR": str(root / "tmp"),
            "CLAUDE_CONFIG_DIR": str(root / "config"),
            "ANTHROPIC_API_KEY": "sk-ant-test",
            "ANTHROPIC_BASE_URL": base,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "CLAUDE_CODE_DISABLE_CLAUDE_MDS": "1",
            "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
            "CLAUDE_CODE_MAX_RETRIES": scenario.get("retries", "0"),
        }
        started = time.monotonic()
        done = subprocess.run(
            argv,
            input="Create hello.txt, then return your result.",
            capture_output=True,
            text=True,
            cwd=work,
            env=env,
            timeout=300,
        )
        elapsed = time.monotonic() - started
    finally:
        server.stop()
    out = done.stdout.replace(str(root), "<rt>")
    for line in out.splitlines():
        found = json.loads(line) if line.startswith("{") else {}
        if found.get("type") == "result" and found.get("session_id"):
            sessions[name] = found["session_id"]
    (FIXTURES / f"{name}.stdout.jsonl").write_text(out)
    (FIXTURES / f"{name}.stderr").write_text(done.stderr.replace(str(root), "<rt>"))
    (FIXTURES / f"{name}.rc").write_text(f"rc={done.returncode} elapsed={elapsed:.3f}\n")
    print(f"{name}: rc={done.returncode}, {len(out.splitlines())} lines")


def main(
    names: list[str],
    make_root: Callable[[], Path] = lambda: Path(tempfile.mkdtemp(prefix="cap-", dir="/tmp")),
) -> None:
    root = make_root()
    try:
        for sub in ("work", "home", "tmp", "config"):
            (root / sub).mkdir()
        sessions: dict[str, str] = {}
        every = scenarios(root / "work")
        for name in names or list(every):
            run(name, every[name], root, sessions)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
