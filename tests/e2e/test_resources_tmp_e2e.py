"""End-to-end: the runtime directory's tmp/ is size-bounded (issue 20 §1), part of the run's one
writable space since issue 30 §2 (tests/e2e/test_runtime_space_e2e.py), with the real pi and the
real Claude Code: a worker's Bash that fills it past its size is refused by the kernel (ENOSPC),
nothing reaches the host's disk, and the round goes on."""

from __future__ import annotations

import pytest
from e2e.conftest import ClaudeWorld
from e2e.conftest_pi import PiWorld, call, pi_world, reply, result_call
from e2e.test_claude_boundary_e2e import bash, probe

pytestmark = pytest.mark.e2e
__all__ = ["pi_world"]  # the fixture, imported for pytest


@pytest.mark.req("Bash runs sandboxed without network")
def test_a_fill_of_tmp_past_its_size_is_refused_and_reaches_no_disk(pi_world: PiWorld) -> None:
    w = pi_world
    fill = (
        'head -c 100M /dev/zero > "$TMPDIR/fill"; echo "rc=$?"; '
        'df -k "$TMPDIR" | tail -1; echo "kept=$(du -k "$TMPDIR/fill" | cut -f1)"'
    )
    run = w.run(
        reply(call("bash", "call_fill", command=fill)),
        reply(result_call("call_r")),
        resources={"space_mib": 32},
    )
    said = run.tool_result("call_fill")
    assert run.record.status == "ok", run.explain()
    assert "No space left on device" in said and "rc=1" in said, said
    kept = int(said.rsplit("kept=", 1)[1].split()[0])
    assert 30 * 1024 <= kept <= 32 * 1024, said  # the tmpfs's size, not the 100 MiB asked
    assert " 32768 " in said, said  # df: the 32 MiB space


FILL = (
    'head -c 100M /dev/zero > "$TMPDIR/fill" 2>/dev/null; rc=$?; '
    'kept=$(du -k "$TMPDIR/fill" | cut -f1); rm -f "$TMPDIR/fill"; '
    'echo "rc=$rc kept=$kept"; df -k "$TMPDIR" | tail -1'
)
"""Claude Code keeps a Bash command's output in a file of its temporary directory (tmp/ of the
runtime directory): the fill is removed before anything is printed, or the output is lost too
(Claude Code then says "Disk full: this computer's volume holding …/tmp/claude-65534"); the
error text of `head` is lost with it, so its exit status and what it kept tell the refusal."""


@pytest.mark.req("Bash runs sandboxed without network")
def test_a_fill_of_tmp_past_its_size_by_claude_code_s_bash_is_refused(
    claude_world: ClaudeWorld,
) -> None:
    run, results = probe(claude_world, [bash(FILL)], resources={"space_mib": 32})
    said = results[0][0]
    assert run.record.status == "ok"
    assert "rc=1" in said, said
    kept = int(said.rsplit("kept=", 1)[1].split()[0])
    assert 28 * 1024 <= kept <= 32 * 1024, said  # the tmpfs's size, not the 100 MiB asked
    assert " 32768 " in said, said  # df: the 32 MiB space
