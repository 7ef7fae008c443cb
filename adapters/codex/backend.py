"""The Codex CLI backend (issue 33; docs/decisions.md 72; ../shared/notes/codex.md).

Generates the run's CODEX_HOME with only its config.toml (adapters/codex/config.py, from the
machine's codex.json and the model map's id) and the strict schema sent on the wire; copies no
credential (the run's provider takes its key from the one variable config.toml names: the
user's `~/.codex/auth.json`, a ChatGPT login, is hidden and never read); runs the native program
of the pinned npm package's platform package (Node is not needed) confined, its own sandbox on
inside (`-s workspace-write`, or `read-only` for a tool set without apply_patch), with the
placeholders and the private folder it asks of the confinement (the profile's
`ConfinementAsks`); resumes its thread for repair and retry rounds; reads `--json`
(adapters/codex/stream.py); the transcript is the thread's rollout in CODEX_HOME."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from concorde_workers.adapters.codex import layout
from concorde_workers.adapters.codex.config import codex_config, wire_schema
from concorde_workers.adapters.codex.endpoint import CodexEndpoint
from concorde_workers.adapters.codex.environment import codex_environment
from concorde_workers.adapters.codex.launch import codex_command, sandbox_mode
from concorde_workers.adapters.codex.profile import CODEX
from concorde_workers.adapters.codex.program import NativeProgram
from concorde_workers.adapters.codex.rollout import find_rollout, rollout_text
from concorde_workers.domain.configuration.credentials import copied_files
from concorde_workers.domain.configuration.discovery import Installation
from concorde_workers.domain.configuration.profile import USERNS_SWITCHES, nested_problem
from concorde_workers.domain.configuration.program_versions import ProgramLocation
from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.ground.errors import Reason, Refusal
from concorde_workers.domain.ground.text import digest_text
from concorde_workers.domain.isolation.launch import LaunchCommand
from concorde_workers.ports.agents.agent import (
    BackendContext,
    BackendPorts,
    BackendRegistration,
    CompiledCache,
    Generated,
    RoundKind,
    StreamReader,
)
from concorde_workers.ports.machine.filesystem import BoundedReading, FileSystemError, TreeReading

TYPE_CHECKING = False
if TYPE_CHECKING:  # the stream reader is imported when a round runs: `plan` makes none
    from concorde_workers.adapters.codex.stream import Prices

__all__ = ["REGISTRATION", "CodexBackend"]


class CodexBackend:
    """The `codex` program (or `$CONCORDE_CODEX`), its native executable."""

    profile = CODEX
    name = profile.name

    def __init__(self, fs: TreeReading, installations: Sequence[Installation] = ()) -> None:
        self._fs = fs
        self._program = NativeProgram(fs, installations)
        self._totals: dict[str, dict[str, int]] = {}

    def check(self, primary: str) -> Refusal | None:
        read = {path: _read_switch(self._fs, path) for path, _ in USERNS_SWITCHES}
        problem = nested_problem(self.profile.title, read)
        if problem is None:
            return None
        return Refusal(code=Code.LAUNCH_FAILED, reason=Reason.ENVIRONMENT, message=problem)

    def programs(self, environ: Mapping[str, str], primary: str) -> Sequence[ProgramLocation]:
        """The native codex program, when it is found (its version from its platform package)."""
        return self._program.locations(environ)

    def generate(self, context: BackendContext) -> Generated:
        rt = context.policy.runtime
        tools = self.profile.tool_set(context.policy.grant)
        config = codex_config(
            endpoint=CodexEndpoint.of_settings(context.machine),
            model=context.request.local_model,
            reasoning=context.request.reasoning,
            sandbox=sandbox_mode(tools),
        )
        schema = wire_schema(json.loads(context.result_schema))
        program, found = self._program.of(context.environ)
        return Generated(
            files={
                rt.result_schema: context.result_schema,
                layout.wire_schema(rt): json.dumps(schema, separators=(",", ":")),
                layout.config_toml(rt): config,
            },
            settings_digest=digest_text(config),
            tools=tools,
            program=program,
            program_found=found,
            shown_settings={"config.toml": config},
        )

    def confinement_needs(self, context: BackendContext) -> Sequence[str]:
        """The native program: its whole platform package (the bundled bwrap and rg lie beside
        it) is kept, as the outermost node_modules it lies in."""
        program, found = self._program.of(context.environ)
        return (program,) if found else ()

    def round_scratch(self, context: BackendContext) -> Sequence[str]:
        return ()

    def compiled_cache(self, context: BackendContext) -> CompiledCache | None:
        """Nothing: the native program compiles nothing at a round."""
        return None

    def credential_copies(self, context: BackendContext) -> Sequence[tuple[str, str]]:
        """The profile's copied files, which are none: the key reaches the round by its
        variable; auth.json stays hidden (`CredentialSpec.hidden_files`)."""
        rt = context.policy.runtime
        return tuple(
            (origin, rt.copy_of(name))
            for origin, name in copied_files(self.profile.credentials, context.environ)
        )

    def command(
        self, context: BackendContext, kind: RoundKind, session: str | None
    ) -> LaunchCommand:
        program, _ = self._program.of(context.environ)
        budget = context.request.limits.max_budget_usd
        priced = {k for k, _ in CodexEndpoint.of_settings(context.machine).prices}
        if budget is not None and not {"input", "output"} <= priced:
            # Codex reports tokens, never a cost: a budget holds only with the machine's prices.
            raise ValueError(
                f"max_budget_usd {budget:g} cannot hold on the Codex CLI, which reports no "
                "cost: give the prices of a token in the machine's codex.json (prices: input, "
                "output), or drop max_budget_usd"
            )
        return codex_command(
            runtime=context.policy.runtime,
            worktree=context.policy.worktree,
            tools=self.profile.tool_set(context.policy.grant),
            program=program,
            thread=session if kind is not RoundKind.INITIAL else None,
        )

    def environment(self, context: BackendContext) -> dict[str, str]:
        """The round's table; the endpoint's key is added by the preparation from the machine
        file's answer."""
        return codex_environment(
            context.environ, context.policy.runtime, context.request.project_interpreter
        )

    def reader(self, context: BackendContext) -> StreamReader:
        """A CodexStreamReader, imported when a round runs (issue 32 §2: `plan` makes none)."""
        from concorde_workers.adapters.codex.stream import CodexStreamReader

        limits = context.request.limits
        return CodexStreamReader(
            max_turns=limits.max_turns,
            max_budget_usd=limits.max_budget_usd,
            prices=_prices(context),
            totals=self._totals,
            rollout=lambda thread: rollout_text(self._fs, context.policy.runtime, thread),
        )

    def transcript(self, context: BackendContext, session: str | None) -> str | None:
        """The thread's rollout, `config/codex/sessions/YYYY/MM/DD/rollout-<time>-<thread>.jsonl`;
        None while there is none."""
        return find_rollout(self._fs, context.policy.runtime, session)


def _read_switch(fs: BoundedReading, path: str) -> str | None:
    """A kernel switch's file (`USERNS_SWITCHES`), None when it is not there or not readable."""
    try:
        return fs.read_text(path) if fs.is_file(path) else None
    except (FileSystemError, UnicodeDecodeError):
        return None


def _prices(context: BackendContext) -> Prices | None:
    """The machine's prices of a token as the stream reader counts a round's cost; None without
    an input and an output price (`command` then refuses a budget before launch)."""
    from concorde_workers.adapters.codex.stream import Prices

    prices = dict(CodexEndpoint.of_settings(context.machine).prices)
    if "input" not in prices or "output" not in prices:
        return None
    return Prices(
        input=prices["input"], output=prices["output"], cached_input=prices.get("cached_input")
    )


def _made(ports: BackendPorts) -> CodexBackend:
    return CodexBackend(ports.fs, ports.installations)


REGISTRATION = BackendRegistration(CodexBackend.profile, _made)
"""This backend as the composition root registers it: its profile and its making (issue 34 §4)."""
