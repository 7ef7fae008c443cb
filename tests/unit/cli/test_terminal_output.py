"""The operator's terminal: whatever a worker or a request puts in a summary, a path, an error
detail, a last action, an instruction or a refusal reaches every human output (`run`'s account
and progress line, `show`, `plan`, refusals) with its control characters escaped, and every
`--json` output with its values exactly as they are (domain/ground/text.py, adapters/cli/views/display.py
and progress.py).
Over the fakes; tests/integration and tests/e2e do the same through the real programs."""

from __future__ import annotations

import copy
import io
import unicodedata
from datetime import UTC, datetime
from typing import Any

import pytest
from dependency_injector import providers
from fakes.agent import Round
from fakes.world import WORKTREE, PlanWorld
from unit.cli.test_cli_run import (
    PARENT,
    REQUEST_FILE,
    RUN_DIR,
    TtyText,
    link,
    progress,
    record,
    usage,
    world,
)
from worlds.repository import GRANT

from concorde_workers.adapters.cli import main as cli
from concorde_workers.adapters.cli.views.display import account
from concorde_workers.adapters.cli.views.plan_text import render
from concorde_workers.adapters.cli.views.progress import progress_text
from concorde_workers.domain.configuration.request import RunRequest
from concorde_workers.domain.evidence.records import AuditRecord, LastAction, RoundRecord, Transient
from concorde_workers.domain.ground.errors import Reason

OSC = "\x1b]0;pwned\x07"  # retitles the terminal window
CLEAR = "\x1b[2J\x1b[H"  # clears the screen, cursor home
UP = "\x1b[1A\x1b[2K"  # cursor up, erase the line: rewrites what was shown
C1 = "\x9b2J"  # the 8-bit CSI
BIDI = "\u202e"  # right-to-left override
HOSTILE = f"fine{OSC}{CLEAR}{UP}{C1}{BIDI}\bok"
SHOWN = "fine\\x1b]0;pwned\\x07\\x1b[2J\\x1b[H\\x1b[1A\\x1b[2K\\x9b2J\\u202e\\x08ok"
UNSAFE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def assert_terminal_safe(text: str) -> None:
    """Nothing a terminal would obey but our own line breaks."""
    bad = [c for c in text if c != "\n" and unicodedata.category(c) in UNSAFE]
    assert not bad, bad


def hostile_result() -> dict[str, Any]:
    return {
        "status": "ok",
        "summary": HOSTILE,
        "error": None,
        "proposed_deletions": [f"src/app/{HOSTILE}.py", "src/app/a\nrun w-x: ok"],
        "output": {},
    }


def test_the_account_escapes_every_worker_and_request_given_text() -> None:
    text = account(
        record(
            worker_result=hostile_result(),
            operation=f"op{OSC}",
            worker=f"w{CLEAR}",
            model=f"m{BIDI}",
            deleted=(f"src/app/{HOSTILE}.py",),
            deletions_absent=("src/app/a\nrun w-x: ok",),
            transcript=f"{RUN_DIR}/t{OSC}.jsonl",
            status="failed",
            error=link(
                "audit_violation",
                f"round 1: src/app/{HOSTILE}\nsecond {UP}line",
                Reason.PERMISSION,
                causes=[link("worker_failed", OSC, Reason.CAPABILITY)],
            ),
            rounds=(
                RoundRecord(
                    round=1,
                    prompt="initial",
                    session="s-1",
                    exit=0,
                    duration=3,
                    usage=usage(),
                    audit=AuditRecord(
                        verdict="violation",
                        changed=(f"docs/{HOSTILE}",),
                        violations=(f"docs/{HOSTILE}",),
                    ),
                    validation=f"checks {CLEAR}failed",
                    transient=Transient(error=f"API {OSC}", retried=False, delay_seconds=None),
                ),
            ),
        )
    )
    assert_terminal_safe(text)
    assert (
        f"worker result: ok (the worker's claim; the run ended failed: audit_violation) — {SHOWN}"
    ) in text
    assert f"violations 1: docs/{SHOWN}" in text
    assert f"deleted src/app/{SHOWN}.py" in text
    assert "absent  src/app/a\\nrun w-x: ok" in text  # a path's newline starts no new line
    assert (
        "implement worker w\\x1b[2J\\x1b[H of Operation op\\x1b]0;pwned\\x07 on pi, "
        "model m\\u202e" in text
    )
    assert f"audit_violation (permission): round 1: src/app/{SHOWN}\n" in text
    assert "\n    second \\x1b[1A\\x1b[2Kline\n" in text  # a detail's lines stay lines
    assert "worker_failed (capability): \\x1b]0;pwned\\x07" in text
    assert "validation: checks \\x1b[2J\\x1b[Hfailed" in text
    assert "transient: API \\x1b]0;pwned\\x07 (not retried)" in text
    assert f"transcript    {RUN_DIR}/t\\x1b]0;pwned\\x07.jsonl" in text


def test_a_summary_shows_its_first_line_and_says_when_there_is_more() -> None:
    result = {
        "status": "ok",
        "summary": "done\rFAILED: all tests",
        "error": None,
        "proposed_deletions": [],
        "output": {},
    }
    assert "  worker result: ok — done …\n" in account(record(worker_result=result))


def test_the_progress_line_escapes_the_last_action() -> None:
    line = progress_text(
        progress(
            last_action=LastAction(
                tool=f"Bash{OSC}", target=f"echo {CLEAR}", at="2026-01-01T00:00:10Z"
            )
        ),
        now=datetime(2026, 1, 1, 0, 0, 30, tzinfo=UTC),
    )
    assert_terminal_safe(line)
    assert "Bash\\x1b]0;pwned\\x07 echo \\x1b[2J\\x1b[H" in line


