"""Checks as the round validation, end to end (issue 13): the real pi, the real sandbox-runtime
and the real check sandbox (bubblewrap over a throwaway copy of the worktree), against the
scripted model server on 127.0.0.1, with `python -m pytest -q` on a tiny project as the check.

* round 1 writes a bug, the check fails, its repair text reaches round 2's prompt, round 2 fixes
  it, the run ends ok with both rounds' check nodes;
* a check already failing at the start is not blamed;
* pytest's .pytest_cache and __pycache__ never reach the worktree, and the audit stays clean.
"""

from __future__ import annotations

import glob
import html
import json
import os
import sys
from pathlib import Path

import pytest
from dependency_injector import providers
from e2e.conftest_codex import CodexRun, CodexWorld, codex_world, exec_call, result_turn
from e2e.conftest_pi import ObservedPiBackend, PiRun, PiWorld, call, pi_world, reply, result_call
from e2e.run_world import checked_record
from servers.openai_server import Step
from servers.responses_server import ResponsesStep, Turn
from timing import SLOW

from concorde_workers.adapters.cli.views.report import report_html
from concorde_workers.adapters.machine.filesystem import LocalFileSystem
from concorde_workers.adapters.sandboxes.space import SpacedFileSystem
from concorde_workers.application.checks.checks import place_for
from concorde_workers.application.evidence.report import gather
from concorde_workers.container import PROFILES, production
from concorde_workers.domain.configuration.request import Limits
from concorde_workers.domain.isolation.check_copies import parse_copy_owner
from concorde_workers.domain.run.checks import Check

pytestmark = pytest.mark.e2e

__all__ = ["codex_world", "pi_world"]  # the fixtures, imported for pytest

CALC = "def add(a, b):\n    return a + b\n"
BUG = "def add(a, b):\n    return a - b\n"
TEST_CALC = "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
TEST_OLD = "def test_old_failure():\n    assert 'known' == 'broken'\n"
PYTEST = Check(id="tests", command="python -m pytest -q", timeout_seconds=SLOW)
LEAK = (
    "from pathlib import Path\n\n\ndef test_leak():\n"
    "    root = Path(__file__).resolve().parents[2]\n"
    "    for rel in ('secrets/token.txt', 'README.md'):\n"
    "        p = root / rel\n"
    "        print(rel, repr(p.read_text()) if p.exists() else 'absent')\n"
    "    assert False\n"
)


def project(w: PiWorld | CodexWorld) -> None:
    """A tiny project in the worktree, committed: calc.py and its test."""
    (w.worktree / "src/app/calc.py").write_text(CALC)
    (w.worktree / "src/app/test_calc.py").write_text(TEST_CALC)
    w.git(w.worktree, "add", "-A")
    w.git(w.worktree, "commit", "-q", "-m", "calc")


def run_checked(
    w: PiWorld, *script: Step, rounds: int, checks: tuple[Check, ...] = (PYTEST,)
) -> PiRun:
    """One run through the production wiring with `checks` as its round validation; the
    project interpreter is this test's, its installation among the runtime paths."""
    w.server.add(*script)
    first = len(w.server.requests)
    container = production(w.environ)
    container.temp_root.override(providers.Object(str(w.temp_root)))
    backend = ObservedPiBackend(fs=SpacedFileSystem(LocalFileSystem()), environ=w.environ)
    container.backends.override(providers.Dict(pi=providers.Object(backend)))
    request = w.request(
        Limits(timeout_seconds=SLOW, max_turns=30, rounds=rounds, retries=0, retry_delay_seconds=0)
    ).model_copy(
        update={
            "project_interpreter": sys.executable,
            "runtime_paths": tuple(dict.fromkeys((sys.prefix, sys.base_prefix))),
        }
    )
    with container.checks_validation(checks=checks, place=place_for(request)) as validation:
        record = checked_record(container.worker_host().run(request, validation))
    run = PiRun(record=record, context=backend.contexts[-1], server=w.server, first_request=first)
    w.runs.append(run)
    return run


def own_check_folders() -> list[str]:
    """The check folders this process's host made that are still there: another run on the
    machine (another test, another CI job) may have live ones of its own, which are not this
    test's to judge (its owner record names its host)."""
    mine = []
    for folder in glob.glob("/tmp/concorde-check-*"):
        try:
            owner = parse_copy_owner(Path(folder, "owner.json").read_text())
        except OSError:
            continue  # not this host's: it writes the owner record before anything else
        if not isinstance(owner, str) and owner.host.pid == os.getpid():
            mine.append(folder)
    return mine


