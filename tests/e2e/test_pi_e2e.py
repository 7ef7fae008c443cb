"""The pi backend end to end: whole `WorkerHost.run` calls through `production(environ)` with the
real pi 0.73.1, the real sandbox-runtime, the generated permission extension and a real
`.claude/worktrees/` worktree, against the scripted model server on 127.0.0.1 (reached through a
user's models.json, as a local model proxy is). Never skipped: without the pinned programs the
tests fail and say to run ./scripts/setup.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from e2e.conftest import kept_programs, program_version
from e2e.conftest_pi import (
    PI,
    SANDBOX_RUNTIME,
    PiWorld,
    call,
    pi_world,
    reply,
    result_call,
    runtime_of,
)
from servers.openai_server import Cut, Fail, Hang, Reply
from timing import SLOW, Deadline

from concorde_workers.adapters.pi.links import pi_limit_detail
from concorde_workers.application.runtime.validation import ValidationInput, ValidationOutcome
from concorde_workers.domain.boundary.policy import decide_read, decide_write
from concorde_workers.domain.configuration.request import Limits

pytestmark = pytest.mark.e2e

__all__ = ["pi_world"]  # the fixture, imported for pytest

ONE_ROUND = Limits(timeout_seconds=SLOW, max_turns=30, rounds=0, retries=0, retry_delay_seconds=0)


def denial(text: str, reason: str | None) -> bool:
    assert reason
    return reason in text


# --- (a) an allowed write and a valid result ------------------------------------------------------


@pytest.mark.req("The permission extension is a pi worker's only extension")
@pytest.mark.req("A pi worker reads no context file")
@pytest.mark.req("A pi worker loads no skill")
@pytest.mark.req("A pi worker loads no prompt template")
@pytest.mark.req("A pi worker has its own configuration directory")
@pytest.mark.req("Only the pi files that say how to reach a provider are copied")
def test_an_allowed_write_and_a_valid_result_end_ok_with_a_clean_audit(pi_world: PiWorld) -> None:
    w = pi_world
    run = w.run(
        reply(call("write", "call_w1", path=w.path("src/app/new.py"), content="print('new')\n")),
        reply(
            result_call("call_r1", summary="wrote src/app/new.py", output={"note": "e2e"}),
            text="Returning the result.",
        ),
    )
    assert run.record.status == "ok", run.explain()
    assert run.record.error is None
    assert (w.worktree / "src/app/new.py").read_text() == "print('new')\n"
    audit = run.data["rounds"][0]["audit"]
    assert audit == {"verdict": "clean", "changed": ["src/app/new.py"], "violations": []}
    assert run.record.worker_result is not None
    assert run.record.worker_result["output"] == {"note": "e2e"}
    pi = run.round_pi()
    assert pi["turns"] == 2 and pi["stop_reason"] == "toolUse" and pi["cost"] > 0
    usage = run.data["rounds"][0]["usage"]
    assert usage["tokens_in"] == 2000 and usage["tokens_out"] == 100
    assert "successfully wrote" in run.tool_result("call_w1").lower()
    # The session is pi's own UUID; its file is kept as the transcript.
    session = run.data["rounds"][0]["session"]
    transcript = run.run_dir / "transcript.jsonl"
    assert json.loads(transcript.read_text().splitlines()[0])["id"] == session
    # The model was reached with the key of the user's auth.json, through its copy.
    assert run.requests[0]["headers"].get("authorization") == "Bearer sk-scripted-local-key"
    status = json.loads((run.run_dir / "status.json").read_text())
    assert status["phase"] == "finished" and status["last_action"]["tool"] == "concorde_result"
    # pi and sandbox-runtime as the preparation read them (their package.json), in the trace.
    srt = json.loads((SANDBOX_RUNTIME / "package.json").read_text())["version"]
    assert kept_programs(run) == [("pi", program_version(PI)), ("sandbox-runtime", srt)]


# --- (b) write and edit on read-only paths --------------------------------------------------------


@pytest.mark.req("pi file tools are checked before they act")
@pytest.mark.req("A denied pi file tool call gives the table's reason")
@pytest.mark.req("Both backends enforce the same grant")
def test_a_write_and_an_edit_on_read_only_paths_are_blocked_with_the_tables_reason(
    pi_world: PiWorld,
) -> None:
    w = pi_world
    util, notes = w.path("src/app/util.py"), w.path("docs/notes.md")
    run = w.run(
        reply(call("write", "call_ro_write", path=util, content="overwritten\n")),
        reply(
            call(
                "edit",
                "call_ro_edit",
                path=notes,
                edits=[{"oldText": "# notes", "newText": "# changed"}],
            )
        ),
        reply(result_call("call_r")),
    )
    assert run.record.status == "ok", run.explain()
    policy = run.context.policy
    assert denial(run.tool_result("call_ro_write"), decide_write(policy, util, util).reason)
    assert denial(run.tool_result("call_ro_edit"), decide_write(policy, notes, notes).reason)
    assert (w.worktree / "src/app/util.py").read_text() == "def util():\n    return 1\n"
    assert (w.worktree / "docs/notes.md").read_text() == "# notes\n"
    assert run.data["rounds"][0]["audit"]["verdict"] == "clean"
    assert run.data["rounds"][0]["audit"]["changed"] == []


# --- (c) reads the grant withholds --------------------------------------------------------------


@pytest.mark.req("pi file tools are checked before they act")
@pytest.mark.req("A denied pi file tool call gives the table's reason")
@pytest.mark.req("Workers never see Git")
def test_reads_of_withheld_paths_are_blocked(pi_world: PiWorld) -> None:
    w = pi_world
    paths = {
        "call_names": w.path("README.md"),
        "call_hidden": w.path("secrets/token.txt"),
        "call_primary": str(w.primary / "src/app/main.py"),
        "call_git": str(w.primary / ".git" / "config"),
        # pi's own environment holds every *_API_KEY: the extension denies /proc.
        "call_environ": "/proc/self/environ",
    }

    def reads(body: dict[str, Any]) -> Reply:
        auth = str(Path(runtime_of(body)) / "config" / "auth.json")
        return reply(
            *(call("read", cid, path=p) for cid, p in paths.items()),
            call("read", "call_auth", path=auth),
            call("read", "call_granted", path=w.path("docs/notes.md")),
        )

    run = w.run(reads, reply(result_call("call_r")))
    assert run.record.status == "ok", run.explain()
    policy = run.context.policy
    for cid, path in paths.items():
        text = run.tool_result(cid)
        assert denial(text, decide_read(policy, path).reason), (cid, text)
    auth = policy.runtime.copy_of("auth.json")
    assert denial(run.tool_result("call_auth"), decide_read(policy, auth).reason)
    assert "sk-scripted-local-key" not in json.dumps(run.server.tool_results())
    assert run.tool_result("call_granted").strip().endswith("# notes")


# --- (d) no network from bash -------------------------------------------------------------------


@pytest.mark.req("pi commands run sandboxed without network")
def test_bash_cannot_reach_loopback(pi_world: PiWorld) -> None:
    w = pi_world
    port = w.server.port
    probe = (
        f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 3); "
        f"print('CONNECTED')\"; echo python_exit=$?; "
        f"curl -sS -m 3 -X POST http://127.0.0.1:{port}/v1/chat/completions -d '{{}}'; "
        f"echo curl_exit=$?"
    )
    run = w.run(reply(call("bash", "call_net", command=probe)), reply(result_call("call_r")))
    assert run.record.status == "ok", run.explain()
    text = run.tool_result("call_net")
    assert "CONNECTED" not in text and "python_exit=1" in text, text
    assert "curl_exit=0" not in text, text
    # Only pi's own model calls reached the server.
    assert all(r["body"].get("messages") for r in run.requests)
    assert len(run.requests) == 2


# --- (e) bash writes outside rw ------------------------------------------------------------------


@pytest.mark.req("pi commands run sandboxed without network")
def test_bash_writes_to_a_read_only_file_and_outside_the_worktree_are_refused(
    pi_world: PiWorld,
) -> None:
    w = pi_world
    outside = w.root / "outside.txt"
    command = (
        f"echo changed >> {w.path('src/app/util.py')}; echo ro_exit=$?; "
        f"echo x > {outside}; echo outside_exit=$?; "
        f"echo ok > {w.path('src/app/by_bash.py')}; echo rw_exit=$?"
    )
    run = w.run(reply(call("bash", "call_w", command=command)), reply(result_call("call_r")))
    assert run.record.status == "ok", run.explain()
    text = run.tool_result("call_w")
    assert "ro_exit=1" in text and "outside_exit=1" in text and "rw_exit=0" in text, text
    assert "Read-only file system" in text
    assert not outside.exists()
    assert (w.worktree / "src/app/util.py").read_text() == "def util():\n    return 1\n"
    assert run.data["rounds"][0]["audit"] == {
        "verdict": "clean",
        "changed": ["src/app/by_bash.py"],
        "violations": [],
    }


# --- (f) + (g) tampering has no effect; a resume round continues the session ---------------------


class RepairOnce:
    """A round validation asking one repair, then content."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.calls: list[ValidationInput] = []

    def __call__(self, given: ValidationInput) -> ValidationOutcome:
        self.calls.append(given)
        return ValidationOutcome(repair=self.text) if len(self.calls) == 1 else ValidationOutcome()


