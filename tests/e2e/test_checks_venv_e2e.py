"""Checks with real pytest in real virtual environments, end to end (issue 19 §1), through the
console script as README "Run it on your own repository" step 8 writes it:

    concorde-workers run --worktree W --grant G --task-type implement --instructions TEXT
        --operation implement --worker worker --parent DIR
        --interpreter VENV/bin/python --check 'python -m pytest -q'

with the real pi, the real Claude Code and the real Codex CLI against their scripted model
servers on 127.0.0.1,
on a user's project of its own: a real repository with its `.claude/worktrees/task`, a package
`calc` with one function, `tests/test_x.py` with two tests that pass, `.concorde/workers.json`
committed (one repair round, `.venv` among its runtime paths), the model map in the home.

The virtual environments are made here, offline: `python -m venv --without-pip` of
* a pyenv Python under /root (whose `home` the check's sandbox hides, as every home), in the
  worktree's `.venv` (ignored by the repository's `.git/info/exclude`), as a user keeps it;
* the system's /usr/bin/python3, outside the worktree, in a folder of the user's home;
and pytest with its requirements installed into each from this checkout's own environment
(`install_from`: every file the installed distribution's RECORD lists, no index, no network).

* a worker that breaks a test: round 1's check fails, round 2 is the repair whose prompt carries
  pytest's failure, and after that last round the run ends `checks_failed`;
* a worker that breaks nothing: the run ends ok, its check passed;
* a check whose program is missing: the run is refused with `checks_unavailable` before round 1
  (issue 31 §2; it ended so after a whole model round), never "pre-existing".
"""

from __future__ import annotations

import glob
import hashlib
import json
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from e2e.conftest import ClaudeWorld, ok_result
from e2e.conftest_codex import CodexWorld, codex_world, exec_call, result_turn
from e2e.conftest_pi import MODEL, PiWorld, call, pi_world, reply, result_call
from servers.anthropic_server import Reply, last_tool_result
from servers.codex_exec import MODEL as CODEX_MODEL
from timing import SLOW

pytestmark = pytest.mark.e2e

__all__ = ["codex_world", "pi_world"]  # the fixtures, imported for pytest

CLI = Path(sys.executable).parent / "concorde-workers"
PYENV = sorted(glob.glob("/root/.pyenv/versions/3.1[2-9]*/bin/python3"))
SYSTEM_PYTHON = "/usr/bin/python3"
PYTEST_DISTRIBUTIONS = ("pytest", "pluggy", "iniconfig", "packaging", "pygments")

CALC = "def add(a, b):\n    return a + b\n"
BUG = "def add(a, b):\n    return a - b\n"
TEST_X = (
    "from calc import add\n\n\n"
    "def test_add():\n    assert add(1, 2) == 3\n\n\n"
    "def test_add_zero():\n    assert add(0, 5) == 5\n"
)
GRANT: dict[str, Any] = {
    "task_type": "implement",
    "entries": [{"path": "calc/", "level": "rw"}, {"path": "tests/", "level": "ro"}],
    "context_identity": "sha256:" + hashlib.sha256(b"keep add correct").hexdigest(),
}
LIMITS = {
    "timeout_seconds": SLOW,
    "max_turns": 20,
    "rounds": 1,
    "retries": 0,
    "retry_delay_seconds": 0,
}
PYTEST = "python -m pytest -q"


# --- the virtual environments ---------------------------------------------------------------


def pyenv_python() -> str:
    if not PYENV:
        pytest.fail(
            "no pyenv Python 3.12 or later under /root/.pyenv/versions: the case of a "
            "venv whose base lies in a home needs one",
            pytrace=False,
        )
    return PYENV[-1]


