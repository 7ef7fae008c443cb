"""`show RUN_DIR --diff [--round N]` (issue 21 §2) over a real run's trace: each round's patch,
coloured on a terminal and plain when piped, the escape sequences a worker wrote made visible,
a round the run does not have refused naming the rounds it has."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from fakes.program_backend import Step
from integration.host_fixtures import HostHarness, ok_result
from integration.test_host_real import OPEN, harness

from concorde_workers.adapters.cli.main import main

pytestmark = pytest.mark.integration
__all__ = ["harness"]

HOSTILE = "title \x1b]0;pwned\x07 clear \x1b[2J\ttab\n"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def show(*argv: str, out: io.StringIO | None = None) -> tuple[int, str, str]:
    out = out if out is not None else io.StringIO()
    err = io.StringIO()
    status = main(["show", *argv], out, err)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture
def run_dir(harness: HostHarness) -> Path:
    run = harness.run(
        [*OPEN, Step.write("{worktree}/src/app/hostile.txt", HOSTILE), Step.result(ok_result())]
    )
    assert run.record.status == "ok", run.record.error
    return run.run_dir


def test_piped_the_patch_is_plain_and_every_escape_sequence_visible(run_dir: Path) -> None:
    status, out, err = show(str(run_dir), "--diff")
    assert status == 0, err
    assert out.startswith("=== round 1 ===\n# concorde-workers: round 1's change")
    assert "+title \\x1b]0;pwned\\x07 clear \\x1b[2J\ttab\n" in out  # the tab kept
    assert "\x1b" not in out


def test_on_a_terminal_the_patch_is_coloured(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    status, out, _ = show(str(run_dir), "--diff", "--round", "1", out=Terminal())
    assert status == 0
    assert "\x1b[32m+title \\x1b]0;pwned\\x07" in out  # green, and the worker's escape shown
    assert "\x1b]0;" not in out  # no sequence of the worker's own reaches the terminal
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b" not in show(str(run_dir), "--diff", out=Terminal())[1]


def test_a_round_the_run_does_not_have_is_refused(run_dir: Path) -> None:
    status, out, err = show(str(run_dir), "--diff", "--round", "2")
    assert status == 2 and out == ""
    assert err == (
        "error: --round 2: the run has no such round (its rounds: 1); give one of "
        "them, or leave --round out for all\n"
    )


def test_a_round_without_a_patch_says_so_and_a_deleted_patch_is_missing(run_dir: Path) -> None:
    """A patch its node lists and that is gone was removed: never "kept no patch" (issue 30
    §4); a round whose node lists none kept none."""
    import json

    (run_dir / "rounds" / "1" / "changes.patch").unlink()
    status, out, _ = show(str(run_dir), "--diff")
    assert status == 0
    assert out.startswith("=== round 1 ===\n# WARNING: ") and "changes.patch is missing" in out
    node_file = run_dir / "rounds" / "1" / "trace.json"
    node = json.loads(node_file.read_text())
    node["files"] = [f for f in node["files"] if f["path"] != "changes.patch"]
    node_file.write_text(json.dumps(node))
    status, out, _ = show(str(run_dir), "--diff")
    assert out == "=== round 1 ===\n(this round kept no patch)\n"


@pytest.mark.parametrize("kind", ["fifo", "oversized"])
def test_a_patch_that_is_no_file_or_past_its_bound_is_said_never_waited_on(
    run_dir: Path, kind: str
) -> None:
    import os

    from concorde_workers.application.tracing.reader import MAX_PATCH_READ_BYTES

    patch = run_dir / "rounds" / "1" / "changes.patch"
    patch.unlink()
    if kind == "fifo":
        os.mkfifo(patch)
    else:
        patch.write_bytes(b"x" * (MAX_PATCH_READ_BYTES + 1))
    status, out, _ = show(str(run_dir), "--diff")
    assert status == 0
    assert f"cannot be read: not a regular file of at most {MAX_PATCH_READ_BYTES} bytes" in out
