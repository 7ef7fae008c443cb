"""Runs `concorde-workers` on the production container with its agent backends replaced by
ProgramBackend (tests/fakes/program_backend.py), for integration tests that need the CLI in a
process of its own (to send it a signal):

    python tests/fakes/cli_launcher.py SCENARIOS.json ARGV...

SCENARIOS.json holds a JSON list with one scenario of agent.py per round (or is `-`: the real
agent programs, production's backends); ARGV is the command line of `concorde-workers` (`run ...`,
`show ...`, `sweep ...`). Everything else is production wiring: real Git, the real filesystem,
the real process runner, the system clock, the process's own environment. The exit status is
cli.main's.

Two variables of the launcher's environment (read here, never by concorde-workers) let a test
keep its runs to itself: FAKE_RUNTIME_PARENT replaces the runtime parent (/tmp), so that no other
sweep on the machine sees the test's runtime directories and no test's sweep sees anyone
else's; FAKE_CREDENTIALS names a file the test backend copies as its credential copy
(config/auth.json), as pi's auth.json is copied.

FAKE_CONFINED=1 confines the test backend's rounds as a real backend's are (the production
confinement around agent.py: a check then runs over the round's own mount plan, as after a real
agent's round; benchmarks/check_run.py).

FAKE_COMPILE names a shell script the test backend gives as its compiled cache's command
(`/bin/sh -c SCRIPT compile FOLDER`, as pi's extension is compiled once a run).

A fifth, FAKE_PAUSE, stops the process at one chosen filesystem operation so that a test kills
it there with SIGKILL (issue 30 §3): a JSON object `{"op": "remove", "path": "<regex>", "nth": 1,
"when": "before" | "after", "contains": "<text>", "signal": "<fifo>", "gate": "<fifo>"}`
(`pause_spec`). The production filesystem is wrapped (`PausingFileSystem`); at the nth call of
`op` whose path the regular expression finds (and, for a write, whose data holds `contains`),
before or after the real call, the calling thread opens the named pipe `signal` (the test's
timing.Signal) and then waits for ever: the test's SIGKILL meets the host exactly there, never a
moment earlier or later. With `gate` (a named pipe) it waits there only until the test writes a
byte into it (`release_gate`): to send a signal the host handles while it stands there. With
`cancelled` (a named pipe: the test's timing.Signal) the run's cancellation, once set (by the
CLI's SIGTERM handler, which Python runs in the main thread at a moment of its own), opens it:
the test releases the gate only then.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # run as a script: make `fakes` importable, as pytest does
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dependency_injector import providers

from concorde_workers.adapters.cli import main as cli
from concorde_workers.adapters.machine.filesystem import LocalFileSystem
from concorde_workers.adapters.processes.liveness import ProcTable
from concorde_workers.adapters.processes.process import SubprocessRunner
from concorde_workers.container import Container, check_runner, production
from concorde_workers.ports.agents.agent import CompiledCache
from concorde_workers.ports.machine.filesystem import FileSystem
from fakes.program_backend import ProgramBackend, Scenario


def pause_spec(
    op: str,
    path: str,
    signal: str | Path,
    *,
    nth: int = 1,
    when: str = "before",
    contains: str | None = None,
    gate: str | Path | None = None,
    cancelled: str | Path | None = None,
) -> str:
    """The FAKE_PAUSE value that stops the launched process at the `nth` call of the filesystem
    operation `op` on a path the regular expression `path` finds (see the module docstring)."""
    spec: dict[str, Any] = {"op": op, "path": path, "nth": nth, "when": when, "signal": str(signal)}
    if contains is not None:
        spec["contains"] = contains
    if gate is not None:
        spec["gate"] = str(gate)
    if cancelled is not None:
        spec["cancelled"] = str(cancelled)
    return json.dumps(spec)


def tell_cancellations(signal: str) -> None:
    """Open the named pipe `signal` whenever a run's cancellation is set (FAKE_PAUSE's
    `cancelled`): the moment the host knows, not the moment the signal was sent."""
    from concorde_workers.application.runtime.cancellation import Cancellation

    real = Cancellation.cancel

    def cancel(self: Cancellation, reason: str = "the run was cancelled by its caller") -> None:
        first = not self.is_set()
        real(self, reason)
        if first:  # once: the test's pipe has one reader
            with open(signal, "wb"):
                pass

    Cancellation.cancel = cancel  # type: ignore[method-assign]


def release_gate(gate: str | Path) -> None:
    """Let a process paused at its `gate` go on."""
    with open(gate, "wb") as pipe:
        pipe.write(b"x")


class PausingFileSystem:
    """The production filesystem, but for one operation that stops the calling thread for good
    once the test's chosen moment comes (FAKE_PAUSE): every other call goes through as it is."""

    def __init__(self, inner: FileSystem, spec: dict[str, Any]) -> None:
        self._inner = inner
        self._op: str = spec["op"]
        self._path = re.compile(spec["path"])
        self._nth: int = spec.get("nth", 1)
        self._when: str = spec.get("when", "before")
        self._contains: str | None = spec.get("contains")
        self._signal: str = spec["signal"]
        self._gate: str | None = spec.get("gate")
        self._seen = 0
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._inner, name)
        if name != self._op:
            return real
        return self._watched(real)

    def _watched(self, real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            if not self._is_the_moment(args, kwargs):
                return real(*args, **kwargs)
            if self._when == "before":
                self._stop()
            result = real(*args, **kwargs)
            if self._when == "after":
                self._stop()
            return result

        return call

    def _is_the_moment(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        path = args[0] if args else kwargs.get("path", kwargs.get("root", ""))
        if not self._path.search(str(path)):
            return False
        if self._contains is not None:
            data = args[1] if len(args) > 1 else kwargs.get("data", b"")
            text = data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)
            if self._contains not in text:
                return False
        with self._lock:
            self._seen += 1
            return self._seen == self._nth

    def _stop(self) -> None:
        with open(self._signal, "wb"):  # the test's Signal: it goes on from here
            pass
        if self._gate is not None:
            # Until the test writes a byte into it. Opened for reading and writing, the pipe's
            # open never waits for a partner, so a signal the test sends meanwhile (EINTR, the
            # read retried) cannot lose the release.
            fd = os.open(self._gate, os.O_RDWR)
            try:
                os.read(fd, 1)
            finally:
                os.close(fd)
            return
        threading.Event().wait()  # until the test's SIGKILL


def program_container(
    scenarios: Sequence[Scenario] | None,
    backend: str = "pi",
    *,
    runtime_parent: str | None = None,
    credentials: str | None = None,
    pause: str | None = None,
    confined: bool = False,
    compile_script: str | None = None,
) -> Container:
    """The production container whose `backend` plays `scenarios` with agent.py (None: the real
        backends), its runtime parent `runtime_parent` when given; `credentials` is copied as the
        test backend's credential copy config/auth.json; `pause` (a `pause_spec`) stops it at one
        filesystem operation for the test to kill it there; `compile_script` is the test backend's
    compiled cache command (FAKE_COMPILE)."""
    container = production()
    if pause is not None and "cancelled" in json.loads(pause):
        tell_cancellations(json.loads(pause)["cancelled"])
    if pause is not None:
        container.filesystem.override(
            providers.Object(PausingFileSystem(container.filesystem(), json.loads(pause)))
        )
    if runtime_parent is not None:
        container.temp_root.override(providers.Object(runtime_parent))
        # The checks' copies go where the runtime directories go: the sweep looks there.
        container.check_runner.override(
            providers.Object(
                check_runner(
                    SubprocessRunner(),
                    LocalFileSystem(),
                    container.host(),
                    ProcTable(),
                    runtime_parent,
                )
            )
        )
    if scenarios is None:
        return container
    program = ProgramBackend(backend, scenarios=list(scenarios), confined=confined)  # type: ignore[arg-type]
    if compile_script is not None:
        program.compiled = lambda context: CompiledCache(
            argv=("/bin/sh", "-c", compile_script, "compile", context.policy.runtime.control),
            folder=posixpath.join(context.policy.runtime.control, "compiled"),
            cache=posixpath.join(context.policy.runtime.tmp, "compiled"),
        )
    if credentials is not None:
        program.credentials = lambda context: [
            (credentials, context.policy.runtime.copy_of("auth.json"))
        ]
    others = {name: ProgramBackend(name) for name in ("pi", "claude") if name != backend}  # type: ignore[arg-type]
    container.backends.override(
        providers.Dict(
            **{name: providers.Object(b) for name, b in {**others, backend: program}.items()}
        )
    )
    return container


def main(argv: Sequence[str]) -> int:
    scenarios: Any = (
        None if argv[0] == "-" else json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    )
    return cli.main(
        list(argv[1:]),
        container=program_container(
            scenarios,
            runtime_parent=os.environ.get("FAKE_RUNTIME_PARENT"),
            credentials=os.environ.get("FAKE_CREDENTIALS"),
            pause=os.environ.get("FAKE_PAUSE"),
            confined=os.environ.get("FAKE_CONFINED") == "1",
            compile_script=os.environ.get("FAKE_COMPILE"),
        ),
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
