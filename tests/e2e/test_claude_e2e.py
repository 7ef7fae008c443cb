"""End-to-end: whole runs of the real, pinned Claude Code under the host (production wiring, a
real repository and `.claude/worktrees/` worktree), against the scripted Messages API on
127.0.0.1 (tests/servers/anthropic_server.py). Claude Code's own retries are off
(CLAUDE_CODE_MAX_RETRIES=0 in the wrapper), and turns are few, so every test is quick and
deterministic.

Every test also checks the end of the run: the runtime directory and the credential copy in its
config/ are gone, the user's own credentials are untouched.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from e2e.agent_processes import agent_pid
from e2e.conftest import (
    DUMMY_CREDENTIALS,
    ClaudeWorld,
    hook_denial,
    kept_programs,
    ok_result,
    program_version,
)
from servers.anthropic_server import Reply, last_tool_result
from servers.claude_wrapper import find_claude, write_wrapper
from timing import SLOW, Deadline

from concorde_workers.application.runtime.cancellation import Cancellation
from concorde_workers.application.runtime.validation import ValidationInput, ValidationOutcome
from concorde_workers.domain.configuration.request import Limits
from concorde_workers.domain.run.retries import transient_cause

pytestmark = pytest.mark.e2e


def limits(**changes: Any) -> Limits:
    base: dict[str, Any] = {
        "timeout_seconds": SLOW,
        "max_turns": 5,
        "rounds": 0,
        "retries": 0,
        "retry_delay_seconds": 0,
    }
    return Limits(**(base | changes))


def tool_ok(body: dict[str, Any]) -> None:
    """The previous tool call succeeded."""
    result = last_tool_result(body)
    assert result is not None, "the request carries no tool_result"
    text, is_error = result
    assert not is_error, text


def user_texts(body: dict[str, Any]) -> list[str]:
    """The text of every user message of a request, in order."""
    texts = []
    for message in body.get("messages", []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        else:
            texts.append(
                "".join(
                    b.get("text", "")
                    for b in content
                    if isinstance(b, dict) and b.get("type") == "text"
                )
            )
    return texts


def tool_uses(body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every tool_use block of the request's history: (name, input)."""
    found = []
    for message in body.get("messages", []):
        content = message.get("content")
        if message.get("role") == "assistant" and isinstance(content, list):
            found += [(b["name"], b["input"]) for b in content if b.get("type") == "tool_use"]
    return found


def runtime_directory(world: ClaudeWorld) -> Path:
    """The run's runtime directory (it exists while claude runs)."""
    (found,) = world.temp_root.glob("concorde-*")
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


def resumed_session(start: dict[str, Any]) -> str | None:
    argv = start["argv"]
    return argv[argv.index("--resume") + 1] if "--resume" in argv else None


# --- (a) an allowed write and a valid result -------------------------------------------------