def install_from(venv: Path, names: tuple[str, ...] = PYTEST_DISTRIBUTIONS) -> None:
    """Install the distributions `names` into `venv` offline, from this checkout's environment:
    every file their RECORD lists (the package and its .dist-info) copied into the venv's
    site-packages, as pip would lay them out; pure Python, so any 3.11+ takes them."""
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    ours = Path(sysconfig.get_path("purelib"))
    for name in names:
        files = metadata.distribution(name).files
        assert files, f"{name} has no RECORD"
        for entry in files:
            source = Path(str(entry.locate())).resolve()
            if not source.is_relative_to(ours) or "__pycache__" in source.parts:
                continue  # a console script in bin/, a cached byte-compiled file
            target = Path(site) / source.relative_to(ours)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def make_venv(base: str, venv: Path) -> Path:
    """A virtual environment of `base` at `venv` with pytest in it; its interpreter."""
    subprocess.run(
        [base, "-m", "venv", "--without-pip", str(venv)],
        check=True,
        capture_output=True,
        timeout=SLOW,
    )
    install_from(venv)
    python = venv / "bin" / "python"
    said = subprocess.run(
        [str(python), "-m", "pytest", "--version"],
        capture_output=True,
        text=True,
        check=False,
        timeout=SLOW,
    )
    assert said.returncode == 0, said
    return python


# --- the user's project ---------------------------------------------------------------------


@dataclass
class Project:
    """The user's repository, its worktree, and how the console script is run for it."""

    root: Path
    primary: Path
    worktree: Path
    home: Path
    environ: dict[str, str]
    git: Callable[..., Any]
    backend: str
    model: str

    @property
    def grant_file(self) -> Path:
        return self.root / "grants" / "task-1.json"

    def cli(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(CLI), *argv],
            env=self.environ,
            capture_output=True,
            text=True,
            timeout=4 * SLOW,
            check=False,
            cwd=str(self.primary),
        )

    @property
    def parent(self) -> Path:
        parent = self.root / "traces" / "op-1"
        parent.mkdir(parents=True, exist_ok=True)
        return parent

    def refused(self, interpreter: Path, *checks: str) -> subprocess.CompletedProcess[str]:
        """`run` as `run` would be called, refused before the run exists: no run directory."""
        before = set(self.parent.glob("workers/*"))
        done = self.cli(*self._argv(interpreter, checks))
        assert "Traceback" not in done.stdout + done.stderr, done.stderr
        assert set(self.parent.glob("workers/*")) == before, done.stderr
        return done

    def run(self, interpreter: Path, *checks: str) -> Finished:
        parent = self.parent
        before = set(parent.glob("workers/*"))
        done = self.cli(*self._argv(interpreter, checks))
        assert "Traceback" not in done.stdout + done.stderr, done.stderr
        [run_dir] = set(parent.glob("workers/*")) - before
        # Read back as README step 9 does: the record `show --json` prints.
        shown = self.cli("show", str(run_dir), "--json")
        assert shown.returncode == 0, shown.stderr
        return Finished(done=done, run_dir=run_dir, record=json.loads(shown.stdout))

    def _argv(self, interpreter: Path, checks: tuple[str, ...]) -> list[str]:
        argv = [
            "run",
            "--worktree",
            str(self.worktree),
            "--grant",
            str(self.grant_file),
            "--task-type",
            "implement",
            "--instructions",
            "Keep calc.add correct (tests/test_x.py).",
            "--operation",
            "implement",
            "--worker",
            "worker",
            "--interpreter",
            str(interpreter),
            "--parent",
            str(self.parent),
        ]
        for check in checks:
            argv += ["--check", check]
        return argv


@dataclass
class Finished:
    done: subprocess.CompletedProcess[str]
    run_dir: Path
    record: dict[str, Any]

    @property
    def code(self) -> str | None:
        error = self.record.get("error")
        return error["code"] if error else None

    def explain(self) -> str:
        stderr = [p.read_text()[-1500:] for p in sorted(self.run_dir.glob("rounds/*/stderr.log"))]
        return json.dumps(
            {
                "exit": self.done.returncode,
                "out": self.done.stdout[-3000:],
                "err": self.done.stderr[-3000:],
                "error": self.record.get("error"),
                "rounds": self.record.get("rounds"),
                "stderr": stderr,
            },
            indent=1,
        )[:12000]

    def check(self, n: int, *, before: bool = False) -> tuple[dict[str, Any], str]:
        """Round n's check `check-1` (the id the command line gives its first): check.json and its log."""
        node = self.run_dir / "rounds" / str(n) / "checks" / "check-1"
        if before:
            node = node / "before"
        return (json.loads((node / "check.json").read_text()), (node / "output.log").read_text())


