"""`concorde-workers init`: the files of a project's first run, written in the primary worktree
and beside the model map (domain/configuration/starter.py decides what; this reads, writes and runs
Git).

The Git that writes here is the user's own tool, run as they would run it by hand in their own
repository (their environment, identity and hooks): `git worktree add` and the commit of the
starter `.concorde/workers.json` on the new task branch, since a run reads that file as
committed at the worktree's HEAD. It never runs over a worker's content: init makes the
worktree before any worker ran in it. The host's read-only Git (ports/repository/git.py) finds the
primary worktree and its Git directory.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from concorde_workers.application.setup.config import ConfigurationReader
from concorde_workers.application.setup.machine_files import copies_problem, read_copies
from concorde_workers.domain.configuration import machine
from concorde_workers.domain.configuration import starter as decide
from concorde_workers.domain.configuration.credentials import config_directory, copied_files
from concorde_workers.domain.configuration.discovery import Installation, locate
from concorde_workers.domain.configuration.profile import BackendProfile, Profiles, placeholders_of
from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.ground.errors import Reason, Refusal
from concorde_workers.domain.ground.layout import CONFIG_PATH
from concorde_workers.domain.ground.paths import EntryKind
from concorde_workers.ports.machine.filesystem import (
    DirectoryListing,
    FileReading,
    FileSystemError,
    FileWriting,
    PathFacts,
    read_regular_text,
)
from concorde_workers.ports.processes.process import ProcessRunner, ProcessStartFailed
from concorde_workers.ports.repository.git import GitCommandFailed, GitReader

__all__ = ["Starter", "StarterOutcome"]


class Furnishing(FileReading, PathFacts, DirectoryListing, FileWriting, Protocol):
    """What `init` does to the machine's files: reads the settings there, looks and lists,
    writes what is missing."""


_TASK = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
MAX_SETTINGS_BYTES = 64 * 1024
"""A program's settings file (pi's settings.json) is read only to learn its default model, and
only this much of it."""
GIT_TIMEOUT_SECONDS = 120.0


@dataclass
class StarterOutcome:
    """What init did, line by line, and the command to run next."""

    primary: str
    grant: str
    worktree: str | None
    done: list[str] = field(default_factory=list)
    next_command: str = ""


def _refusal(message: str, file: str | None = None) -> Refusal:
    return Refusal(code=Code.REQUEST_INVALID, reason=Reason.INPUT, message=message, file=file)


class Starter:
    """Writes the starter files (`init`)."""

    def __init__(
        self,
        fs: Furnishing,
        git: GitReader,
        processes: ProcessRunner,
        environ: Mapping[str, str],
        installations: Sequence[Installation],
        cwd: str,
        profiles: Profiles,
        config_reader: ConfigurationReader,
    ) -> None:
        self._config = config_reader
        self._placeholders = placeholders_of(profiles)
        self._profiles = {name: profiles[name] for name in self._placeholders}
        """The registered backends, the default backend first (the starter's order)."""
        self._fs, self._git, self._processes = fs, git, processes
        self._environ, self._installations, self._cwd = environ, tuple(installations), cwd

    def init(self, repo: str | None, task: str | None, force: bool) -> StarterOutcome | Refusal:
        if task is not None and not _TASK.fullmatch(task):
            return _refusal(
                f"--task {task!r} is no worktree name: give letters, digits, '.', "
                "'_' or '-', starting with a letter or digit (at most 64)"
            )
        primary = self._primary(posixpath.join(self._cwd, repo or "."))
        if isinstance(primary, Refusal):
            return primary
        map_file = machine.model_map_location(self._environ, [], self._placeholders)
        if isinstance(map_file, Refusal):
            return map_file
        grant = posixpath.join(
            posixpath.dirname(map_file),
            "grants",
            posixpath.basename(primary),
            f"{task or 'starter'}.json",
        )
        outcome = StarterOutcome(primary=primary, grant=grant, worktree=None)
        found = [
            name
            for name, profile in self._profiles.items()
            if locate(profile.program, self._environ, self._installations, self._fs, primary)
        ]
        ids = decide.model_ids(
            {name: self._profiles[name].default_model for name in found},
            {name: self._settings(self._profiles[name]) for name in found},
        )
        backend = decide.backend_for(found, ids, list(self._profiles))
        failed = (
            self._exclude(primary, outcome)
            or self._grant(primary, task, force, outcome)
            or self._workers(primary, task, backend, force, outcome)
        )
        if failed is not None:
            return failed
        self._model_map(map_file, ids, force, outcome)
        self._copies(backend, ids.get(backend), outcome)
        outcome.done.insert(
            0, f"backends found: {', '.join(found) or 'none'} (the starter uses {backend})"
        )
        outcome.next_command = _next_command(outcome, task)
        return outcome

    # --- the places ---------------------------------------------------------------------------

    def _primary(self, path: str) -> str | Refusal:
        try:
            real = self._fs.realpath(path)
            toplevel = self._git.toplevel(real)
            worktrees = self._git.worktrees(real)
        except (GitCommandFailed, FileSystemError) as failed:
            return _refusal(
                f"{path} is not in a Git repository ({failed}); run init in your "
                "project's primary worktree, or give --repo DIR",
                path,
            )
        if not worktrees or worktrees[0].bare or worktrees[0].path != toplevel:
            where = worktrees[0].path if worktrees and not worktrees[0].bare else "none"
            return _refusal(
                f"{toplevel} is not the primary worktree of its repository (the "
                f"primary: {where}); run init there, or give --repo DIR",
                toplevel,
            )
        return toplevel

    def _settings(self, profile: BackendProfile) -> str | None:
        """The program's settings file its default model is read from, when its profile names
        one, in its configuration directory as the program finds it (`~` expanded)."""
        name = profile.default_model.settings_file
        directory = config_directory(profile.credentials, self._environ)
        if name is None or directory is None:
            return None
        return self._small_file(posixpath.join(directory, name))

    def _small_file(self, path: str) -> str | None:
        """A regular file's text within MAX_SETTINGS_BYTES, else None (a link not followed)."""
        try:
            return read_regular_text(self._fs, path, MAX_SETTINGS_BYTES)
        except (FileSystemError, ValueError):
            return None

    def _copies(self, backend: str, model: str | None, outcome: StarterOutcome) -> None:
        """What the run of the plan below would meet in the files it copies (pi's models.json
        against the id init mapped), said by the reader plan and run take (issue 31 §1)."""
        profile = self._profiles[backend]
        pairs = copied_files(profile.credentials, self._environ)
        if not pairs:
            return
        copies = read_copies(self._fs, pairs, profile.credentials, self._environ)
        problem = copies_problem(profile, copies, model, self._environ)
        if problem is not None:
            outcome.done.append(
                f"the plan below would be refused until this is repaired: {problem[1]}"
            )

    # --- the writes ---------------------------------------------------------------------------

    def _write(
        self, path: str, text: str, force: bool, outcome: StarterOutcome, what: str
    ) -> bool | Refusal:
        """Write `text` at `path` unless it exists (kept, said) and not `force`."""
        if self._fs.lexists(path) and not force:
            outcome.done.append(f"{what} {path}: kept, it exists (--force replaces it)")
            return False
        try:
            self._fs.makedirs(posixpath.dirname(path), 0o755)
            self._fs.write_atomic(path, text, 0o644)
        except FileSystemError as error:
            return _refusal(f"{path} cannot be written: {error.os_error_text}", path)
        outcome.done.append(f"{what} {path}: written")
        return True

    def _exclude(self, primary: str, outcome: StarterOutcome) -> Refusal | None:
        try:
            _, common = self._git.git_dirs(primary)
        except GitCommandFailed as failed:
            return _refusal(f"the Git directory of {primary} cannot be found ({failed})")
        path = posixpath.join(common, "info", "exclude")
        text = self._small_file(path)
        if text is None and self._fs.lexists(path):
            # A link or an odd file there is the user's arrangement: never replaced by ours.
            outcome.done.append(
                f"{path}: kept, it is no regular file of at most "
                f"{MAX_SETTINGS_BYTES} bytes; add {decide.EXCLUDE_LINE} to it "
                "by hand"
            )
            return None
        new = decide.excluded(text or "")
        if new is None:
            outcome.done.append(f"{path}: already excludes {decide.EXCLUDE_LINE}")
            return None
        written = self._write(path, new, True, outcome, "exclude")
        return written if isinstance(written, Refusal) else None

    def _grant(
        self, primary: str, task: str | None, force: bool, outcome: StarterOutcome
    ) -> Refusal | None:
        try:
            top = [(e.name, e.kind is EntryKind.DIRECTORY) for e in self._fs.listdir(primary)]
        except FileSystemError as error:
            return _refusal(f"{primary} cannot be listed: {error.os_error_text}", primary)
        text = decide.grant_text(top, task or "starter")
        written = self._write(outcome.grant, text, force, outcome, "grant")
        return written if isinstance(written, Refusal) else None

    def _model_map(
        self, file: str, ids: Mapping[str, str], force: bool, outcome: StarterOutcome
    ) -> None:
        """The starter's entry added to the map as the one reader a run takes reads it (issue
        31 §1): a map that reader refuses is kept as it is, its refusal said."""
        found = self._config.model_map([])
        existing: str | None = None
        if isinstance(found, Refusal):
            if found.code is not Code.MODEL_MAP_MISSING or self._fs.lexists(file):
                outcome.done.append(f"model map {file}: kept, a run refuses it: {found.message}")
                return
        else:
            existing = json.dumps({"schema_version": 1, "models": found.models})
        example = next(iter(self._placeholders.items()))
        update = decide.model_map_update(file, existing, ids, force, example)
        if update.text is not None:
            try:
                self._fs.makedirs(posixpath.dirname(file), 0o700)
                self._fs.write_atomic(file, update.text, 0o600)
            except FileSystemError as error:
                outcome.done.append(f"{file}: cannot be written ({error.os_error_text})")
                return
        outcome.done.append(f"model map {update.said}")

    def _workers(
        self, primary: str, task: str | None, backend: str, force: bool, outcome: StarterOutcome
    ) -> Refusal | None:
        text = decide.workers_text(backend)
        if task is None:
            written = self._write(
                posixpath.join(primary, CONFIG_PATH), text, force, outcome, "worker configuration"
            )
            if written is True:
                outcome.done.append(
                    f"commit it on the branch your worktrees are made from: "
                    f"git -C {primary} add {CONFIG_PATH} && git -C {primary} "
                    "commit -m 'Add the Concorde worker configuration'"
                )
            return written if isinstance(written, Refusal) else None
        worktree = posixpath.join(primary, ".claude", "worktrees", task)
        outcome.worktree = worktree
        if self._fs.lexists(worktree):
            outcome.done.append(f"worktree {worktree}: kept, it exists")
        else:
            failed = self._run_git(primary, ["worktree", "add", "-b", task, worktree])
            if failed is not None:
                return _refusal(f"git worktree add {worktree} failed: {failed}", worktree)
            outcome.done.append(f"worktree {worktree}: created on the new branch {task}")
        written = self._write(
            posixpath.join(worktree, CONFIG_PATH), text, force, outcome, "worker configuration"
        )
        if written is not True:
            return written if isinstance(written, Refusal) else None
        failed = self._run_git(worktree, ["add", "--", CONFIG_PATH]) or self._run_git(
            worktree,
            [
                "commit",
                "-m",
                "Add the Concorde worker configuration (concorde-workers init)",
                "--",
                CONFIG_PATH,
            ],
        )
        if failed is not None:
            return _refusal(
                f"the commit of {CONFIG_PATH} in {worktree} failed: {failed}; "
                f"commit it by hand (a run reads it as committed)",
                worktree,
            )
        outcome.done.append(f"committed {CONFIG_PATH} on branch {task}")
        return None

    def _run_git(self, cwd: str, args: Sequence[str]) -> str | None:
        """The user's own `git` in `cwd`; None when it succeeded, else what it said."""
        git = self._fs.which("git", self._environ.get("PATH", ""))
        if git is None:
            return "git is not found on PATH"
        try:
            handle = self._processes.start(
                [git, *args], dict(self._environ), cwd, timeout_seconds=GIT_TIMEOUT_SECONDS
            )
        except ProcessStartFailed as failed:
            return f"git could not be started: {failed.os_error_text}"
        said = "\n".join(handle.lines())
        status = handle.wait(None)
        if status == 0 and not handle.timed_out:
            return None
        err = handle.stderr_tail(4000).decode("utf-8", "replace")
        return (err or said).strip()[-2000:] or f"it exited {status}"


def _next_command(outcome: StarterOutcome, task: str | None) -> str:
    worktree = outcome.worktree or posixpath.join(outcome.primary, ".claude", "worktrees", "<name>")
    prefix = "" if task else "concorde-workers init --task <name>, then "
    return (
        f"{prefix}concorde-workers plan --worktree {worktree} --grant {outcome.grant} "
        "--instructions 'What the worker should do' --operation implement --worker worker"
    )
