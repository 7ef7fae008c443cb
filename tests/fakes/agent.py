"""`ScriptedBackend`: an AgentBackend whose rounds are scripted as data, for the run host's tests.

It stands in for pi or Claude Code (its `name`): the run record's trace key, the environment
(the domain's environment function of that backend), the process link and the `agent` report
of its `TestStreamReader` all take that backend's shape. Its rounds are `Round` values, turned
into the FakeProcess scripts of a FakeProcessRunner by `processes()` (or `runner()`):

    backend = ScriptedBackend("pi", fs, rounds=[
        Round.transient("API Error: 529 Overloaded", session="s-1"),
        Round.ok({"status": "ok", ...}, session="s-1", tools=[("Write", f"{wt}/src/a.py")]),
    ])
    runner = backend.runner()

Everything a backend generates is real: the control files from the one frozen policy (a settings
file whose text holds the policy's deny rules, so the settings digest changes with the grant),
the exact environment, the transcript path `<rt>/config/sessions/<session>.jsonl`.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from concorde_workers.adapters.pi import layout as pi_layout
from concorde_workers.container import PROFILES
from concorde_workers.domain.configuration.profile import entries_of
from concorde_workers.domain.configuration.program_versions import ProgramLocation
from concorde_workers.domain.configuration.request import Backend
from concorde_workers.domain.ground.errors import Refusal
from concorde_workers.domain.ground.text import digest_text
from concorde_workers.domain.isolation.launch import LaunchCommand
from concorde_workers.ports.agents.agent import (
    BackendContext,
    BackendProfile,
    CompiledCache,
    Generated,
    RoundKind,
    StreamReader,
)
from concorde_workers.ports.machine.clock import Clock
from concorde_workers.ports.machine.filesystem import FileSystem
from fakes.agent_stream import (
    TestStreamReader,
    error_line,
    limit_line,
    result_line,
    session_line,
    text_line,
    tool_line,
    usage_line,
)
from fakes.process import FakeProcess, FakeProcessRunner, FakeStart

RUNTIME_ENTRIES = entries_of(PROFILES)

__all__ = [
    "FAKE_PROGRAM",
    "Round",
    "ScriptedBackend",
    "TestBackendBase",
    "make_context",
    "to_fake_process",
    "transcript_path",
]

FAKE_PROGRAM = "fake-agent"

Credentials = Sequence[tuple[str, str]] | Callable[[BackendContext], Sequence[tuple[str, str]]]


# --- rounds as data --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Round:
    """One scripted round: the stdout lines, the exit status (negative: killed by that signal),
    the stderr bytes, whether it hangs until the runner's timeout or a kill_group ends it,
    whether it cannot start (the OS error text), and `effects`, the FakeProcess's `on_start`:
    called with the FakeStart (argv, env, cwd, stdin_text, timeout) when the round starts, to do
    what the worker does to the worktree or the fake filesystem. `transcript` names a session
    whose transcript `<cwd>/../config/sessions/<session>.jsonl` (cwd is `<rt>/work`) the round
    appends a line to in the backend's filesystem when it starts (ScriptedBackend.processes)."""

    lines: Sequence[str] = ()
    exit: int = 0
    stderr: bytes = b""
    hang: bool = False
    fail_to_start: str | None = None
    effects: Callable[[FakeStart], None] | None = None
    transcript: str | None = None

    # -- common rounds -------------------------------------------------------------------------

    @classmethod
    def ok(
        cls,
        result: Any,
        *,
        session: str | None = "s-1",
        tools: Iterable[tuple[str, str]] = (),
        usage: Mapping[str, float] | None = None,
        transcript: bool = True,
        **more: Any,
    ) -> Round:
        """A round that ends with exit 0 and the worker result (verbatim, valid or not)."""
        return cls(
            lines=(*_opening(session, tools), *_usage(usage), result_line(result)),
            transcript=session if transcript else None,
            **more,
        )

    @classmethod
    def no_result(
        cls,
        final_text: str = "I am done.",
        *,
        session: str | None = "s-1",
        tools: Iterable[tuple[str, str]] = (),
        transcript: bool = True,
        **more: Any,
    ) -> Round:
        """Exit 0 without a result line: the host says worker_result_invalid."""
        return cls(
            lines=(*_opening(session, tools), text_line(final_text)),
            transcript=session if transcript else None,
            **more,
        )

    @classmethod
    def transient(
        cls,
        message: str = "API Error: 529 Overloaded",
        *,
        session: str | None = "s-1",
        tools: Iterable[tuple[str, str]] = (),
        exit: int = 1,
        transcript: bool = True,
        **more: Any,
    ) -> Round:
        """A round a transient model-service error ended (no result)."""
        return cls(
            lines=(*_opening(session, tools), error_line(message)),
            exit=exit,
            transcript=session if (transcript and session) else None,
            **more,
        )

    @classmethod
    def failed(
        cls,
        message: str | None = None,
        *,
        exit: int = 1,
        session: str | None = "s-1",
        stderr: bytes = b"",
        **more: Any,
    ) -> Round:
        """A process failure: a non-transient error line (when given) and a non-zero exit."""
        lines = (*_opening(session, ()), *((error_line(message),) if message else ()))
        return cls(lines=lines, exit=exit, stderr=stderr, **more)

    @classmethod
    def limit(
        cls,
        limit: str = "max_turns",
        value: float = 5,
        maximum: float | None = None,
        *,
        session: str | None = "s-1",
        exit: int = 1,
        **more: Any,
    ) -> Round:
        """The program stopped at a limit."""
        return cls(
            lines=(*_opening(session, ()), limit_line(limit, value, maximum)), exit=exit, **more
        )

    @classmethod
    def timeout(
        cls, *, session: str | None = "s-1", tools: Iterable[tuple[str, str]] = (), **more: Any
    ) -> Round:
        """A round that hangs until the runner's timeout kills its group."""
        return cls(lines=_opening(session, tools), hang=True, **more)

    @classmethod
    def not_started(cls, os_error_text: str = "No such file or directory") -> Round:
        return cls(fail_to_start=os_error_text)


