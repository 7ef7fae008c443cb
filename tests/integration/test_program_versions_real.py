"""Issue 11: InstalledProgramVersions over real files and real processes.

A program in its npm package is never started: its package.json says the version. One in no
package is asked `--version` once; the answer is cached per user by the file's path, size and
modification time, so the next preparation pays no start-up, and a changed file is asked again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from concorde_workers.adapters.machine.filesystem import LocalFileSystem
from concorde_workers.adapters.processes import program_versions
from concorde_workers.adapters.processes.process import SubprocessRunner
from concorde_workers.adapters.processes.program_versions import (
    InstalledProgramVersions,
    cache_path,
)
from concorde_workers.container import PROFILES
from concorde_workers.domain.configuration.profile import programs_of
from concorde_workers.domain.configuration.program_versions import ProgramLocation

PROGRAMS = programs_of(PROFILES)


def reader(root: Path, **environ: str) -> InstalledProgramVersions:
    env = {"PATH": "/usr/bin:/bin", "XDG_CACHE_HOME": str(root / "cache"), **environ}
    return InstalledProgramVersions(LocalFileSystem(), SubprocessRunner(), env)


def script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def counting(path: Path, says: str, runs: Path) -> Path:
    """A program that notes each start in `runs` and says `says` on stdout."""
    return script(path, f"echo run >> {runs}\necho '{says}'")


def starts(runs: Path) -> int:
    return len(runs.read_text().splitlines()) if runs.exists() else 0


def test_a_program_in_its_npm_package_is_never_started(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    package = tmp_path / "lib" / "node_modules" / "@anthropic-ai" / "claude-code"
    exe = counting(package / "bin" / "claude.exe", "9.9.9 (Claude Code)", runs)
    (package / "package.json").write_text(
        json.dumps({"name": "@anthropic-ai/claude-code", "version": "2.1.332"})
    )
    (tmp_path / "lib" / "node_modules" / ".bin").mkdir()
    link = tmp_path / "lib" / "node_modules" / ".bin" / "claude"
    link.symlink_to("../@anthropic-ai/claude-code/bin/claude.exe")
    found = reader(tmp_path).version_of(ProgramLocation(spec=PROGRAMS["claude"], path=str(link)))
    assert (found.version, found.source, found.problem) == (
        "2.1.332",
        str(package / "package.json"),
        None,
    )
    assert starts(runs) == 0 and exe.exists()
    assert not (tmp_path / "cache").exists()  # nothing to cache


def test_another_package_json_above_the_program_is_not_its_own(tmp_path: Path) -> None:
    """A wrapper that lies in some project's package is asked itself."""
    runs = tmp_path / "runs"
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "package.json").write_text(
        json.dumps({"name": "my-project", "version": "1.0.0"})
    )
    wrapper = counting(tmp_path / "project" / "bin" / "claude", "2.1.333 (Claude Code)", runs)
    found = reader(tmp_path).version_of(ProgramLocation(spec=PROGRAMS["claude"], path=str(wrapper)))
    assert (found.version, found.source) == ("2.1.333", f"`{wrapper} --version`")
    assert starts(runs) == 1