@pytest.mark.req("The worker never works in the worktree")
@pytest.mark.req("Nothing ambient reaches the worker")
@pytest.mark.req("Every round is audited")
@pytest.mark.req("A run is recorded before its launch")
def test_allowed_write_and_valid_result_end_ok(claude_world: ClaudeWorld) -> None:
    app = claude_world.worktree / "src" / "app"
    main, greet = app / "main.py", app / "greet.py"
    copies_seen: list[list[str]] = []
    settings_seen: list[str] = []

    def edit(body: dict[str, Any]) -> Reply:
        tool_ok(body)  # the Read
        copies_seen.append(claude_world.credential_copies())
        settings_seen.extend(
            p.read_text() for p in claude_world.temp_root.glob("concorde-*/control/settings.json")
        )
        return Reply.tools(
            (
                "Edit",
                {
                    "file_path": str(main),
                    "old_string": "print('main')",
                    "new_string": "print('hello')",
                },
            ),
            ("Write", {"file_path": str(greet), "content": "GREETING = 'hello'\n"}),
        )

    def result(body: dict[str, Any]) -> Reply:
        tool_ok(body)
        return Reply.structured(ok_result(summary="greeting added"))

    run = claude_world.run(Reply.tool("Read", {"file_path": str(main)}), edit, result)

    assert run.server.failures == []
    assert run.record.status == "ok", run.record.error
    assert run.record.worker_result == ok_result(summary="greeting added")
    round1 = run.round(1)
    assert round1["audit"] == {
        "verdict": "clean",
        "violations": [],
        "changed": ["src/app/greet.py", "src/app/main.py"],
    }
    assert main.read_text() == "print('hello')\n"
    assert greet.read_text() == "GREETING = 'hello'\n"
    # The round as Claude Code reported it.
    session = round1["session"]
    assert session and round1["exit"] == 0
    assert round1["claude"]["subtype"] == "success" and round1["claude"]["is_error"] is False
    assert round1["claude"]["permission_denials"] == []
    # Three model calls of 100 input tokens each; the turns as Claude Code counted them.
    assert round1["usage"]["tokens_in"] == 300 and round1["usage"]["tokens_out"] == 60
    assert round1["usage"]["turns"] == round1["claude"]["num_turns"] >= 3
    assert round1["usage"]["cost_usd"] > 0
    # The brief reached the model on stdin; the host's key and nothing else identify it.
    first = run.server.requests[0]
    assert "Add a greeting to src/app/main.py." in user_texts(first)[0]
    posts = [e for e in run.server.log if e["method"] == "POST"]
    assert {e["headers"].get("x-api-key") for e in posts} == {"sk-ant-test"}
    # The round's environment: exactly the spec's variables (the wrapper adds its two after
    # logging), so nothing test-only reached the settings or the process.
    assert run.starts[0]["env"] == sorted(
        [
            "ANTHROPIC_API_KEY",
            "CLAUDE_CODE_DISABLE_AUTO_MEMORY",
            "CLAUDE_CODE_DISABLE_CLAUDE_MDS",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
            "CLAUDE_CONFIG_DIR",
            "HOME",
            "LANG",
            "PATH",
            "PWD",
            "TMPDIR",
        ]
    )
    # The generated settings name no endpoint: the wrapper alone points claude at the server.
    assert len(settings_seen) == 1
    assert "ANTHROPIC_BASE_URL" not in settings_seen[0]
    assert run.server.url not in settings_seen[0] and "127.0.0.1" not in settings_seen[0]
    settings_env = json.loads(settings_seen[0]).get("env")
    assert settings_env == {
        "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS": "1",
        **({"IS_SANDBOX": "1"} if os.getuid() == 0 else {}),
    }
    # The credential copy existed while the worker ran (in its agent space, never on the disk),
    # and the transcript was kept.
    assert copies_seen == [[DUMMY_CREDENTIALS]]
    transcript = run.run_dir / "transcript.jsonl"
    assert run.record.transcript == str(transcript)
    lines = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert {line.get("sessionId") for line in lines if "sessionId" in line} == {session}
    # The progress file saw the tool calls and the end.
    status = json.loads((run.run_dir / "status.json").read_text())
    assert status["phase"] == "finished" and status["status"] == "ok"
    assert status["last_action"]["tool"] == "StructuredOutput"
    # The version of the program the run was prepared with (the wrapper lies in no npm package:
    # asked `--version` once, which it passes on to the pinned claude), kept in the trace.
    claude = find_claude()
    assert claude is not None
    assert kept_programs(run) == [("claude", program_version(claude))]
    claude_world.assert_cleaned(run)


# --- (b) a write on a ro path is denied by the write hook ------------------------------------


@pytest.mark.req("Only rw paths are writable by file tools")
def test_writes_on_a_read_only_file_are_denied(claude_world: ClaudeWorld) -> None:
    """A Write on the ro file itself meets the generated Edit deny rule (Claude Code's own
    refusal, which 2.1.332 lists in permission_denials and 2.1.197 did not); a Write through a
    link at a rw path that leads to the ro file passes the deny rules and is denied by the write
    hook, with the hook's reason, and listed in permission_denials."""
    app = claude_world.worktree / "src" / "app"
    util, link = app / "util.py", app / "link.py"
    link.symlink_to("util.py")
    before = util.read_text()
    results: list[tuple[str, bool]] = []

    def write_direct(body: dict[str, Any]) -> Reply:
        tool_ok(body)  # the Reads: ro is readable
        return Reply.tool("Write", {"file_path": str(util), "content": "hacked\n"})

    def write_through_link(body: dict[str, Any]) -> Reply:
        results.append(last_tool_result(body) or ("", False))
        return Reply.tool("Write", {"file_path": str(link), "content": "hacked\n"})

    def result(body: dict[str, Any]) -> Reply:
        results.append(last_tool_result(body) or ("", False))
        return Reply.structured(ok_result(summary="util.py is read-only"))

    run = claude_world.run(
        Reply.tools(("Read", {"file_path": str(util)}), ("Read", {"file_path": str(link)})),
        write_direct,
        write_through_link,
        result,
    )

    assert run.server.failures == []
    assert run.record.status == "ok", run.record.error
    assert util.read_text() == before and link.is_symlink()
    (direct, direct_error), (hooked, hooked_error) = results
    assert direct_error and "denied by your permission settings" in direct
    reason = hook_denial(hooked)
    assert hooked_error and reason is not None, hooked
    assert reason.endswith("is read-only for this task"), reason
    round1 = run.round(1)
    assert round1["audit"] == {"verdict": "clean", "changed": [], "violations": []}
    listed = [
        (d["tool_name"], d["tool_input"]["file_path"])
        for d in round1["claude"]["permission_denials"]
    ]
    # 2.1.332 lists its own deny rule's refusal too; 2.1.197 listed only the hook's
    assert listed in ([("Write", str(link))], [("Write", str(util)), ("Write", str(link))]), listed
    claude_world.assert_cleaned(run)


