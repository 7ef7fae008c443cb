"""`ProgramBackend`: a real AgentBackend whose rounds run tests/fakes/agent_programs/agent.py.

For integration tests with the real process runner and real Git. It generates, copies
credentials, builds the environment, reads the stream and finds transcripts exactly as
ScriptedBackend does (their common base); its command line runs the host's interpreter on
agent.py:

    [sys.executable, <agent.py>, <scenario dir>, --state <dir>, --kind <kind>, --session <s|->]

Each round's scenario is a file round-<n>.json in the scenario directory; each start of agent.py
claims the next unclaimed one (see agent.py), so the command line is the same whatever the host
asks for round n, and the preparation's own call of command() consumes nothing. The scenario
directory is `scenario_dir` when the test gives one (generate() writes the files there and
clears earlier claims; the claim markers land there too), else the runtime directory's control/
itself (the files are among the generated control files, beside settings.json; the claim
markers land in `<rt>/tmp/fake-agent/`).

Strings in scenarios may hold {worktree}, {primary}, {runtime} and {run_id}, replaced when the
scenario files are generated (agent.py itself replaces {cwd}, {home}, {tmp}, {config} and
{session} when it runs).
"""

from __future__ import annotations

import json
import os
import posixpath
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from concorde_workers.adapters.machine.filesystem import LocalFileSystem
from concorde_workers.ports.agents.agent import BackendContext, Generated, RoundKind
from fakes.agent import TestBackendBase

__all__ = ["AGENT_PROGRAM", "ProgramBackend", "Scenario", "Step"]

AGENT_PROGRAM = str(Path(__file__).resolve().parent / "agent_programs" / "agent.py")

Scenario = Sequence[dict[str, Any]] | dict[str, Any]
"""A list of steps, or {"steps": [...], "exit": n, "stdin": bool}."""


class Step:
    """Builders of agent.py's scenario steps (plain dicts; see agent.py for every step type)."""

    @staticmethod
    def session(session_id: str | None = None) -> dict[str, Any]:
        return {"do": "session", **({"id": session_id} if session_id else {})}

    @staticmethod
    def line(kind: str, **fields: Any) -> dict[str, Any]:
        """A protocol line: tool, text, result, error, limit, usage or agent."""
        return {"do": kind, **fields}

    @staticmethod
    def result(result: Any) -> dict[str, Any]:
        return {"do": "result", "result": result}

    @staticmethod
    def error(message: str) -> dict[str, Any]:
        return {"do": "error", "message": message}

    @staticmethod
    def limit(limit: str, value: float, maximum: float | None = None) -> dict[str, Any]:
        return {
            "do": "limit",
            "limit": limit,
            "value": value,
            **({"maximum": maximum} if maximum is not None else {}),
        }

    @staticmethod
    def usage(**usage: float) -> dict[str, Any]:
        return {"do": "usage", **usage}

    @staticmethod
    def print(*lines: Any, delay: float = 0, newline: bool = True) -> dict[str, Any]:
        return {"do": "print", "lines": list(lines), "delay": delay, "newline": newline}

    @staticmethod
    def write(
        path: str,
        text: str = "",
        *,
        append: bool = False,
        mode: str | None = None,
        announce: bool = True,
    ) -> dict[str, Any]:
        step: dict[str, Any] = {
            "do": "write",
            "path": path,
            "text": text,
            "append": append,
            "announce": announce,
        }
        if mode is not None:
            step["mode"] = mode
        return step

    @staticmethod
    def signal(path: str | Path) -> dict[str, Any]:
        """Tell the test this step was reached: open the named pipe `path` (a timing.Signal)
        for writing and close it."""
        return {"do": "signal", "path": str(path)}

    @staticmethod
    def gate(path: str | Path) -> dict[str, Any]:
        """Wait here until the test releases the named pipe `path` (a timing.Gate)."""
        return {"do": "gate", "path": str(path)}

    @staticmethod
    def mkdir(path: str) -> dict[str, Any]:
        return {"do": "mkdir", "path": path}

    @staticmethod
    def delete(path: str) -> dict[str, Any]:
        return {"do": "delete", "path": path}

    @staticmethod
    def chmod(path: str, mode: str) -> dict[str, Any]:
        return {"do": "chmod", "path": path, "mode": mode}

    @staticmethod
    def symlink(path: str, target: str) -> dict[str, Any]:
        return {"do": "symlink", "path": path, "target": target}

    @staticmethod
    def stderr(n_bytes: int = 0, text: str | None = None) -> dict[str, Any]:
        return {"do": "stderr", "bytes": n_bytes, **({"text": text} if text is not None else {})}

    @staticmethod
    def transcript(lines: Sequence[Any] | None = None, path: str | None = None) -> dict[str, Any]:
        step: dict[str, Any] = {"do": "transcript"}
        if lines is not None:
            step["lines"] = list(lines)
        if path is not None:
            step["path"] = path
        return step

    @staticmethod
    def record(path: str) -> dict[str, Any]:
        return {"do": "record", "path": path}

    @staticmethod
    def sleep(seconds: float) -> dict[str, Any]:
        return {"do": "sleep", "seconds": seconds}

    @staticmethod
    def spawn(
        seconds: float = 3600,
        *,
        grandchild: bool = False,
        pidfile: str | None = None,
        keep_stdout: bool = False,
        session: bool = False,
    ) -> dict[str, Any]:
        return {
            "do": "spawn",
            "seconds": seconds,
            "grandchild": grandchild,
            "keep_stdout": keep_stdout,
            "session": session,
            **({"pidfile": pidfile} if pidfile else {}),
        }

    @staticmethod
    def crash(how: str = "exit", status: int = 3, message: str = "boom") -> dict[str, Any]:
        return {"do": "crash", "how": how, "status": status, "message": message}

    @staticmethod
    def exit(status: int = 0) -> dict[str, Any]:
        return {"do": "exit", "status": status}


