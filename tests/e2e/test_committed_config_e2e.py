"""The next run's configuration is out of the worker's reach (issue 18 §4), end to end with the
real program of every backend (tests/e2e/backends.py) against its scripted model server.

A grant with rw on `.concorde/` lets the worker rewrite the working copy of
`.concorde/workers.json`: another model, and a runtime path that would make the user's home
readable beside the next run's grant. The next run's configuration reader — the one `plan` and
`run` settle a worker with — takes the file committed at HEAD and says the working copy differs,
naming the file and the repair.
"""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from e2e.backends import BackendWorld, backend_world
from e2e.conftest_pi import PiWorld, pi_world
from e2e.test_check_attack_e2e import write_command
from worlds.repository import GRANT

from concorde_workers.container import production
from concorde_workers.domain.configuration.config import WorkerConfiguration
from concorde_workers.domain.configuration.request import Limits

pytestmark = pytest.mark.e2e

__all__ = ["backend_world", "pi_world"]  # the fixture, imported for pytest

LIMITS = Limits(timeout_seconds=90, max_turns=6, rounds=0, retries=0, retry_delay_seconds=0)
COMMITTED = {
    "schema_version": 2,
    "enabled_models": {"sonnet": {}, "opus": {}},
    "default": {"model": "sonnet"},
}


def rw_on_concorde() -> dict[str, Any]:
    grant = copy.deepcopy(GRANT)
    grant["entries"].append({"path": ".concorde/", "level": "rw"})
    return grant


def commit_configuration(worktree: Path, git_env: dict[str, str]) -> Path:
    file = worktree / ".concorde" / "workers.json"
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(json.dumps(COMMITTED, indent=2) + "\n")
    for args in (["add", ".concorde/workers.json"], ["commit", "-q", "-m", "configuration"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=worktree,
            env=git_env,
            check=True,
            capture_output=True,
        )
    return file


def rewritten(home: Path) -> str:
    """What the worker writes: its own next model and the user's home as a runtime path."""
    return json.dumps(dict(COMMITTED, default={"model": "opus"}, runtime=[str(home)]))


def assert_next_run_reads_the_committed_file(
    environ: dict[str, str], worktree: Path, file: Path, home: Path
) -> None:
    assert str(home) in file.read_text(), "the worker's rewrite did not land"
    found = production(environ).config_reader().configuration(str(worktree), {})
    assert isinstance(found, WorkerConfiguration), found
    assert found.runtime is None and found.default is not None
    assert found.default.model == "sonnet"
    assert found.notice is not None and str(file) in found.notice
    assert "differs from the file committed at HEAD" in found.notice
    assert "git checkout -- .concorde/workers.json" in found.notice


@pytest.mark.req("A worker's model comes from its worker configuration alone")
def test_a_worker_s_rewrite_of_workers_json_is_not_the_next_run_s_configuration(
    backend_world: BackendWorld,
) -> None:
    w = backend_world
    file = commit_configuration(w.worktree, w.git_env)
    home = Path(w.environ["HOME"])
    run, said = w.command(write_command(file, rewritten(home)), grant=rw_on_concorde())
    assert run.record.status == "ok", run.explain()
    assert said.strip().endswith("rc=0"), said
    assert_next_run_reads_the_committed_file(w.environ, w.worktree, file, home)


@pytest.mark.parametrize("kind", ["fifo", "link to /dev/zero"])
def test_a_working_copy_that_is_no_regular_file_is_never_opened(
    pi_world: PiWorld, kind: str
) -> None:
    """What a worker with rw on .concorde/ can leave for the next run's reader instead of a
    file: a FIFO (opening it would block the host for good) or a link to an endless file. The
    reader never opens it: it takes the committed file and says the working copy differs."""
    import os

    w = pi_world
    file = commit_configuration(w.worktree, w.git_env)
    file.unlink()
    if kind == "fifo":
        os.mkfifo(file)
    else:
        file.symlink_to("/dev/zero")
    found = production(w.environ).config_reader().configuration(str(w.worktree), {})
    assert isinstance(found, WorkerConfiguration), found
    assert found.default is not None and found.default.model == "sonnet"
    assert found.notice is not None and "differs from the file committed at HEAD" in found.notice