def test_a_program_in_no_package_is_asked_once_then_read_from_the_cache(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    program = counting(tmp_path / "bin" / "claude", "2.1.340 (Claude Code)", runs)
    location = ProgramLocation(spec=PROGRAMS["claude"], path=str(program))
    first = reader(tmp_path).version_of(location)
    assert (first.version, first.source, first.problem) == (
        "2.1.340",
        f"`{program} --version`",
        None,
    )
    assert starts(runs) == 1
    cache = Path(str(cache_path({"XDG_CACHE_HOME": str(tmp_path / "cache")})))
    assert cache.stat().st_mode & 0o777 == 0o600
    again = reader(tmp_path).version_of(location)  # a later preparation: no start-up
    assert again.version == "2.1.340" and again.source.endswith(f"as cached in {cache}")
    assert starts(runs) == 1
    # the program changed (an upgrade in place): asked again
    counting(program, "2.1.400 (Claude Code)", runs)
    os.utime(program, (1, 1))
    upgraded = reader(tmp_path).version_of(location)
    assert upgraded.version == "2.1.400" and starts(runs) == 2


def test_what_the_program_prints_on_stderr_counts_too(tmp_path: Path) -> None:
    """pi says its version on stderr."""
    pi = script(tmp_path / "bin" / "pi", "echo 0.73.1 >&2")
    found = reader(tmp_path).version_of(ProgramLocation(spec=PROGRAMS["pi"], path=str(pi)))
    assert found.version == "0.73.1"


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("echo 'usage: claude [options]'", "it exited 0 and printed 'usage: claude [options]'"),
        (
            "echo 'unknown option --version' >&2; exit 3",
            "it exited 3 and printed 'unknown option --version'",
        ),
        ("echo 2.1.400; exit 1", "it exited 1 and printed '2.1.400'"),
    ],
)
def test_a_program_that_says_no_version_is_not_cached(tmp_path: Path, body: str, said: str) -> None:
    program = script(tmp_path / "bin" / "claude", body)
    found = reader(tmp_path).version_of(ProgramLocation(spec=PROGRAMS["claude"], path=str(program)))
    assert (found.version, found.problem) == (None, said)
    assert not (tmp_path / "cache").exists()


def test_a_program_that_does_not_answer_is_stopped_at_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(program_versions, "VERSION_TIMEOUT_SECONDS", 0.5)
    program = script(tmp_path / "bin" / "claude", "exec sleep 600")
    found = reader(tmp_path).version_of(ProgramLocation(spec=PROGRAMS["claude"], path=str(program)))
    assert (found.version, found.problem) == (None, "it did not answer within 0.5 s")


def test_the_sandbox_runtime_is_its_package_directory(tmp_path: Path) -> None:
    package = tmp_path / "srt"
    package.mkdir()
    location = ProgramLocation(spec=PROGRAMS["sandbox-runtime"], path=str(package))
    missing = reader(tmp_path).version_of(location)
    assert missing.version is None
    assert missing.problem == "no package.json of @anthropic-ai/sandbox-runtime with a version"
    (package / "package.json").write_text(
        json.dumps({"name": "@anthropic-ai/sandbox-runtime", "version": "0.0.83"})
    )
    found = reader(tmp_path).version_of(location)
    assert (found.version, found.source) == ("0.0.83", str(package / "package.json"))


def test_a_damaged_or_unwritable_cache_costs_a_start_up_never_a_version(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    program = counting(tmp_path / "bin" / "claude", "2.1.340", runs)
    location = ProgramLocation(spec=PROGRAMS["claude"], path=str(program))
    cache = tmp_path / "cache" / "concorde-workers" / "program-versions.json"
    cache.parent.mkdir(parents=True)
    cache.write_text("{not json")
    assert reader(tmp_path).version_of(location).version == "2.1.340"
    assert json.loads(cache.read_text())["programs"][str(program)]["version"] == "2.1.340"
    # no home for a cache at all: asked every time, still answered
    homeless = InstalledProgramVersions(
        LocalFileSystem(), SubprocessRunner(), {"PATH": "/usr/bin:/bin"}
    )
    assert homeless.version_of(location).version == "2.1.340"
    assert homeless.version_of(location).version == "2.1.340"
    assert starts(runs) == 3


def test_the_cache_follows_xdg_then_home() -> None:
    assert cache_path({"XDG_CACHE_HOME": "/c", "HOME": "/h"}) == (
        "/c/concorde-workers/program-versions.json"
    )
    assert cache_path({"XDG_CACHE_HOME": "relative", "HOME": "/h"}) == (
        "/h/.cache/concorde-workers/program-versions.json"
    )
    assert cache_path({"HOME": ""}) is None


def test_a_program_no_version_is_relied_on_is_never_started(tmp_path: Path) -> None:
    """A backend's program with no minimum (issue 22 §1): nothing is asked of it."""
    runs = tmp_path / "runs"
    program = counting(tmp_path / "bin" / "replay", "replay 1.0.0", runs)
    spec = PROGRAMS["claude"].model_copy(
        update={"program": "replay", "package": None, "pinned": None, "minimum": None}
    )
    found = reader(tmp_path).version_of(ProgramLocation(spec=spec, path=str(program)))
    assert (found.version, found.problem) == (None, None)
    assert starts(runs) == 0
