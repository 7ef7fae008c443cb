"""The README's code blocks, read from README.md itself (issue 31 §1): each is a file a user
writes, a command or a program a user runs, or plain text; each file is taken by the reader a
run takes it with, and each `cw` command by the command line's parser. tests/e2e/test_readme_e2e.py
runs them all, in order, on a fresh project; this is the quick half, which a changed example
fails at once."""

from __future__ import annotations

import json
import posixpath
import shlex

import pytest
from fakes.filesystem import FakeFileSystem
from readme_blocks import KINDS, Block, readme_blocks

from concorde_workers.adapters.claude.profile import CLAUDE
from concorde_workers.adapters.cli.parser import parser
from concorde_workers.adapters.pi.profile import PI
from concorde_workers.application.setup.config import ConfigurationReader
from concorde_workers.application.setup.machine_files import (
    backend_machine_file,
    copies_problem,
    read_copies,
)
from concorde_workers.application.setup.resources import read_machine_resources
from concorde_workers.container import PROFILES
from concorde_workers.domain.boundary.grant import Grant, parse_grant
from concorde_workers.domain.configuration.config import WorkerConfiguration
from concorde_workers.domain.configuration.credentials import config_directory
from concorde_workers.domain.configuration.machine import ModelMap

HOME = "/home/ada"
ENV = {"HOME": HOME, "PATH": "/usr/bin:/bin", "GATEWAY_TOKEN": "t", "LOCAL_API_KEY": "k"}
BLOCKS = readme_blocks()


def at_home(target: str) -> str:
    assert target.startswith("~/"), target
    return HOME + target[1:]


def files() -> dict[str, Block]:
    return {at_home(b.target or ""): b for b in BLOCKS if b.kind == "json"}


@pytest.fixture
def machine() -> FakeFileSystem:
    """Every file the README has a user write, where it says."""
    fs = FakeFileSystem()
    for path, block in files().items():
        fs.write(path, block.body)
    return fs


def test_every_block_is_a_file_a_command_a_program_or_plain_text() -> None:
    assert len(BLOCKS) >= 15
    for block in BLOCKS:
        assert block.kind in KINDS, (block.line, block.kind)
        assert (block.target is not None) == (block.kind == "json"), block.line
        if block.kind == "json":
            json.loads(block.body)


def test_the_readme_s_files_are_taken_by_the_readers_a_run_takes(machine: FakeFileSystem) -> None:
    """Each file the README writes, read by its one reader (application/setup/machine_files.py,
    application/setup/config.py, domain/boundary/grant.py) as plan, run and doctor read it."""
    seen = set(files())
    reader = ConfigurationReader(machine, ENV, profiles=PROFILES)
    model_map = reader.model_map([])
    assert isinstance(model_map, ModelMap), model_map
    worktree = f"{HOME}/src/myproject/.claude/worktrees/task-1"
    config = reader.configuration(worktree, None)
    assert isinstance(config, WorkerConfiguration), config
    grant = parse_grant(json.loads(machine.read_text(f"{HOME}/grants/task-1.json")))
    assert isinstance(grant, Grant), grant
    endpoint = backend_machine_file(machine, ENV, CLAUDE)
    assert endpoint.problem is None and endpoint.adds["ANTHROPIC_BASE_URL"], endpoint
    assert read_machine_resources(machine, ENV).problem is None
    directory = config_directory(PI.credentials, ENV)
    assert directory is not None
    pairs = [(posixpath.join(directory, name), name) for name in PI.credentials.files]
    copies = read_copies(machine, pairs, PI.credentials, ENV)
    for pi_id in ("local/qwen-coder", *(ids["pi"] for ids in model_map.models.values())):
        assert copies_problem(PI, copies, pi_id, ENV) is None, pi_id
    read = {
        model_map.file,
        f"{worktree}/.concorde/workers.json",
        f"{HOME}/grants/task-1.json",
        endpoint.file,
        f"{HOME}/.config/concorde/resources.json",
        *(source for source, _ in pairs),
    }
    assert seen <= read, f"a file of the README no reader here takes: {sorted(seen - read)}"


def commands(block: Block) -> list[list[str]]:
    """The `cw` command lines of a `sh` block, continuation lines joined."""
    joined = block.body.replace("\\\n", " ")
    found = []
    for line in joined.splitlines():
        for part in line.split("&&"):
            words = shlex.split(part)
            if words[:1] == ["cw"]:
                found.append(words[1:])
    return found


def test_every_cw_command_of_the_readme_is_one_the_command_line_takes() -> None:
    said = [c for b in BLOCKS if b.kind == "sh" for c in commands(b)]
    assert {c[0] for c in said} >= {"doctor", "plan", "run", "show", "verify"}
    for argv in said:
        parser().parse_args(argv)  # a usage error raises