# --- (g) a validation repair resumes the session ----------------------------------------------


@pytest.mark.req("Resume from the newest session")
@pytest.mark.req("Rounds only repair what the round validation reports")
@pytest.mark.req("The round validation follows every clean ok round")
def test_validation_repair_resumes_the_same_session(claude_world: ClaudeWorld) -> None:
    greet = claude_world.worktree / "src" / "app" / "greet.py"
    repair = "Also give greet.py a module docstring."
    calls: list[int] = []

    def validate(given: ValidationInput) -> ValidationOutcome:
        calls.append(given.round)
        return ValidationOutcome(repair=repair) if given.round == 1 else ValidationOutcome()

    def first_result(body: dict[str, Any]) -> Reply:
        tool_ok(body)
        return Reply.structured(ok_result(summary="written"))

    def repaired(body: dict[str, Any]) -> Reply:
        texts = user_texts(body)
        assert "Add a greeting to src/app/main.py." in texts[0], texts[:1]
        assert repair in texts[-1], texts[-1:]
        assert ("Write", {"file_path": str(greet), "content": "X = 1\n"}) in tool_uses(body)
        return Reply.tool("Write", {"file_path": str(greet), "content": '"""Greeting."""\nX = 1\n'})

    def second_result(body: dict[str, Any]) -> Reply:
        tool_ok(body)
        return Reply.structured(ok_result(summary="docstring added"))

    run = claude_world.run(
        Reply.tool("Write", {"file_path": str(greet), "content": "X = 1\n"}),
        first_result,
        repaired,
        second_result,
        validation=validate,
        limits=limits(rounds=1),
    )

    assert run.server.failures == []
    assert run.record.status == "ok", run.record.error
    assert calls == [1, 2]
    r1, r2 = run.round(1), run.round(2)
    assert (r1["prompt"], r2["prompt"]) == ("initial", "repair")
    assert r1["validation"] == repair and r2["validation"] == "clean"
    assert r1["session"] == r2["session"]
    assert [resumed_session(s) for s in run.starts] == [None, r1["session"]]
    # Round 2's request carries round 1's whole conversation before the repair.
    round1_last = run.server.requests[1]["messages"]
    round2_first = run.server.requests[2]["messages"]
    assert len(round2_first) > len(round1_last)
    assert [m["role"] for m in round2_first[:2]] == [m["role"] for m in round1_last[:2]]
    assert greet.read_text() == '"""Greeting."""\nX = 1\n'
    assert run.record.worker_result == ok_result(summary="docstring added")
    claude_world.assert_cleaned(run)


# --- (h) a transient error, then a retry round continuing the session ------------------------


