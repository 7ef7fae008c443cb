"""A driver of the real `codex exec` (the pinned @openai/codex), headless and offline, against
the scripted Responses API server: what the contract tests hold that server to
(tests/contract/test_responses_server_contract.py), and the baseline of
benchmarks/codex_overhead.py.

Each run gets a fresh CODEX_HOME holding only the backend's own `config.toml` (`codex_config`,
the hardened template of ../shared/notes/codex.md: a custom provider at the server, every
outbound service off, the worktree's AGENTS.md and skills off, codex's own retries off), an
empty HOME, a TMPDIR beside
(never around) the CODEX_HOME, and the environment `env -i` would give plus the key variable.
The prompt goes on stdin, which is then closed (left open, `codex exec` waits for it).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from concorde_workers.adapters.codex.config import PROVIDER, codex_config
from concorde_workers.adapters.codex.endpoint import CodexEndpoint

__all__ = [
    "KEY",
    "KEY_ENV",
    "MODEL",
    "PROVIDER",
    "CodexExec",
    "ExecResult",
    "find_codex",
    "hardened_config",
]

CHECKOUT = Path(__file__).resolve().parents[2]
NATIVE = Path("@openai", "codex-linux-x64", "vendor", "x86_64-unknown-linux-musl", "bin", "codex")
"""The native binary inside the pinned package (`node_modules/<NATIVE>`): what the backend
launches, Node being needed only to install it."""
MODEL = "gpt-5.5"
"""A slug of codex's own catalog: an unknown one loses apply_patch and warns each run."""
KEY_ENV = "SCRIPTED_API_KEY"
KEY = "sk-scripted-codex-key"


def find_codex() -> Path | None:
    """The codex under test: `$CONCORDE_CODEX` when set, else the pinned native binary of the
    checkout's node_modules (./scripts/setup, or `npm install` of the pin)."""
    named = os.environ.get("CONCORDE_CODEX")
    if named:
        return Path(named)
    pinned = CHECKOUT / "node_modules" / NATIVE
    return pinned if pinned.exists() else None


def hardened_config(
    base_url: str, *, model: str = MODEL, overrides: Mapping[str, Mapping[str, Any]] = ()
) -> str:
    """The backend's own config.toml (adapters/codex/config.py `codex_config`, what every round
    of a run is given) at `base_url` with the key in `KEY_ENV`; `overrides` replace or add keys
    per table (e.g. {f"model_providers.{PROVIDER}": {"stream_max_retries": 1}})."""
    endpoint = CodexEndpoint(base_url=base_url, key_env=KEY_ENV)
    text = codex_config(endpoint=endpoint, model=model, reasoning=None, sandbox="workspace-write")
    lines = text.splitlines()
    for table, keys in dict(overrides).items():
        start = lines.index(f"[{table}]") + 1
        end = next((i for i in range(start, len(lines)) if lines[i].startswith("[")), len(lines))
        kept = [line for line in lines[start:end] if line.split(" = ", 1)[0] not in keys]
        added = [f"{key} = {json.dumps(value)}" for key, value in keys.items()]
        lines[start:end] = [*(line for line in kept if line), *added, ""]
    return "\n".join(lines).rstrip("\n") + "\n"


@dataclass
class ExecResult:
    """One `codex exec` process: its exit code, its `--json` events, its stderr and the
    `-o` file's text (None when it wrote none)."""

    code: int
    events: list[dict[str, Any]]
    stderr: str
    last_message: str | None

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == kind]

    def items(self, kind: str, event: str = "item.completed") -> list[dict[str, Any]]:
        return [e["item"] for e in self.of_type(event) if e["item"].get("type") == kind]

    @property
    def thread_id(self) -> str:
        started = self.of_type("thread.started")
        assert len(started) == 1, self.explain()
        return str(started[0]["thread_id"])

    @property
    def failure(self) -> str | None:
        """`turn.failed`'s error message, None when no turn failed."""
        failed = self.of_type("turn.failed")
        return str(failed[-1]["error"]["message"]) if failed else None

    def explain(self) -> str:
        return json.dumps(
            {"code": self.code, "events": self.events, "stderr": self.stderr[-3000:]}, indent=1
        )[:10000]


@dataclass
class CodexExec:
    """`codex exec` in one test's folders: `codex_home` (its config.toml written by
    `configure`), `home`, `tmpdir`, `worktree` (a Git repository)."""

    program: Path
    root: Path
    worktree: Path
    timeout: float = 120.0
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def codex_home(self) -> Path:
        return self.root / "codex-home"

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def tmpdir(self) -> Path:
        return self.root / "tmpdir"

    def configure(self, config: str) -> None:
        for folder in (self.codex_home, self.home, self.tmpdir):
            folder.mkdir(parents=True, exist_ok=True)
        (self.codex_home / "config.toml").write_text(config)

    def environment(self) -> dict[str, str]:
        return {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "HOME": str(self.home),
            "CODEX_HOME": str(self.codex_home),
            "TMPDIR": str(self.tmpdir),
            KEY_ENV: KEY,
            **self.extra_env,
        }

    def argv(
        self,
        *,
        schema: Path | None = None,
        resume: str | None = None,
        sandbox: str = "workspace-write",
        last: Path | None = None,
    ) -> list[str]:
        argv = [str(self.program), "exec", "--json", "--strict-config", "--skip-git-repo-check"]
        argv += ["-s", sandbox, "-C", str(self.worktree)]
        if schema is not None:
            argv += ["--output-schema", str(schema)]
        if last is not None:
            argv += ["-o", str(last)]
        return argv + (["resume", resume, "-"] if resume else ["-"])

    def run(
        self,
        prompt: str = "Do the scripted task.",
        *,
        schema: Path | None = None,
        resume: str | None = None,
        sandbox: str = "workspace-write",
        args: Sequence[str] = (),
    ) -> ExecResult:
        last = self.root / "last-message.txt"
        last.unlink(missing_ok=True)
        argv = self.argv(schema=schema, resume=resume, sandbox=sandbox, last=last)
        proc = subprocess.run(
            [*argv[:2], *args, *argv[2:]],
            input=prompt,
            capture_output=True,
            text=True,
            env=self.environment(),
            timeout=self.timeout,
            check=False,
        )
        events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        text = last.read_text() if last.exists() else None
        return ExecResult(proc.returncode, events, proc.stderr, text)
