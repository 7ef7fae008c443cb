"""The dependency rule of design.md is a checked contract, not a review habit.

import-linter's contracts (pyproject.toml) run here, inside the test suite: domain < ports <
application, adapters named only by application/container.py, and a domain that imports nothing
that does I/O. A second test proves the check bites by breaking a copy of the package.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def run_lint_imports(package_parent: Path, config: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(package_parent)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(config), "--no-cache"],
        cwd=package_parent, env=env, capture_output=True, text=True, timeout=120, check=False,
    )


def copy_package(tmp_path: Path) -> Path:
    target = tmp_path / "concorde_workers"
    shutil.copytree(
        ROOT, target,
        ignore=shutil.ignore_patterns(".git", ".venv", "tests", "node_modules", "*.egg-info",
                                      "__pycache__", ".*_cache", "build", "dist"),
    )
    return target


def test_the_layer_contracts_are_kept(tmp_path: Path) -> None:
    copy = copy_package(tmp_path)
    result = run_lint_imports(tmp_path, copy / "pyproject.toml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_a_domain_module_reaching_an_adapter_breaks_the_suite(tmp_path: Path) -> None:
    copy = copy_package(tmp_path)
    (copy / "domain" / "leak.py").write_text("import concorde_workers.adapters\nimport subprocess\n")
    result = run_lint_imports(tmp_path, copy / "pyproject.toml")
    assert result.returncode != 0
    assert "BROKEN" in result.stdout
