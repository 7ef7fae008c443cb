"""End-to-end: the runtime directory's tmp/ is a size-bounded tmpfs of each round's own
(issue 20 §1), with the real pi: a worker's Bash that fills it past its size is refused by the
kernel (ENOSPC), nothing reaches the host's disk, and the round goes on."""

from __future__ import annotations

import pytest
from e2e.conftest_pi import PiWorld, call, pi_world, reply, result_call

pytestmark = pytest.mark.e2e
__all__ = ["pi_world"]  # the fixture, imported for pytest


@pytest.mark.req("Bash runs sandboxed without network")
def test_a_fill_of_tmp_past_its_size_is_refused_and_reaches_no_disk(pi_world: PiWorld) -> None:
    w = pi_world
    fill = ('head -c 100M /dev/zero > "$TMPDIR/fill"; echo "rc=$?"; '
            'df -k "$TMPDIR" | tail -1; echo "kept=$(du -k "$TMPDIR/fill" | cut -f1)"')
    run = w.run(reply(call("bash", "call_fill", command=fill)), reply(result_call("call_r")),
                resources={"tmp_mib": 32})
    said = run.tool_result("call_fill")
    assert run.record.status == "ok", run.explain()
    assert "No space left on device" in said and "rc=1" in said, said
    kept = int(said.rsplit("kept=", 1)[1].split()[0])
    assert 30 * 1024 <= kept <= 32 * 1024, said  # the tmpfs's size, not the 100 MiB asked
    assert " 32768 " in said, said  # df: a 32 MiB tmpfs
