"""End-to-end fixtures: whole `WorkerHost.run` calls through `production(environ)` with the real
Claude Code (the pinned node_modules/.bin/claude) against the scripted Messages API.

`claude_world` builds, per test:

    <tmp_path>/project/repo/ ...         the repository world (tests/worlds/repository.py) with
                                         the integration tests' project committed
                                         (tests/integration/conftest.py `project_files`) and a
                                         real .claude/worktrees/task
    <tmp_path>/user/home/                the user's HOME as the host sees it
    <tmp_path>/user/claude-config/       the user's CLAUDE_CONFIG_DIR, with a dummy
                                         .credentials.json (the host copies it into config/)
    <basetemp>/claude-under-test0/node_modules/claude
                                         the claude under test (a hard link or copy: the
                                         confinement keeps this node_modules visible)
    .../node_modules/wrappers/<test>/claude
                                         the wrapper CONCORDE_CLAUDE names (tests/servers/
                                         claude_wrapper.py): the claude under test with
                                         ANTHROPIC_BASE_URL=<the server> and
                                         CLAUDE_CODE_MAX_RETRIES=0 added; it logs each start
                                         on its stderr (the round's stderr.log)
    /tmp/cce-XXXX/                       the host's temp root (a short path: Claude Code's
                                         sandbox sockets live below the runtime directory)

The host's environment is exactly PATH, LANG, HOME, CLAUDE_CONFIG_DIR, CONCORDE_CLAUDE and
ANTHROPIC_API_KEY=sk-ant-test: nothing test-only reaches the generated settings. No process of
the test contacts anything but 127.0.0.1.

A missing claude fails the test (never skips it): run ./scripts/setup.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from e2e.run_world import RunWorld, run_parts
from integration.conftest import project_files
from servers.anthropic_server import AnthropicServer, Step
from servers.claude_wrapper import (
    find_claude,
    read_starts,
    visible_copy,
    wrapper_path,
    write_wrapper,
)
from timing import SLOW, Deadline
from worlds.repository import remove_temp_root

from concorde_workers.adapters.machine.filesystem import LocalFileSystem
from concorde_workers.adapters.sandboxes.space import SpacedFileSystem
from concorde_workers.application.runtime.cancellation import Cancellation
from concorde_workers.application.runtime.validation import RoundValidation
from concorde_workers.contracts import validator
from concorde_workers.domain.configuration.program_versions import version_text
from concorde_workers.domain.configuration.request import Limits
from concorde_workers.domain.evidence.records import RunRecord
from concorde_workers.ports.agents.events import RunEvents

DUMMY_CREDENTIALS = (
    json.dumps(
        {
            "claudeAiOauth": {
                "accessToken": "sk-ant-oat01-dummy-e2e",
                "refreshToken": "sk-ant-ort01-dummy-e2e",
                "expiresAt": 4102444800000,
                "scopes": ["user:inference"],
                "subscriptionType": "max",
            }
        }
    )
    + "\n"
)

HOOK_DENIAL = re.compile(r"(?:PreToolUse:\w+ hook error: )?(Concorde grant: .*)", re.DOTALL)


def hook_denial(text: str) -> str | None:
    """The reason (`Concorde grant: ...`) of a tool call one of the generated hooks denied, as
    Claude Code hands it to the model, or None when `text` is no such denial. Claude Code 2.1.197
    passes the hook's reason through as the whole tool result; 2.1.332 puts `PreToolUse:<tool>
    hook error: ` before it (docs/decisions.md "Claude Code 2.1.332"). The tests assert the
    denial and its reason, not one version's wording around them."""
    found = HOOK_DENIAL.fullmatch(text)
    return found.group(1) if found else None


def program_version(program: Path | str) -> str:
    """The version the program under test says of itself (`--version`, stdout or stderr):
    what the host must have read, whichever installation CONCORDE_* names."""
    said = subprocess.run(
        [str(program), "--version"], capture_output=True, text=True, timeout=SLOW, check=True
    )
    version = version_text(said.stdout) or version_text(said.stderr)
    assert version is not None, said
    return version


def kept_programs(run: RecordedRun) -> list[tuple[str, str | None]]:
    """(program, version) of the run directory's programs.json, after checking that the run
    node names it among its files with its digest (issue 11)."""
    path = run.run_dir / "programs.json"
    node = json.loads((run.run_dir / "trace.json").read_text())
    listed = {f["path"]: f["digest"] for f in node["files"]}
    digest = "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()
    assert listed.get("programs.json") == digest, listed
    return [(p["program"], p["version"]) for p in json.loads(path.read_text())["programs"]]


def ok_result(*deletions: str, summary: str = "done") -> dict[str, Any]:
    """A valid worker result (no output schema: output is an empty object)."""
    return {
        "status": "ok",
        "summary": summary,
        "error": None,
        "proposed_deletions": list(deletions),
        "output": {},
    }


@pytest.fixture(scope="session")
def claude_program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Claude Code under test, as a copy its wrappers can run inside the confinement
    (tests/servers/claude_wrapper.py `visible_copy`)."""
    found = find_claude()
    if found is None:
        pytest.fail(
            "the Claude Code under test is missing: run ./scripts/setup (npm ci "
            "installs the pinned node_modules/.bin/claude), or set CONCORDE_CLAUDE to "
            "the absolute path of an installed claude"
        )
    return visible_copy(found, tmp_path_factory.mktemp("claude-under-test"))


@pytest.fixture
def anthropic_server() -> Iterator[AnthropicServer]:
    """A started scripted Messages API on 127.0.0.1 (push the script before the run)."""
    server = AnthropicServer().start()
    try:
        yield server
    finally:
        server.stop()


@dataclass
class RecordedRun:
    """One finished run, read from its record (both backends' end-to-end tests)."""

    record: RunRecord

    @property
    def data(self) -> dict[str, Any]:
        return self.record.model_dump(mode="json")

    @property
    def code(self) -> str | None:
        return self.record.error.code if self.record.error is not None else None

    @property
    def run_dir(self) -> Path:
        return Path(self.record.run_directory)

    @property
    def runtime_dir(self) -> Path:
        return Path(self.record.runtime_directory)

    def explain(self) -> str:
        """What to print when an assertion fails: the error chain, the rounds and the end of
        every round's stderr.log as the run kept them (the run directory stays in the test's
        tmp_path), so a failure seen once on a busy machine explains itself."""
        stderr = {
            str(p.relative_to(self.run_dir)): p.read_text(errors="replace")[-3000:]
            for p in sorted(self.run_dir.glob("rounds/*/stderr.log"))
        }
        return json.dumps(
            {
                "run_directory": str(self.run_dir),
                "error": self.data["error"],
                "rounds": self.data["rounds"],
                "stderr": stderr,
            },
            indent=1,
        )[:12000]


@dataclass
class ClaudeRun(RecordedRun):
    """One finished Claude Code run."""

    server: AnthropicServer
    starts: list[dict[str, Any]]
    traces: dict[str, Any] = field(default_factory=dict)

    def round(self, n: int) -> dict[str, Any]:
        """The record's round n (from 1)."""
        return dict(self.data["rounds"][n - 1])


@dataclass(kw_only=True)
class ClaudeWorld(RunWorld):
    """The project, the user's files, the wrapper and the host's environment of one test."""

    backend = "claude"
    local_model = "claude-opus-4-8"
    instructions = "Add a greeting to src/app/main.py."

    server: AnthropicServer
    user_credentials: Path

    def run(
        self,
        *script: Step,
        repeat: Step | None = None,
        limits: Limits | None = None,
        validation: RoundValidation | None = None,
        cancel: Cancellation | None = None,
        grant: dict[str, Any] | None = None,
        deadline: Deadline | None = None,
        resources: dict[str, int] | None = None,
        events: RunEvents | None = None,
    ) -> ClaudeRun:
        """One run; `deadline` (tests/timing.py) decides when a round's timeout passes;
        `resources` is the request's (RunRequest.resources: None for the defaults)."""
        self.server.push(*script)
        self.server.repeat = repeat
        record = self.recorded(
            self.container(deadline),
            limits
            or Limits(
                timeout_seconds=SLOW, max_turns=5, rounds=0, retries=0, retry_delay_seconds=0
            ),
            grant=grant,
            resources=resources,
            validation=validation,
            events=events,
            cancel=cancel,
        )
        traces: dict[str, Any] = {}
        node = validator("contract.tracing.node")
        run_dir = Path(record.run_directory)
        for trace in sorted(run_dir.rglob("trace.json")):
            data = json.loads(trace.read_text())
            errors = [e.message for e in node.iter_errors(data)]
            assert not errors, (trace, errors)
            traces[str(trace.relative_to(run_dir))] = data
        return ClaudeRun(
            record=record, server=self.server, starts=read_starts(run_dir), traces=traces
        )

    def runtime_dirs(self) -> list[Path]:
        return sorted(self.temp_root.iterdir())

    def credential_copies(self) -> list[str]:
        """The text of every credentials file the host made below the temp root: on the disk
        (there is none: issue 30 §2), or in a run's agent space, reached as the host reaches it
        (adapters/sandboxes/space.py)."""
        fs = SpacedFileSystem(LocalFileSystem())
        found = [p.read_text() for p in sorted(self.temp_root.rglob(".credentials.json"))]
        for runtime in self.runtime_dirs():
            copy = f"{runtime}/config/.credentials.json"
            if fs.lexists(copy):
                found.append(fs.read_text(copy))
        return found

    def assert_cleaned(self, run: ClaudeRun) -> None:
        """Nothing of the runtime directory is left: no credential copy, no directory; the
        user's own credentials are untouched; the server saw no unscripted request."""
        assert not run.runtime_dir.exists(), list(run.runtime_dir.rglob("*"))
        assert self.runtime_dirs() == []
        assert self.credential_copies() == []
        assert self.user_credentials.read_text() == DUMMY_CREDENTIALS


@pytest.fixture
def claude_world(
    tmp_path: Path, claude_program: Path, anthropic_server: AnthropicServer
) -> Iterator[ClaudeWorld]:
    parts = run_parts(tmp_path / "project", "cce-")
    user = tmp_path / "user"
    home = user / "home"
    home.mkdir(parents=True)
    config = user / "claude-config"
    config.mkdir()
    credentials = config / ".credentials.json"
    credentials.write_text(DUMMY_CREDENTIALS)
    credentials.chmod(0o600)
    wrapper = write_wrapper(
        wrapper_path(claude_program, tmp_path.name), claude_program, anthropic_server.url
    )
    environ = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(config),
        "CONCORDE_CLAUDE": str(wrapper),
        "ANTHROPIC_API_KEY": "sk-ant-test",
    }
    world = ClaudeWorld(
        server=anthropic_server, environ=environ, user_credentials=credentials, **parts
    )
    try:
        world.commit_project(project_files())
        yield world
    finally:
        remove_temp_root(world.temp_root)  # with a failing test's leftovers
