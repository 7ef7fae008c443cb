"""Issue 11: the agent programs' versions, the oldest each backend's generated settings rely on,
and the refusal of an older program or one whose version cannot be read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes.filesystem import FakeFileSystem

from concorde_workers.application.preparation.program_identity import program_changed, with_identity
from concorde_workers.container import PROFILES
from concorde_workers.domain.configuration.profile import programs_of
from concorde_workers.domain.configuration.program_versions import (
    ProgramVersion,
    parse_programs_document,
    parse_version,
    programs_document,
    programs_text,
    version_problem,
    version_refusal,
    version_text,
)

PROGRAMS = programs_of(PROFILES)
PINNED = {name: spec for name, spec in PROGRAMS.items() if spec.minimum and spec.package}
"""The registered programs this copy pins and floors (a backend's program need be neither)."""

LOCK = Path(__file__).resolve().parents[3] / "package-lock.json"


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("2.1.332 (Claude Code)", (2, 1, 332)),
        ("0.73.1", (0, 73, 1)),
        ("v0.0.83\n", (0, 0, 83)),
        ("claude-cli/2.1.197 (external, sdk-cli)", (2, 1, 197)),
        ("2.1.332-beta.1", (2, 1, 332)),
        ("version 10.20.30 and 1.2.3", (10, 20, 30)),
        ("1.2", None),
        ("127.0.0.1.5", None),
        ("", None),
        ("no version here", None),
    ],
)
def test_a_version_is_the_first_major_minor_patch_of_what_a_program_says(
    text: str, parsed: tuple[int, int, int] | None
) -> None:
    assert parse_version(text) == parsed
    assert version_text(text) == (None if parsed is None else ".".join(map(str, parsed)))


def found(program: str, version: str | None, problem: str | None = None) -> ProgramVersion:
    return ProgramVersion(
        spec=PROGRAMS[program],
        path=f"/opt/{program}",
        version=version,
        source=f"/opt/{program}/package.json",
        problem=problem,
    )


@pytest.mark.parametrize("program", sorted(PINNED))
def test_the_minimum_and_newer_versions_will_do(program: str) -> None:
    least = parse_version(PROGRAMS[program].minimum)
    assert least is not None
    major, minor, patch = least
    for version in (
        f"{major}.{minor}.{patch}",
        f"{major}.{minor}.{patch + 1}",
        f"{major}.{minor + 1}.0",
        f"{major + 1}.0.0",
    ):
        assert version_problem(found(program, version)) is None, version
    assert version_refusal([found(program, PROGRAMS[program].minimum)]) is None


def test_the_pinned_programs_are_at_least_their_minimums() -> None:
    """package-lock.json never pins a program older than the policy relies on."""
    packages = json.loads(LOCK.read_text())["packages"]
    for row in PINNED.values():
        pinned = packages[f"node_modules/{row.package}"]["version"]
        assert version_problem(found(row.program, pinned)) is None, (row.program, pinned)


@pytest.mark.parametrize(
    ("program", "older", "code"),
    [
        ("claude", "2.1.197", "launch_failed"),
        ("claude", "2.1.331", "launch_failed"),
        ("claude", "1.99.999", "launch_failed"),
        ("pi", "0.73.0", "pi_runtime_missing"),
        ("sandbox-runtime", "0.0.77", "pi_runtime_missing"),
    ],
)
def test_an_older_program_is_refused_naming_it_its_version_the_minimum_and_the_upgrade(
    program: str, older: str, code: str
) -> None:
    row = PROGRAMS[program]
    refusal = version_refusal([found(program, older)])
    assert refusal is not None
    assert refusal.code == code and refusal.reason.value == "environment"
    assert refusal.file == f"/opt/{program}"
    message = refusal.message
    assert f"{row.title} at /opt/{program} is version {older}" in message
    assert f"older than {row.minimum}" in message
    assert row.upgrade in message
    assert f"from /opt/{program}/package.json" in message


def test_a_program_whose_version_cannot_be_read_is_refused_with_what_it_said() -> None:
    problem = "it exited 1 and printed 'unknown option'"
    refusal = version_refusal([found("claude", None, problem)])
    assert refusal is not None and refusal.code == "launch_failed"
    assert "could not be read (it exited 1 and printed 'unknown option')" in refusal.message
    assert "2.1.332 or newer" in refusal.message
    garbled = version_refusal([found("pi", "a build of today")])
    assert garbled is not None and garbled.code == "pi_runtime_missing"


def test_the_first_program_that_will_not_do_is_refused() -> None:
    refusal = version_refusal([found("pi", "0.73.1"), found("sandbox-runtime", "0.0.1")])
    assert refusal is not None and "sandbox-runtime at /opt/sandbox-runtime" in refusal.message
    assert refusal.message.startswith("the pi backend needs programs this machine lacks")


def test_programs_json_reads_back_as_written() -> None:
    programs = (found("pi", "0.73.1"), found("sandbox-runtime", None, "no package.json"))
    text = programs_text(programs)
    assert json.loads(text) == programs_document(programs)
    assert json.loads(text)["programs"][0] == {
        "program": "pi",
        "path": "/opt/pi",
        "version": "0.73.1",
        "minimum": "0.73.1",
        "source": "/opt/pi/package.json",
        "problem": None,
        "origin": None,
    }
    assert parse_programs_document(json.loads(text), PROGRAMS) == programs
    for damaged in (
        None,
        [],
        {"programs": [{"program": "emacs"}]},
        {"programs": [{"program": "pi"}]},
        {"programs": "pi"},
    ):
        assert parse_programs_document(damaged, PROGRAMS) is None, damaged


