"""A throwaway example repository for `concorde-workers plan --example`.

It builds, in a new temporary folder: a Git repository with a small shop project, a linked
worktree `.claude/worktrees/example` on its own branch, the worker configuration
`.concorde/workers.json` committed in it, a model map outside the repository, a grant file and a
request file. The writes use GitPython (the host's own Git calls are read-only and go through
`adapters.git`; only this fixture writes a repository).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import git

PROJECT_FILES = {
    "README.md": "# shop\n\nA tiny shop used to show what a worker run would do.\n",
    "src/shop/cart.py": "def total(lines):\n    return sum(q * p for q, p in lines)\n",
    "src/shop/legacy.py": "# kept for the old invoices\n",
    "src/billing/invoice.py": "from shop.cart import total\n",
    "specs/shop/module.md": "# shop\n\nThe cart totals its lines.\n",
    "secrets/deploy-token.txt": "not for workers\n",
    ".gitignore": "__pycache__/\n",
}

WORKERS_JSON = {
    "schema_version": 2,
    "enabled_models": {"example-sonnet": {"reasoning": "medium"}, "example-local": {}},
    "default": {"model": "example-local"},
    "operations": {
        "implement": {
            "default": {"model": "example-local", "reasoning": "high"},
            "workers": {"reviewer": {"backend": "claude", "model": "example-sonnet"}},
        },
    },
    "limits": {"timeout_seconds": 900, "max_turns": 40, "rounds": 2},
}

MODEL_MAP = {
    "schema_version": 1,
    "models": {
        "example-local": {"pi": "local-openai/example-local"},
        "example-sonnet": {"claude": "claude-sonnet-4-5", "pi": "anthropic/claude-sonnet-4-5"},
    },
}

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

INSTRUCTIONS = ("Give the cart a discount rule: 10% off an order of 100 or more. Keep the "
                "legacy module as it is.")


@dataclass(frozen=True)
class Example:
    """Where the example lives: the folder, the worktree, and the files a request needs."""

    folder: str
    primary: str
    worktree: str
    request_file: str
    grant_file: str
    model_map: str
    declared: tuple[str, ...] = ("implement:worker", "implement:reviewer")


def create_example(parent: str | None = None) -> Example:
    """Create the example in a new temporary folder (below `parent` when given)."""
    folder = Path(tempfile.mkdtemp(prefix="concorde-example-", dir=parent)).resolve()
    primary = folder / "shop"
    for rel, text in PROJECT_FILES.items():
        target = primary / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    env = {"GIT_AUTHOR_NAME": "Example", "GIT_AUTHOR_EMAIL": "example@example.invalid",
           "GIT_COMMITTER_NAME": "Example", "GIT_COMMITTER_EMAIL": "example@example.invalid"}
    repo = git.Repo.init(primary, initial_branch="main")
    with repo.git.custom_environment(**env):
        config = primary / ".concorde" / "workers.json"
        config.parent.mkdir()
        config.write_text(json.dumps(WORKERS_JSON, indent=2) + "\n")
        repo.git.add("--all")
        repo.git.commit("-m", "The shop")
        repo.git.worktree("add", "-b", "example", str(primary / ".claude/worktrees/example"))
    model_map = folder / "models.json"
    model_map.write_text(json.dumps(MODEL_MAP, indent=2) + "\n")
    grant_file = folder / "grant.json"
    grant_file.write_text(json.dumps(GRANT, indent=2) + "\n")
    worktree = primary / ".claude" / "worktrees" / "example"
    request = {
        "worktree": str(worktree), "task_type": "implement", "grant": GRANT,
        "instructions": INSTRUCTIONS, "operation": "implement", "worker": "worker",
    }
    request_file = folder / "request.json"
    request_file.write_text(json.dumps(request, indent=2) + "\n")
    return Example(folder=str(folder), primary=str(primary), worktree=str(worktree),
                   request_file=str(request_file), grant_file=str(grant_file),
                   model_map=str(model_map))


def project_programs() -> dict[str, str]:
    """The agent programs this checkout pinned (package.json), when they are installed beside
    the package: the example points CONCORDE_PI, CONCORDE_CLAUDE and CONCORDE_SANDBOX_RUNTIME at
    them, as the tests and the demo do."""
    root = Path(__file__).resolve().parent.parent / "node_modules"
    found: dict[str, str] = {}
    for variable, rel in (("CONCORDE_PI", ".bin/pi"), ("CONCORDE_CLAUDE", ".bin/claude"),
                          ("CONCORDE_SANDBOX_RUNTIME", "@anthropic-ai/sandbox-runtime")):
        if os.path.exists(root / rel):
            found[variable] = str(root / rel)
    return found
