"""The import contracts run inside the test suite and bite (docs/architecture.md).

lint-imports runs, as a process of its own, on a copy of the package with the contracts of
pyproject.toml: the copy as it is keeps them; a domain module reaching an adapter, a use case
naming the composition root, a driven adapter reaching a use case and an entry point naming a
concrete adapter each break them, reported by module. (The picture's columns, the cycles and the
environment readers are checked in process: tests/unit/house/test_architecture.py.)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "concorde_workers"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def run_lint_imports(package_parent: Path, config: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(package_parent)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(config), "--no-cache"],
        cwd=package_parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def copy_package(tmp_path: Path) -> Path:
    target = tmp_path / PACKAGE
    shutil.copytree(
        ROOT,
        target,
        ignore=shutil.ignore_patterns(
            ".git",
            ".venv",
            "tests",
            "node_modules",
            "*.egg-info",
            "__pycache__",
            ".*_cache",
            "build",
            "dist",
        ),
    )
    return target


def test_the_layer_contracts_are_kept(tmp_path: Path) -> None:
    copy = copy_package(tmp_path)
    result = run_lint_imports(tmp_path, copy / "pyproject.toml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_a_domain_module_reaching_an_adapter_breaks_the_suite(tmp_path: Path) -> None:
    copy = copy_package(tmp_path)
    (copy / "domain" / "leak.py").write_text(
        "import concorde_workers.adapters\nimport subprocess\n"
    )
    result = run_lint_imports(tmp_path, copy / "pyproject.toml")
    assert result.returncode != 0
    assert "BROKEN" in result.stdout


def test_each_arrow_against_the_picture_breaks_the_suite(tmp_path: Path) -> None:
    """A use case naming the composition root, a driven adapter reaching a use case and an
    entry point naming a concrete adapter: each is reported, by its module."""
    copy = copy_package(tmp_path)
    plants = {
        "application/leak.py": "import concorde_workers.container\n",
        "adapters/pi/leak.py": "import concorde_workers.application.run.host\n",
        "adapters/cli/leak.py": "import concorde_workers.adapters.repository.git\n",
    }
    for path, text in plants.items():
        (copy / path).write_text(text)
    result = run_lint_imports(tmp_path, copy / "pyproject.toml")
    assert result.returncode != 0
    out = " ".join(result.stdout.split())
    assert (
        "concorde_workers.application is not allowed to import concorde_workers.container: "
        "- concorde_workers.application.leak -> concorde_workers.container"
    ) in out
    assert (
        "Illegal imports of protected package concorde_workers.application: "
        "- concorde_workers.adapters.pi.leak -> concorde_workers.application.run.host"
    ) in out
    assert (
        # the forbidden contract names the driven adapter's room (adapters.*), the chain its module
        "concorde_workers.adapters.cli is not allowed to import concorde_workers.adapters.repository: "
        "- concorde_workers.adapters.cli.leak -> concorde_workers.adapters.repository.git"
    ) in out
    assert "3 broken" in out


def test_a_room_reaching_a_floor_above_it_breaks_the_suite(tmp_path: Path) -> None:
    """Issue 34 §1, the domain's rooms on floors: the ground naming a subject and gitview naming
    boundary (two of the circles issue 34 found)
    are each reported by the domain's floors contract, by module."""
    copy = copy_package(tmp_path)
    plants = {
        "domain/ground/leak.py": "import concorde_workers.domain.evidence.records\n",
        "domain/gitview/leak.py": "import concorde_workers.domain.boundary.grant\n",
    }
    for path, text in plants.items():
        (copy / path).write_text(text)
    result = run_lint_imports(tmp_path, copy / "pyproject.toml")
    assert result.returncode != 0
    out = " ".join(result.stdout.split())
    assert "The domain's rooms on floors: each imports only the floors below it BROKEN" in out
    assert (
        "concorde_workers.domain.ground is not allowed to import "
        "concorde_workers.domain.evidence: "
        "- concorde_workers.domain.ground.leak -> concorde_workers.domain.evidence.records"
    ) in out
    assert (
        "concorde_workers.domain.gitview is not allowed to import "
        "concorde_workers.domain.boundary: "
        "- concorde_workers.domain.gitview.leak -> concorde_workers.domain.boundary.grant"
    ) in out


def test_a_backend_naming_another_and_a_floor_reached_upward_break_the_suite(
    tmp_path: Path,
) -> None:
    """Issue 34, the adapters' and ports' rooms on floors: a backend importing another backend,
    the machine's ports naming the agent port, and a view reaching a command are each reported
    by their floors contract, by module."""
    copy = copy_package(tmp_path)
    plants = {
        "adapters/codex/leak.py": "import concorde_workers.adapters.claude.backend\n",
        "ports/machine/leak.py": "import concorde_workers.ports.agents.agent\n",
        "adapters/cli/views/leak.py": "import concorde_workers.adapters.cli.subcommands.commands\n",
    }
    for path, text in plants.items():
        (copy / path).write_text(text)
    result = run_lint_imports(tmp_path, copy / "pyproject.toml")
    assert result.returncode != 0
    out = " ".join(result.stdout.split())
    assert "The driven adapters' rooms on floors: no backend imports another BROKEN" in out
    assert "The ports' rooms on floors: each capability independent of the others BROKEN" in out
    assert "The command line's rooms on floors: the commands above what they show BROKEN" in out
    for path, text in plants.items():
        importer = "concorde_workers." + path.removesuffix(".py").replace("/", ".")
        assert f"- {importer} -> {text.split()[1]}" in out, importer