def test_tampering_with_the_jiti_cache_and_work_pi_has_no_effect_next_round(
    pi_world: PiWorld,
) -> None:
    w = pi_world
    tamper = (
        'for f in "$TMPDIR"/jiti/*.mjs; do sed -i \'1i console.error("POISONED")\' "$f"; done; '
        'echo jiti_exit=$?; mkdir -p "$TMPDIR/jiti" && echo \'console.error("POISONED")\' '
        '> "$TMPDIR/jiti/x.mjs"; echo jiti_new_exit=$?; '
        'mkdir -p .pi && echo \'{"retry":{"enabled":false}}\' > .pi/settings.json; '
        "echo pi_settings_exit=$?; echo 'POISONED SYSTEM PROMPT' > .pi/SYSTEM.md; "
        "echo pi_system_exit=$?"
    )
    validation = RepairOnce("Round 2, please.")
    run = w.run(
        reply(call("bash", "call_tamper", command=tamper)),
        reply(result_call("call_r1")),
        reply(result_call("call_r2", summary="round 2")),
        limits=Limits(
            timeout_seconds=SLOW, max_turns=30, rounds=1, retries=0, retry_delay_seconds=0
        ),
        validation=validation,
    )
    assert run.record.status == "ok", run.explain()
    assert len(run.data["rounds"]) == 2
    text = run.tool_result("call_tamper")
    assert "pi_settings_exit=0" not in text and "pi_system_exit=0" not in text, text
    stderr2 = (run.run_dir / "rounds" / "2" / "stderr.log").read_text()
    assert "POISONED" not in stderr2
    round2_requests = [r for r in run.requests if "Round 2, please." in json.dumps(r["body"])]
    assert round2_requests
    assert all("POISONED" not in run.server.system_prompt(r["n"]) for r in round2_requests)


