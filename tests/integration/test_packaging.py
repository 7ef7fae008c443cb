"""The distribution: a wheel built from the project holds the five layers, the composition root,
every contract and the pi extension, works on its own, and the console script runs (design.md: "`pip install -e .` and a built
wheel must both work, contracts included as package data").

The wheel is built once per module from a copy of the source tree, so a stale build/ folder of
the checkout can neither hide nor cause a missing file, and the checkout is not written.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("domain", "ports", "adapters", "application", "contracts")
CONTRACT_IDS = (
    "contract.attestation.worker-run",
    "contract.concorde.model-map-codex",
    "contract.concorde.worker-configuration-codex",
    "contract.concorde.worker-run-record-codex",
    "contract.tracing.error",
    "contract.tracing.node",
    "contract.workers.grant-input",
    "contract.workers.model-map",
    "contract.workers.worker-configuration",
    "contract.workers.worker-result",
    "contract.workers.worker-round-trace",
    "contract.workers.worker-run-record",
    "contract.workers.worker-run-trace",
)
_NOT_SOURCE = shutil.ignore_patterns(
    ".git",
    ".venv",
    "node_modules",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    ".hypothesis",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".benchmarks",
)


def _clean_env(home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTHON", "PIP_", "GIT_", "CONCORDE_"))
    }
    env.update(HOME=str(home), PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("wheel")
    source = base / "source"
    shutil.copytree(ROOT, source, ignore=_NOT_SOURCE, symlinks=True)
    out = base / "dist"
    (base / "home").mkdir()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(source),
        ],
        cwd=base,
        env=_clean_env(base / "home"),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    wheels = sorted(out.glob("concorde_workers-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def _names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return set(archive.namelist())


def _run_python(wheel: Path, code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = _clean_env(cwd)
    env["PYTHONPATH"] = str(wheel)
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_wheel_holds_every_contract_and_the_five_layers_and_no_tests(wheel: Path) -> None:
    names = _names(wheel)
    contracts = sorted(p.name for p in (ROOT / "contracts").glob("*.json"))
    assert contracts == sorted(f"{cid}.json" for cid in CONTRACT_IDS)
    for name in contracts:
        assert f"concorde_workers/contracts/{name}" in names
    assert "concorde_workers/__init__.py" in names
    for layer in LAYERS:
        assert f"concorde_workers/{layer}/__init__.py" in names
    assert not any(n.startswith(("concorde_workers/tests", "tests/")) for n in names)
    assert not any("/fakes/" in n or n.startswith("fakes/") for n in names)
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    with zipfile.ZipFile(wheel) as archive:
        text = archive.read(entry_points).decode()
    assert "concorde-workers = concorde_workers.adapters.cli.main:main" in text


def test_the_wheel_holds_the_composition_root_and_the_pi_extension(wheel: Path) -> None:
    names = _names(wheel)
    assert "concorde_workers/container.py" in names
    extension = sorted(p.name for p in (ROOT / "adapters" / "pi" / "extension").glob("*.ts"))
    assert extension
    for name in extension:
        assert f"concorde_workers/adapters/pi/extension/{name}" in names


def test_the_wheel_holds_every_module_of_every_layer(wheel: Path) -> None:
    """Every .py file of the five layers, subpackages included, is in the wheel.

    Fails today: pyproject.toml lists the packages by hand and leaves out
    concorde_workers.adapters.claude and concorde_workers.adapters.pi."""
    names = _names(wheel)
    missing = []
    for layer in LAYERS:
        for path in sorted((ROOT / layer).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            name = "concorde_workers/" + path.relative_to(ROOT).as_posix()
            if name not in names:
                missing.append(name)
    assert missing == []


def test_the_wheel_alone_imports_its_contracts(wheel: Path, tmp_path: Path) -> None:
    code = (
        "import json, concorde_workers.contracts as c\n"
        "print(json.dumps({'file': c.__file__, 'ids': [x.id for x in c.all_contracts()],\n"
        "  'schema': c.worker_result_schema()['type']}))\n"
    )
    proc = _run_python(wheel, code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)
    assert found["file"] == f"{wheel}/concorde_workers/contracts/__init__.py"
    assert sorted(found["ids"]) == sorted(CONTRACT_IDS)
    assert found["schema"] == "object"


def test_the_wheel_alone_wires_the_planner(wheel: Path, tmp_path: Path) -> None:
    """The composition root (and through it both agent backends) imports from the wheel alone.

    Fails today for the reason test_the_wheel_holds_every_module_of_every_layer gives."""
    code = "import concorde_workers.container as c\nprint(c.__file__)\n"
    proc = _run_python(wheel, code, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"{wheel}/concorde_workers/container.py"


@pytest.mark.parametrize("argv", [["--help"], ["plan", "--help"]])
def test_the_console_script_answers_help(tmp_path: Path, argv: list[str]) -> None:
    script = Path(sys.executable).parent / "concorde-workers"
    assert script.is_file(), f"{script}: install the project with pip install -e '.[dev]'"
    proc = subprocess.run(
        [str(script), *argv],
        cwd=tmp_path,
        env=_clean_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert proc.stdout.startswith("usage: concorde-workers")
    assert ("plan" in proc.stdout) and ("--example" in proc.stdout or argv == ["--help"])


def test_the_wheel_ships_the_pins_the_repository_holds(wheel: Path) -> None:
    """install-agents installs from the package's own package.json and package-lock.json: the
    shipped files are the repository's, byte for byte."""
    with zipfile.ZipFile(wheel) as archive:
        for name in ("package.json", "package-lock.json"):
            assert archive.read(f"concorde_workers/{name}") == (ROOT / name).read_bytes(), name


