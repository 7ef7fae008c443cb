"""The CheckRunner port: checks run over throwaway views of a tree, and copies of one (issue 13,
issue 19 §1).

A check never changes what the next audit sees: whatever it writes goes to a view of its own,
discarded however the check ended, never to the tree. The real adapter
(adapters/sandboxes/checks.py) runs each check in a network-less sandbox with a cleared environment
(domain/isolation/check_sandbox.py)
over a copy-on-write layer of the tree (domain/isolation/check_layer.py), or over a copy where the
kernel
allows no layer; the fake (tests/fakes/checks.py) copies within a FakeFileSystem and runs
scripted commands. A copy (`copy`) is what outlives a change of the tree: the run's starting
state.
tests/contract/test_checks_contract.py runs the same tests on both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from concorde_workers.domain.isolation.check_sandbox import CheckPlace, Keep, ProgramInView
from concorde_workers.domain.run.checks import Check, CheckRun

OnCancel = Callable[[Callable[[], None]], Callable[[], None]]
"""Registers what to do when the run is cancelled; returns the function that unregisters it
(`Cancellation.on_cancel`)."""


class CheckCopyFailed(Exception):
    """A throwaway copy could not be made or removed; the operating system's error is told."""

    def __init__(self, path: str, os_error_text: str) -> None:
        self.path = path
        self.os_error_text = os_error_text
        super().__init__(f"{path}: {os_error_text}")


@runtime_checkable
class CheckRunner(Protocol):
    """Copies a worktree and runs checks over the copies."""

    def copy(
        self,
        source: str,
        keep: Callable[[str], Keep] | None = None,
        later: Callable[[str], bool] | None = None,
    ) -> str:
        """A throwaway copy of the tree at `source` as it is now, in a new directory of its own
        (its path returned): files with their content and executable bit, links as links,
        directories; Git metadata (every entry named `.git`) and special files left out. `keep`
        says per path relative to `source` what is kept (None: everything): a file's content,
        or only its name (an empty file), or nothing; a folder is made when it is kept or
        something below it is. `later` says which regular files may wait (None: none): each is
        recorded as it is now (device, inode, size, times, mode) and copied by `complete`, not
        here. Raises `CheckCopyFailed`; a copy that failed half-way is removed first."""
        ...

    def complete(self, tree: str) -> None:
        """Copy into `tree` (a copy `copy` made) the files it left for later, each only while
        it is still the file recorded: one changed, replaced or gone since raises
        `CheckCopyFailed` naming it (the state it held is lost; nothing guesses it). A copy
        with nothing left, or completed before, is left as it is."""
        ...

    def run(
        self, check: Check, tree: str, place: CheckPlace, on_cancel: OnCancel | None = None
    ) -> CheckRun:
        """Run `check.command` with /bin/sh over a throwaway view of `tree` (the worktree
        itself, or a copy), seen at `place.worktree` (its working directory): what
        `place.view` (the run's mount plan) shows of it, all of it when that is None; its
        writes never reach `tree`. It kills its whole process group when its timeout passes,
        or at once when the run is cancelled (`on_cancel`). The run's log is its standard
        output and standard error together (their last 80,000 bytes).
        Never raises for the check's own failure: a check that cannot start is a `CheckRun`
        with the status `could not start` and the operating system's error."""
        ...

    def view(self) -> str:
        """What every check runs over on this machine (`plan` says it): a copy-on-write layer,
        or a copy and why."""
        ...

    def program(self, check: Check, place: CheckPlace) -> ProgramInView:
        """What the check's first word resolves to in its sandbox, or that none does (`plan`
        says it; nothing runs), and when the check cannot start in any round, why: no sandbox
        on this machine, or a program no round can make (a run is then refused before round
        1)."""
        ...

    def discard(self, tree: str) -> None:
        """Remove a copy, whatever its checks left in it (unwritable folders opened up first,
        links never followed). Raises `CheckCopyFailed` when something remains."""
        ...