@pytest.mark.req("Resume from the newest session")
def test_a_resume_round_continues_the_session_with_its_context(pi_world: PiWorld) -> None:
    w = pi_world
    validation = RepairOnce("Also add a docstring to new.py.")
    run = w.run(
        reply(call("write", "call_w1", path=w.path("src/app/new.py"), content="x = 1\n")),
        reply(result_call("call_r1")),
        reply(
            call("write", "call_w2", path=w.path("src/app/new.py"), content='"""New."""\nx = 1\n')
        ),
        reply(result_call("call_r2", summary="repaired")),
        limits=Limits(
            timeout_seconds=SLOW, max_turns=30, rounds=1, retries=0, retry_delay_seconds=0
        ),
        validation=validation,
    )
    assert run.record.status == "ok", run.explain()
    rounds = run.data["rounds"]
    assert [r["prompt"] for r in rounds] == ["initial", "repair"]
    assert rounds[0]["session"] == rounds[1]["session"]
    assert run.record.worker_result is not None
    assert run.record.worker_result["summary"] == "repaired"
    # Round 2's first model request carries round 1's messages, then the repair text.
    first_of_round2 = next(
        r for r in run.requests if "Also add a docstring" in json.dumps(r["body"])
    )
    messages = first_of_round2["body"]["messages"]
    dumped = json.dumps(messages)
    assert "Do the scripted task." in dumped and "call_w1" in dumped and "call_r1" in dumped
    assert messages[-1]["role"] == "user"
    transcript = (run.run_dir / "transcript.jsonl").read_text().splitlines()
    assert sum(1 for line in transcript if json.loads(line)["type"] == "session") == 1
    assert len(validation.calls) == 2


