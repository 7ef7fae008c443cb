"""Issue 18 §2 with the real program of every backend (tests/e2e/backends.py): a worker-written `.git` file naming a Git directory
outside what the worker could read is quoted by its text only. The target's `config` holds a
marker secret (as the user's hidden `~/.config/git/config` holds `core.sshCommand`); it must
appear in neither the record nor the account."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from e2e.backends import BackendWorld, backend_world
from e2e.one_command import Command

from concorde_workers.adapters.cli.views.display import account

__all__ = ["backend_world"]  # the fixture, imported for pytest

SECRET = "SECRET-MARKER-18-2"


def plant_secret_git_dir(where: Path) -> Path:
    """A folder the worker cannot read holding a Git configuration with the marker."""
    (where / "hooks").mkdir(parents=True)
    (where / "config").write_text(f"[core]\n\tsshCommand = {SECRET}\n")
    (where / "config.worktree").write_text(f"[credential]\n\thelper = {SECRET}\n")
    (where / "hooks" / f"pre-commit-{SECRET}").write_text("#!/bin/sh\n")
    return where


def check_pointer_not_followed(plant: Command, worktree: Path, target: Path) -> None:
    command = (
        f"mkdir -p {worktree}/src/app/g2 && printf 'gitdir: {target}\\n' > "
        f'{worktree}/src/app/g2/.git; echo " rc=$?"'
    )
    run, output = plant(command)
    assert " rc=0" in output, output
    assert run.code == "audit_violation", run.record.error
    record_text = json.dumps(run.data)
    assert SECRET not in record_text, record_text
    assert SECRET not in account(run.record)
    error = run.record.error
    assert error is not None and str(target) in error.detail, error.detail
    assert "not read: outside what the worker could read" in error.detail, error.detail


@pytest.mark.req("Every round is audited")
def test_a_planted_git_pointer_is_quoted_by_its_text_never_followed(
    backend_world: BackendWorld,
) -> None:
    w = backend_world
    target = plant_secret_git_dir(w.scratch / "hidden-git")
    check_pointer_not_followed(w.command, w.worktree, target)