def no_caches(w: PiWorld | CodexWorld) -> None:
    found = [p for p in w.worktree.rglob("*") if p.name in (".pytest_cache", "__pycache__")]
    assert found == [], f"a check wrote into the worktree: {found}"


@pytest.mark.req("Rounds only repair what the round validation reports")
@pytest.mark.req("The round validation's answer is recorded")
def test_a_bug_the_check_finds_is_repaired_in_round_2_and_the_run_ends_ok(
    pi_world: PiWorld,
) -> None:
    w = pi_world
    project(w)
    run = run_checked(
        w,
        reply(call("write", "call_w1", path=w.path("src/app/calc.py"), content=BUG)),
        reply(result_call("call_r1", summary="wrote add")),
        reply(call("write", "call_w2", path=w.path("src/app/calc.py"), content=CALC)),
        reply(result_call("call_r2", summary="fixed add")),
        rounds=1,
    )
    # The repair text - identity, status, exit code, pytest's own words - is round 2's prompt.
    round2 = next(r for r in run.requests if "check tests:" in json.dumps(r["body"]))
    assert_repaired(w, run, json.dumps(round2["body"]["messages"][-1]))


def assert_repaired(w: PiWorld | CodexWorld, run: PiRun | CodexRun, asked: str) -> None:
    """Round 1's bug failed the check, whose repair text (`asked`: round 2's prompt) carries
    pytest's own words; round 2 fixed it; both rounds' check nodes are kept, the worktree holds
    no cache, and the report shows the failing round's log."""
    assert run.record.status == "ok", run.explain()
    rounds = run.data["rounds"]
    assert [r["prompt"] for r in rounds] == ["initial", "repair"]
    for part in (
        "check tests: `python -m pytest -q`",
        "status: failed",
        "exit code: 1",
        "test_add",
        "1 failed",
    ):
        assert part in asked, asked
    first, second = (r["evidence"][0] for r in rounds)
    assert first["judgement"] == "failed: a repair" and first["before"]["status"] == "passed"
    assert second["judgement"] == "passed"
    for n, status, exit_code in ((1, "failed", 1), (2, "passed", 0)):
        node = run.run_dir / "rounds" / str(n) / "checks" / "tests"
        kept = json.loads((node / "check.json").read_text())
        assert (kept["status"], kept["exit_code"]) == (status, exit_code)
        assert kept["duration_seconds"] > 0
        assert ("1 passed" if status == "passed" else "1 failed") in (
            node / "output.log"
        ).read_text()
    assert (run.run_dir / "rounds/1/checks/tests/before/output.log").exists()
    # pytest ran twice over copies (and once over the starting state); none of it is here.
    assert [r["audit"] for r in rounds] == [
        {"verdict": "clean", "changed": ["src/app/calc.py"], "violations": []},
        {"verdict": "clean", "changed": [], "violations": []},
    ]
    no_caches(w)
    assert own_check_folders() == []
    # Issue 21: the report shows each round's check with the end of its log.
    page = report_html(gather(LocalFileSystem(), str(run.run_dir), PROFILES))
    tail = (run.run_dir / "rounds/1/checks/tests/output.log").read_text()[-4096:]
    last = [line for line in tail.splitlines() if "1 failed" in line][-1]
    assert html.escape(last) in page and "log (its end)" in page


def test_a_check_already_failing_at_the_start_is_not_blamed(pi_world: PiWorld) -> None:
    w = pi_world
    project(w)
    # Not committed: the starting state is the snapshot commit plus the worktree's state.
    (w.worktree / "src/app/test_old.py").write_text(TEST_OLD)
    run = run_checked(
        w,
        reply(call("write", "call_w1", path=w.path("src/app/notes.py"), content="N = 1\n")),
        reply(result_call("call_r1", summary="added notes")),
        rounds=2,
    )
    assert_not_blamed(w, run)


def assert_not_blamed(w: PiWorld | CodexWorld, run: PiRun | CodexRun) -> None:
    assert run.record.status == "ok", run.explain()
    [only] = run.data["rounds"]
    assert only["validation"] == "clean"
    [item] = only["evidence"]
    assert item["judgement"] == "failed before the run too: pre-existing, not a repair"
    assert item["status"] == "failed" and item["before"]["status"] == "failed"
    before_log = Path(run.run_dir / "rounds/1/checks/tests/before/output.log").read_text()
    assert "test_old_failure" in before_log
    assert only["audit"]["verdict"] == "clean"
    assert only["audit"]["changed"] == ["src/app/notes.py"]
    no_caches(w)


