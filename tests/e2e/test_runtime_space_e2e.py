"""End-to-end: the runtime directory's writable space — config/, home/, tmp/ and work/ — is one
tmpfs of the run's own size (issue 30 §2; docs/decisions.md "The runtime directory's writable
space, bounded whole"), with the real pi and the real Claude Code against their scripted model
servers.

The worker's Bash fills work/ past the run's space: the kernel refuses the write (ENOSPC) at
the space's size, and home/ and tmp/ are full with it (one budget). While the agent runs, the host's disk holds nothing of the space:
no file the worker wrote, no session, no credential copy (the host wrote those into the space
before the launch). The run still ends ok with its transcript kept.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from e2e.conftest import ClaudeWorld
from e2e.conftest_pi import PiWorld, call, pi_world, reply, result_call
from e2e.test_claude_boundary_e2e import bash, probe, runtime_dir

pytestmark = pytest.mark.e2e
__all__ = ["pi_world"]  # the fixture, imported for pytest

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


def judge_fill(said: str) -> None:
    """The kernel refused each write at the space's size; one tmpfs of SPACE_MIB holds all."""
    assert "work=1 home=1 tmp=1 " in said, said
    kept = int(said.rsplit("kept=", 1)[1].split()[0])
    assert (SPACE_MIB - 4) * 1024 <= kept <= SPACE_MIB * 1024, said  # not the 100 MiB asked
    rows = [line for line in said.splitlines() if line.startswith("concorde-space ")]
    assert len(rows) == 3, said  # df: work/, home/ and tmp/ on the run's space
    assert all(row.split()[1] == str(SPACE_MIB * 1024) for row in rows), said


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
def test_pi_a_fill_of_work_stops_at_the_run_s_space_and_reaches_no_disk(pi_world: PiWorld) -> None:
    w = pi_world
    seen: list[list[str]] = []

    def look(body: dict[str, Any]) -> Any:
        (runtime,) = w.temp_root.glob("concorde-*")
        seen.append(disk_holds(runtime))
        return reply(result_call("call_r"))

    run = w.run(
        reply(call("bash", "call_fill", command=FILL)),
        look,
        resources={"space_mib": SPACE_MIB},
    )
    assert run.record.status == "ok", run.explain()
    judge_fill(run.tool_result("call_fill"))
    # pi's session, its settings and the copies of auth.json and models.json: in the space
    assert seen == [[]], seen
    assert (run.run_dir / "transcript.jsonl").stat().st_size > 0


@pytest.mark.req("Bash runs sandboxed without network")
def test_claude_a_fill_of_work_stops_at_the_run_s_space_and_reaches_no_disk(
    claude_world: ClaudeWorld,
) -> None:
    seen: list[list[str]] = []

    def look() -> Any:
        seen.append(disk_holds(runtime_dir(claude_world)))
        return bash("true")

    run, results = probe(claude_world, [bash(FILL), look], resources={"space_mib": SPACE_MIB})
    judge_fill(results[0][0])
    # Claude Code's session, its tool results and the credential copy: in the space
    assert seen == [[]], seen
    assert (Path(run.record.run_directory) / "transcript.jsonl").stat().st_size > 0
    claude_world.assert_cleaned(run)
