"""End-to-end: the run directory and the credentials at their origin, seen from the worker's own
shell, on every backend (tests/e2e/backends.py; issue 33 §6). The file-tool side of both classes
is each backend's own (tests/e2e/test_hidden_e2e.py: Claude Code's hooks, pi's extension; Codex
has no file-reading tool): what every backend shares is its shell inside the grant-built
namespace, where neither the run directory nor an origin is mounted.

Paths are written so that a command check cannot read them as paths (`split`): what is
judged is the namespace under every backend's shell.

- The run directory, with the trace parent outside the home and the primary worktree (the
  demo's own layout): this run's `status.json` (the host's pid), the `workers/` folder, and a
  sibling run's transcript beside it — each absent ("No such file or directory").
- `$HOME/.ssh/id_rsa`, the model map outside the home (CONCORDE_MODEL_MAP), and the backend's own
  credential file where the user keeps it: none of their markers reaches the model, and the
  attempts leave nothing in the worktree.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from e2e.backends import BackendWorld, backend_world
from e2e.test_check_attack_e2e import credential_texts
from e2e.test_hidden_e2e import SIBLING_TEXT, plant_sibling, split
from timing import SLOW

from concorde_workers.domain.configuration.request import Limits

pytestmark = pytest.mark.e2e
__all__ = ["backend_world"]  # the fixture, imported for pytest

LIMITS = Limits(timeout_seconds=SLOW, max_turns=6, rounds=0, retries=0, retry_delay_seconds=0)
SSH_TEXT = "SSH-PRIVATE-KEY-r5k2"
MAP_TEXT = "MODEL-MAP-h3d9"


def rc(command: str) -> str:
    return f'{command}; echo " rc=$?"'


@pytest.mark.req("A worker reads beside its grant only what its caller lists")
def test_the_worker_s_shell_finds_no_run_directory(backend_world: BackendWorld) -> None:
    w = backend_world
    parent = w.parent
    sibling = plant_sibling(parent)
    assert not parent.is_relative_to(w.environ["HOME"]) and not parent.is_relative_to(w.primary)
    run, said = w.command(
        "; ".join(
            [
                rc(f"cat {split(parent / 'workers')}/w-*/status.json"),
                rc(f"ls -A {split(parent / 'workers')}"),
                rc(f"cat {split(sibling / 'transcript.jsonl')}"),
            ]
        ),
        limits=LIMITS,
    )
    assert run.record.status == "ok", run.explain()
    assert Path(run.record.run_directory).parent == parent / "workers"  # the layout tried
    assert said.count(" rc=") == 3, said  # the shell ran every command
    assert said.count("No such file or directory") == 3, said
    for secret in ("host_pid", SIBLING_TEXT, "context_identity"):
        assert secret not in said, secret
    w.assert_cleaned(run)


@pytest.mark.req("A worker reads beside its grant only what its caller lists")
def test_the_worker_s_shell_reads_no_credential_at_its_origin(backend_world: BackendWorld) -> None:
    w = backend_world
    home = Path(w.environ["HOME"])
    (home / ".ssh").mkdir(parents=True, exist_ok=True)
    (home / ".ssh" / "id_rsa").write_text(f"{SSH_TEXT}\n")
    model_map = w.scratch / "maps" / "models.json"
    model_map.parent.mkdir(parents=True)
    model_map.write_text(json.dumps({"schema_version": 1, "models": {}, "x": MAP_TEXT}) + "\n")
    w.environ["CONCORDE_MODEL_MAP"] = str(model_map)
    credential = w.credential
    token = credential_texts(credential)[0]
    origins = {home / ".ssh" / "id_rsa": SSH_TEXT, model_map: MAP_TEXT, credential: token}
    app = w.worktree / "src" / "app"
    commands = [
        rc(f"cat {split(path)}") + "; " + rc(f"cp {split(path)} {app}/copy-{n} 2>&1")
        for n, path in enumerate(origins)
    ]
    run, said = w.command("; ".join(commands), limits=LIMITS)
    assert run.record.status == "ok", run.explain()
    assert said.count(" rc=") == 2 * len(origins), said  # the shell ran every command
    for path, marker in origins.items():
        assert marker not in said, (path, said)
    for n in range(len(origins)):  # a copy is absent or empty: nothing was there to copy
        copy = app / f"copy-{n}"
        assert not copy.exists() or all(m not in copy.read_text() for m in origins.values())
    w.assert_cleaned(run)
