"""End-to-end: the host's own Git never runs code a worker planted (issue 8 §1), proven with the
real program of every backend (tests/e2e/backends.py), as pinned, each driven by its scripted
model server.

The worker's sandboxed bash plants a repository in an empty submodule path inside rw, with a
clean filter that records `id` and `env` in a marker file outside everything the sandbox lets it
write (tests/e2e/planted_git.py). The marker must never appear: not during the host's audit, not
in the stealth variant whose filter would erase the planted repository once it ran, and not on
the user's next plain `git status` in the worktree after the run. The audit names the planted
repository as a violation and the record says what it would have run.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e.backends import BackendWorld, backend_world
from e2e.conftest import RecordedRun
from e2e.one_command import Command
from e2e.planted_git import (
    FILTER_KEY,
    VENDOR,
    add_gitlink,
    filter_command,
    plant_command,
    users_git_status,
)

from concorde_workers.adapters.cli.views.display import account

pytestmark = pytest.mark.e2e

__all__ = ["backend_world"]  # the fixture, imported for pytest


Plant = Command


def assert_never_ran(marker: Path, when: str) -> None:
    assert not marker.exists(), (
        f"the worker's filter ran outside the sandbox {when}, as:\n{marker.read_text()[:3000]}"
    )


def assert_planted_repository_is_a_named_violation(
    run: RecordedRun, vendor: Path, marker: Path, *, stealth: bool
) -> None:
    """The run ends audit_violation naming the planted `.git`; its detail (and the account)
    say what the planted configuration would run."""
    assert run.code == "audit_violation", run.record.error
    audit = run.data["rounds"][0]["audit"]
    assert audit["verdict"] == "violation", audit
    assert f"{VENDOR}/.git" in audit["violations"], audit
    error = run.record.error
    assert error is not None
    command = filter_command(vendor, marker, stealth=stealth)
    assert FILTER_KEY in error.detail and command in error.detail, error.detail
    shown = account(run.record)
    assert FILTER_KEY in shown and command in shown, shown


def check_planted_filter(
    plant: Plant, worktree: Path, git_env: dict[str, str], marker: Path
) -> None:
    """The plain variant and the persistent one: no filter runs in the host's audit, the run
    is an audit violation that says what the repository would run, and the user's next plain
    `git status` in the worktree runs nothing either."""
    vendor = worktree / VENDOR
    run, output = plant(plant_command(vendor, marker))
    assert " rc=0" in output, output
    assert_never_ran(marker, "during the host's audit")
    assert_planted_repository_is_a_named_violation(run, vendor, marker, stealth=False)
    # The persistent variant: the user's own Git, after the run.
    status = users_git_status(worktree, git_env)
    assert_never_ran(marker, f"on the user's next git status (which printed {status!r})")
    assert not (vendor / ".git").exists()


def check_stealth_filter(plant: Plant, worktree: Path, marker: Path) -> None:
    """The filter that would erase the planted repository after it ran: it never runs, so the
    repository is still there for the walk, which runs before any Git command."""
    vendor = worktree / VENDOR
    run, output = plant(plant_command(vendor, marker, stealth=True))
    assert " rc=0" in output, output
    assert_never_ran(marker, "during the host's audit")
    assert_planted_repository_is_a_named_violation(run, vendor, marker, stealth=True)


@pytest.mark.req("Every round is audited")
@pytest.mark.req("Workers never see Git")
@pytest.mark.req("A violation is never retried")
def test_a_repository_planted_in_a_submodule_path_runs_nothing_in_the_host(
    backend_world: BackendWorld,
) -> None:
    w = backend_world
    add_gitlink(w.worktree, w.git_env)
    check_planted_filter(w.command, w.worktree, w.git_env, w.scratch / "host-ran.txt")


@pytest.mark.req("Every round is audited")
@pytest.mark.req("Workers never see Git")
def test_a_self_erasing_planted_repository_is_still_found(backend_world: BackendWorld) -> None:
    w = backend_world
    add_gitlink(w.worktree, w.git_env)
    check_stealth_filter(w.command, w.worktree, w.scratch / "host-ran.txt")
