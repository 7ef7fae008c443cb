"""Issue 18 §3 with the real program of every backend (tests/e2e/backends.py): nothing the worker can read under /proc names a path the
grant hides. The worktree holds hidden entries whose names carry a marker (a folder and a file
at its root, a folder beside the rw one); the worker's Bash dumps every process's mount tables,
command line, environment, maps, status and links, and lists the worktree. Before the view was
built from what is visible, each mask's mount point named its hidden path in
`/proc/self/mountinfo`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e.backends import BackendWorld, backend_world
from e2e.one_command import Command

pytestmark = pytest.mark.e2e

__all__ = ["backend_world"]  # the fixture, imported for pytest

MARKER = "zq7xk"
HIDDEN = (f"hidden-{MARKER}/inner-{MARKER}.txt", f"top-{MARKER}.txt", f"src/other-{MARKER}/lib.py")


PLACEHOLDERS = {"codex": frozenset({".git", ".codex", ".agents", ".aws"})}
"""The empty read-only placeholders a backend's own sandbox needs at the worktree's root
(docs/decisions.md "Codex facts verified and its failure wordings"; the codex backend's mount
plan)."""


def plant_hidden(worktree: Path) -> None:
    for rel in HIDDEN:
        (worktree / rel).parent.mkdir(parents=True, exist_ok=True)
        (worktree / rel).write_text("hidden content\n")


def dump_command(worktree: Path) -> str:
    out = worktree / "src" / "app"
    return (
        f"cat /proc/self/mountinfo > {out}/mountinfo.txt; "
        "{ for f in /proc/[0-9]*/cmdline /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done; "
        "cat /proc/[0-9]*/mountinfo /proc/[0-9]*/mounts /proc/[0-9]*/mountstats "
        "/proc/[0-9]*/maps /proc/[0-9]*/status; "
        "ls -l /proc/[0-9]*/fd/ /proc/[0-9]*/cwd /proc/[0-9]*/root /proc/[0-9]*/exe; "
        f"ls -laR {worktree}; }} > {out}/seen.txt 2>&1; "
        f'echo " rc=$? bytes=$(wc -c < {out}/seen.txt)"'
    )


def mount_points(mountinfo: str) -> list[str]:
    """Field 5 of each line, with the kernel's octal escapes (space, tab, newline, backslash)
    decoded."""
    points = []
    for line in mountinfo.splitlines():
        fields = line.split(" ")
        if len(fields) > 4:
            points.append(fields[4].encode().decode("unicode_escape"))
    return points


def check_no_hidden_name(
    plant: Command, worktree: Path, placeholders: frozenset[str] = frozenset()
) -> None:
    plant_hidden(worktree)
    run, output = plant(dump_command(worktree))
    assert " rc=0" in output, output
    assert run.code is None, run.record.error
    seen = (worktree / "src" / "app" / "seen.txt").read_text(errors="replace")
    mountinfo = (worktree / "src" / "app" / "mountinfo.txt").read_text()
    points = mount_points(mountinfo)
    # Not vacuous: the dump holds the mount tables, and they hold the rw entry's mount.
    assert f"{worktree}/src/app" in points, points
    assert f"{worktree}/src/app" in seen and "util.py" in seen, seen[-2000:]
    assert MARKER not in seen, [line for line in seen.splitlines() if MARKER in line][:20]
    # A backend's own sandbox may need empty read-only placeholders at the worktree's root (Codex:
    # `.git`, `.codex`, `.agents`; named in `plan`): the only mount points below it besides the
    # grant's entries, never naming what they cover.
    git_named = f"{worktree}/.git" in points and ".git" not in placeholders
    assert not git_named and not any(MARKER in p for p in points), points


def test_no_file_under_proc_names_a_hidden_path(backend_world: BackendWorld) -> None:
    w = backend_world
    check_no_hidden_name(w.command, w.worktree, PLACEHOLDERS.get(w.backend, frozenset()))