def test_a_check_s_log_never_carries_what_the_grant_withholds_into_the_repair(
    pi_world: PiWorld,
) -> None:
    """An attacker's worker writes a test that prints a file its grant does not let it read
    (secrets/token.txt is in no entry, README.md is names only) and fails, hoping its log comes
    back as round 2's prompt: the check's copy holds only what the worker may read."""
    w = pi_world
    project(w)
    run = run_checked(
        w,
        reply(call("write", "call_w1", path=w.path("src/app/test_leak.py"), content=LEAK)),
        reply(result_call("call_r1", summary="added a test")),
        reply(result_call("call_r2", summary="nothing to do")),
        rounds=1,
    )
    assert_nothing_withheld(run, json.dumps([r["body"]["messages"][-1] for r in run.requests]))


def assert_nothing_withheld(run: PiRun | CodexRun, prompts: str) -> None:
    logs = "".join(p.read_text() for p in run.run_dir.rglob("output.log"))
    assert "check tests:" in prompts, run.explain()  # the failing test came back as a repair
    for withheld in ("not for workers", "# app"):
        assert withheld not in prompts and withheld not in logs
    assert "secrets/token.txt absent" in logs and "README.md ''" in logs, logs


# --- Codex (issue 33 §5: checks and repair on the third backend) --------------------------------


def codex_checked(
    w: CodexWorld, *script: ResponsesStep, rounds: int, checks: tuple[Check, ...] = (PYTEST,)
) -> CodexRun:
    """`run_checked` on codex: the container's own backend, the same request and checks."""
    w.server.add(*script)
    first = len(w.server.requests)
    container = production(w.environ)
    container.temp_root.override(providers.Object(str(w.temp_root)))
    request = w.request(
        Limits(timeout_seconds=SLOW, max_turns=30, rounds=rounds, retries=0, retry_delay_seconds=0)
    ).model_copy(
        update={
            "project_interpreter": sys.executable,
            "runtime_paths": tuple(dict.fromkeys((sys.prefix, sys.base_prefix))),
        }
    )
    with container.checks_validation(checks=checks, place=place_for(request)) as validation:
        record = checked_record(container.worker_host().run(request, validation))
    run = CodexRun(record=record, server=w.server, first_request=first)
    w.runs.append(run)
    assert w.server.failures == [], w.server.failures
    return run


def write(w: CodexWorld, rel: str, text: str, call_id: str) -> Turn:
    """A codex turn writing `text` to `rel` with its shell (a heredoc keeps it verbatim)."""
    return exec_call(f"cat > {w.worktree / rel} <<'EOF'\n{text}EOF", call_id)


@pytest.mark.req("Rounds only repair what the round validation reports")
@pytest.mark.req("The round validation's answer is recorded")
def test_codex_a_bug_the_check_finds_is_repaired_in_round_2_and_the_run_ends_ok(
    codex_world: CodexWorld,
) -> None:
    w = codex_world
    project(w)
    run = codex_checked(
        w,
        write(w, "src/app/calc.py", BUG, "call_w1"),
        result_turn(summary="wrote add"),
        write(w, "src/app/calc.py", CALC, "call_w2"),
        result_turn(summary="fixed add"),
        rounds=1,
    )
    round2 = next(r for r in run.requests if "check tests:" in json.dumps(r["body"]))
    assert_repaired(w, run, json.dumps(round2["body"]["input"][-1]))


def test_codex_a_check_already_failing_at_the_start_is_not_blamed(
    codex_world: CodexWorld,
) -> None:
    w = codex_world
    project(w)
    (w.worktree / "src/app/test_old.py").write_text(TEST_OLD)
    run = codex_checked(
        w,
        write(w, "src/app/notes.py", "N = 1\n", "call_w1"),
        result_turn(summary="added notes"),
        rounds=2,
    )
    assert_not_blamed(w, run)


def test_codex_a_check_s_log_never_carries_what_the_grant_withholds_into_the_repair(
    codex_world: CodexWorld,
) -> None:
    w = codex_world
    project(w)
    run = codex_checked(
        w,
        write(w, "src/app/test_leak.py", LEAK, "call_w1"),
        result_turn(summary="added a test"),
        result_turn(summary="nothing to do"),
        rounds=1,
    )
    assert_nothing_withheld(run, json.dumps([r["body"]["input"][-1] for r in run.requests]))
