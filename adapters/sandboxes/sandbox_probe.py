"""The worker's Bash sandbox, tried for real (ports/sandboxes/sandbox_probe.py; `concorde-workers
doctor`).

The probe opens a listener on 127.0.0.1, writes sandbox-runtime settings with the network the
permission extension gives every worker's command (`NETWORK` of adapters/pi/extension/
permission.ts: no domain allowed, the strict allowlist), and runs sandbox-runtime's own command
line (`srt`, the package's dist/cli.js, on the same library and bubblewrap/socat the extension
uses) with a shell command that prints a mark and tries the listener with bash's /dev/tcp. The
fact: whether the mark came out, and whether the listener saw a connection.
"""

from __future__ import annotations

import json
import posixpath
import shutil
import socket
import tempfile
from collections.abc import Mapping

from concorde_workers.domain.setup.doctor import SandboxFact
from concorde_workers.ports.processes.process import ProcessRunner, ProcessStartFailed

MARK = "concorde-sandbox-ran"
TIMEOUT_SECONDS = 60.0
SETTINGS = {
    "network": {"allowedDomains": [], "deniedDomains": [], "strictAllowlist": True},
    "filesystem": {"denyRead": [], "allowRead": [], "allowWrite": [], "denyWrite": []},
}


class SrtSandboxProbe:
    """SandboxProbe over the process runner."""

    def __init__(self, processes: ProcessRunner, environ: Mapping[str, str]) -> None:
        self._processes = processes
        self._env = {k: environ[k] for k in ("PATH", "HOME", "LANG") if environ.get(k)}

    def network(self, node: str, sandbox_runtime: str) -> SandboxFact:
        folder = tempfile.mkdtemp(prefix="concorde-doctor-")
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            listener.bind(("127.0.0.1", 0))
            listener.listen(1)
            listener.setblocking(False)
            port = listener.getsockname()[1]
            settings = posixpath.join(folder, "srt-settings.json")
            with open(settings, "w", encoding="utf-8") as out:
                json.dump(SETTINGS, out)
            command = (
                f"echo {MARK}; if (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null; "
                "then echo connected; else echo 'connect refused: no network'; fi"
            )
            argv = [
                node,
                posixpath.join(sandbox_runtime, "dist", "cli.js"),
                "--settings",
                settings,
                "-c",
                f"bash -c {_quote(command)}",
            ]
            said, status = self._run(argv, folder)
            reached = _accepted(listener) or "connected" in said.splitlines()
        finally:
            listener.close()
            shutil.rmtree(folder, ignore_errors=True)
        ran = MARK in said
        detail = " | ".join(line for line in said.splitlines() if line.strip())[-300:]
        return SandboxFact(
            ran=ran,
            reached=reached,
            detail=detail if ran else f"exit {status}: {detail or 'no output'}",
        )

    def _run(self, argv: list[str], cwd: str) -> tuple[str, int | None]:
        env = {**self._env, "TMPDIR": cwd}
        try:
            handle = self._processes.start(argv, env, cwd, timeout_seconds=TIMEOUT_SECONDS)
        except ProcessStartFailed as failed:
            return f"it could not be started: {failed.os_error_text}", None
        out = "\n".join(handle.lines())
        status = handle.wait(None)
        err = handle.stderr_tail(2000).decode("utf-8", "replace")
        return "\n".join(part for part in (out, err) if part.strip()), status


def _accepted(listener: socket.socket) -> bool:
    try:
        connection, _ = listener.accept()
    except (BlockingIOError, OSError):
        return False
    connection.close()
    return True


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


__all__ = ["SrtSandboxProbe"]
