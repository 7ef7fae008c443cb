"""End-to-end: the Claude Code (and the Codex CLI) that runs a round is the one the preparation
checked, and the record says which ran (docs/decisions.md "The program that runs is the one checked").

The preparation reads the program's version (and refuses one older than the policy relies on);
a round validation then replaces the program before the repair round, as an update or a planted
program would between the plan and a later round. The repair round is not started: the run ends
launch_failed naming the program, while round 1's trace keeps the version its init event gave.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e.conftest import ClaudeWorld, ok_result, program_version
from e2e.conftest_codex import CodexWorld, codex_world, result_turn
from servers.anthropic_server import Reply
from servers.claude_wrapper import write_wrapper
from timing import SLOW

from concorde_workers.application.runtime.validation import ValidationInput, ValidationOutcome
from concorde_workers.domain.configuration.request import Limits

pytestmark = pytest.mark.e2e
__all__ = ["codex_world"]  # the fixture, imported for pytest


@pytest.mark.req("Every run leaves a final record")
def test_a_program_replaced_after_the_preparation_never_runs_a_round(
    claude_world: ClaudeWorld, claude_program: Path
) -> None:
    w = claude_world
    wrapper = Path(w.environ["CONCORDE_CLAUDE"])

    def replace_the_program(given: ValidationInput) -> ValidationOutcome:
        # another program at the same path: here the same claude with one more variable, which
        # is enough to be a file nobody checked
        write_wrapper(
            wrapper, claude_program, w.server.url, extra_env={"REPLACED_AFTER_PREPARATION": "1"}
        )
        return ValidationOutcome(repair="Once more, please.")

    run = w.run(
        Reply.structured(ok_result()),
        validation=replace_the_program,
        limits=Limits(
            timeout_seconds=SLOW, max_turns=5, rounds=1, retries=0, retry_delay_seconds=0
        ),
    )

    assert run.record.status == "failed" and run.record.error is not None
    assert run.record.error.code == "launch_failed", run.record.error
    detail = run.record.error.model_dump_json()
    assert "changed after the run was prepared" in detail and str(wrapper) in detail, detail
    assert len(run.starts) == 1  # the replaced program never started
    assert len(w.server.requests) == 1
    # what ran round 1, by its own word, beside the version the preparation checked
    round_1 = run.traces["rounds/1/trace.json"]
    ran = round_1["content"]["agent"]["claude"]["claude_code_version"]
    assert ran == program_version(claude_program)
    w.assert_cleaned(run)


@pytest.mark.req("Every run leaves a final record")
def test_a_codex_replaced_after_the_preparation_never_runs_a_round(
    codex_world: CodexWorld,
) -> None:
    """The same on codex (issue 33 §1: the identity check of the binary that runs): the codex
    CONCORDE_CODEX names is replaced before the repair round by another file at that path (a
    script that would start the same codex): the round is not started."""
    w = codex_world
    native = Path(w.environ["CONCORDE_CODEX"]).resolve()
    named = w.root / "bin" / "codex"
    named.parent.mkdir()
    named.symlink_to(native)
    w.environ["CONCORDE_CODEX"] = str(named)

    def replace_the_program(given: ValidationInput) -> ValidationOutcome:
        script = w.root / "bin" / "codex-replaced"
        script.write_text(f'#!/bin/sh\nexec {native} "$@"\n')
        script.chmod(0o755)
        spare = w.root / "bin" / "spare"
        spare.symlink_to(script)
        spare.replace(named)
        return ValidationOutcome(repair="Once more, please.")

    run = w.run(
        result_turn(),
        validation=replace_the_program,
        limits=Limits(
            timeout_seconds=SLOW, max_turns=5, rounds=1, retries=0, retry_delay_seconds=0
        ),
    )
    assert run.record.status == "failed" and run.record.error is not None
    assert run.record.error.code == "launch_failed", run.record.error
    detail = run.record.error.model_dump_json()
    assert "changed after the run was prepared" in detail and str(named) in detail, detail
    assert len(w.server.requests) == 1  # the replaced program never started
    first, repair = run.data["rounds"]
    assert first["exit"] == 0 and repair["exit"] is None, run.explain()  # never started