def _opening(session: str | None, tools: Iterable[tuple[str, str]]) -> tuple[str, ...]:
    return (
        *((session_line(session),) if session else ()),
        *(tool_line(tool, target) for tool, target in tools),
    )


def _usage(usage: Mapping[str, float] | None) -> tuple[str, ...]:
    return (usage_line(**usage),) if usage else ()


def to_fake_process(
    round_: Round, on_start: Callable[[FakeStart], None] | None = None
) -> FakeProcess:
    """The FakeProcess that plays `round_` (`on_start` replaces the round's own effects)."""
    return FakeProcess(
        stdout=list(round_.lines),
        stderr=round_.stderr,
        exit_status=round_.exit,
        hang=round_.hang,
        fail_to_start=round_.fail_to_start,
        on_start=on_start if on_start is not None else round_.effects,
    )


# --- a context to call a backend with, without the preparation -----------------------------------


def make_context(
    *,
    backend: str = "pi",
    runtime_dir: str = "/tmp/concorde-abc123-k9",
    worktree: str = "/home/u/proj/.claude/worktrees/t1",
    primary: str = "/home/u/proj",
    user_home: str = "/home/u",
    entries: Mapping[str, str] | None = None,
    task_type: str = "implement",
    environ: Mapping[str, str] | None = None,
    run_id: str = "w-20260101T000000-abc123",
    brief: str = "the brief",
    project_interpreter: str | None = None,
) -> BackendContext:
    """A BackendContext over a real policy built from a grant of `entries` (path -> level) on an
    empty tree (no deny rules for files the walks would find)."""
    from concorde_workers.contracts import worker_result_schema
    from concorde_workers.domain.boundary.grant import Grant, parse_grant
    from concorde_workers.domain.boundary.policy import build_policy
    from concorde_workers.domain.configuration.request import RunRequest
    from concorde_workers.domain.isolation.launch import schema_text

    grant_input = {
        "task_type": task_type,
        "context_identity": "sha256:ctx",
        "entries": [{"path": p, "level": lv} for p, lv in (entries or {"src/": "rw"}).items()],
    }
    grant = parse_grant(grant_input, task_type)
    if not isinstance(grant, Grant):
        raise ValueError(f"the test grant is refused: {grant}")
    policy = build_policy(
        grant=grant,
        worktree=worktree,
        primary=primary,
        user_home=user_home,
        runtime_dir=runtime_dir,
        runtime_paths=(),
        git=(),
        list_dir=lambda _path: [],
        runtime_entries=RUNTIME_ENTRIES,
    )
    request = RunRequest.model_validate(
        {
            "backend": backend,
            "worktree": worktree,
            "task_type": task_type,
            "grant": grant_input,
            "project_interpreter": project_interpreter,
        }
    )
    return BackendContext(
        request=request,
        run_id=run_id,
        policy=policy,
        brief=brief,
        result_schema=schema_text(worker_result_schema(None)),
        environ=dict(
            environ if environ is not None else {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
        ),
        interpreter="/usr/bin/python3",
        as_root=False,
    )


# --- the backends ----------------------------------------------------------------------------------


@dataclass
class TestBackendBase:
    """What ScriptedBackend and ProgramBackend share: everything but the command line."""

    __test__ = False  # not a pytest test class

    name: Backend = "pi"
    fs: FileSystem | None = None
    credentials: Credentials = ()
    scratch: Sequence[str] = ()
    compiled: Callable[[BackendContext], CompiledCache] | None = None
    refusal: Refusal | None = None
    program: str = FAKE_PROGRAM
    program_found: bool = True
    confined: bool = False
    clock: Clock | None = None
    contexts: list[BackendContext] = field(default_factory=list)
    commands: list[tuple[RoundKind, str | None]] = field(default_factory=list)
    readers: list[TestStreamReader] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.name not in PROFILES:
            known = " or ".join(sorted(PROFILES, reverse=True))
            raise ValueError(f"a test backend stands in for {known}, not {self.name!r}")

    @property
    def profile(self) -> BackendProfile:
        """The profile of the backend it stands in for."""
        return PROFILES[self.name]

    @property
    def context(self) -> BackendContext | None:
        """The latest context the backend was given."""
        return self.contexts[-1] if self.contexts else None

    def _seen(self, context: BackendContext) -> None:
        if not self.contexts or self.contexts[-1] is not context:
            self.contexts.append(context)

    # -- AgentBackend --------------------------------------------------------------------------

    def check(self, primary: str) -> Refusal | None:
        return self.refusal

    def programs(self, environ: Mapping[str, str], primary: str) -> Sequence[ProgramLocation]:
        """A test program has no version the policy relies on."""
        return ()

    def generate(self, context: BackendContext) -> Generated:
        self._seen(context)
        rt = context.policy.runtime
        settings_file, settings = self.settings(context)
        return Generated(
            files={settings_file: settings, rt.result_schema: context.result_schema},
            settings_digest=digest_text(settings),
            tools=self.profile.tool_set(context.policy.grant),
            program=self.program,
            program_found=self.program_found,
        )

    def settings(self, context: BackendContext) -> tuple[str, str]:
        """The generated settings or permission extension where the profile stood in for keeps
        it (claude: control/settings.json, pi: control/permission.ts) and its text, holding the
        policy's deny rules and sandbox lists."""
        policy = context.policy
        data = {
            "stands_in_for": self.name,
            "deny": list(policy.deny_rules),
            "sandbox": policy.sandbox.to_json(),
            "tools": list(self.profile.tool_set(policy.grant)),
        }
        text = json.dumps(data, indent=2, ensure_ascii=False)
        path = policy.runtime.at(self.profile.settings_file)
        if path.endswith(".json"):
            return path, text + "\n"
        return path, f"// the test backend's permission extension\nexport const POLICY = {text};\n"

    def round_scratch(self, context: BackendContext) -> Sequence[str]:
        return tuple(self.scratch)

    def compiled_cache(self, context: BackendContext) -> CompiledCache | None:
        return self.compiled(context) if self.compiled is not None else None

    def confinement_needs(self, context: BackendContext) -> Sequence[str] | None:
        """None (unconfined) unless the test asks for the confinement (`confined`)."""
        return (self.program,) if self.confined else None

    def credential_copies(self, context: BackendContext) -> Sequence[tuple[str, str]]:
        self._seen(context)
        given = self.credentials
        return tuple(given(context) if callable(given) else given)

    def command(
        self, context: BackendContext, kind: RoundKind, session: str | None
    ) -> LaunchCommand:
        self._seen(context)
        self.commands.append((kind, session))
        return LaunchCommand(
            argv=self.argv(context, kind, session),
            cwd=context.policy.runtime.work,
            tools=self.profile.tool_set(context.policy.grant),
        )

    def argv(
        self, context: BackendContext, kind: RoundKind, session: str | None
    ) -> tuple[str, ...]:
        return (self.program, kind.value, session or "-")

    def environment(self, context: BackendContext) -> dict[str, str]:
        self._seen(context)
        return self.profile.environment(
            context.environ, context.policy.runtime, context.request.project_interpreter
        )

    def reader(self, context: BackendContext) -> StreamReader:
        self._seen(context)
        reader = TestStreamReader(backend=self.name, clock=self.clock)
        self.readers.append(reader)
        return reader

    def transcript(self, context: BackendContext, session: str | None) -> str | None:
        self._seen(context)
        return transcript_path(pi_layout.sessions(context.policy.runtime), session)


def transcript_path(sessions: str, session: str | None) -> str | None:
    """`<sessions>/<session>.jsonl`; None without a session or for one that is no file name."""
    if not session or "/" in session or session.startswith(".") or "\x00" in session:
        return None
    return posixpath.join(sessions, f"{session}.jsonl")


@dataclass
class ScriptedBackend(TestBackendBase):
    """A test backend whose rounds are `Round` scripts for a FakeProcessRunner.

    `fs` is the (fake) filesystem a Round's `transcript` writes to;
    `credentials` the (user file, copy) pairs credential_copies returns, or a function of the
    context giving them; `refusal` what check answers. `commands`, `contexts` and `readers`
    record what the host asked for."""

    rounds: Sequence[Round] = ()

    def processes(self) -> list[FakeProcess]:
        """One FakeProcess per round, in order."""
        return [to_fake_process(r, self._on_start(r)) for r in self.rounds]

    def runner(self, **options: Any) -> FakeProcessRunner:
        """A FakeProcessRunner scripted with `processes()`."""
        return FakeProcessRunner.scripted(*self.processes(), **options)

    def _on_start(self, round_: Round) -> Callable[[FakeStart], None] | None:
        session = round_.transcript
        if session is None:
            return round_.effects

        def start(started: FakeStart) -> None:
            self._write_transcript(started, session)
            if round_.effects is not None:
                round_.effects(started)

        return start

    def _write_transcript(self, started: FakeStart, session: str) -> None:
        fs = self.fs
        sessions = posixpath.join(posixpath.dirname(started.cwd), "config", "sessions")
        path = transcript_path(sessions, session)
        if fs is None or path is None:
            return
        old = fs.read_text(path) if fs.is_file(path) else ""
        line = json.dumps({"type": "session", "id": session})
        fs.makedirs(posixpath.dirname(path))
        fs.write_atomic(path, old + line + "\n")
