"""The Process port: start an agent program and follow it.

A process starts in a new session and process group so that ending it ends everything it
spawned. The runner enforces the round's timeout itself: when it passes, it kills the group, so
the stdout stream ends and the host never polls.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

__all__ = ["ProcessHandle", "ProcessRunner", "ProcessSpec", "ProcessStartFailed"]


class ProcessStartFailed(Exception):
    """The program could not be started (not found, not executable, bad cwd)."""

    def __init__(self, argv: Sequence[str], os_error_text: str) -> None:
        self.argv = tuple(argv)
        self.os_error_text = os_error_text
        super().__init__(f"cannot start {self.argv[0] if self.argv else '?'}: {os_error_text}")


class ProcessSpec(BaseModel):
    """What to start: the exact argv, the whole environment (nothing inherited), the working
    directory, and the text given on stdin (None: stdin is empty/closed)."""

    model_config = ConfigDict(frozen=True)

    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: str
    stdin_text: str | None = None


@runtime_checkable
class ProcessHandle(Protocol):
    """A started process group."""

    @property
    def pid(self) -> int:
        """The leader's process id (also the group id)."""
        ...

    def lines(self) -> Iterator[str]:
        """Stdout lines as they arrive, without their line end, decoded as UTF-8 (invalid
        bytes replaced); ends at end of stdout. A last line without a newline is yielded too."""
        ...

    def stderr_tail(self, max_bytes: int) -> bytes:
        """The last `max_bytes` of stderr so far, as bytes (stderr is drained as it arrives, so a
        program writing megabytes never blocks)."""
        ...

    @property
    def timed_out(self) -> bool:
        """True when the runner killed the group because its timeout passed."""
        ...

    def wait(self, timeout: float | None) -> int | None:
        """The exit status (negative: killed by that signal), or None when it has not ended
        within `timeout` seconds (None: wait as long as it takes)."""
        ...

    def kill_group(self) -> None:
        """Kill the whole process group (SIGKILL); harmless when it has already ended."""
        ...


@runtime_checkable
class ProcessRunner(Protocol):
    """Starts programs; raises `ProcessStartFailed` when it cannot."""

    def start(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: str,
        stdin_text: str | None = None,
        timeout_seconds: float | None = None,
    ) -> ProcessHandle:
        """Start `argv` in a new process group with exactly `env`, in `cwd`, given
        `stdin_text` on stdin then end of file; kill the group when `timeout_seconds` pass."""
        ...
