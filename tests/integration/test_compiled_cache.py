"""The agent program's cache compiled once a run by the host (issue 32 §4; docs/decisions.md
"pi's extension compiled once a run").

A backend's `CompiledCache` command runs once, in the background from round 1's end; before
every later round the host clears the program's cache (`round_scratch`, as before) and then
fills it from the command's folder. Here with the real host and the real process runner, a
command that writes one file, and the ProgramBackend's agent.py: what round 1 planted in the
cache is gone at round 2, which finds the host's compiled file instead; a command that fails
leaves the cache empty and the run as it was; a one-round run leaves nothing running.
"""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Any

import pytest
from fakes.program_backend import Step
from integration.host_fixtures import HostHarness, ok_result
from timing import SLOW

from concorde_workers.application.runtime.validation import ValidationInput, ValidationOutcome
from concorde_workers.domain.configuration.request import Limits
from concorde_workers.ports.agents.agent import BackendContext, CompiledCache

pytestmark = [pytest.mark.integration]

WRITES = 'mkdir -p "$1" && printf compiled > "$1/control-permission.0.mjs"'
FAILS = 'mkdir -p "$1" && printf half > "$1/control-permission.0.mjs" && exit 3'


@pytest.fixture
def harness(project: Any) -> HostHarness:
    return HostHarness(
        root=project.root,
        worktree=project.worktree,
        primary=project.primary,
        tmp=project.tmp,
        home=project.home,
        git_env=project.git_env,
    )


def cache_of(context: BackendContext) -> str:
    return posixpath.join(context.policy.runtime.tmp, "jiti")


def compiled_by(script: str) -> Any:
    def compiled(context: BackendContext) -> CompiledCache:
        folder = posixpath.join(context.policy.runtime.control, "jiti")
        return CompiledCache(
            argv=("/bin/sh", "-c", script, "compile", folder),
            folder=folder,
            cache=cache_of(context),
        )

    return compiled


def two_rounds(harness: HostHarness, script: str) -> tuple[Any, dict[int, str | None]]:
    """A two-round run (a repair after round 1) whose round 1 plants a file in the program's
    cache; what the cache held after each round, by round."""
    seen: dict[int, str | None] = {}

    def validation(given: ValidationInput) -> ValidationOutcome:
        (runtime,) = [p for p in harness.tmp.iterdir() if p.name.startswith("concorde-")]
        planted = runtime / "tmp" / "jiti" / "control-permission.0.mjs"
        seen[given.round] = planted.read_text() if planted.exists() else None
        return ValidationOutcome(repair="again" if given.round == 1 else None)

    run = harness.run(
        [
            Step.session("s-1"),
            Step.write("{runtime}/tmp/jiti/control-permission.0.mjs", "planted by round 1"),
            Step.result(ok_result()),
        ],
        [Step.session("s-1"), Step.result(ok_result())],
        validation=validation,
        limits=Limits(timeout_seconds=SLOW, rounds=2, retries=0, retry_delay_seconds=0),
        scratch=lambda context: (cache_of(context),),
        compiled=compiled_by(script),
    )
    return run, seen


def test_a_later_round_finds_the_hosts_compiled_cache_and_nothing_a_round_planted(
    harness: HostHarness,
) -> None:
    run, seen = two_rounds(harness, WRITES)
    assert run.record.status == "ok", run.record.error
    assert seen == {1: "planted by round 1", 2: "compiled"}


def test_a_compilation_that_fails_leaves_the_cache_empty_and_the_run_as_it_was(
    harness: HostHarness,
) -> None:
    run, seen = two_rounds(harness, FAILS)
    assert run.record.status == "ok", run.record.error
    assert seen == {1: "planted by round 1", 2: None}


def test_a_one_round_run_leaves_no_compilation_running(harness: HostHarness) -> None:
    """The run ends before its compilation would: the compilation is ended with it."""
    marker = harness.root / "compile.pid"
    run = harness.run(
        [Step.session("s-1"), Step.result(ok_result())],
        scratch=lambda context: (cache_of(context),),
        compiled=compiled_by(f"echo $$ > {marker}; exec sleep 600 # compile-under-test"),
    )
    assert run.record.status == "ok", run.record.error
    assert not Path(run.runtime_dir).exists()
    if marker.exists():  # it had started: it was ended and waited for
        cmdline = Path(f"/proc/{int(marker.read_text())}/cmdline")
        assert not cmdline.exists() or b"sleep" not in cmdline.read_bytes()