@pytest.mark.req("A transient model-service error is retried")
@pytest.mark.req("A retry continues the session")
@pytest.mark.req("Every retry is recorded")
@pytest.mark.req("Retries wait longer each time")
def test_overloaded_then_success_is_retried_in_the_session(claude_world: ClaudeWorld) -> None:
    def resumed(body: dict[str, Any]) -> Reply:
        texts = user_texts(body)
        assert "Add a greeting to src/app/main.py." in texts[0], texts[:1]
        assert "529" in texts[-1], texts[-1:]
        return Reply.structured(ok_result(summary="after the retry"))

    run = claude_world.run(
        Reply.overloaded(), resumed, limits=limits(retries=2, retry_delay_seconds=0.01)
    )

    assert run.server.failures == []
    assert run.record.status == "ok", run.record.error
    r1, r2 = run.round(1), run.round(2)
    assert (r1["prompt"], r2["prompt"]) == ("initial", "retry")
    transient = r1["transient"]
    assert transient["error"].startswith("API Error: 529"), transient
    assert transient["retried"] is True
    assert 0.005 <= transient["delay_seconds"] <= 0.01
    assert r1["claude"]["is_error"] is True and r1["exit"] == 1
    assert r1["session"] == r2["session"]
    assert [resumed_session(s) for s in run.starts] == [None, r1["session"]]
    assert "transient" not in r2 or r2["transient"] is None
    claude_world.assert_cleaned(run)


@pytest.mark.req("A run has at most its configured retry rounds")
@pytest.mark.req("A failed run explains itself")
@pytest.mark.parametrize(
    "reply, said",
    [
        (Reply.overloaded(), "API Error: 529"),
        (Reply.rate_limited(retry_after=0), "API Error: Request rejected (429)"),
        (Reply.server_error(), "API Error: 500"),
    ],
)
def test_transient_error_with_no_retries_left_is_claude_failed(
    claude_world: ClaudeWorld, reply: Reply, said: str
) -> None:
    run = claude_world.run(reply, limits=limits(retries=0))
    assert run.code == "claude_failed", run.record.error
    assert run.record.error is not None
    assert run.record.error.unhandled.reason.value == "exhausted"
    assert said in run.record.error.detail
    assert run.record.error.causes[0].code == "claude_error"
    transient = run.round(1)["transient"]
    assert transient["error"].startswith(said) and transient["retried"] is False
    assert len(run.server.requests) == 1  # Claude Code's own retries are off
    claude_world.assert_cleaned(run)


@pytest.mark.req("A transient model-service error is retried")
@pytest.mark.req("A retry continues the session")
def test_a_connection_lost_on_the_first_call_is_retried_in_the_named_session(
    claude_world: ClaudeWorld,
) -> None:
    brief_line = "Add a greeting to src/app/main.py."

    def resumed(body: dict[str, Any]) -> Reply:
        texts = user_texts(body)
        assert brief_line in texts[0], texts[:1]  # the session's history holds the brief
        # the API error the history keeps (2.1.197: "Unable to connect to API (ECONNRESET)",
        # 2.1.332: "Connection dropped (ECONNRESET). ... then try again.")
        assert "ECONNRESET" in texts[-1], texts[-1:]
        return Reply.structured(ok_result(summary="after the lost call"))

    # The server closes the first call's connection without answering.
    run = claude_world.run(
        Reply(hangup=True), resumed, limits=limits(retries=2, retry_delay_seconds=0.01)
    )

    assert run.server.failures == []
    assert run.record.status == "ok", run.record.error
    r1, r2 = run.round(1), run.round(2)
    lost = r1["transient"]["error"]
    assert lost.startswith("API Error: ") and "ECONNRESET" in lost, lost
    assert transient_cause(lost) is not None, lost
    assert r1["transient"]["retried"] is True
    # the retry continues the session round 1 named, although its first call never got an
    # answer: Claude Code wrote the transcript (the prompt, the API error) before it failed
    assert r2["prompt"] == "retry" and r2["session"] == r1["session"]
    assert [resumed_session(s) for s in run.starts] == [None, r1["session"]]
    claude_world.assert_cleaned(run)


@pytest.mark.req("Any other error ends the run at once")
def test_a_sandbox_the_settings_require_and_cannot_have_ends_the_run_at_once(
    claude_world: ClaudeWorld, claude_program: Path
) -> None:
    # Claude Code finds no bwrap and no socat on this PATH: its sandbox is unavailable, and the
    # generated settings require it (sandbox.failIfUnavailable), so it refuses to run at all.
    write_wrapper(
        Path(claude_world.environ["CONCORDE_CLAUDE"]),
        claude_program,
        claude_world.server.url,
        extra_env={"PATH": "/nonexistent"},
    )
    run = claude_world.run(
        repeat=Reply.structured(ok_result()), limits=limits(retries=3, retry_delay_seconds=0.01)
    )
    assert run.code == "claude_failed", run.record.error
    assert run.record.error is not None
    assert run.record.error.unhandled.reason.value == "environment"
    assert "Sandbox required but unavailable" in run.record.error.detail
    # not a model-service error: no retry round, no transient error recorded, no model call
    assert len(run.data["rounds"]) == 1 and "transient" not in run.round(1)
    assert len(run.starts) == 1 and run.server.requests == []
    assert run.round(1)["claude"]["subtype"] == "error_during_execution"
    claude_world.assert_cleaned(run)


