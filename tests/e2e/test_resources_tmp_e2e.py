"""End-to-end: the runtime directory's tmp/ is size-bounded (issue 20 §1), part of the run's one
writable space since issue 30 §2 (tests/e2e/test_runtime_space_e2e.py), with the real program of
every backend (tests/e2e/backends.py): a worker's shell that fills it past its size is refused
by the kernel (ENOSPC), nothing reaches the host's disk, and the round goes on."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from e2e.backends import BackendWorld, backend_world
from timing import SLOW

from concorde_workers.domain.configuration.request import Limits

pytestmark = pytest.mark.e2e
__all__ = ["backend_world"]  # the fixture, imported for pytest


PI_FILL = (
    'head -c 100M /dev/zero > "$TMPDIR/fill"; echo "rc=$?"; '
    'df -k "$TMPDIR" | tail -1; echo "kept=$(du -k "$TMPDIR/fill" | cut -f1)"'
)
"""pi keeps no output of its own in the temporary directory: the fill stays while df runs, and
the refusal's text (ENOSPC) is part of the output."""

FILL = (
    'head -c 100M /dev/zero > "$TMPDIR/fill" 2>/dev/null; rc=$?; '
    'kept=$(du -k "$TMPDIR/fill" | cut -f1); rm -f "$TMPDIR/fill"; '
    'echo "rc=$rc kept=$kept"; df -k "$TMPDIR" | tail -1'
)
"""Claude Code keeps a Bash command's output in a file of its temporary directory (tmp/ of the
runtime directory): the fill is removed before anything is printed, or the output is lost too
(Claude Code then says "Disk full: this computer's volume holding …/tmp/claude-65534"); the
error text of `head` is lost with it, so its exit status and what it kept tell the refusal."""


@dataclass(frozen=True)
class Fill:
    """One backend's fill of `$TMPDIR`, the least it keeps (KiB) and whether the refusal's
    text reaches the output."""

    command: str
    kept_low_kib: int | None
    """None: nothing kept, the write refused outright (Codex's sandbox keeps `$TMPDIR`
    read-only for commands: `exclude_tmpdir_env_var`)."""
    refusal: str | None


FILLS = {
    "pi": Fill(PI_FILL, 30 * 1024, "No space left on device"),
    "claude": Fill(FILL, 28 * 1024, None),
    "codex": Fill(PI_FILL, None, "Read-only file system"),
}


@pytest.mark.req("Bash runs sandboxed without network")
def test_a_fill_of_tmp_past_its_size_is_refused_and_reaches_no_disk(
    backend_world: BackendWorld,
) -> None:
    w = backend_world
    fill = FILLS[w.backend]
    limits = Limits(timeout_seconds=SLOW, max_turns=6, rounds=0, retries=0, retry_delay_seconds=0)
    run, said = w.command(fill.command, limits=limits, resources={"space_mib": 32})
    assert run.record.status == "ok", run.explain()
    assert "rc=1" in said, said
    if fill.refusal is not None:
        assert fill.refusal in said, said
    kept = said.rsplit("kept=", 1)[1].split("\n", 1)[0].strip()
    if fill.kept_low_kib is None:
        assert kept == "", said
    else:  # the tmpfs's size, not the 100 MiB asked
        assert fill.kept_low_kib <= int(kept) <= 32 * 1024, said
    assert " 32768 " in said, said  # df: the 32 MiB space