def write_project(
    root: Path,
    primary: Path,
    worktree: Path,
    home: Path,
    environ: dict[str, str],
    git: Callable[..., Any],
    backend: str,
    model: str,
    runtime: tuple[str, ...],
) -> Project:
    """The user's project in the world's worktree: calc/, tests/test_x.py and workers.json
    (one repair round, `runtime` its runtime paths) committed on the worktree's branch, the
    model map in the home, the grant outside the repository, and `.venv` kept from Git by the
    repository's exclude file as README step 2 keeps the worktrees."""
    workers: dict[str, Any] = {
        "schema_version": 2,
        "enabled_models": {"m-local": {}},
        "default": {"model": "m-local", "backend": backend},
        "limits": LIMITS,
    }
    if runtime:
        workers["runtime"] = list(runtime)
    files = {
        "calc/__init__.py": CALC,
        "tests/test_x.py": TEST_X,
        ".concorde/workers.json": json.dumps(workers, indent=1) + "\n",
    }
    for rel, text in files.items():
        target = worktree / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    git(worktree, "add", "-A")
    git(worktree, "commit", "-q", "-m", "calc and its tests")
    exclude = primary / ".git" / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    with exclude.open("a") as out:
        out.write(".venv/\n.claude/worktrees/\n")
    models = home / ".config" / "concorde" / "models.json"
    models.parent.mkdir(parents=True, exist_ok=True)
    models.write_text(json.dumps({"schema_version": 1, "models": {"m-local": {backend: model}}}))
    assert not any(k.startswith("CONCORDE_MODEL") for k in environ), environ
    project = Project(
        root=root,
        primary=primary,
        worktree=worktree,
        home=home,
        environ=environ,
        git=git,
        backend=backend,
        model=model,
    )
    project.grant_file.parent.mkdir(parents=True)
    project.grant_file.write_text(json.dumps(GRANT))
    return project


IN_WORKTREE = (".venv",)
"""workers.json's runtime paths for a venv in the worktree: the caller lists it (docs/decisions.md
"A check tells the truth": the command line never reads a pyvenv.cfg in the worktree)."""


def pyenv_venv_in_worktree(project: Project) -> Path:
    python = make_venv(pyenv_python(), project.worktree / ".venv")
    status = project.git(project.worktree, "status", "--porcelain", "--untracked-files=all")
    assert status == "", status  # the exclude file keeps the venv from Git, as a user has it
    return python


def system_venv_outside(project: Project) -> Path:
    """A venv of the system's Python in a folder of the user's home, outside the repository."""
    return make_venv(SYSTEM_PYTHON, project.home / "venvs" / "calc")


def no_caches(project: Project) -> None:
    """pytest ran over copies: nothing of it reached the worktree (the venv is the user's)."""
    found = [
        p
        for p in project.worktree.rglob("*")
        if p.name in (".pytest_cache", "__pycache__")
        and not p.is_relative_to(project.worktree / ".venv")
    ]
    assert found == [], f"a check wrote into the worktree: {found}"
    assert (project.worktree / "tests/test_x.py").read_text() == TEST_X


def assert_broken_round_ends_checks_failed(
    project: Project, run: Finished, asked: list[str]
) -> None:
    """Round 1's check fails (it passed on the starting state), round 2 is the repair whose
    prompt carries pytest's failure, and after it, the last round, the run ends
    checks_failed. `asked`: the text of every request the model was sent in the run."""
    assert run.code == "checks_failed", run.explain()
    assert run.done.returncode == 1, run.explain()
    rounds = run.record["rounds"]
    assert [r["prompt"] for r in rounds] == ["initial", "repair"], run.explain()
    before, _ = run.check(1, before=True)
    assert before["status"] == "passed", before
    for n in (1, 2):
        kept, log = run.check(n)
        assert (kept["status"], kept["exit_code"]) == ("failed", 1), (kept, log)
        assert "2 failed" in log and "test_add_zero" in log, log
        [item] = rounds[n - 1]["evidence"]
        assert item["judgement"] == "failed: a repair", item
    # Round 2's prompt is the repair: pytest's own words reached the model.
    repair = next((a for a in asked if "check check-1:" in a), None)
    assert repair is not None, asked
    for part in (
        "check check-1: `python -m pytest -q`",
        "status: failed",
        "exit code: 1",
        "assert -1 == 3",
        "2 failed",
    ):
        assert part in repair, repair
    assert "checks_failed" in run.done.stdout and "2 failed" in run.done.stdout
    assert (project.worktree / "calc/__init__.py").read_text() == BUG
    no_caches(project)