@pytest.mark.req("Any other error ends the run at once")
def test_a_bad_request_is_not_retried(claude_world: ClaudeWorld) -> None:
    # Every call answers 400: Claude Code 2.1.332 sends a refused request again a few times
    # itself, each time without one more optional feature (its own 400 recoveries: up to 6
    # calls), then ends with the same text 2.1.197 ended with after one call.
    bad = Reply.error(400, "invalid_request_error", "fake bad request")
    run = claude_world.run(repeat=bad, limits=limits(retries=3, retry_delay_seconds=0.01))
    assert run.code == "claude_failed", run.record.error
    assert run.record.error is not None
    assert run.record.error.unhandled.reason.value == "environment"
    assert "API Error: 400 fake bad request" in run.record.error.causes[0].detail
    assert len(run.data["rounds"]) == 1 and "transient" not in run.round(1)
    assert len(run.starts) == 1 and run.server.requests
    claude_world.assert_cleaned(run)


# --- (i) limits ----------------------------------------------------------------------------------


@pytest.mark.req("Any other error ends the run at once")
@pytest.mark.req("A failed run explains itself")
def test_max_turns_is_worker_limit_reached(claude_world: ClaudeWorld) -> None:
    run = claude_world.run(
        repeat=Reply.tool("Glob", {"pattern": "*.md"}), limits=limits(max_turns=1)
    )
    assert run.code == "worker_limit_reached", run.record.error
    assert run.record.error is not None
    assert "error_max_turns" in run.record.error.detail
    cause = run.record.error.causes[0]
    assert cause.code == "claude_limit_reached" and cause.unhandled.reason.value == "exhausted"
    assert "Reached maximum number of turns (1)" in cause.detail
    r1 = run.round(1)
    assert r1["claude"]["subtype"] == "error_max_turns" and r1["exit"] == 1
    assert len(run.server.requests) == 1
    claude_world.assert_cleaned(run)


def test_budget_is_worker_limit_reached(claude_world: ClaudeWorld) -> None:
    # 50,000 input tokens a call cost far more than the smallest budget the host accepts.
    run = claude_world.run(
        repeat=Reply.tool("Glob", {"pattern": "*.md"}, input_tokens=50_000),
        limits=limits(max_budget_usd=0.01),
    )
    assert run.code == "worker_limit_reached", run.record.error
    assert run.record.error is not None
    assert "error_max_budget_usd" in run.record.error.detail
    assert run.record.error.causes[0].code == "claude_limit_reached"
    assert run.round(1)["claude"]["subtype"] == "error_max_budget_usd"
    assert run.round(1)["usage"]["cost_usd"] > 0.01
    claude_world.assert_cleaned(run)


# --- (j) a text-only answer ------------------------------------------------------------------


@pytest.mark.req("A failed run explains itself")
def test_text_only_answer_is_worker_result_invalid(claude_world: ClaudeWorld) -> None:
    run = claude_world.run(repeat=Reply.text("I will not call any tool."))
    assert run.code == "worker_result_invalid", run.record.error
    assert run.record.error is not None
    assert "I will not call any tool." in run.record.error.detail
    r1 = run.round(1)
    assert r1["claude"]["subtype"] == "success" and r1["claude"]["is_error"] is False
    assert r1["exit"] == 0
    assert run.record.worker_result is None
    # Claude Code asked once more for the StructuredOutput call, then gave up.
    assert len(run.server.requests) == 2
    assert "[structured-output-enforce]" in user_texts(run.server.requests[1])[-1]
    claude_world.assert_cleaned(run)


# --- (k) proposed deletions --------------------------------------------------------------------


