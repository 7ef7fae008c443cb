"""The installed agent programs' versions, read without a start-up wherever possible.

In order:

1. the npm package.json of the program's own package: the nearest one above the file the path
   resolves to (`node_modules/.bin/claude` -> `@anthropic-ai/claude-code/bin/claude.exe` ->
   `@anthropic-ai/claude-code/package.json`), taken only when its `name` is the program's
   package; sandbox-runtime's path is its package directory, whose package.json says it;
2. for a program in no such package (Claude Code's native installer, a wrapper script): the
   per-user cache of what `<program> --version` said, keyed by the resolved file's path, size and
   modification time, so a changed file is asked again;
3. else `<program> --version` itself (stdout and stderr, a bounded wait), whose answer goes into
   the cache.

The cache is one small JSON file, `$XDG_CACHE_HOME/concorde-workers/program-versions.json` (else
`~/.cache/...`), written atomically, at most `CACHE_ENTRIES` programs; a cache that is missing,
unreadable or damaged is read as empty, and one that cannot be written is left alone (the version
is then asked again next time). Nothing in it decides anything but a version: a wrong entry can
only refuse a program or let one run that the policy was not verified with, as the program
itself could by printing another version.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping
from typing import Any

from concorde_workers.domain.configuration.program_versions import (
    ProgramLocation,
    ProgramVersion,
    version_text,
)
from concorde_workers.domain.ground import json_limits
from concorde_workers.ports.machine.filesystem import FileKeeping, FileSystemError
from concorde_workers.ports.processes.process import ProcessRunner, ProcessStartFailed

CACHE_FILE = posixpath.join("concorde-workers", "program-versions.json")
CACHE_ENTRIES = 64
PACKAGE_LEVELS = 4
"""How many directories above the program's file its package.json may lie (bin/, dist/...)."""
VERSION_TIMEOUT_SECONDS = 60.0
"""The bound of `<program> --version` (a node program starts in seconds on a busy machine)."""
OUTPUT_LIMIT = 2000


def cache_path(environ: Mapping[str, str]) -> str | None:
    """Where the per-user cache lives, None when the environment names no home for it."""
    base = environ.get("XDG_CACHE_HOME", "")
    if not posixpath.isabs(base):
        home = environ.get("HOME", "")
        if not posixpath.isabs(home):
            return None
        base = posixpath.join(home, ".cache")
    return posixpath.join(base, CACHE_FILE)


class InstalledProgramVersions:
    """ProgramVersions over the filesystem and the process runner."""

    def __init__(
        self, fs: FileKeeping, processes: ProcessRunner, environ: Mapping[str, str]
    ) -> None:
        self._fs = fs
        self._processes = processes
        self._environ = environ
        self._cache_file = cache_path(environ)

    def version_of(self, location: ProgramLocation) -> ProgramVersion:
        row = location.spec
        if row.minimum is None:  # no version is relied on: none is asked of the program
            return ProgramVersion(
                spec=row,
                path=location.path,
                version=None,
                source="not asked: the policy relies on no version of it",
            )
        try:
            real = self._fs.realpath(location.path)
        except FileSystemError as error:
            return self._unread(
                location, "it", f"its path cannot be resolved: {error.os_error_text}"
            )
        if row.is_package_directory:
            manifest = posixpath.join(real, "package.json")
            found = self._package_version(manifest, row.package or "")
            if found is not None:
                return ProgramVersion(
                    spec=location.spec, path=location.path, version=found, source=manifest
                )
            return self._unread(
                location, manifest, f"no package.json of {row.package} with a version"
            )
        for manifest in self._manifests_above(real):
            found = self._package_version(manifest, row.package or "")
            if found is not None:
                return ProgramVersion(
                    spec=location.spec, path=location.path, version=found, source=manifest
                )
        return self._asked(location, real)

    # --- package.json ---------------------------------------------------------------------------

    def _manifests_above(self, real: str) -> list[str]:
        found: list[str] = []
        directory = posixpath.dirname(real)
        for _ in range(PACKAGE_LEVELS):
            found.append(posixpath.join(directory, "package.json"))
            if directory == "/" or posixpath.basename(directory) == "node_modules":
                break
            directory = posixpath.dirname(directory)
        return found

    def _package_version(self, manifest: str, package: str) -> str | None:
        if not self._fs.is_file(manifest):
            return None
        try:
            data = json_limits.loads(self._fs.read_text(manifest))
        except (FileSystemError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("name") != package:
            return None
        version = data.get("version")
        return version_text(version) if isinstance(version, str) else None

    # --- --version, cached ----------------------------------------------------------------------

    def _asked(self, location: ProgramLocation, real: str) -> ProgramVersion:
        command = f"{location.path} --version"
        try:
            stat = self._fs.stat(real)
        except FileSystemError as error:
            return self._unread(
                location, f"`{command}`", f"the program cannot be read: {error.os_error_text}"
            )
        key = {"size": stat.size, "mtime": stat.mtime}
        cache = self._read_cache()
        entry = cache.get(real)
        if (
            isinstance(entry, dict)
            and {k: entry.get(k) for k in key} == key
            and isinstance(entry.get("version"), str)
        ):
            return ProgramVersion(
                spec=location.spec,
                path=location.path,
                version=entry["version"],
                source=f"`{command}`, as cached in {self._cache_file}",
            )
        said, problem = self._run_version(location.path)
        if said is None:
            return self._unread(location, f"`{command}`", problem)
        cache[real] = {**key, "version": said}
        self._write_cache(cache)
        return ProgramVersion(
            spec=location.spec, path=location.path, version=said, source=f"`{command}`"
        )

    def _run_version(self, program: str) -> tuple[str | None, str]:
        env = {
            name: self._environ[name]
            for name in ("PATH", "HOME", "LANG")
            if self._environ.get(name)
        }
        try:
            handle = self._processes.start(
                [program, "--version"], env, "/", timeout_seconds=VERSION_TIMEOUT_SECONDS
            )
        except ProcessStartFailed as failed:
            return None, f"it could not be started: {failed.os_error_text}"
        out = "\n".join(handle.lines())
        status = handle.wait(None)
        err = handle.stderr_tail(OUTPUT_LIMIT).decode("utf-8", "replace")
        if handle.timed_out:
            return None, f"it did not answer within {VERSION_TIMEOUT_SECONDS:g} s"
        said = version_text(out) or version_text(err)
        if status != 0 or said is None:
            shown = (out.strip() or err.strip() or "nothing")[:OUTPUT_LIMIT]
            return None, f"it exited {status} and printed {shown!r}"
        return said, ""

    def _read_cache(self) -> dict[str, Any]:
        if self._cache_file is None or not self._fs.is_file(self._cache_file):
            return {}
        try:
            data = json_limits.loads(self._fs.read_text(self._cache_file))
        except (FileSystemError, ValueError):
            return {}
        programs = data.get("programs") if isinstance(data, dict) else None
        return dict(programs) if isinstance(programs, dict) else {}

    def _write_cache(self, cache: dict[str, Any]) -> None:
        if self._cache_file is None:
            return
        kept = dict(list(cache.items())[-CACHE_ENTRIES:])
        try:
            self._fs.makedirs(posixpath.dirname(self._cache_file), 0o700)
            self._fs.write_atomic(
                self._cache_file, json.dumps({"programs": kept}, indent=1) + "\n", 0o600
            )
        except FileSystemError:
            return  # asked again next time; the version itself was read

    @staticmethod
    def _unread(location: ProgramLocation, source: str, problem: str) -> ProgramVersion:
        return ProgramVersion(
            spec=location.spec, path=location.path, version=None, source=source, problem=problem
        )
