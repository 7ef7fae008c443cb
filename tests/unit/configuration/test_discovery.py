"""Where an agent program is found (domain/configuration/discovery.py, issue 12 §2): its variable, PATH (or
the primary worktree's pi-runtime for sandbox-runtime), then the checkout's and the user data
folder's pinned node_modules, each found program saying where it came from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes.filesystem import FakeFileSystem

from concorde_workers.adapters.pi.prerequisites import HOW_TO_PROVIDE
from concorde_workers.container import PROFILES
from concorde_workers.domain.configuration.discovery import (
    CHECKOUT,
    USER_DATA,
    Installation,
    installations,
    locate,
    looked_at,
    user_data_folder,
)
from concorde_workers.domain.configuration.profile import pins_of, programs_of

PROGRAMS = programs_of(PROFILES)
PINNED = pins_of(PROFILES)

REPO = Path(__file__).resolve().parents[3]
HOME = "/home/dev"
CHECKOUT_MODULES = "/src/concorde-workers/node_modules"
DATA_MODULES = f"{HOME}/.local/share/concorde-workers/node_modules"
FOUND_IN = (Installation(CHECKOUT, CHECKOUT_MODULES), Installation(USER_DATA, DATA_MODULES))
ENV = {"HOME": HOME, "PATH": "/usr/bin:/bin"}


def fs_with(*programs: str, packages: tuple[str, ...] = ()) -> FakeFileSystem:
    fs = FakeFileSystem()
    for path in programs:
        fs.write(path, "#!/bin/sh\n", 0o755)
    for package in packages:
        fs.write(f"{package}/dist/index.js", "// srt\n")
    return fs


def test_the_user_data_folder_is_xdg_data_home_else_the_homes_local_share() -> None:
    assert user_data_folder({"HOME": HOME}) == f"{HOME}/.local/share/concorde-workers"
    assert user_data_folder({"HOME": HOME, "XDG_DATA_HOME": "/data"}) == "/data/concorde-workers"
    assert (
        user_data_folder({"HOME": HOME, "XDG_DATA_HOME": "rel"})
        == f"{HOME}/.local/share/concorde-workers"
    )
    assert user_data_folder({"HOME": "relative"}) is None
    assert installations("/src/concorde-workers", ENV) == FOUND_IN
    assert installations(None, ENV) == FOUND_IN[1:]
    assert installations(None, {}) == ()


@pytest.mark.parametrize("program", ["claude", "pi"])
def test_a_program_is_taken_from_its_variable_then_path_then_checkout_then_user_data(
    program: str,
) -> None:
    variable = f"CONCORDE_{program.upper()}"
    everywhere = fs_with(
        f"/opt/{program}",
        f"/usr/bin/{program}",
        f"{CHECKOUT_MODULES}/.bin/{program}",
        f"{DATA_MODULES}/.bin/{program}",
    )
    named = locate(PROGRAMS[program], {**ENV, variable: f"/opt/{program}"}, FOUND_IN, everywhere)
    assert named is not None and (named.path, named.origin) == (f"/opt/{program}", f"${variable}")
    on_path = locate(PROGRAMS[program], ENV, FOUND_IN, everywhere)
    assert on_path is not None and (on_path.path, on_path.origin) == (f"/usr/bin/{program}", "PATH")
    pinned = fs_with(f"{CHECKOUT_MODULES}/.bin/{program}", f"{DATA_MODULES}/.bin/{program}")
    checkout = locate(PROGRAMS[program], ENV, FOUND_IN, pinned)
    assert checkout is not None and checkout.path == f"{CHECKOUT_MODULES}/.bin/{program}"
    assert checkout.origin.startswith("this checkout's node_modules (/src/concorde-workers")
    data = locate(PROGRAMS[program], ENV, FOUND_IN, fs_with(f"{DATA_MODULES}/.bin/{program}"))
    assert data is not None and data.path == f"{DATA_MODULES}/.bin/{program}"
    assert data.origin.startswith("the user data folder (")
    assert locate(PROGRAMS[program], ENV, FOUND_IN, fs_with()) is None


def test_a_variable_naming_a_missing_program_is_never_replaced_by_another() -> None:
    fs = fs_with(f"{CHECKOUT_MODULES}/.bin/pi", "/usr/bin/pi")
    assert locate(PROGRAMS["pi"], {**ENV, "CONCORDE_PI": "/nowhere/pi"}, FOUND_IN, fs) is None
    assert locate(PROGRAMS["pi"], {**ENV, "CONCORDE_PI": "no-such-pi"}, FOUND_IN, fs) is None
    assert looked_at(PROGRAMS["pi"], {**ENV, "CONCORDE_PI": "/nowhere/pi"}, FOUND_IN) == [
        "$CONCORDE_PI (/nowhere/pi)"
    ]


def test_an_empty_variable_counts_as_unset() -> None:
    found = locate(PROGRAMS["pi"], {**ENV, "CONCORDE_PI": ""}, FOUND_IN, fs_with("/usr/bin/pi"))
    assert found is not None and found.origin == "PATH"


def test_a_file_that_is_not_executable_is_no_program() -> None:
    fs = FakeFileSystem()
    fs.write(f"{CHECKOUT_MODULES}/.bin/pi", "text", 0o644)
    assert locate(PROGRAMS["pi"], ENV, FOUND_IN, fs) is None


def test_sandbox_runtime_comes_from_its_variable_the_primary_worktree_then_the_installations() -> (
    None
):
    primary = "/work/repo"
    own = f"{primary}/.concorde/tools/pi-runtime/node_modules/@anthropic-ai/sandbox-runtime"
    pinned = f"{CHECKOUT_MODULES}/@anthropic-ai/sandbox-runtime"
    fs = fs_with(packages=("/opt/srt", own, pinned))
    named = locate(
        PROGRAMS["sandbox-runtime"],
        {**ENV, "CONCORDE_SANDBOX_RUNTIME": "/opt/srt"},
        FOUND_IN,
        fs,
        primary,
    )
    assert named is not None and named.origin == "$CONCORDE_SANDBOX_RUNTIME"
    in_primary = locate(PROGRAMS["sandbox-runtime"], ENV, FOUND_IN, fs, primary)
    assert in_primary is not None and in_primary.path == own
    checkout = locate(
        PROGRAMS["sandbox-runtime"], ENV, FOUND_IN, fs_with(packages=(pinned,)), primary
    )
    assert checkout is not None and checkout.path == pinned
    # A package directory without its entry is not a package.
    empty = FakeFileSystem()
    empty.mkdir(pinned)
    assert locate(PROGRAMS["sandbox-runtime"], ENV, FOUND_IN, empty, primary) is None
    assert looked_at(PROGRAMS["sandbox-runtime"], ENV, FOUND_IN, primary) == [
        "$CONCORDE_SANDBOX_RUNTIME (unset)",
        own,
        pinned,
        f"{DATA_MODULES}/@anthropic-ai/sandbox-runtime",
    ]


def test_the_pins_the_hints_name_are_package_jsons() -> None:
    """scripts/bump-agents moves package.json and each backend profile's PINS together."""
    dependencies = json.loads((REPO / "package.json").read_text())["dependencies"]
    assert dict(PINNED) == dependencies


@pytest.mark.parametrize("program", ["claude", "pi", "sandbox-runtime"])
def test_every_repair_hint_names_install_agents_and_the_exact_pinned_version(program: str) -> None:
    row = PROGRAMS[program]
    exact = f"{row.package}@{PINNED[row.package]}"
    assert "concorde-workers install-agents" in row.upgrade and exact in row.upgrade
    assert "@latest" not in row.upgrade
    if program != "claude":
        assert "concorde-workers install-agents" in HOW_TO_PROVIDE[program]
        assert exact in HOW_TO_PROVIDE[program]