def assert_ok_with_checks_passed(project: Project, run: Finished) -> None:
    assert run.code is None and run.record["status"] == "ok", run.explain()
    assert run.done.returncode == 0, run.explain()
    [only] = run.record["rounds"]
    assert only["validation"] == "clean", only
    [item] = only["evidence"]
    assert item["judgement"] == "passed", item
    kept, log = run.check(1)
    assert (kept["status"], kept["exit_code"]) == ("passed", 0), (kept, log)
    assert "2 passed" in log, log
    assert (project.worktree / "calc/__init__.py").read_text() == CALC
    no_caches(project)


def assert_refused_before_round_1(done: subprocess.CompletedProcess[str]) -> None:
    """A check whose program no round can make start: the run is refused before it exists
    with checks_unavailable (issue 31 §2: it spent a whole model round first, then ended so),
    never blamed on the worker nor filed as pre-existing."""
    assert done.returncode == 2, done.stderr
    said = " ".join(done.stderr.split())
    assert "refused: checks_unavailable (environment)" in said, done.stderr
    assert (
        "the check check-1 (no-such-program) cannot start in any round: `no-such-program` is "
        "found nowhere in the check's view"
    ) in said, done.stderr


# --- pi ---------------------------------------------------------------------------------------


def pi_project(w: PiWorld, runtime: tuple[str, ...] = IN_WORKTREE) -> Project:
    return write_project(
        w.root, w.primary, w.worktree, w.home, w.environ, w.git, "pi", MODEL, runtime
    )


def pi_asked(w: PiWorld, first: int) -> list[str]:
    return [json.dumps(r["body"]["messages"][-1]) for r in w.server.requests[first:]]


@pytest.mark.req("Rounds only repair what the round validation reports")
@pytest.mark.req("The round validation's answer is recorded")
def test_pi_a_pyenv_venv_in_the_worktree_a_broken_test_is_repaired_then_ends_checks_failed(
    pi_world: PiWorld,
) -> None:
    w = pi_world
    project = pi_project(w)
    python = pyenv_venv_in_worktree(project)
    w.server.add(
        reply(call("write", "call_w1", path=w.path("calc/__init__.py"), content=BUG)),
        reply(result_call("call_r1", summary="rewrote add")),
        reply(result_call("call_r2", summary="nothing more to do")),
    )
    first = len(w.server.requests)
    run = project.run(python, PYTEST)
    assert_broken_round_ends_checks_failed(project, run, pi_asked(w, first))


@pytest.mark.req("The round validation's answer is recorded")
def test_pi_a_system_python_venv_outside_the_worktree_passes_and_the_run_ends_ok(
    pi_world: PiWorld,
) -> None:
    w = pi_world
    project = pi_project(w, runtime=())
    python = system_venv_outside(project)
    w.server.add(
        reply(call("bash", "call_b", command=f"cat {w.path('calc/__init__.py')}")),
        reply(result_call("call_r", summary="add is right")),
    )
    run = project.run(python, PYTEST)
    assert_ok_with_checks_passed(project, run)
    assert "return a + b" in w.server.tool_results()["call_b"]


def test_pi_a_check_whose_program_is_missing_is_refused_before_round_1(pi_world: PiWorld) -> None:
    w = pi_world
    project = pi_project(w)
    python = pyenv_venv_in_worktree(project)
    assert_refused_before_round_1(project.refused(python, "no-such-program"))
    assert w.server.requests == []  # no model round was spent


# --- Claude Code ------------------------------------------------------------------------------


def claude_project(w: ClaudeWorld, runtime: tuple[str, ...] = IN_WORKTREE) -> Project:
    def git(cwd: Path, *args: str) -> str:
        return subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=cwd,
            env=w.git_env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    return write_project(
        w.root,
        w.primary,
        w.worktree,
        Path(w.environ["HOME"]),
        w.environ,
        git,
        "claude",
        "claude-opus-4-8",
        runtime,
    )


def bash(command: str) -> Reply:
    return Reply.tool("Bash", {"command": command, "description": "edit", "timeout": 60000})