@pytest.mark.req("Only the host deletes")
@pytest.mark.req("Proposed deletions follow every clean last round")
@pytest.mark.req("A repeated deletion is performed once")
@pytest.mark.req("An absent target is recorded, not refused")
def test_proposed_deletions_are_performed(claude_world: ClaudeWorld) -> None:
    app = claude_world.worktree / "src" / "app"
    run = claude_world.run(
        Reply.structured(
            ok_result("src/app/main.py", str(app / "main.py"), "src/app/util.py", "src/app/gone.py")
        )
    )
    assert run.record.status == "ok", run.record.error
    assert run.record.deleted == ("src/app/main.py",)
    assert run.record.deletions_refused and "src/app/util.py" in run.record.deletions_refused[0]
    assert run.record.deletions_absent and "src/app/gone.py" in run.record.deletions_absent[0]
    assert not (app / "main.py").exists()
    assert (app / "util.py").exists()
    claude_world.assert_cleaned(run)


# --- the end of a run cut short: timeout, killed agent, interruption --------------------------


@pytest.mark.req("No worker process outlives its round")
@pytest.mark.req("Nothing but the trace outlives a worker")
@pytest.mark.req("The transcript is kept before the runtime directory goes")
def test_timeout_kills_claude_and_removes_the_credential_copy(claude_world: ClaudeWorld) -> None:
    copies_seen: list[int] = []
    deadline = Deadline()
    pids: list[int | None] = []

    def stall(body: dict[str, Any]) -> Reply:
        copies_seen.append(len(claude_world.credential_copies()))
        pids.append(agent_pid(str(runtime_directory(claude_world)), "claude"))
        # Claude Code is provably inside its model call: its round's timeout passes now, while
        # the answer is held back until the server stops (however long start-up took).
        deadline.expire()
        return Reply.structured(ok_result(), delay=3600)

    run = claude_world.run(stall, limits=limits(timeout_seconds=SLOW), deadline=deadline)

    assert run.code == "worker_timeout", run.record.error
    assert copies_seen == [1]
    (pid,) = pids
    assert pid is not None and not alive(pid)
    session = run.round(1)["session"]  # named by the init line before the round was cut
    assert session
    # The session's transcript is kept even though the round never returned.
    transcript = run.run_dir / "transcript.jsonl"
    assert run.record.transcript == str(transcript) and session in transcript.read_text()
    claude_world.assert_cleaned(run)


@pytest.mark.req("Nothing but the trace outlives a worker")
def test_killed_claude_is_claude_failed_and_cleaned(
    claude_world: ClaudeWorld, claude_program: Path
) -> None:
    def kill_agent(body: dict[str, Any]) -> Reply:
        pid = agent_pid(str(runtime_directory(claude_world)), "claude")
        assert pid is not None
        os.kill(pid, signal.SIGKILL)  # the claude process this test started, by its id
        return Reply.structured(ok_result(), delay=3600)

    run = claude_world.run(kill_agent)
    assert run.code == "claude_failed", run.record.error
    assert run.record.error is not None
    cause = run.record.error.causes[0]
    assert cause.code == "claude_error"
    assert cause.detail.startswith("Claude Code printed no result envelope")
    assert run.round(1)["exit"] == -signal.SIGKILL
    claude = run.round(1)["claude"]
    # no envelope: only what the init event said, the version of the Claude Code that ran
    assert claude.pop("claude_code_version") == program_version(claude_program)
    assert claude == dict.fromkeys(
        (
            "subtype",
            "is_error",
            "num_turns",
            "total_cost_usd",
            "permission_denials",
            "modelUsage",
            "duration_api_ms",
        )
    )
    claude_world.assert_cleaned(run)


@pytest.mark.req("No worker process outlives its round")
@pytest.mark.req("Nothing but the trace outlives a worker")
def test_interrupted_run_kills_claude_and_is_cleaned(claude_world: ClaudeWorld) -> None:
    cancel = Cancellation()
    pids: list[int | None] = []

    def interrupt(body: dict[str, Any]) -> Reply:
        pids.append(agent_pid(str(runtime_directory(claude_world)), "claude"))
        cancel.cancel("the test cancelled the run")
        return Reply.structured(ok_result("src/app/main.py"), delay=3600)

    run = claude_world.run(interrupt, cancel=cancel)
    assert run.code == "interrupted", run.record.error
    assert run.record.deleted == ()
    assert (claude_world.worktree / "src" / "app" / "main.py").exists()
    (pid,) = pids
    assert pid is not None and not alive(pid)
    claude_world.assert_cleaned(run)