def test_a_pip_install_gets_a_working_setup_from_install_agents_then_doctor(
    wheel: Path, tmp_path: Path
) -> None:
    """Issue 12 "done means": the package alone (no checkout beside it), `install-agents`, then
    `doctor` passes. npm runs offline from the npm cache ./scripts/setup's `npm ci` filled (no
    test reaches the network): the same lockfile, so the same tarballs."""
    cache = Path(os.path.expanduser("~/.npm"))
    home = tmp_path / "home"
    (home / ".config" / "concorde").mkdir(parents=True)
    (home / ".config" / "concorde" / "models.json").write_text(
        json.dumps({"schema_version": 1, "models": {"m": {"pi": "local/m", "claude": "claude-x"}}})
    )
    (home / ".pi" / "agent").mkdir(parents=True)
    (home / ".pi" / "agent" / "auth.json").write_text('{"local": {"type": "api_key", "key": "k"}}')
    provider = {"baseUrl": "http://127.0.0.1:8000/v1", "api": "openai-completions"}
    (home / ".pi" / "agent" / "models.json").write_text(
        json.dumps(
            {"providers": {"local": {**provider, "apiKey": "none", "models": [{"id": "m"}]}}}
        )
    )
    env = _clean_env(home)
    env.update(
        PYTHONPATH=str(wheel),
        PATH="/usr/local/bin:/usr/bin:/bin",
        ANTHROPIC_API_KEY="sk-never-printed-31415",
        OPENAI_API_KEY="sk-never-printed-27182",  # the Codex CLI's (issue 33)
        npm_config_offline="true",
        npm_config_cache=str(cache),
    )
    env.pop("XDG_DATA_HOME", None)

    def cli(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "concorde_workers.adapters.cli.main", *argv],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )

    installed = cli("install-agents")
    assert installed.returncode == 0, (
        f"{installed.stdout}{installed.stderr}\n(npm installs offline from {cache}: run "
        "./scripts/setup, whose npm ci fills that cache)"
    )
    modules = home / ".local" / "share" / "concorde-workers" / "node_modules"
    assert (modules / ".bin" / "pi").exists() and (modules / ".bin" / "claude").exists()
    assert "pi 0.73.1 at" in installed.stdout or "0.73.1" in installed.stdout
    doctor = cli("doctor")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert doctor.stdout.count("found by the user data folder") == 4, doctor.stdout  # + codex
    assert "sk-never-printed-31415" not in doctor.stdout + doctor.stderr
    again = cli("install-agents")
    assert again.returncode == 0 and "already installed" in again.stdout
    assert "npm ci" not in again.stderr, again.stderr  # nothing announced that does not run
    assert "npm ci of the pinned" in installed.stderr
