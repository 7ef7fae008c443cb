"""A run whose worker makes one Bash call and returns ok, per backend: what the generic
end-to-end tests (tests/e2e/backends.py `BackendWorld.command`) have the worker do."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from e2e.conftest import ClaudeRun, ClaudeWorld, RecordedRun, ok_result
from e2e.conftest_pi import PiWorld, call, reply, result_call
from servers.anthropic_server import Reply, last_tool_result

from concorde_workers.domain.configuration.request import Limits

__all__ = ["LIMITS", "Command", "claude_command", "pi_command"]

LIMITS = Limits(timeout_seconds=90, max_turns=6, rounds=0, retries=0, retry_delay_seconds=0)

Command = Callable[[str], tuple[RecordedRun, str]]
"""One Bash call running the command, then an ok result: (the run, the call's output)."""


def claude_command(
    world: ClaudeWorld,
    command: str,
    grant: dict[str, Any] | None = None,
    limits: Limits = LIMITS,
    resources: dict[str, int] | None = None,
) -> tuple[ClaudeRun, str]:
    seen: list[str] = []

    def bash(body: dict[str, Any]) -> Reply:
        return Reply.tool("Bash", {"command": command, "description": "one", "timeout": 60000})

    def done(body: dict[str, Any]) -> Reply:
        found = last_tool_result(body)
        assert found is not None, "no tool_result after the Bash call"
        seen.append(found[0])
        return Reply.structured(ok_result(summary="all done"))

    run = world.run(bash, done, limits=limits, grant=grant, resources=resources)
    assert run.server.failures == [], run.explain()
    assert seen, run.explain()  # the round ended before the model was sent the call's output
    return run, seen[0]


def pi_command(
    world: PiWorld,
    command: str,
    grant: dict[str, Any] | None = None,
    limits: Limits = LIMITS,
    resources: dict[str, int] | None = None,
) -> tuple[RecordedRun, str]:
    run = world.run(
        reply(call("bash", "call_one", command=command)),
        reply(result_call("call_r", summary="all done")),
        limits=limits,
        grant=grant,
        resources=resources,
    )
    return run, run.tool_result("call_one")
