"""`concorde-workers install-agents`: the pinned agent programs installed into the user data
folder (domain/setup/agent_install.py decides; this writes the pins and runs npm through the
ports)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from concorde_workers.domain.configuration.discovery import user_data_folder
from concorde_workers.domain.setup.agent_install import (
    InstallPlan,
    install_plan,
    stamp_path,
)
from concorde_workers.ports.machine.filesystem import FileKeeping, FileSystemError
from concorde_workers.ports.processes.process import ProcessRunner, ProcessStartFailed

NPM_TIMEOUT_SECONDS = 1800.0
"""npm ci of the three programs takes about a minute; a stalled registry ends it."""


@dataclass(frozen=True)
class InstallOutcome:
    """0 installed (or already), 1 npm failed, 2 refused before anything was done."""

    status: int
    folder: str | None
    message: str
    installed: bool = False


class AgentInstaller:
    def __init__(
        self, fs: FileKeeping, processes: ProcessRunner, environ: Mapping[str, str]
    ) -> None:
        self._fs = fs
        self._processes = processes
        self._environ = environ

    def install(
        self, package_json: str, lock: str, before_npm: Callable[[str], None] | None = None
    ) -> InstallOutcome:
        """Install the pins into the user data folder unless they are there already;
        `before_npm` is told the folder right before npm ci runs, and only then (issue 19 §2:
        "already installed" was announced as an npm ci of about a minute)."""
        folder = user_data_folder(self._environ)
        if folder is None:
            return InstallOutcome(
                2,
                None,
                "neither XDG_DATA_HOME nor HOME is an absolute path, "
                "so there is no user data folder: set one of them",
            )
        npm = self._fs.which("npm", self._environ.get("PATH", ""))
        if npm is None:
            return InstallOutcome(
                2,
                folder,
                "npm is not found on PATH: install Node.js 20 or "
                "later with npm (Debian: apt-get install nodejs "
                "npm)",
            )
        plan = install_plan(folder, package_json, lock, npm, self._stamp(folder))
        if not plan.needed:
            return InstallOutcome(
                0,
                folder,
                f"the pinned agent programs are already installed in {folder}/node_modules",
            )
        if before_npm is not None:
            before_npm(folder)
        return self._run(plan)

    def _stamp(self, folder: str) -> str | None:
        try:
            return (
                self._fs.read_text(stamp_path(folder))
                if self._fs.is_file(stamp_path(folder))
                else None
            )
        except FileSystemError:
            return None

    def _run(self, plan: InstallPlan) -> InstallOutcome:
        try:
            self._fs.makedirs(plan.folder, 0o755)
            for path, text in plan.files.items():
                self._fs.write_atomic(path, text, 0o644)
        except FileSystemError as error:
            return InstallOutcome(
                2, plan.folder, f"{error.path} cannot be written: {error.os_error_text}"
            )
        env = dict(self._environ)  # npm is the user's own tool: their registry, proxy, cache
        try:
            handle = self._processes.start(
                list(plan.argv), env, plan.folder, timeout_seconds=NPM_TIMEOUT_SECONDS
            )
        except ProcessStartFailed as failed:
            return InstallOutcome(
                1, plan.folder, f"npm could not be started: {failed.os_error_text}"
            )
        said = "\n".join(handle.lines())
        status = handle.wait(None)
        err = handle.stderr_tail(4000).decode("utf-8", "replace")
        if status != 0 or handle.timed_out:
            why = "it did not end in time" if handle.timed_out else f"it exited {status}"
            return InstallOutcome(
                1,
                plan.folder,
                f"npm ci in {plan.folder} failed ({why}): {(err or said).strip()[-2000:]}",
            )
        # Installed all the same when the stamp cannot be written: the next call installs again.
        with contextlib.suppress(FileSystemError):
            self._fs.write_atomic(stamp_path(plan.folder), plan.stamp + "\n", 0o644)
        return InstallOutcome(
            0,
            plan.folder,
            f"installed the pinned agent programs in {plan.folder}/node_modules",
            installed=True,
        )