def test_the_plan_escapes_instructions_grant_paths_and_refusals_but_json_keeps_them() -> None:
    world = PlanWorld()
    grant = copy.deepcopy(GRANT)
    grant["entries"].append({"path": f"docs/{BIDI}gpj.exe", "level": "ro"})
    req = RunRequest(
        worktree=WORKTREE,
        task_type="implement",
        grant=grant,
        backend="claude",
        instructions=f"Do it.{OSC}\nThen {CLEAR}stop.",
    )
    plan = world.container().planner().plan(req, {})
    assert plan.launches, plan.refusal
    text = render(plan)
    assert_terminal_safe(text)
    assert "  Do it.\\x1b]0;pwned\\x07" in text.splitlines()
    assert "  Then \\x1b[2J\\x1b[Hstop." in text.splitlines()
    assert "ro    docs/\\u202egpj.exe" in text
    data = plan.to_json()
    assert f"Do it.{OSC}\nThen {CLEAR}stop." in data["brief"]


def test_run_prints_its_account_escaped_and_its_json_record_verbatim() -> None:
    w = world(Round.ok(hostile_result(), tools=[("Bash", f"printf '{OSC}'")]))
    err = TtyText()
    result = w.run(err=err)
    assert result.status == 0, result.out
    assert_terminal_safe(result.out)
    assert f"worker result: ok — {SHOWN}" in result.out
    assert f"absent  src/app/{SHOWN}.py, src/app/a\\nrun w-x: ok" in result.out
    # The live line is ours: \r and \x1b[K, and nothing else of the kind.
    assert result.err.startswith("\rconcorde-workers: ") and result.err.endswith("\r\x1b[K")
    assert_terminal_safe(result.err.replace("\r", "").replace("\x1b[K", ""))

    shown = w.main("show", RUN_DIR)
    assert shown.status == 0 and shown.out == result.out
    document = w.main("show", RUN_DIR, "--json")
    assert_terminal_safe(document.out)
    assert document.json()["worker_result"] == hostile_result()


def test_run_json_is_the_record_with_every_value_as_it_is() -> None:
    w = world(Round.ok(hostile_result()))
    result = w.run("--json")
    assert result.status == 0
    assert_terminal_safe(result.out)
    data = result.json()
    assert data["worker_result"]["summary"] == HOSTILE
    assert data["deletions_absent"] == [f"src/app/{HOSTILE}.py", "src/app/a\nrun w-x: ok"]


def test_a_refusal_on_stderr_is_escaped_and_in_json_is_as_it_is() -> None:
    w = world()
    gone = f"{PARENT}/workers/w-{OSC}"
    result = w.main("show", gone)
    assert result.status == 2
    assert_terminal_safe(result.err)
    assert "the run directory /work/trace/workers/w-\\x1b]0;pwned\\x07 does not exist" in (
        result.err
    )
    document = w.main("show", gone, "--json")
    assert_terminal_safe(document.out)
    assert f"the run directory {gone} does not exist" in document.json()["refusal"]["message"]


def test_run_refuses_a_runtime_path_before_a_run_exists() -> None:
    w = world(Round.ok(hostile_result()))
    for argv, says in (
        (("--runtime-path", ""), "--runtime-path gives the runtime path '', which is empty"),
        (
            ("--runtime-path", "/home/dev"),
            "the runtime path '/home/dev' is the user's home /home/dev",
        ),
        (
            ("--interpreter", "/opt/none/python"),
            "the project interpreter '/opt/none/python' does not exist",
        ),
    ):
        result = w.run(*argv)
        assert result.status == 2, result
        assert result.out == ""
        assert result.err.startswith("concorde-workers: refused: request_invalid (input)\n")
        assert says in " ".join(result.err.split()), result.err
        document = w.run(*argv, "--json")
        assert document.status == 2
        assert document.json()["refusal"]["code"] == "request_invalid"
        assert says in document.json()["refusal"]["message"]
    assert not w.fs.lexists(f"{PARENT}/workers")
    assert not w.runner.starts


def test_an_internal_error_s_text_is_escaped() -> None:
    class Broken:
        def refusal_before_run(self, request: Any) -> None:
            return None  # the command line's check before the run asks the host that runs it

        def git_dir(self, request: Any) -> None:
            return None  # no worktree the command line's lock could lie beside

        def run(self, *args: Any, **kwargs: Any) -> None:
            raise RuntimeError(f"broke {OSC}")

    w = world()
    w.container.worker_host.override(providers.Object(Broken()))
    out, err = io.StringIO(), io.StringIO()
    assert cli.main(["run", REQUEST_FILE, "--parent", PARENT], out, err, container=w.container) == 3
    assert_terminal_safe(err.getvalue())
    assert "RuntimeError: broke \\x1b]0;pwned\\x07" in err.getvalue()


@pytest.mark.parametrize(
    ("status", "code", "said"),
    [
        ("ok", None, "  worker result: ok — fine"),
        (
            "failed",
            "checks_failed",
            "  worker result: ok (the worker's claim; the run ended failed: checks_failed) — fine",
        ),
    ],
)
def test_a_failed_run_s_account_never_opens_as_if_it_were_ok(
    status: str, code: str | None, said: str
) -> None:
    """Issue 19 §2: the account of a run that failed after a worker said ok opened with
    round 1's "worker result: ok", as an ok run's does."""
    error = None if code is None else link(code, "round 2: 1 check failed", Reason.EXHAUSTED)
    text = account(
        record(
            worker_result={
                "status": "ok",
                "summary": "fine",
                "error": None,
                "proposed_deletions": [],
                "output": {},
            },
            status=status,
            error=error,
        )
    )
    assert said in text.splitlines()
