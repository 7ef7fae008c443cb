"""`concorde-workers demo --backend codex`'s world (issue 33 "Done means"): the demo's throwaway
repository, the scripted Responses API server on 127.0.0.1
(adapters/demo/scripted_responses_server.py) and the machine configuration that reaches it
exactly as a user's own local endpoint is configured: a `codex.json` (a base URL, the name of
the key's variable and the prices of a token, never a secret; `$CONCORDE_CODEX_CONFIG` names
it) and that variable set for the run.
The user's own `codex.json`, `~/.codex` and key are never read. The real, pinned Codex CLI is
found as for any run (domain/configuration/discovery.py).

The scripted worker does what pi's does in the demo: an allowed write (an `apply_patch` adding
src/shop/discount.py), a write the grant refuses (an `apply_patch` changing the read-only
src/shop/legacy.py), a network attempt from the shell (`exec_command`), then its final message,
the worker result, with a proposed deletion (`output` as JSON text: the strict wire schema the
backend sends, decoded and validated on the host).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from concorde_workers.adapters.demo.example_repository import (
    DEMO_FILES,
    DEMO_INSTRUCTIONS,
    DEMO_WORKTREE,
    GRANT,
    DemoWorld,
    repository,
)
from concorde_workers.adapters.demo.scripted_responses_server import (
    Call,
    Patch,
    ScriptedResponsesServer,
    Turn,
    Usage,
)

__all__ = [
    "CODEX_DEMO_KEY",
    "CODEX_DEMO_KEY_ENV",
    "CODEX_DEMO_MODEL",
    "CODEX_DEMO_PRICES",
    "codex_demo_script",
    "start_codex_demo",
]

CODEX_DEMO_MODEL = "gpt-5.5"
"""A slug of Codex 0.171.0's own catalog: with an unknown one Codex drops apply_patch."""
CODEX_DEMO_KEY_ENV = "CONCORDE_DEMO_API_KEY"
"""The variable codex.json names for the key: a secret's name, as the endpoint reader asks."""
CODEX_DEMO_KEY = "demo-key-of-the-scripted-server"
"""The scripted server takes any key; a real endpoint's stays in the user's own variable."""
CODEX_DEMO_PRICES = {"input": 3.0, "cached_input": 0.3, "output": 15.0}
"""US dollars per million tokens: Codex reports tokens only, the host prices them, so the
demo's budget holds as a real run's would."""


def _result_text(result: dict[str, Any]) -> str:
    """The worker result as the model answers it on the wire: `output` as a JSON text."""
    return json.dumps({**result, "output": json.dumps(result["output"])})


def codex_demo_script(worktree: str, port: int) -> list[Turn]:
    """The scripted Codex worker: an allowed patch, a patch of a read-only file, a network
    attempt from the shell (Codex's own sandbox and the confinement have none), then the
    result with a proposed deletion. Its paths are absolute, as the brief asks."""
    shop = f"{worktree}/src/shop"
    probe = (
        f"curl -sS -m 3 http://127.0.0.1:{port}/v1/models; echo curl_exit=$?; "
        f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 3)\" "
        f"2>&1 | tail -1; echo python_exit=${{PIPESTATUS[0]}}"
    )
    discount = (
        f"*** Begin Patch\n*** Add File: {shop}/discount.py\n"
        "+def discount(total):\n+    return total * 0.9 if total >= 100 else total\n"
        "*** End Patch\n"
    )
    legacy = (
        f"*** Begin Patch\n*** Update File: {shop}/legacy.py\n@@\n"
        "-# kept for the old invoices\n+# changed\n*** End Patch\n"
    )
    result = {
        "status": "ok",
        "summary": "Added src/shop/discount.py; legacy.py is read-only and stays as it is; "
        "src/shop/obsolete.py is no longer used.",
        "error": None,
        "proposed_deletions": ["src/shop/obsolete.py"],
        "output": {"files": ["src/shop/discount.py"]},
    }
    return [
        Turn(
            text="I'll add the discount rule.",
            calls=[Patch(discount, "demo_write")],
            usage=Usage(1800, 60),
        ),
        Turn(
            text="The legacy module needs a note too.",
            calls=[Patch(legacy, "demo_readonly")],
            usage=Usage(2000, 40),
        ),
        Turn(
            text="Let me check the package index.",
            calls=[Call("exec_command", {"cmd": probe, "yield_time_ms": 30000}, "demo_network")],
            usage=Usage(2100, 40),
        ),
        Turn(text=_result_text(result), usage=Usage(2300, 90)),
    ]


def start_codex_demo(backend: str, parent: str | None = None) -> DemoWorld:
    """Create the demo repository (worktree `.claude/worktrees/demo`), start the scripted
    Responses API server on 127.0.0.1 with the Codex worker's script and write the machine's
    codex.json that reaches it; `backend` is the Codex CLI's profile name (the composition
    root's: this package names no backend)."""
    folder, primary, worktree = repository(
        parent, "workers-demo-", DEMO_FILES, DEMO_WORKTREE, "Demo"
    )
    server = ScriptedResponsesServer().start()
    server.add(*codex_demo_script(str(worktree), server.port))
    config = folder / "codex.json"
    config.write_text(
        json.dumps(
            {
                "schema_version": 1,
                "base_url": server.base_url,
                "key_env": CODEX_DEMO_KEY_ENV,
                "prices": CODEX_DEMO_PRICES,
            },
            indent=2,
        )
        + "\n"
    )
    trace = tempfile.mkdtemp(prefix="workers-demo-trace-", dir=folder.parent)
    return DemoWorld(
        folder=str(folder),
        primary=str(primary),
        worktree=str(worktree),
        model=CODEX_DEMO_MODEL,
        grant=json.loads(json.dumps(GRANT)),
        instructions=DEMO_INSTRUCTIONS,
        server=server,
        trace_parent=str(Path(trace).resolve()),
        environ_additions={
            "CONCORDE_CODEX_CONFIG": str(config),
            CODEX_DEMO_KEY_ENV: CODEX_DEMO_KEY,
        },
        backend=backend,
        # Codex's apply_patch writes inside its writable root, the worktree: what refuses the
        # read-only file is the namespace's read-only binding of it, below Codex's own sandbox.
        refused_by="the confinement (the file is bound read-only below Codex's own sandbox)",
        shell="the shell",
    )