def after_tool(summary: str) -> Callable[[dict[str, Any]], Reply]:
    def done(body: dict[str, Any]) -> Reply:
        found = last_tool_result(body)
        assert found is not None and not found[1], found
        return Reply.structured(ok_result(summary=summary))

    return done


@pytest.mark.req("Rounds only repair what the round validation reports")
@pytest.mark.req("The round validation's answer is recorded")
def test_claude_a_pyenv_venv_in_the_worktree_a_broken_test_is_repaired_then_ends_checks_failed(
    claude_world: ClaudeWorld,
) -> None:
    w = claude_world
    project = claude_project(w)
    python = pyenv_venv_in_worktree(project)
    target = w.worktree / "calc" / "__init__.py"
    w.server.push(
        bash(f"printf 'def add(a, b):\\n    return a - b\\n' > {target}"),
        after_tool("rewrote add"),
        Reply.structured(ok_result(summary="nothing more to do")),
    )
    first = len(w.server.requests)
    run = project.run(python, PYTEST)
    assert w.server.failures == []
    assert_broken_round_ends_checks_failed(
        project, run, [json.dumps(b["messages"]) for b in w.server.requests[first:]]
    )


@pytest.mark.req("The round validation's answer is recorded")
def test_claude_a_system_python_venv_outside_the_worktree_passes_and_the_run_ends_ok(
    claude_world: ClaudeWorld,
) -> None:
    w = claude_world
    project = claude_project(w, runtime=())
    python = system_venv_outside(project)
    w.server.push(bash(f"cat {w.worktree / 'calc' / '__init__.py'}"), after_tool("add is right"))
    run = project.run(python, PYTEST)
    assert w.server.failures == []
    assert_ok_with_checks_passed(project, run)


def test_claude_a_check_whose_program_is_missing_is_refused_before_round_1(
    claude_world: ClaudeWorld,
) -> None:
    w = claude_world
    project = claude_project(w)
    python = pyenv_venv_in_worktree(project)
    assert_refused_before_round_1(project.refused(python, "no-such-program"))
    assert w.server.log == []  # no model round was spent


# --- Codex (issue 33 §5: checks and repair on the third backend) --------------------------------


def codex_project(w: CodexWorld, runtime: tuple[str, ...] = IN_WORKTREE) -> Project:
    return write_project(
        w.root, w.primary, w.worktree, w.home, w.environ, w.git, "codex", CODEX_MODEL, runtime
    )


@pytest.mark.req("Rounds only repair what the round validation reports")
@pytest.mark.req("The round validation's answer is recorded")
def test_codex_a_pyenv_venv_in_the_worktree_a_broken_test_is_repaired_then_ends_checks_failed(
    codex_world: CodexWorld,
) -> None:
    w = codex_world
    project = codex_project(w)
    python = pyenv_venv_in_worktree(project)
    target = w.worktree / "calc" / "__init__.py"
    w.server.add(
        exec_call(f"printf 'def add(a, b):\\n    return a - b\\n' > {target}", "call_w1"),
        result_turn(summary="rewrote add"),
        result_turn(summary="nothing more to do"),
    )
    first = len(w.server.requests)
    run = project.run(python, PYTEST)
    assert w.server.failures == []
    asked = [json.dumps(r["body"]["input"]) for r in w.server.requests[first:]]
    assert_broken_round_ends_checks_failed(project, run, asked)


@pytest.mark.req("The round validation's answer is recorded")
def test_codex_a_system_python_venv_outside_the_worktree_passes_and_the_run_ends_ok(
    codex_world: CodexWorld,
) -> None:
    w = codex_world
    project = codex_project(w, runtime=())
    python = system_venv_outside(project)
    w.server.add(
        exec_call(f"cat {w.worktree / 'calc' / '__init__.py'}", "call_b"),
        result_turn(summary="add is right"),
    )
    run = project.run(python, PYTEST)
    assert w.server.failures == []
    assert_ok_with_checks_passed(project, run)
    assert "return a + b" in w.server.outputs()["call_b"]


def test_codex_a_check_whose_program_is_missing_is_refused_before_round_1(
    codex_world: CodexWorld,
) -> None:
    w = codex_world
    project = codex_project(w)
    python = pyenv_venv_in_worktree(project)
    assert_refused_before_round_1(project.refused(python, "no-such-program"))
    assert w.server.requests == []  # no model round was spent