def _expand(value: Any, replacements: dict[str, str]) -> Any:
    if isinstance(value, str):
        for key, text in replacements.items():
            value = value.replace(key, text)
        return value
    if isinstance(value, list | tuple):
        return [_expand(v, replacements) for v in value]
    if isinstance(value, dict):
        return {k: _expand(v, replacements) for k, v in value.items()}
    return value


@dataclass
class ProgramBackend(TestBackendBase):
    """A test backend whose rounds are real processes of agent.py playing `scenarios` in order.

    `fs` defaults to the real filesystem; `interpreter` runs
    agent.py (default: this interpreter)."""

    scenarios: Sequence[Scenario] = ()
    scenario_dir: str | None = None
    interpreter: str = sys.executable

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.fs is None:
            self.fs = LocalFileSystem()
        self.program = self.interpreter

    def confinement_needs(self, context: BackendContext) -> Sequence[str] | None:
        """The interpreter and agent.py itself: a checkout below a temporary root (a CI clone in
        /tmp) lies where the confinement hides everything the run does not keep."""
        return (self.program, AGENT_PROGRAM) if self.confined else None

    def scenario_files(self, context: BackendContext) -> dict[str, str]:
        """round-<n>.json -> its text, placeholders replaced, in the scenario directory."""
        policy = context.policy
        replacements = {
            "{worktree}": policy.worktree,
            "{primary}": policy.primary,
            "{runtime}": policy.runtime.root,
            "{run_id}": context.run_id,
        }
        directory = self.directory(context)
        return {
            posixpath.join(directory, f"round-{n}.json"): json.dumps(
                _expand(scenario, replacements), indent=2, ensure_ascii=False
            )
            for n, scenario in enumerate(self.scenarios, start=1)
        }

    def directory(self, context: BackendContext) -> str:
        return self.scenario_dir or context.policy.runtime.control

    def state_directory(self, context: BackendContext) -> str:
        return self.scenario_dir or posixpath.join(context.policy.runtime.tmp, "fake-agent")

    def generate(self, context: BackendContext) -> Generated:
        generated = super().generate(context)
        files = self.scenario_files(context)
        if self.scenario_dir is None:
            return generated.model_copy(update={"files": {**generated.files, **files}})
        os.makedirs(self.scenario_dir, exist_ok=True)
        for old in [
            *Path(self.scenario_dir).glob("round-*.json"),
            *Path(self.scenario_dir).glob("round-*.started"),
        ]:
            old.unlink()
        for path, text in files.items():
            Path(path).write_text(text, encoding="utf-8")
        return generated

    def argv(
        self, context: BackendContext, kind: RoundKind, session: str | None
    ) -> tuple[str, ...]:
        return (
            self.interpreter,
            AGENT_PROGRAM,
            self.directory(context),
            "--state",
            self.state_directory(context),
            "--kind",
            kind.value,
            "--session",
            session or "-",
        )

    def started_rounds(self, context: BackendContext) -> list[int]:
        """The rounds whose scenario a start of agent.py claimed, by number."""
        state = Path(self.state_directory(context))
        if not state.is_dir():
            return []
        return sorted(
            int(p.name.split("-")[1].split(".")[0]) for p in state.glob("round-*.started")
        )