# --- (h) a transient model-service error and a retry round -------------------------------------


@pytest.mark.req("A transient model-service error is retried")
@pytest.mark.req("A retry continues the session")
def test_a_transient_error_pi_does_not_retry_gets_a_retry_round_in_the_same_session(
    pi_world: PiWorld,
) -> None:
    w = pi_world
    busy = "Concurrency limit exceeded for this gateway, please retry later"
    run = w.run(
        reply(call("write", "call_w1", path=w.path("src/app/new.py"), content="x = 1\n")),
        Fail(529, busy, times=3),  # the SDK's own 2 retries, then pi gives up (notes §8)
        reply(result_call("call_r1", summary="after the retry")),
        limits=Limits(
            timeout_seconds=SLOW, max_turns=30, rounds=0, retries=2, retry_delay_seconds=0.05
        ),
    )
    assert run.record.status == "ok", run.explain()
    first, second = run.data["rounds"]
    assert first["transient"]["error"] == f"529 {busy}"
    assert first["transient"]["retried"] is True
    assert 0.025 <= first["transient"]["delay_seconds"] <= 0.05
    assert first["pi"]["stop_reason"] == "error"
    assert second["prompt"] == "retry" and second["session"] == first["session"]
    retry_request = run.requests[-1]["body"]["messages"]
    dumped = json.dumps(retry_request)
    assert "Do the scripted task." in dumped and "call_w1" in dumped
    assert run.data["rounds"][-1]["audit"]["changed"] == ["src/app/new.py"]


@pytest.mark.req("A transient model-service error is retried")
@pytest.mark.req("A retry continues the session")
def test_a_stream_cut_off_on_the_first_call_is_retried_in_the_named_session(
    pi_world: PiWorld,
) -> None:
    w = pi_world
    run = w.run(
        Cut(times=4),  # pi retries a lost call 3 times itself (notes §8), then gives up
        reply(result_call("call_r1", summary="after the lost call")),
        limits=Limits(
            timeout_seconds=90, max_turns=30, rounds=0, retries=2, retry_delay_seconds=0.05
        ),
    )
    assert run.record.status == "ok", run.explain()
    first, second = run.data["rounds"]
    # the fetch's own word for a body cut off: a lost call (seed 000 "Retries")
    assert first["transient"]["error"] == "terminated"
    assert first["transient"]["retried"] is True and first["pi"]["stop_reason"] == "error"
    # the retry continues the session round 1 named, although no call of it got an answer:
    # pi wrote its session file with the failed answers, the brief first
    assert second["prompt"] == "retry" and second["session"] == first["session"]
    dumped = json.dumps(run.requests[-1]["body"]["messages"])
    assert "Do the scripted task." in dumped and "terminated" in dumped
    transcript = (run.run_dir / "transcript.jsonl").read_text().splitlines()
    assert sum(1 for line in transcript if json.loads(line)["type"] == "session") == 1


