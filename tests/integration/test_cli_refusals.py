"""Bad command lines are refusals, never defects: the installed `concorde-workers` script and
`cli.main` with the real adapters exit 2 and, under --json, print one JSON document on stdout
(README "Exit status"; HELPERS: every bad input gets a clear refusal, never a traceback).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from concorde_workers.adapters.cli.main import main

pytestmark = pytest.mark.integration

SCRIPT = Path(sys.executable).parent / "concorde-workers"


def script(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "HOME": str(cwd)}
    return subprocess.run(
        [str(SCRIPT), *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def one_refusal(stdout: str) -> dict[str, Any]:
    """stdout is exactly one JSON document, a refusal; its refusal object."""
    data = json.loads(stdout)
    assert isinstance(data, dict) and data["verdict"] == "refused", data
    refusal = data["refusal"]
    assert isinstance(refusal, dict)
    return refusal


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["plan", "--bogus", "--json"], id="an unknown flag"),
        pytest.param(["run", "--json", "--parent"], id="a flag without its value"),
        pytest.param(["frobnicate", "--json"], id="an unknown command"),
        pytest.param(["--json"], id="no command"),
    ],
)
def test_a_usage_error_of_the_installed_script_under_json_is_one_json_refusal(
    tmp_path: Path, argv: list[str]
) -> None:
    proc = script(*argv, cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr == ""
    refusal = one_refusal(proc.stdout)
    assert refusal["code"] == "request_invalid" and "--help" in refusal["message"]


@pytest.mark.parametrize("what", ["missing", "a file"])
@pytest.mark.parametrize("as_json", [True, False], ids=["json", "text"])
def test_demo_with_a_folder_that_is_no_directory_is_refused(
    tmp_path: Path, what: str, as_json: bool
) -> None:
    folder = tmp_path / "demo-here"
    if what == "a file":
        folder.write_text("not a directory\n")
    proc = script("demo", "--folder", str(folder), *(["--json"] if as_json else []), cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    said = "does not exist" if what == "missing" else "is not a directory"
    if as_json:
        refusal = one_refusal(proc.stdout)
        assert refusal["file"] == str(folder) and said in refusal["message"]
        assert proc.stderr == ""
    else:
        assert proc.stdout == "" and f"--folder {folder} {said}" in proc.stderr
    assert [p.name for p in tmp_path.iterdir()] == (["demo-here"] if what == "a file" else [])


def test_a_demo_without_its_programs_is_refused_with_the_repair_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    """Issue 12: the refusal names where it looked and the repair this installation has (here a
    checkout: ./scripts/setup, or install-agents), and the throwaway folder and the empty trace
    folder are gone."""
    folder = tmp_path / "demo-here"
    folder.mkdir()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "HOME": str(tmp_path),
        "CONCORDE_PI": str(tmp_path / "no-pi"),
    }
    proc = subprocess.run(
        [str(SCRIPT), "demo", "--folder", str(folder)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    said = " ".join(proc.stderr.split())
    assert "refused: pi_runtime_missing" in said
    assert f"pi is found nowhere (looked at pi: $CONCORDE_PI ({tmp_path}/no-pi))" in said
    assert "./scripts/setup" in said and "concorde-workers install-agents" in said
    assert "@mariozechner/pi-coding-agent@0.73.1" in said
    assert list(folder.iterdir()) == []


def test_a_codex_demo_without_the_codex_cli_is_refused_with_the_repair_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    """Issue 33: `demo --backend codex` looks for the Codex CLI as any run does and, where it is
    found nowhere, is refused with the backend's code, where it looked and the repair (the
    pinned @openai/codex), before a repository, a server or a trace is left behind."""
    folder = tmp_path / "demo-here"
    folder.mkdir()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "HOME": str(tmp_path),
        "CONCORDE_CODEX": str(tmp_path / "no-codex"),
    }
    proc = subprocess.run(
        [str(SCRIPT), "demo", "--backend", "codex", "--folder", str(folder), "--json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    refusal = one_refusal(proc.stdout)
    said = " ".join(refusal["message"].split())
    assert refusal["code"] == "launch_failed", refusal
    assert f"codex is found nowhere (looked at codex: $CONCORDE_CODEX ({tmp_path}/no-codex))" in (
        said
    )
    assert "@openai/codex@0.171.0" in said and "./scripts/setup" in said
    assert list(folder.iterdir()) == []


def test_a_demo_of_a_backend_without_a_scripted_server_is_a_usage_refusal(tmp_path: Path) -> None:
    """The demo runs the backends whose wire the package has a scripted server of (pi, codex):
    another is named in the refusal, never started."""
    proc = script("demo", "--backend", "claude", "--json", cwd=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    refusal = one_refusal(proc.stdout)
    assert refusal["code"] == "request_invalid"
    assert "'claude'" in refusal["message"] and "pi" in refusal["message"], refusal
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(
            [
                "plan",
                "--grant",
                "{dir}/gra\0nt.json",
                "--worktree",
                "{dir}",
                "--task-type",
                "implement",
            ],
            id="--grant",
        ),
        pytest.param(
            [
                "plan",
                "--instructions",
                "@{dir}/brief\0.md",
                "--worktree",
                "{dir}",
                "--task-type",
                "implement",
            ],
            id="--instructions @FILE",
        ),
        pytest.param(["plan", "{dir}/request\0.json"], id="the request file"),
        pytest.param(["run", "{dir}/request\0.json", "--parent", "{dir}"], id="run's request file"),
        pytest.param(["show", "{dir}/workers/w-1\0"], id="show's run directory"),
    ],
)
def test_a_nul_byte_in_a_path_of_the_command_line_is_a_refusal(
    tmp_path: Path, argv: list[str]
) -> None:
    """No process receives a NUL byte in its argv, but a caller of cli.main can pass one: the
    real filesystem adapter refuses such a path like any other that names no file."""
    out, err = io.StringIO(), io.StringIO()
    status = main([a.replace("{dir}", str(tmp_path)) for a in argv] + ["--json"], out, err)
    assert status == 2, out.getvalue() + err.getvalue()
    assert "internal error" not in err.getvalue()
    refusal = one_refusal(out.getvalue())
    assert refusal["code"] in ("request_invalid", "record_unreadable"), refusal


def test_show_on_a_trace_nested_100_000_deep_is_a_refusal_naming_it(tmp_path: Path) -> None:
    """Issue 19 §4: it ended `internal error (RecursionError)`, exit 3."""
    run_dir = tmp_path / "workers" / "w-20261203T000000-abc123"
    run_dir.mkdir(parents=True)
    deep = "[" * 100_000 + "]" * 100_000
    (run_dir / "trace.json").write_text('{"kind": "worker-run", "x": ' + deep + "}")
    shown = script("show", str(run_dir), cwd=tmp_path)
    assert shown.returncode == 2, shown
    assert "internal error" not in shown.stderr and "Traceback" not in shown.stderr
    assert f"{run_dir}/trace.json" in shown.stderr
    assert "nested more than 128 levels deep" in shown.stderr, shown.stderr


@pytest.mark.parametrize("put", ["fifo", "zero", "large"])
def test_show_reads_no_special_file_and_nothing_past_its_bound(tmp_path: Path, put: str) -> None:
    """Issue 19 §4: a FIFO in place of trace.json hung `show` (it waited for a writer); a link
    to /dev/zero or a file past the bound was read whole. Each is now record_unreadable naming
    the file, at once."""
    from concorde_workers.application.tracing.reader import MAX_READ_BYTES

    run_dir = tmp_path / "workers" / "w-20261203T000000-abc123"
    run_dir.mkdir(parents=True)
    trace = run_dir / "trace.json"
    if put == "fifo":
        os.mkfifo(trace)
    elif put == "zero":
        trace.symlink_to("/dev/zero")
    else:
        with trace.open("wb") as big:
            big.truncate(MAX_READ_BYTES + 1)
    shown = script("show", str(run_dir), cwd=tmp_path)
    assert shown.returncode == 2, shown
    assert "internal error" not in shown.stderr and "Traceback" not in shown.stderr
    said = " ".join(shown.stderr.split())
    assert f"{trace}: cannot be read:" in said, shown.stderr
    expected = (
        f"past the limit of {MAX_READ_BYTES} bytes"
        if put == "large"
        else "it is not a regular file"
    )
    assert expected in said, shown.stderr


def test_the_version_is_the_package_s_and_exits_0(tmp_path: Path) -> None:
    """Issue 19 §2: `concorde-workers --version` was a usage refusal."""
    from concorde_workers import __version__

    shown = script("--version", cwd=tmp_path)
    assert shown.returncode == 0, shown
    assert shown.stdout == f"concorde-workers {__version__}\n" and shown.stderr == ""
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    assert f'version = "{__version__}"' in pyproject.read_text()
