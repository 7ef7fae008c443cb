"""Throwaway example repositories: the one of `concorde-workers plan --example`, and the demo's
world of `concorde-workers demo` (its repository, scripted model server and the configuration
of the backend it runs: pi's here, the Codex CLI's in adapters/demo/codex_demo.py).

The example builds, in a new temporary folder: a Git repository with a small shop project, a linked
worktree `.claude/worktrees/example` on its own branch, the worker configuration
`.concorde/workers.json` committed in it, a model map outside the repository, a grant file and a
request file. The writes use GitPython (the host's own Git calls are read-only and go through
`adapters.repository.git`; only this fixture writes a repository); GitPython is therefore the
`demo` extra, imported only here.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import git

from concorde_workers.adapters.demo.scripted_model_server import (
    DEFAULT_MODEL,
    DEFAULT_PROVIDER,
    Reply,
    ScriptedModelServer,
    Step,
    ToolCall,
    Usage,
    write_pi_config,
)
from concorde_workers.adapters.demo.scripted_responses_server import ScriptedResponsesServer
from concorde_workers.domain.ground.backends import DEFAULT_BACKEND

PROJECT_FILES = {
    "README.md": "# shop\n\nA tiny shop used to show what a worker run would do.\n",
    "src/shop/cart.py": "def total(lines):\n    return sum(q * p for q, p in lines)\n",
    "src/shop/legacy.py": "# kept for the old invoices\n",
    "src/billing/invoice.py": "from shop.cart import total\n",
    "specs/shop/module.md": "# shop\n\nThe cart totals its lines.\n",
    "secrets/deploy-token.txt": "not for workers\n",
    ".gitignore": "__pycache__/\n",
}

EXAMPLE_LOCAL = "example-local"
"""The example's local model: its pi id names the provider the example's own pi configuration
defines."""

ExampleIds = Mapping[str, Mapping[str, str]]
"""Each registered backend's name -> the project model names of the example and that program's
id of each (its profile's `example_ids`), the default backend first."""


def example_workers_json(ids: ExampleIds) -> dict[str, Any]:
    """The example's worker configuration: every worker on the default backend (the first of
    `ids`) but the reviewer, which another backend runs when there is one."""
    names = list(ids)
    reviewer = {"model": "example-sonnet"}
    if len(names) > 1:
        reviewer = {"backend": names[1], **reviewer}
    return {
        "schema_version": 2,
        "enabled_models": {"example-sonnet": {"reasoning": "medium"}, "example-local": {}},
        "default": {"model": "example-local"},
        "operations": {
            "implement": {
                "default": {"model": "example-local", "reasoning": "high"},
                "workers": {"reviewer": reviewer},
            },
        },
        "limits": {"timeout_seconds": 900, "max_turns": 40, "rounds": 2},
    }


def example_model_map(ids: ExampleIds) -> dict[str, Any]:
    """The example's model map: each project model name to each backend's id of it."""
    models: dict[str, dict[str, str]] = {}
    for backend, named in ids.items():
        for model, local_id in named.items():
            models.setdefault(model, {})[backend] = local_id
    return {"schema_version": 1, "models": dict(sorted(models.items()))}


GRANT = {
    "task_type": "implement",
    "entries": [
        {"path": "src/shop/", "level": "rw"},
        {"path": "src/shop/legacy.py", "level": "ro"},
        {"path": "src/billing/invoice.py", "level": "ro"},
        {"path": "specs/shop/module.md", "level": "ro"},
        {"path": "README.md", "level": "names"},
    ],
    "context_identity": "sha256:" + "0" * 64,
}

INSTRUCTIONS = (
    "Give the cart a discount rule: 10% off an order of 100 or more. Keep the "
    "legacy module as it is."
)


@dataclass(frozen=True)
class Example:
    """Where the example lives: the folder, the worktree, and the files a request needs."""

    folder: str
    primary: str
    worktree: str
    request_file: str
    grant_file: str
    model_map: str
    pi_dir: str = ""
    """The example's own pi configuration (its local provider), never the user's."""
    declared: tuple[str, ...] = ("implement:worker", "implement:reviewer")

    def discard(self) -> None:
        """Remove the example's folder (repository, worktree, model map, grant, request)."""
        discard(self.folder)


def repository(
    parent: str | None, prefix: str, files: dict[str, str], branch: str, author: str
) -> tuple[Path, Path, Path]:
    """A new temporary folder (below `parent` when given) holding the repository `shop` with
    `files` committed on `main` by `author`, and the linked worktree `.claude/worktrees/<branch>`
    on its own branch: (folder, primary, worktree)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent)).resolve()
    primary = folder / "shop"
    for rel, text in files.items():
        target = primary / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    email = f"{author.lower()}@example.invalid"
    env = {
        "GIT_AUTHOR_NAME": author,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": author,
        "GIT_COMMITTER_EMAIL": email,
    }
    worktree = primary / ".claude" / "worktrees" / branch
    repo = git.Repo.init(primary, initial_branch="main")
    with repo.git.custom_environment(**env):
        repo.git.add("--all")
        repo.git.commit("-m", "The shop")
        repo.git.worktree("add", "-b", branch, str(worktree))
    return folder, primary, worktree


def create_example(ids: ExampleIds, parent: str | None = None) -> Example:
    """Create the example in a new temporary folder (below `parent` when given), its worker
    configuration and model map naming the registered backends' `ids`."""
    files = {
        **PROJECT_FILES,
        ".concorde/workers.json": json.dumps(example_workers_json(ids), indent=2) + "\n",
    }
    folder, primary, worktree = repository(parent, "workers-example-", files, "example", "Example")
    model_map = folder / "models.json"
    model_map.write_text(json.dumps(example_model_map(ids), indent=2) + "\n")
    # The local model's provider as pi's own models.json defines it: a run refuses a pi id pi
    # would not find (issue 31 §1); nothing is served there, the example only plans.
    local = next(i for by in ids.values() for m, i in by.items() if m == EXAMPLE_LOCAL and "/" in i)
    provider, model = local.split("/", 1)
    pi_dir = folder / "pi-agent"
    write_pi_config(pi_dir, "http://127.0.0.1:9/v1", provider=provider, model=model)
    grant_file = folder / "grant.json"
    grant_file.write_text(json.dumps(GRANT, indent=2) + "\n")
    request = {
        "worktree": str(worktree),
        "task_type": "implement",
        "grant": GRANT,
        "instructions": INSTRUCTIONS,
        "operation": "implement",
        "worker": "worker",
    }
    request_file = folder / "request.json"
    request_file.write_text(json.dumps(request, indent=2) + "\n")
    return Example(
        folder=str(folder),
        primary=str(primary),
        worktree=str(worktree),
        request_file=str(request_file),
        grant_file=str(grant_file),
        model_map=str(model_map),
        pi_dir=str(pi_dir),
    )


def discard(folder: str) -> None:
    """Remove a throwaway folder whole (`plan --example` and `demo` without --keep); what a
    worker left unwritable in it is opened up first."""

    def opened(function: Any, path: str, _error: Any) -> None:
        os.chmod(os.path.dirname(path), 0o700)
        if os.path.isdir(path) and not os.path.islink(path):
            os.chmod(path, 0o700)
        function(path)

    shutil.rmtree(folder, onerror=opened)


# --- `concorde-workers demo`: a throwaway repository, a scripted local model, a real pi worker ----

DEMO_WORKTREE = "demo"
DEMO_FILES = {**PROJECT_FILES, "src/shop/obsolete.py": "# no longer used by the cart\n"}
DEMO_INSTRUCTIONS = (
    "Add a discount rule to the shop, leave the legacy module as it is, and "
    "remove what is obsolete."
)


@dataclass
class DemoWorld:
    """The demo's repository, its scripted model server and the configuration of the backend
    that reaches it: for pi a temporary PI_CODING_AGENT_DIR, for the Codex CLI a machine
    `codex.json` and its key variable (adapters/demo/codex_demo.py), never the user's own."""

    folder: str
    primary: str
    worktree: str
    model: str
    grant: dict[str, Any]
    instructions: str
    server: ScriptedModelServer | ScriptedResponsesServer
    trace_parent: str
    """The run's trace node folder: beside the throwaway folder, kept when it is removed."""
    environ_additions: dict[str, str]
    """What the run's host environment gains: the demo's configuration of its backend (pi:
    PI_CODING_AGENT_DIR); the agent programs are found as for any run
    (domain/configuration/discovery.py)."""
    backend: str = DEFAULT_BACKEND
    refused_by: str = "the permission extension"
    """What refuses the worker's write of a read-only file (pi: its permission extension,
    before its write tool runs)."""
    shell: str = "bash"
    """The worker's shell tool, as the demo's checks name it."""

    def tool_results(self) -> dict[str, str]:
        """What each scripted tool call returned to the model, by call id."""
        if isinstance(self.server, ScriptedResponsesServer):
            return self.server.outputs()
        return self.server.tool_results()

    @property
    def requests_served(self) -> int:
        return len(self.server.requests)

    def close(self) -> None:
        self.server.stop()

    def discard(self) -> None:
        """Remove the demo's folder: its repository, worktree and pi configuration (the
        scripted model's key); the trace lies elsewhere (`trace_parent`) and stays, unless no
        run ever wrote into it (a refused demo leaves nothing behind)."""
        discard(self.folder)
        with contextlib.suppress(OSError):
            os.rmdir(self.trace_parent)


def demo_script(worktree: str, port: int) -> list[Step]:
    """The scripted worker: an allowed write, a write the grant refuses (a read-only file), a
    network attempt from bash (the sandbox has none), then the result with a proposed deletion."""
    shop = f"{worktree}/src/shop"
    probe = (
        f"curl -sS -m 3 http://127.0.0.1:{port}/v1/models; echo curl_exit=$?; "
        f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 3)\" "
        f"2>&1 | tail -1; echo python_exit=${{PIPESTATUS[0]}}"
    )
    discount = "def discount(total):\n    return total * 0.9 if total >= 100 else total\n"
    return [
        Reply(
            text="I'll add the discount rule.",
            usage=Usage(1800, 60),
            tool_calls=[
                ToolCall(
                    "write", {"path": f"{shop}/discount.py", "content": discount}, id="demo_write"
                )
            ],
        ),
        Reply(
            text="The legacy module needs a note too.",
            usage=Usage(2000, 40),
            tool_calls=[
                ToolCall(
                    "write",
                    {"path": f"{shop}/legacy.py", "content": "# changed\n"},
                    id="demo_readonly",
                )
            ],
        ),
        Reply(
            text="Let me check the package index.",
            usage=Usage(2100, 40),
            tool_calls=[ToolCall("bash", {"command": probe}, id="demo_network")],
        ),
        Reply(
            text="Done.",
            usage=Usage(2300, 90),
            tool_calls=[
                ToolCall(
                    "concorde_result",
                    {
                        "status": "ok",
                        "summary": (
                            "Added src/shop/discount.py; legacy.py is read-only and stays as it "
                            "is; src/shop/obsolete.py is no longer used."
                        ),
                        "error": None,
                        "proposed_deletions": ["src/shop/obsolete.py"],
                        "output": {"files": ["src/shop/discount.py"]},
                    },
                    id="demo_result",
                )
            ],
        ),
    ]


def start_demo(parent: str | None = None) -> DemoWorld:
    """Create the demo repository (worktree `.claude/worktrees/demo`), start the scripted model
    server on 127.0.0.1 with the demo's script and write the pi configuration that reaches it."""
    folder, primary, worktree = repository(
        parent, "workers-demo-", DEMO_FILES, DEMO_WORKTREE, "Demo"
    )
    server = ScriptedModelServer().start()
    server.add(*demo_script(str(worktree), server.port))
    pi_dir = folder / "pi-agent"
    write_pi_config(pi_dir, server.base_url)
    trace = tempfile.mkdtemp(prefix="workers-demo-trace-", dir=folder.parent)
    return DemoWorld(
        folder=str(folder),
        primary=str(primary),
        worktree=str(worktree),
        model=f"{DEFAULT_PROVIDER}/{DEFAULT_MODEL}",
        grant=json.loads(json.dumps(GRANT)),
        instructions=DEMO_INSTRUCTIONS,
        server=server,
        trace_parent=str(Path(trace).resolve()),
        environ_additions={"PI_CODING_AGENT_DIR": str(pi_dir)},
    )
