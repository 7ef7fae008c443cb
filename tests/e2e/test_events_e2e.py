"""End-to-end: the event stream (issue 21 §5) with the real programs. Each tool call is told
with the decision it got as its answer arrives: allowed, refused by the grant (the permission
extension's or the hook's own denial), refused by the sandbox (Bash kept off the network);
every event validates against the stream's schema."""

from __future__ import annotations

import jsonschema
import pytest
from e2e.conftest import ClaudeWorld, ok_result
from e2e.conftest_codex import CodexWorld, codex_world, exec_call, result_turn
from e2e.conftest_pi import PiWorld, call, pi_world, reply, result_call
from e2e.test_claude_boundary_e2e import bash
from fakes.events import RecordedEvents
from servers.anthropic_server import Reply
from servers.responses_server import Patch, Turn

from concorde_workers.domain.evidence.events import EVENT_SCHEMA

pytestmark = pytest.mark.e2e
__all__ = ["codex_world", "pi_world"]

VALIDATOR = jsonschema.Draft202012Validator(EVENT_SCHEMA)


def calls_of(events: RecordedEvents) -> list[tuple[str, str, str]]:
    for item in events.events:
        assert not [e.message for e in VALIDATOR.iter_errors(item)], item
    return [
        (e["tool"], e["decision"], e["reason"]) for e in events.events if e["event"] == "tool_call"
    ]


def test_pi_s_calls_are_told_with_their_decisions(pi_world: PiWorld) -> None:
    w, events = pi_world, RecordedEvents()
    run = w.run(
        reply(call("write", "c1", path=str(w.worktree / "src/app/new.py"), content="x\n")),
        reply(call("write", "c2", path=str(w.worktree / "src/app/util.py"), content="y")),
        reply(call("bash", "c3", command="curl -sS -m 3 http://127.0.0.1:9/; echo rc=$?")),
        reply(result_call("c4")),
        events=events,
    )
    assert run.record.status == "ok", run.explain()
    told = calls_of(events)
    assert told[:3] == [
        ("write", "allowed", ""),
        ("write", "refused by the grant", "src/app/util.py is read-only for this task"),
        ("bash", "refused by the sandbox", told[2][2]),
    ]
    assert "Couldn't connect" in told[2][2] or "Connection refused" in told[2][2], told
    assert told[3][:2] == ("concorde_result", "allowed")
    kinds = events.kinds()
    assert kinds.index("round_started") < kinds.index("tool_call") < kinds.index("audit")


def test_claude_code_s_calls_are_told_with_their_decisions(claude_world: ClaudeWorld) -> None:
    events = RecordedEvents()
    util = claude_world.worktree / "src/app/util.py"
    run = claude_world.run(
        Reply.tool("Write", {"file_path": str(util), "content": "y\n"}),
        Reply.tool(*bash("curl -sS -m 3 http://127.0.0.1:9/; echo rc=$?")),
        Reply.structured(ok_result(summary="done")),
        events=events,
    )
    assert run.record.status == "ok", run.data["error"]
    told = calls_of(events)
    assert told[0] == (
        "Write",
        "refused by the grant",
        "File is in a directory that is denied by your permission settings.",
    )
    assert told[1][:2] == ("Bash", "refused by the sandbox"), told
    assert events.kinds()[-1] == "run_ended"


def test_codex_s_calls_are_told_with_their_decisions(codex_world: CodexWorld) -> None:
    """Codex's `--json` output does not carry every call (0.171 leaves out quick commands'
    items): its calls are told from its rollout once the round's program ended, each once, with
    the decision it got: apply_patch allowed, apply_patch refused by the read-only namespace
    (codex's own "Failed to write file"), exec_command kept off the read-only file and the
    network by the sandboxes (issue 33 §5, the events)."""
    w, events = codex_world, RecordedEvents()
    util = w.worktree / "src/app/util.py"
    add = "*** Begin Patch\n*** Add File: src/app/new.py\n+x\n*** End Patch\n"
    ro = "*** Begin Patch\n*** Update File: src/app/util.py\n@@\n-    return 1\n+    return 2\n"
    run = w.run(
        Turn(calls=[Patch(add, "c1")]),
        Turn(calls=[Patch(ro + "*** End Patch\n", "c2")]),
        exec_call(f"echo y > {util}; echo rc=$?", "c3"),
        exec_call("curl -sS -m 3 http://127.0.0.1:9/; echo rc=$?", "c4"),
        result_turn(),
        events=events,
    )
    assert run.record.status == "ok", run.explain()
    told = calls_of(events)
    assert [(tool, decision) for tool, decision, _ in told] == [
        ("apply_patch", "allowed"),
        ("apply_patch", "failed"),
        ("exec_command", "refused by the sandbox"),
        ("exec_command", "refused by the sandbox"),
    ], told
    assert f"Failed to write file {util}" in told[1][2], told
    assert told[2][2].endswith(f"{util}: Read-only file system"), told
    assert "Couldn't connect" in told[3][2] or "Connection refused" in told[3][2], told
    kinds = events.kinds()
    assert kinds.index("round_started") < kinds.index("tool_call") < kinds.index("audit")
    assert kinds.count("tool_call") == 4  # each call told once
