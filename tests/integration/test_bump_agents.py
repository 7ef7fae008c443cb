"""Issue 33 "Done means": `scripts/bump-agents --check` knows the third pin. It lists every pin
of package.json against the newest release the registry names — @openai/codex among them — and
the Codex CLI's platform packages (@openai/codex-linux-x64 and -linux-arm64, whose native program
is the one a run starts) as package-lock.json pins them; a lock that holds them at another
version than the wrapper's pin, or not at all, is refused (exit 2) with the repair.

The script runs as written on a copy of this checkout's package.json and package-lock.json; the
registry is a stand-in `npm` on PATH (no network), answering `npm view <package> version`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration

CHECKOUT = Path(__file__).resolve().parents[2]
NEWEST = {"@openai/codex": "0.172.0"}
"""The stand-in registry's answers that differ from the pins (the rest: the pin itself)."""


def checkout(tmp_path: Path, lock: dict[str, Any] | None = None) -> Path:
    """A copy of what bump-agents reads, and the stand-in npm, which logs its calls."""
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    shutil.copy2(CHECKOUT / "scripts" / "bump-agents", root / "scripts" / "bump-agents")
    shutil.copy2(CHECKOUT / "package.json", root / "package.json")
    if lock is None:
        shutil.copy2(CHECKOUT / "package-lock.json", root / "package-lock.json")
    else:
        (root / "package-lock.json").write_text(json.dumps(lock))
    npm = tmp_path / "bin" / "npm"
    npm.parent.mkdir()
    answers = "\n".join(f'  "{name}") echo {version} ;;' for name, version in NEWEST.items())
    npm.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> "{tmp_path}/npm.log"\n'
        '[ "$1" = view ] && [ "$3" = version ] || exit 9\n'
        'case "$2" in\n'
        f"{answers}\n"
        """  *) node -p "require('./package.json').dependencies['$2']" ;;\n"""
        "esac\n"
    )
    npm.chmod(0o755)
    return root


def check(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{root.parent / 'bin'}:{os.environ.get('PATH', '/usr/bin')}"}
    return subprocess.run(
        [str(root / "scripts" / "bump-agents"), "--check"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_check_lists_the_codex_pin_and_its_platform_packages_and_changes_nothing(
    tmp_path: Path,
) -> None:
    root = checkout(tmp_path)
    before = {p.name: p.read_bytes() for p in root.iterdir() if p.is_file()}
    done = check(root)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [" ".join(line.split()) for line in done.stdout.splitlines()]
    pins = json.loads((root / "package.json").read_text())["dependencies"]
    assert pins["@openai/codex"] == "0.171.0"
    for package, version in pins.items():
        newest = NEWEST.get(package)
        said = f"{package} {version} -> {newest}" if newest else f"{package} {version} (the newest)"
        assert said in lines, lines
    for platform in ("linux-x64", "linux-arm64"):
        assert (
            f"@openai/codex-{platform} 0.171.0-{platform} (the native program of @openai/codex "
            "0.171.0)"
        ) in lines, lines
    asked = (tmp_path / "npm.log").read_text().splitlines()
    assert sorted(asked) == sorted(f"view {package} version" for package in pins)
    assert {p.name: p.read_bytes() for p in root.iterdir() if p.is_file()} == before


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ({"version": "0.170.0-linux-x64"}, "at 0.170.0-linux-x64, not 0.171.0-linux-x64"),
        (None, "at nothing, not 0.171.0-linux-x64"),
    ],
    ids=["another version", "missing"],
)
def test_check_refuses_a_lock_without_the_codex_platform_package_at_its_pin(
    tmp_path: Path, entry: dict[str, str] | None, says: str
) -> None:
    lock = json.loads((CHECKOUT / "package-lock.json").read_text())
    key = "node_modules/@openai/codex-linux-x64"
    if entry is None:
        del lock["packages"][key]
    else:
        lock["packages"][key] = {**lock["packages"][key], **entry}
    done = check(checkout(tmp_path, lock))
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"package-lock.json pins @openai/codex-linux-x64 {says}" in done.stderr
    assert "npm install --package-lock-only" in done.stderr