@pytest.mark.req("A pi worker takes nothing from the user's pi settings")
def test_pis_own_retry_absorbs_a_short_rate_limit_and_the_users_settings_are_not_read(
    pi_world: PiWorld,
) -> None:
    w = pi_world
    # Were the user's settings.json read, pi would not retry and the round would end in error.
    (w.pi_dir / "settings.json").write_text('{"retry": {"enabled": false}}\n')
    run = w.run(
        Fail(429, "Rate limit reached for requests", times=3), reply(result_call("call_r1"))
    )
    assert run.record.status == "ok", run.explain()
    assert len(run.data["rounds"]) == 1
    assert "transient" not in run.data["rounds"][0]
    assert len(run.requests) == 4  # the SDK's 3 attempts, then pi's own retry


# --- (i) limits -------------------------------------------------------------------------------


@pytest.mark.req("pi runs stop at their limits")
@pytest.mark.req("A pi run records the limit it reached")
def test_max_turns_ends_the_run_with_worker_limit_reached(pi_world: PiWorld) -> None:
    w = pi_world
    run = w.run(
        *(reply(call("bash", f"call_t{i}", command=f"echo turn {i}")) for i in range(1, 6)),
        limits=Limits(
            timeout_seconds=SLOW, max_turns=2, rounds=0, retries=0, retry_delay_seconds=0
        ),
    )
    assert run.code == "worker_limit_reached", run.explain()
    error = run.record.error
    assert error is not None
    # The limit as the permission extension names it (its entry: limit "turns").
    assert pi_limit_detail("turns", 3, 2) in error.detail
    (cause,) = error.causes
    assert cause.code == "pi_limit_reached" and pi_limit_detail("turns", 3, 2) in cause.detail
    assert len(run.requests) == 3  # the abort sends no fourth call
    assert run.round_pi()["stop_reason"] == "aborted" and run.round_pi()["turns"] == 3


@pytest.mark.req("pi runs stop at their limits")
@pytest.mark.req("A pi run records the limit it reached")
def test_max_budget_ends_the_run_with_worker_limit_reached(pi_world: PiWorld) -> None:
    w = pi_world
    # 2,000 prompt + 100 completion tokens at 3 / 15 USD per million: 0.0075 USD a turn.
    run = w.run(
        *(
            reply(call("bash", f"call_b{i}", command=f"echo {i}"), tokens=(2000, 100))
            for i in range(1, 6)
        ),
        limits=Limits(
            timeout_seconds=SLOW,
            max_turns=30,
            max_budget_usd=0.01,
            rounds=0,
            retries=0,
            retry_delay_seconds=0,
        ),
    )
    assert run.code == "worker_limit_reached", run.explain()
    error = run.record.error
    assert error is not None and pi_limit_detail("budget", 0.015, 0.01) in error.detail
    assert error.causes[0].code == "pi_limit_reached"
    assert len(run.requests) == 2


# --- (j) proposed deletions ----------------------------------------------------------------------


@pytest.mark.req("Only the host deletes")
def test_proposed_deletions_are_performed_by_the_host(pi_world: PiWorld) -> None:
    w = pi_world
    run = w.run(
        reply(
            result_call(
                "call_r", "src/app/old.py", "src/app/util.py", "src/app/absent.py", "../outside.txt"
            )
        )
    )
    assert run.record.status == "ok", run.explain()
    assert not (w.worktree / "src/app/old.py").exists()
    assert run.record.deleted == ("src/app/old.py",)
    assert run.record.deletions_refused == ("src/app/util.py", "../outside.txt")
    assert run.record.deletions_absent == ("src/app/absent.py",)
    assert (w.worktree / "src/app/util.py").exists()
    # The worker itself could not delete: the audit saw no change.
    assert run.data["rounds"][0]["audit"]["changed"] == []


# --- (k) credential copies never outlive the run --------------------------------------------------


