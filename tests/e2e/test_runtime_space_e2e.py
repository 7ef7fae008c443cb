"""End-to-end: the runtime directory's writable spaces (issue 30 §2; docs/decisions.md "The
runtime directory's writable space, bounded whole"), with the real program of every backend
(tests/e2e/backends.py) against its scripted model server: the worker's (home/, tmp/, work/: one tmpfs of the run's
size) and the agent's (config/: another).

The worker's Bash fills work/ past its space: the kernel refuses the write (ENOSPC) at the
space's size, and home/ and tmp/ are full with it (one budget). Then it fills work/ again and
leaves it full, and makes one more call: the agent's space still has room, so the transcript
kept at the end holds that last call (with one tmpfs for all four folders pi's session was cut
at 4,096 bytes and Claude Code could not save its transcript). While the agent runs, the host's
disk holds nothing of either space: no file the worker wrote, no session, no credential copy
(the host wrote those into the agent's space before the launch). Each round's resources.json
says what each space held at its end.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from e2e.backends import BackendWorld, backend_world

pytestmark = pytest.mark.e2e
__all__ = ["backend_world"]  # the fixture, imported for pytest

SPACE_MIB = 32

FILL = (
    'head -c 100M /dev/zero > "$PWD/fill" 2>/dev/null; w=$?; '
    'kept=$(du -k "$PWD/fill" | cut -f1); '
    'head -c 1M /dev/zero > "$HOME/more" 2>/dev/null; h=$?; '
    'head -c 1M /dev/zero > "$TMPDIR/more" 2>/dev/null; t=$?; '
    'rm -f "$PWD/fill" "$HOME/more" "$TMPDIR/more"; '
    'touch "$HOME/../planted" 2>/dev/null; '
    'echo "work=$w home=$h tmp=$t kept=$kept"; '
    'df -k "$PWD" "$HOME" "$TMPDIR" | tail -3'
)
"""Fill work/ past the space, then write into home/ and tmp/ (full with it), then beside them.
The fill is removed before anything is printed: Claude Code keeps a Bash command's output in a
file of tmp/, which a full space would refuse. (Beside them is the Bash sandbox's own root, a
tmpfs of each command's that dies with it: the disk never gets the entry, `disk_holds`.)"""

KEEP_FULL = 'head -c 100M /dev/zero > "$PWD/full" 2>/dev/null; echo "full=$?"'
LAST = "echo the-call-after-the-fill"
"""The worker's space full for good, then one more call: the agent must still record it."""


def judge_fill(said: str) -> None:
    """The kernel refused each write at the space's size; one tmpfs of SPACE_MIB holds all."""
    assert "work=1 home=1 tmp=1 " in said, said
    kept = int(said.rsplit("kept=", 1)[1].split()[0])
    assert (SPACE_MIB - 4) * 1024 <= kept <= SPACE_MIB * 1024, said  # not the 100 MiB asked
    rows = [line for line in said.splitlines() if line.startswith("concorde-space ")]
    assert len(rows) == 3, said  # df: work/, home/ and tmp/ on the run's space
    assert all(row.split()[1] == str(SPACE_MIB * 1024) for row in rows), said


CODEX_FILL = (
    'head -c 100M /dev/zero > "$TMPDIR/fill" 2>/dev/null; t=$?; '
    'head -c 1M /dev/zero > "$HOME/more" 2>/dev/null; h=$?; '
    'touch "$HOME/../planted" 2>/dev/null; '
    'echo "home=$h tmp=$t"; '
    'df -k "$HOME" "$TMPDIR" | tail -2'
)
"""Codex's sandbox keeps `$HOME` and `$TMPDIR` read-only for its commands (its working folder is
the worktree, not work/): each write is refused outright, the space stays empty."""


def judge_codex_fill(said: str) -> None:
    assert "home=1 tmp=1" in said, said
    rows = [line for line in said.splitlines() if line.startswith("concorde-space ")]
    assert len(rows) == 2, said  # df: home/ and tmp/ on the run's space
    assert all(row.split()[1] == str(SPACE_MIB * 1024) for row in rows), said


@dataclass(frozen=True)
class Space:
    """One backend's fill of the worker's space and what it shows."""

    fill: str
    judge: Callable[[str], None]
    full_shown: bool
    """Whether the call made with the worker's space full gets its output back (Claude Code
    keeps a command's output in a file of tmp/, which the full space refuses)."""
    worker_fills: bool
    """Whether the worker's commands can write the space at all."""


SPACES = {
    "pi": Space(FILL, judge_fill, full_shown=True, worker_fills=True),
    "claude": Space(FILL, judge_fill, full_shown=False, worker_fills=True),
    "codex": Space(CODEX_FILL, judge_codex_fill, full_shown=True, worker_fills=False),
}


def judge_end(run_dir: Path, worker_fills: bool = True) -> None:
    """The transcript kept holds the call made once the worker's space was full; the round's
    resources.json says the worker's space was full and the agent's was not."""
    assert LAST in (run_dir / "transcript.jsonl").read_text()
    used = json.loads((run_dir / "rounds" / "1" / "resources.json").read_text())
    held = used["space_used_bytes"]
    assert used["limits"]["space_mib"] == SPACE_MIB
    if worker_fills:
        assert held["worker"] >= (SPACE_MIB - 1) * 1024 * 1024, used
    else:
        assert held["worker"] < 1024 * 1024, used
    assert 0 < held["agent"] < (SPACE_MIB - 1) * 1024 * 1024, used


def disk_holds(runtime: Path) -> list[str]:
    """What the host's disk holds of the runtime directory's writable space, and any entry the
    worker added beside it (the space itself lives in the run's namespace only)."""
    found = [
        str(p.relative_to(runtime))
        for d in ("config", "home", "tmp", "work")
        for p in (runtime / d).rglob("*")
    ]
    extra = {p.name for p in runtime.iterdir()} - {"control", "config", "home", "tmp", "work"}
    return sorted(found) + sorted(extra)


@pytest.mark.req("Bash runs sandboxed without network")
def test_a_fill_of_the_worker_s_space_stops_at_its_size_reaches_no_disk_and_cuts_no_transcript(
    backend_world: BackendWorld,
) -> None:
    w = backend_world
    seen: list[list[str]] = []

    def look() -> str:
        (runtime,) = w.temp_root.glob("concorde-*")
        seen.append(disk_holds(runtime))
        return KEEP_FULL

    space = SPACES[w.backend]
    run, said = w.commands([space.fill, look, LAST], resources={"space_mib": SPACE_MIB})
    assert run.record.status == "ok", run.explain()
    space.judge(said[0])
    if space.full_shown:
        assert said[1].strip().endswith("full=1"), said[1]
    # the agent's session, its settings and the credential copies: in the space
    assert seen == [[]], seen
    judge_end(run.run_dir, space.worker_fills)
    w.assert_cleaned(run)
