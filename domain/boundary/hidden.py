"""What no worker tool ever reads, whatever the grant and the runtime paths say (issue 8 §2-§4).

Three classes, judged by path before every grant row of the read, write and search tables (and
listed in the deny rules and the sandbox lists by `domain.boundary.policy`):

- **other runs**: every other run's runtime directory, `<temp root>/concorde-*` but this run's
  own, and any directory named like one (`concorde-<6 hex>-<random>`) anywhere below one of the
  system's temporary directories (`TEMPORARY_ROOTS`), where another host — another TMPDIR, a
  check boundary without a writable /tmp — makes its runs. Judged by pattern, so a run that
  starts after this run's rules were generated is hidden from the tables too; the deny rules
  and the sandbox lists, which are fixed at generation, list the ones that exist then and hide
  the temp root itself from sandboxed commands, and the confinement hides every temporary root
  whole (docs/decisions.md "Other runs under another temporary root").
- **run directories**: the trace parent's whole `workers/` tree (this run's run directory —
  trace.json, status.json with the host's pid, grant.json, brief.md, transcript.jsonl, rounds/ —
  and every other run's beside it; docs/decisions.md "The run directory: the whole").
- **credentials**: every file the host copies into `config/` at its origin, and the model map.

Reasons (`domain.boundary.rules`) name the path and why; a tool reports one with the denial
prefix.
"""

from __future__ import annotations

import posixpath

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.boundary.interpreter import RUNTIME_NAME, is_other_run
from concorde_workers.domain.boundary.rules import fill
from concorde_workers.domain.ground.paths import is_within

TEMPORARY_ROOTS: tuple[str, ...] = ("/tmp", "/var/tmp", "/usr/tmp")
"""The system's temporary directories (Python's `tempfile` candidates without the environment's
and the working directory): every run hides them whole, with the host's own system temporary
directory (`TMPDIR`, where a host whose /tmp is not writable makes its runs, seed 000) and its
own temp root (`temporary_roots`)."""


def temporary_roots(tmpdir: str | None, runtime_root: str) -> tuple[str, ...]:
    """Where any host of this environment makes its runs: `TEMPORARY_ROOTS`, the environment's
    system temporary directory (`TMPDIR`, when absolute) and this run's own temp root, each
    once; what lies below another is covered by it."""
    found = [*TEMPORARY_ROOTS]
    for root in (tmpdir, runtime_root):
        if root and posixpath.isabs(root):
            normal = posixpath.normpath(root)
            if not any(is_within(normal, t) for t in found):
                found.append(normal)
    return tuple(found)


OTHER_RUN_ROW = "other run"
RUN_DIRECTORY_ROW = "run directory"
CREDENTIALS_ROW = "credentials"


def other_run_reason(path: str) -> str:
    return fill("other run", path=path)


def run_directory_reason(path: str) -> str:
    return fill("run directory", path=path)


def credentials_reason(path: str) -> str:
    return fill("credentials", path=path)


class Hidden(BaseModel):
    """The always-hidden classes of one run; every path absolute and normalised."""

    model_config = ConfigDict(frozen=True)

    runtime_root: str
    """The temp root the runtime directories are made in (this run's runtime directory's
    parent)."""
    runtime_directory: str
    """This run's own runtime directory (its control/ and config/ are judged by the host row)."""
    run_directories: tuple[str, ...] = ()
    """The `<parent>/workers` tree, as given and really (empty when there is no parent)."""
    credentials: tuple[str, ...] = ()
    """The credential files at their origins, as given and really."""
    temporary_roots: tuple[str, ...] = TEMPORARY_ROOTS
    """Where other hosts make their runs: a runtime directory's name below any of them is
    another run's."""

    def other_run(self, path: str) -> bool:
        """`path` is or lies in a directory `<runtime root>/concorde-*` other than this run's,
        or in a directory named like a runtime directory below a temporary root (the predicate
        `in other run` of the tables' interpreter)."""
        normal = posixpath.normpath
        return is_other_run(
            normal(path),
            normal(self.runtime_root),
            normal(self.runtime_directory),
            [normal(t) for t in self.temporary_roots],
        )

    def judge(self, path: str) -> tuple[str, str] | None:
        """(row, reason) of the first class `path` falls in, or None."""
        path = posixpath.normpath(path)
        if any(is_within(path, d) for d in self.run_directories):
            return RUN_DIRECTORY_ROW, run_directory_reason(path)
        if self.other_run(path):
            return OTHER_RUN_ROW, other_run_reason(path)
        if any(is_within(path, c) for c in self.credentials):
            return CREDENTIALS_ROW, credentials_reason(path)
        return None

    def anchors(self) -> tuple[str, ...]:
        """The paths a search from an ancestor would reach: the run directories, the credential
        files and the temp root (which holds the other runs)."""
        return (*self.run_directories, *self.credentials, self.runtime_root)

    def to_json(self) -> dict[str, object]:
        return {
            "runtimeRoot": self.runtime_root,
            "runtimeDirectory": self.runtime_directory,
            "temporaryRoots": list(self.temporary_roots),
            "runDirectories": list(self.run_directories),
            "credentials": list(self.credentials),
        }


__all__ = [
    "CREDENTIALS_ROW",
    "OTHER_RUN_ROW",
    "RUNTIME_NAME",
    "RUN_DIRECTORY_ROW",
    "TEMPORARY_ROOTS",
    "Hidden",
    "credentials_reason",
    "other_run_reason",
    "run_directory_reason",
    "temporary_roots",
]
