"""One end-to-end test, every backend: the `backend_world` fixture is parametrized over the
backends (BACKENDS), so a test written once against `BackendWorld` runs with the real Claude Code
and the real pi (and each further backend once its world is listed here), each driven by its own
scripted model server on 127.0.0.1.

A `BackendWorld` wraps one backend's own world (tests/e2e/conftest.py's `ClaudeWorld`,
tests/e2e/conftest_pi.py's `PiWorld`) and says in the backend's terms what the generic tests have
the worker do: one shell command then an ok result (`command`), or only ok results (`answer`).
Everything else - the repository, the user's files, the host's environment, the production
wiring - stays the backend world's: nothing here changes what the host generates.

A test module imports the fixture for pytest (`__all__ = ["backend_world"]`), as the modules
that use `pi_world` do.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pytest
from e2e.conftest import ClaudeRun, ClaudeWorld, RecordedRun, ok_result
from e2e.conftest_codex import CodexWorld, build_codex_world, exec_call, result_text, result_turn
from e2e.conftest_pi import (
    ObservedPiBackend,
    PiWorld,
    build_world,
    call,
    reply,
    require_programs,
    result_call,
)
from e2e.one_command import LIMITS, claude_command, pi_command
from servers.anthropic_server import Reply, last_tool_result
from servers.openai_server import Fail, Hang
from servers.responses_server import Call, Turn
from servers.responses_server import Fail as CodexFail
from servers.responses_server import Hang as CodexHang
from timing import SLOW, Deadline
from worlds.repository import remove_temp_root

from concorde_workers.adapters.machine.filesystem import LocalFileSystem
from concorde_workers.adapters.sandboxes.space import SpacedFileSystem
from concorde_workers.application.runtime.validation import RoundValidation
from concorde_workers.domain.configuration.request import Limits, RunRequest

__all__ = [
    "BACKENDS",
    "BackendWorld",
    "Move",
    "Result",
    "Shell",
    "Stall",
    "Transient",
    "backend_world",
]

BACKENDS = ("claude", "pi", "codex")
"""The backends every generic end-to-end test runs on (the fixture's parameters, its ids)."""

PI_BUSY = "Concurrency limit exceeded for this gateway, please retry later"
"""A gateway's transient text pi passes on (tests/e2e/test_pi_e2e.py's retry)."""

SLOW_MS = int(SLOW * 1000)
"""Claude Code's Bash timeout of a `shell_run` call (its default is 2 minutes)."""


@dataclass(frozen=True)
class Shell:
    """A model turn: one shell call running `command`."""

    command: str


@dataclass(frozen=True)
class Result:
    """A model turn: the worker result `result`."""

    result: dict[str, Any]


@dataclass(frozen=True)
class Transient:
    """A model-service error that is transient by seed 000 and that the agent program gives up
    on (its own retries, where it has them, used up): the host's retry round follows."""


@dataclass(frozen=True)
class Stall:
    """A model turn held back until the server stops, once `deadline` was made to pass: the
    agent program is provably inside its model call when the round's timeout passes."""

    deadline: Deadline


Move = Shell | Result | Transient | Stall
"""One step of a backend-neutral script (`BackendWorld.play`)."""


@dataclass
class BackendWorld:
    """One backend's world, seen through what the generic tests need of it."""

    backend: str
    world: ClaudeWorld | PiWorld | CodexWorld
    scratch: Path
    """A folder of the test outside everything the worker may read or write (markers, planted
    Git directories)."""
    claude_program: Path | None = None
    """The Claude Code under test (tests/e2e/conftest.py `claude_program`), for a test that
    writes its own wrapper; None on the other backends."""

    @property
    def claude(self) -> ClaudeWorld:
        """The Claude Code world (tests/e2e/conftest.py is imported by pytest under a name of
        its own, so an isinstance check of its classes is never true here: the backend's name
        says which world this is)."""
        assert self.backend == "claude", self.backend
        return cast(ClaudeWorld, self.world)

    @property
    def parent(self) -> Path:
        """The trace parent every run of this world is recorded under (its request's)."""
        return self.world.root / "trace" / "op-1"

    @property
    def model_port(self) -> int:
        """The port of the backend's scripted model server on 127.0.0.1."""
        return self.world.server.port

    def served_paths(self) -> list[str]:
        """The path of every request the scripted model server received, in order."""
        if isinstance(self.world, PiWorld | CodexWorld):
            return [str(r["path"]) for r in self.world.server.requests]
        return [str(r["path"]) for r in self.claude.server.log]

    @property
    def worktree(self) -> Path:
        return self.world.worktree

    @property
    def primary(self) -> Path:
        return self.world.primary

    @property
    def git_env(self) -> dict[str, str]:
        return self.world.git_env

    @property
    def environ(self) -> dict[str, str]:
        return self.world.environ

    @property
    def temp_root(self) -> Path:
        return self.world.temp_root

    def command(
        self,
        command: str,
        grant: dict[str, Any] | None = None,
        limits: Limits | None = None,
        resources: dict[str, int] | None = None,
    ) -> tuple[RecordedRun, str]:
        """A run whose worker makes one shell call running `command`, then returns an ok result
        (summary "all done"): the run and the call's output as the model was sent it
        (tests/e2e/one_command.py; `limits` its LIMITS unless given; `resources` the request's)."""
        limits = limits or LIMITS
        if isinstance(self.world, CodexWorld):
            run = self.world.run(
                exec_call(command, "call_one"),
                result_turn(summary="all done"),
                limits=limits,
                grant=grant,
                resources=resources,
            )
            return run, run.tool_result("call_one")
        if isinstance(self.world, PiWorld):
            return pi_command(self.world, command, grant, limits, resources)
        return claude_command(self.world, command, grant, limits, resources)

    def push(self, *moves: Move) -> None:
        """Add a backend-neutral script to the server's, each move said as this backend's
        server says it (for a run the test starts itself, as `checked_run` does)."""
        if isinstance(self.world, CodexWorld):
            self.world.server.add(*(codex_step(n, move) for n, move in enumerate(moves)))
            return
        if isinstance(self.world, PiWorld):
            steps: list[Any] = []
            for n, move in enumerate(moves):
                if isinstance(move, Shell):
                    steps.append(reply(call("bash", f"call_{n}", command=move.command)))
                elif isinstance(move, Result):
                    steps.append(reply(call("concorde_result", f"call_{n}", **move.result)))
                elif isinstance(move, Stall):
                    steps.append(_stalled(move.deadline, Hang(3600)))
                else:  # the SDK's own 2 retries, then pi gives up (notes/pi.md §8)
                    steps.append(Fail(529, PI_BUSY, times=3))
            self.world.server.add(*steps)
            return
        replies: list[Any] = []
        for move in moves:
            if isinstance(move, Shell):
                replies.append(Reply.tool("Bash", {"command": move.command, "description": "step"}))
            elif isinstance(move, Result):
                replies.append(Reply.structured(move.result))
            elif isinstance(move, Stall):
                replies.append(_stalled(move.deadline, Reply.structured(ok_result(), delay=3600)))
            else:  # the wrapper turns Claude Code's own retries off
                replies.append(Reply.overloaded())
        self.claude.server.push(*replies)

    def play(
        self,
        *moves: Move,
        limits: Limits,
        validation: RoundValidation | None = None,
        deadline: Deadline | None = None,
    ) -> RecordedRun:
        """One run of a backend-neutral script (`push`); the requests it made are then
        `sent_since(first)` with `first = request_count()` taken before."""
        self.push(*moves)
        if isinstance(self.world, PiWorld | CodexWorld):
            return self.world.run(limits=limits, validation=validation, deadline=deadline)
        run = self.claude.run(limits=limits, validation=validation, deadline=deadline)
        assert run.server.failures == [], run.explain()
        return run

    @property
    def credential(self) -> Path:
        """The backend's own credential file where the user keeps it (outside the home)."""
        if isinstance(self.world, CodexWorld):
            return self.world.credential
        if isinstance(self.world, PiWorld):
            return self.world.pi_dir / "auth.json"
        return self.claude.user_credentials

    def commit(self, *paths: str) -> None:
        """Commit `paths` of the task worktree on its branch (the user's own Git)."""
        for args in (["add", "--", *paths], ["commit", "-q", "-m", "test files"]):
            subprocess.run(
                ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
                cwd=self.worktree,
                env=self.git_env,
                check=True,
                capture_output=True,
            )

    def request_count(self) -> int:
        """How many requests the scripted model server has received."""
        if isinstance(self.world, PiWorld | CodexWorld):
            return len(self.world.server.requests)
        return len(self.claude.server.requests)

    def sent_since(self, first: int) -> list[str]:
        """The body of every request from the `first`-th on (from 0), as JSON text."""
        if isinstance(self.world, PiWorld | CodexWorld):
            return [json.dumps(r["body"]) for r in self.world.server.requests[first:]]
        return [json.dumps(body) for body in self.claude.server.requests[first:]]

    def commands(
        self,
        steps: Sequence[str | Callable[[], str]],
        resources: dict[str, int] | None = None,
    ) -> tuple[RecordedRun, list[str]]:
        """A run whose worker makes one shell call per step, in order, then gives an ok result;
        a step may be a function, called when its call is made (the runtime directory exists
        then). The run and each call's output as the model was sent it."""
        limits = Limits(
            timeout_seconds=SLOW,
            max_turns=len(steps) + 4,
            rounds=0,
            retries=0,
            retry_delay_seconds=0,
        )
        if isinstance(self.world, CodexWorld):
            codex_ids = [f"call_{n}" for n in range(len(steps))]

            def codex_call(step: str | Callable[[], str], call_id: str) -> Callable[[Any], Any]:
                return lambda body: exec_call(step() if callable(step) else step, call_id)

            codex_run = self.world.run(
                *(codex_call(s, c) for s, c in zip(steps, codex_ids, strict=True)),
                result_turn(summary="ran"),
                limits=limits,
                resources=resources,
            )
            return codex_run, [codex_run.tool_result(c) for c in codex_ids]
        if isinstance(self.world, PiWorld):
            ids = [f"call_{n}" for n in range(len(steps))]

            def pi_step(step: str | Callable[[], str], call_id: str) -> Callable[[Any], Any]:
                return lambda body: reply(
                    call("bash", call_id, command=step() if callable(step) else step)
                )

            pi_run = self.world.run(
                *(pi_step(step, call_id) for step, call_id in zip(steps, ids, strict=True)),
                reply(result_call("call_r")),
                limits=limits,
                resources=resources,
            )
            return pi_run, [pi_run.tool_result(call_id) for call_id in ids]
        outputs: list[str] = []

        def claude_step(n: int) -> Callable[[dict[str, Any]], Reply]:
            def answer(body: dict[str, Any]) -> Reply:
                if n:
                    found = last_tool_result(body)
                    assert found is not None, f"no tool_result after call {n}"
                    outputs.append(found[0])
                if n == len(steps):
                    return Reply.structured(ok_result(summary="ran"))
                step = steps[n]
                command = step() if callable(step) else step
                return Reply.tool("Bash", {"command": command, "description": "probe"})

            return answer

        claude_run = self.claude.run(
            *(claude_step(n) for n in range(len(steps) + 1)), limits=limits, resources=resources
        )
        assert claude_run.server.failures == [], claude_run.explain()
        assert len(outputs) == len(steps), claude_run.explain()
        return claude_run, outputs

    def shell_run(self, command: str, resources: dict[str, int] | None = None) -> RecordedRun:
        """A run whose worker makes one shell call running `command` (with the slow bound of
        tests/timing.py as the call's own timeout), then gives an ok result, which a round ended
        at a limit never asks for: the run, whatever its output was."""
        if isinstance(self.world, CodexWorld):
            return self.world.run(
                exec_call(command, "call_shell"), result_turn(summary="ran"), resources=resources
            )
        if isinstance(self.world, PiWorld):
            return self.world.run(
                reply(call("bash", "call_shell", command=command)),
                reply(result_call("call_r")),
                resources=resources,
            )
        limits = Limits(
            timeout_seconds=SLOW, max_turns=4, rounds=0, retries=0, retry_delay_seconds=0
        )
        return self.world.run(
            Reply.tool("Bash", {"command": command, "description": "probe", "timeout": SLOW_MS}),
            Reply.structured(ok_result(summary="ran")),
            limits=limits,
            resources=resources,
        )

    def explain(self, run: RecordedRun) -> str:
        """What to print when an assertion on one of this world's runs fails: the run's own
        account, with the resources each round kept."""
        used = [p.read_text() for p in sorted(run.run_dir.glob("rounds/*/resources.json"))]
        return run.explain()[:8000] + "\nresources: " + json.dumps(used)[:2000]

    def hang(self, command: str) -> None:
        """The model's next answer: one shell call running `command`, with a ten-minute timeout
        of its own (a call that outlasts the test; no answer after it is scripted)."""
        if isinstance(self.world, CodexWorld):
            held = Call("exec_command", {"cmd": command, "yield_time_ms": 600000}, "call_hang")
            self.world.server.add(Turn(calls=[held]))
        elif isinstance(self.world, PiWorld):
            self.world.server.add(reply(call("bash", "call_hang", command=command, timeout=600)))
        else:
            self.world.server.push(
                Reply.tool("Bash", {"command": command, "description": "hang", "timeout": 600000})
            )

    def answer(self, count: int) -> None:
        """The model's next `count` answers: an ok worker result each, at once."""
        for _ in range(count):
            self.answer_result(ok_result())

    def answer_result(self, result: dict[str, Any]) -> None:
        """The model's next answer: the worker result `result`, at once."""
        if isinstance(self.world, CodexWorld):
            self.world.server.add(Turn(text=result_text(result)))
        elif isinstance(self.world, PiWorld):
            self.world.server.add(reply(call("concorde_result", "call_result", **result)))
        else:
            self.world.server.push(Reply.structured(result))

    def transient(self) -> None:
        """The model's next answer: a transient model-service error the agent program gives up
        on (pi after its SDK's own two retries, as tests/e2e/test_pi_e2e.py's retry: notes §8;
        Claude Code, whose retries the wrapper turns off; codex, whose retries its generated
        configuration turns off: a 500, told as "high demand")."""
        if isinstance(self.world, CodexWorld):
            self.world.server.add(CODEX_TRANSIENT)
        elif isinstance(self.world, PiWorld):
            self.world.server.add(Fail(529, PI_BUSY, times=3))
        else:
            self.world.server.push(Reply.overloaded())

    def request(self, limits: Limits, grant: dict[str, Any] | None = None) -> RunRequest:
        return self.world.request(limits, grant=grant)

    def observed_backend(self) -> ObservedPiBackend | None:
        """The backend a test wires itself (tests/e2e/test_check_attack_e2e.py `checked_run`):
        pi's observed production backend, None for the container's own."""
        if isinstance(self.world, PiWorld):
            return ObservedPiBackend(fs=SpacedFileSystem(LocalFileSystem()), environ=self.environ)
        return None

    def assert_cleaned(self, run: RecordedRun) -> None:
        """Nothing of the run's runtime directory is left (for Claude Code also: no credential
        copy, the user's own credentials untouched)."""
        assert not run.runtime_dir.exists(), list(run.runtime_dir.rglob("*"))
        if self.backend == "claude":
            assert type(run).__name__ == "ClaudeRun", run
            self.claude.assert_cleaned(cast(ClaudeRun, run))


def _stalled(deadline: Deadline, held: Any) -> Callable[[dict[str, Any]], Any]:
    """A scripted step that makes `deadline` pass, then answers `held` (held back)."""

    def step(body: dict[str, Any]) -> Any:
        deadline.expire()
        return held

    return step


CODEX_TRANSIENT = CodexFail(500, "scripted overload")
"""An HTTP 500: codex says "We’re currently experiencing high demand…" (docs/decisions.md "Codex facts verified")."""


def codex_step(n: int, move: Move) -> Any:
    """One move as the scripted Responses API server says it to codex."""
    if isinstance(move, Shell):
        return exec_call(move.command, f"call_{n}")
    if isinstance(move, Result):
        return Turn(text=result_text(move.result))
    if isinstance(move, Stall):
        return _stalled(move.deadline, CodexHang(3600))
    return CODEX_TRANSIENT


Builder = Callable[[pytest.FixtureRequest, Path], Iterator[BackendWorld]]


def _claude(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BackendWorld]:
    world = request.getfixturevalue("claude_world")
    yield BackendWorld("claude", world, tmp_path, request.getfixturevalue("claude_program"))


def _pi(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BackendWorld]:
    require_programs()
    world = build_world(tmp_path)
    try:
        yield BackendWorld("pi", world, world.root)
    finally:
        world.server.stop()
        remove_temp_root(world.temp_root)


def _codex(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BackendWorld]:
    world = build_codex_world(tmp_path)
    try:
        yield BackendWorld("codex", world, world.root)
    finally:
        world.server.stop()
        remove_temp_root(world.temp_root)


WORLDS: dict[str, Builder] = {"claude": _claude, "pi": _pi, "codex": _codex}


@pytest.fixture(params=BACKENDS)
def backend_world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BackendWorld]:
    """The world of the backend this test instance runs on (the parameter, its id)."""
    yield from WORLDS[request.param](request, tmp_path)
