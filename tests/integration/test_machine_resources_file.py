"""Reading a machine's resources.json from disk (issue 20 §1): bounded, never through a FIFO
or a link, a missing file the built-in setting, every bad one said naming it and the repair."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from concorde_workers.adapters.machine.filesystem import LocalFileSystem
from concorde_workers.application.setup.resources import read_machine_resources
from concorde_workers.domain.configuration.machine_resources import (
    MAX_RESOURCES_BYTES,
    MachineResources,
    WithoutGroups,
)
from concorde_workers.domain.configuration.resources import ResourceLimits


def read(path: Path | str) -> MachineResources:
    return read_machine_resources(LocalFileSystem(), {"CONCORDE_RESOURCES": str(path)})


def test_a_file_is_read_and_its_setting_given(tmp_path: Path) -> None:
    file = tmp_path / "resources.json"
    file.write_text(
        '{"schema_version": 1, "defaults": {"memory_mib": 2048}, "without_groups": "refuse"}'
    )
    assert read(file) == MachineResources(
        defaults=ResourceLimits(memory_mib=2048),
        without_groups=WithoutGroups.REFUSE,
        file=str(file),
    )


def test_no_file_beside_the_model_map_is_the_built_in_setting(tmp_path: Path) -> None:
    beside_the_map = {"CONCORDE_MODEL_MAP": str(tmp_path / "models.json")}
    assert read_machine_resources(LocalFileSystem(), beside_the_map) == MachineResources()


def test_a_variable_naming_no_file_is_refused_never_the_built_in_setting(tmp_path: Path) -> None:
    """Issue 31 §1: a setting the machine's owner named is honoured or refused."""
    got = read(tmp_path / "resources.json")
    assert got.problem is not None and got.problem.startswith(
        f"CONCORDE_RESOURCES names {tmp_path}/resources.json, which does not exist: create it"
    )
    assert got.refusal(False, None) == got.problem


@pytest.mark.parametrize("kind", ["fifo", "link", "directory", "oversized", "not-utf8"])
def test_a_file_that_cannot_be_read_is_said_never_followed_or_waited_on(
    tmp_path: Path, kind: str
) -> None:
    file = tmp_path / "resources.json"
    if kind == "fifo":
        os.mkfifo(file)  # read, it would wait for a writer for ever
    elif kind == "link":
        (tmp_path / "elsewhere.json").write_text('{"schema_version": 1}')
        file.symlink_to(tmp_path / "elsewhere.json")
    elif kind == "directory":
        file.mkdir()
    elif kind == "oversized":
        file.write_text('{"schema_version": 1, "x": "' + "y" * MAX_RESOURCES_BYTES + '"}')
    else:
        file.write_bytes(b'{"schema_version": 1, "\xff": 1}')
    got = read(file)
    assert got.problem is not None and got.problem.startswith(f"{file} cannot be read"), got
    assert got.refusal(False, None) == got.problem


def test_a_relative_path_is_refused_naming_the_variable() -> None:
    got = read("resources.json")
    assert got.problem is not None
    assert got.problem.startswith("CONCORDE_RESOURCES gives the relative path 'resources.json'")