@pytest.mark.req("Nothing but the trace outlives a worker")
def test_the_credential_copies_are_gone_after_a_timeout(pi_world: PiWorld) -> None:
    w = pi_world
    before = {p.name: p.read_text() for p in w.pi_dir.iterdir()}
    deadline = Deadline()

    def stall(body: dict[str, Any]) -> Hang:
        # pi is provably inside its second model call: its round's timeout passes now, while
        # the answer is held back until the server stops (however long start-up took).
        deadline.expire()
        return Hang(3600)

    run = w.run(
        reply(call("bash", "call_1", command="echo working")),
        stall,
        limits=Limits(
            timeout_seconds=SLOW, max_turns=30, rounds=0, retries=0, retry_delay_seconds=0
        ),
        deadline=deadline,
    )
    assert run.code == "worker_timeout", run.explain()
    assert deadline.expired and len(w.server.requests) - run.first_request == 2
    assert not run.runtime_dir.exists()
    assert {p.name: p.read_text() for p in w.pi_dir.iterdir()} == before
    # The round had named its session: the transcript was kept.
    assert (run.run_dir / "transcript.jsonl").exists()


@pytest.mark.parametrize("ending", ["ok", "process failure"])
def test_the_credential_copies_are_gone_after_other_endings(pi_world: PiWorld, ending: str) -> None:
    w = pi_world
    script = (
        (reply(result_call("call_r")),)
        if ending == "ok"
        else (Fail(400, "Invalid request: bad parameter"),)
    )
    run = w.run(*script)
    assert (run.code is None) == (ending == "ok"), run.explain()
    if ending != "ok":
        assert run.code == "pi_failed"
    assert not run.runtime_dir.exists()


# --- concorde-workers demo ------------------------------------------------------------------------


def test_the_demo_runs_a_real_pi_worker_offline_and_exits_0(tmp_path: Path) -> None:
    from concorde_workers.adapters.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    status = main(["demo", "--folder", str(tmp_path)], out=out, err=err)
    text = out.getvalue()
    assert status == 0, text + err.getvalue()
    assert text.count("[ok]") == 6 and "FAILED" not in text
    assert "read-only for this task" in text and "deleted: src/shop/obsolete.py" in text
    assert "python_exit=1" in text
    assert "finished ok" in err.getvalue()
    # Issue 12 §5: the throwaway repository is gone, the trace it pointed to stays beside it.
    left = [p.name for p in tmp_path.iterdir()]
    assert len(left) == 1 and left[0].startswith("workers-demo-trace-"), left
    trace = text.split("trace: ", 1)[1].split(" ", 1)[0]
    assert Path(trace).is_dir() and Path(trace).is_relative_to(tmp_path / left[0])
    assert "removed the demo repository" in text
    # Issue 21: its report beside the trace and `show --diff` both show the worker's change.
    report = Path(text.split("report: ", 1)[1].split(" ", 1)[0])
    assert report.parent == tmp_path / left[0]
    assert "+def discount(total):" in report.read_text()
    diff = io.StringIO()
    assert main(["show", trace, "--diff"], out=diff, err=io.StringIO()) == 0
    assert "+def discount(total):\n" in diff.getvalue()


def test_the_demo_in_the_system_temporary_directory_exits_0() -> None:
    """The Quickstart's own demo: its throwaway folder directly in /tmp, beside every run's
    runtime directory. Named concorde-demo-* it was taken for another run's, and the worker's
    allowed write was refused; the tests' --folder runs did not see it."""
    from concorde_workers.adapters.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    status = main(["demo", "--folder", "/tmp"], out=out, err=err)
    text = out.getvalue()
    trace = Path(text.split("trace: ", 1)[1].split(" ", 1)[0]) if "trace: " in text else None
    try:
        assert status == 0, text + err.getvalue()
        assert text.count("[ok]") == 6 and "FAILED" not in text
        assert (
            "the allowed write landed in the worktree: audit clean, changed: src/shop/discount.py"
            in text
        )
    finally:
        if trace is not None and trace.is_relative_to("/tmp"):
            shutil.rmtree(trace.parents[1], ignore_errors=True)