def test_a_program_line_says_version_minimum_path_and_source() -> None:
    assert found("claude", "2.1.332").line() == (
        "claude 2.1.332 (at least 2.1.332) /opt/claude  ← /opt/claude/package.json"
    )
    assert found("pi", None, "it printed nothing").line() == (
        "pi version unknown (at least 0.73.1) /opt/pi  ← it printed nothing"
    )


def test_the_quickstart_names_the_pinned_versions() -> None:
    """README's Quickstart says which programs scripts/setup installs (scripts/bump-agents
    rewrites the line when it moves the pins)."""
    packages = json.loads(LOCK.read_text())["packages"]
    version = {
        row.program: packages[f"node_modules/{row.package}"]["version"] for row in PINNED.values()
    }
    readme = (LOCK.parent / "README.md").read_text()
    assert (
        f"(Claude Code {version['claude']}, pi {version['pi']}, sandbox-runtime "
        f"{version['sandbox-runtime']}, the Codex CLI {version['codex']})"
    ) in readme


# --- the program that runs is the one checked ---------------------------------------------------


def test_a_program_changed_since_its_version_was_read_stops_the_next_round() -> None:
    """One stat of the program and of its version's source per round (docs/decisions.md "The
    program that runs is the one checked")."""
    fs = FakeFileSystem()
    fs.write("/opt/cc/node_modules/@anthropic-ai/claude-code/bin/claude.exe", "ELF-1")
    fs.write("/opt/cc/node_modules/@anthropic-ai/claude-code/package.json", '{"v": 1}')
    fs.symlink("/opt/cc/node_modules/@anthropic-ai/claude-code/bin/claude.exe", "/usr/bin/claude")
    found = with_identity(
        fs,
        ProgramVersion(
            spec=PROGRAMS["claude"],
            path="/usr/bin/claude",
            version="2.1.332",
            source="/opt/cc/node_modules/@anthropic-ai/claude-code/package.json",
        ),
    )
    assert found.identity is not None
    assert program_changed(fs, [found]) is None
    fs.write("/opt/cc/node_modules/@anthropic-ai/claude-code/bin/claude.exe", "ELF-2, longer")
    problem = program_changed(fs, [found])
    assert problem == (
        "Claude Code at /usr/bin/claude changed after the run was prepared, when its version "
        "2.1.332 was read and checked (from /opt/cc/node_modules/@anthropic-ai/claude-code/"
        "package.json): the round is not started with a program nobody checked; start a new "
        "run to check the one now in place"
    )
    fs.remove("/usr/bin/claude")
    assert program_changed(fs, [found]) is not None  # gone is changed too
    unread = ProgramVersion(
        spec=PROGRAMS["pi"], path="/nowhere/pi", version=None, source="--version"
    )
    assert with_identity(fs, unread).identity is None
    assert program_changed(fs, [with_identity(fs, unread)]) is None  # nothing to compare


def test_a_program_no_version_is_relied_on_is_never_refused_for_its_version() -> None:
    """A backend's program this copy neither pins nor floors (issue 22 §1: a backend need not be
    an npm package): its version is not asked, and nothing refuses it for one."""
    from concorde_workers.domain.configuration.profile import pins_of
    from concorde_workers.domain.configuration.program_versions import ProgramSpec, pinned

    spec = ProgramSpec(
        program="replay",
        title="the replay agent",
        upgrade="",
        provide="",
        code=PROGRAMS["claude"].code,
        refused="{problem}",
        variable="CONCORDE_REPLAY",
        in_node_modules=".bin/replay",
    )
    unread = ProgramVersion(spec=spec, path="/opt/replay", version=None, source="not asked")
    assert version_problem(unread) is None and version_refusal([unread]) is None
    assert not unread.too_old and unread.line() == "replay version unknown /opt/replay  ← not asked"
    assert pinned(spec) == "replay"
    assert pins_of({"x": PROFILES["claude"].model_copy(update={"programs": (spec,)})}) == {}


def test_a_program_this_copy_does_not_pin_is_never_said_to_be_installed_by_it() -> None:
    """backend_missing for an unpinned program names no install-agents it would not do."""
    from concorde_workers.domain.configuration.config import WorkerChoice
    from concorde_workers.domain.configuration.machine import backend_missing

    spec = PROGRAMS["claude"].model_copy(
        update={
            "program": "replay",
            "package": None,
            "pinned": None,
            "minimum": None,
            "variable": "CONCORDE_REPLAY",
        }
    )
    choice = WorkerChoice(
        operation="op",
        worker="w",
        backend="pi",
        backend_source="default",
        model="m",
        model_source="default",
        reasoning=None,
        reasoning_source=None,
    )
    message = backend_missing(
        choice, spec, {}, "/w/.concorde/workers.json", ["pi", "claude"]
    ).message
    assert "Install replay on PATH or set CONCORDE_REPLAY to its absolute path" in message
    assert "install-agents" not in message
    pinned_one = backend_missing(choice, PROGRAMS["pi"], {}, "/f", ["pi", "claude"]).message
    assert "concorde-workers install-agents (it installs the pinned" in pinned_one
