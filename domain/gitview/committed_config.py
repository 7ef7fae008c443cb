"""The worker configuration is read as committed (issue 18 §4, docs/decisions.md "The worker
configuration is read as committed").

Seed 000: a change of the worker configuration is "reviewed and merged like any other change of
the project". A worker with `rw` on `.concorde/` (or the worktree root) can rewrite the working
copy of `.concorde/workers.json`; if the next run read that copy, the worker would choose its own
next backend, model, limits and runtime paths. So a run takes the configuration from the blob
committed at HEAD, never from the working copy, and says when the two differ.

This module only decides: given the committed text (None when HEAD has no such file) and the
working copy's text (None when absent), which text is the configuration and what to tell the
reader about the working copy.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.ground.layout import CONFIG_PATH


class ConfigurationSource(BaseModel):
    """The text a run takes as configuration and what is said about the working copy."""

    model_config = ConfigDict(frozen=True)

    text: str | None  # the committed text; None: the run reads as if the file were absent
    notice: str | None  # what plan, the account and doctor say; None when nothing differs


MAX_WORKING_COPY_BYTES = 1 << 20
"""The working copy is opened only to compare it, and only when it is a regular file of at most
this size: a worker with rw on `.concorde/` may have made it a FIFO, a link to /dev/zero or a
huge file (anything else is said to differ, never opened)."""

NOT_OPENED = object()
"""A working copy that is there but not opened (`MAX_WORKING_COPY_BYTES`)."""


def working_copy_differs(file: str) -> str:
    """The notice for a working copy that is not the committed file."""
    return (
        f"{file}: the working copy differs from the file committed at HEAD; the run reads the "
        "committed file, never the working copy (a worker may have written it). Repair: review "
        f"the change and commit it, or discard it (git checkout -- {CONFIG_PATH})."
    )


def working_copy_uncommitted(file: str) -> str:
    """The notice for a configuration present only in the working copy."""
    return (
        f"{file}: the file is not committed at HEAD, so it is not the worker configuration; the "
        "run reads as if it were absent. Repair: review it and commit it."
    )


def committed_source(
    file: str, committed: str | None, working: str | object | None
) -> ConfigurationSource:
    """The configuration a run reads: always the committed text, with a notice when the working
    copy says something else, or is `NOT_OPENED` (a deleted working copy is not a notice: the
    run still reads what was committed, and nothing a worker wrote is taken)."""
    if committed is None:
        notice = None if working is None else working_copy_uncommitted(file)
        return ConfigurationSource(text=None, notice=notice)
    if working is None or working == committed:
        return ConfigurationSource(text=committed, notice=None)
    return ConfigurationSource(text=committed, notice=working_copy_differs(file))
