"""Runtime paths, the project interpreter and grant paths through the real CLI (issue 8 §5, §6):
`concorde-workers plan` and `run` refuse, before anything is generated, a runtime path or
interpreter that is empty, relative, missing, holds a control character or would uncover what
the Harness hides - request_invalid, exit 2, naming the flag or entry and the repair, one JSON
document with --json - and a grant path with a control character (grant_malformed). `show` and
`run` print what a worker returned escaped, and --json verbatim.

Real Git and real adapters in the `project` fixture (tests/integration/conftest.py); `run` uses
ProgramBackend (agent.py in a real process) for the agent.
"""

from __future__ import annotations

import copy
import io
import json
import os
import pwd
import shutil
import tempfile
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fakes.cli_launcher import program_container
from fakes.program_backend import Step

from concorde_workers.adapters.cli.main import main

pytestmark = pytest.mark.integration

OSC = "\x1b]0;pwned\x07"
CLEAR = "\x1b[2J\x1b[H"
UNSAFE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
REPAIR = (
    "change --runtime-path, the request's runtime_paths, or the runtime list of the "
    "worktree's .concorde/workers.json"
)
INTERPRETER_REPAIR = "with --interpreter or the request's project_interpreter"


@dataclass
class Result:
    status: int
    out: str
    err: str

    def json(self) -> dict[str, Any]:
        data = json.loads(self.out)  # one JSON document, nothing else on stdout
        assert isinstance(data, dict)
        return data


def cli(*argv: str, container: Any = None) -> Result:
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), out, err, container=container)
    result = Result(status, out.getvalue(), err.getvalue())
    assert "Traceback" not in result.out + result.err
    assert "internal error" not in result.err, result.err
    return result


def flat(text: str) -> str:
    return " ".join(text.split())


def terminal_safe(text: str) -> bool:
    return not any(c != "\n" and unicodedata.category(c) in UNSAFE for c in text)


@pytest.fixture
def another_runtime_directory() -> Iterator[Path]:
    """A runtime directory of another run, where every run puts its own (/tmp)."""
    path = Path(tempfile.mkdtemp(prefix="concorde-0a1b2c-", dir="/tmp"))
    (path / "config").mkdir()
    (path / "config" / "auth.json").write_text('{"key": "another run\'s"}\n')
    try:
        yield path
    finally:
        shutil.rmtree(path)


def _link(p: Any, name: str, target: Path) -> str:
    link = p.root / name
    link.symlink_to(target)
    return str(link)


def _venv_link_to(p: Any, target: Path) -> str:
    """A .venv in the worktree that is a link (a runtime path inside the worktree, as the spec
    allows) resolving to `target`."""
    link = p.worktree / ".venv"
    link.symlink_to(target)
    return str(link)


def _interpreter(p: Any, rel: str) -> str:
    path = p.worktree / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return str(path)


@dataclass(frozen=True)
class Bad:
    """A runtime path or interpreter flag, and what the refusal names."""

    name: str
    flags: Callable[[Any], list[str]]
    says: Callable[[Any], list[str]]
    repair: str = REPAIR


PASSWD_HOME = pwd.getpwuid(os.getuid()).pw_dir

BAD: list[Bad] = [
    Bad(
        "empty",
        lambda p: ["--runtime-path", ""],
        lambda p: ["--runtime-path gives the runtime path '', which is empty"],
    ),
    Bad(
        "relative",
        lambda p: ["--runtime-path", ".venv"],
        lambda p: ["--runtime-path gives the runtime path '.venv', which is not an absolute path"],
    ),
    Bad(
        "a newline",
        lambda p: ["--runtime-path", "/usr/lib\n/"],
        lambda p: [
            "the runtime path '/usr/lib\\n/', which contains the character \\n (line "
            "feed) at position 9"
        ],
    ),
    Bad(
        "missing",
        lambda p: ["--runtime-path", str(p.root / "no-venv")],
        lambda p: [f"the runtime path '{p.root}/no-venv' does not exist"],
    ),
    Bad(
        "/",
        lambda p: ["--runtime-path", "/"],
        lambda p: ["the runtime path '/' is / itself, which holds everything Workers hides"],
    ),
    Bad(
        "$HOME",
        lambda p: ["--runtime-path", str(p.home)],
        lambda p: [f"the runtime path '{p.home}' is the user's home {p.home}"],
    ),
    Bad(
        "the password database's home",
        lambda p: ["--runtime-path", PASSWD_HOME],
        lambda p: [f"the runtime path '{PASSWD_HOME}' is the user's home {PASSWD_HOME}"],
    ),
    Bad(
        "a folder holding the home",
        lambda p: ["--runtime-path", str(p.home.parent)],
        lambda p: [f"holds the user's home {p.home}"],
    ),
    Bad(
        "a link to the home",
        lambda p: ["--runtime-path", _link(p, "home-link", p.home)],
        lambda p: [f"resolves to {p.home}, which is the user's home {p.home}"],
    ),
    Bad(
        "a .venv linking to /",
        lambda p: ["--runtime-path", _venv_link_to(p, Path("/"))],
        lambda p: [f"the runtime path '{p.worktree}/.venv' resolves to /, which is / itself"],
    ),
    Bad(
        "the primary worktree",
        lambda p: ["--runtime-path", str(p.primary)],
        lambda p: [f"is the primary worktree {p.primary}"],
    ),
    Bad(
        "the worktree",
        lambda p: ["--runtime-path", str(p.worktree)],
        lambda p: [f"is the worktree {p.worktree}"],
    ),
    Bad(
        "worktrees/",
        lambda p: ["--runtime-path", str(p.worktree.parent)],
        lambda p: [f"holds the worktree {p.worktree}"],
    ),
    Bad(
        "the common Git directory",
        lambda p: ["--runtime-path", str(p.primary / ".git")],
        lambda p: ["has a .git segment: it is Git metadata"],
    ),
    Bad(
        "the Git hooks",
        lambda p: ["--runtime-path", str(p.primary / ".git" / "hooks")],
        lambda p: ["has a .git segment: it is Git metadata"],
    ),
    Bad(
        "/tmp",
        lambda p: ["--runtime-path", "/tmp"],  # it holds the test's home too
        lambda p: ["the runtime path '/tmp' holds the user's home"],
    ),
    Bad(
        "a missing interpreter",
        lambda p: ["--interpreter", str(p.root / "venv/bin/python")],
        lambda p: [f"the project interpreter '{p.root}/venv/bin/python' does not exist"],
        INTERPRETER_REPAIR,
    ),
    Bad(
        "a relative interpreter",
        lambda p: ["--interpreter", "python3"],
        lambda p: [
            "--interpreter gives the project interpreter 'python3', which is not an absolute path"
        ],
        INTERPRETER_REPAIR,
    ),
    Bad(
        "an interpreter directory",
        lambda p: ["--interpreter", "/usr/bin"],
        lambda p: ["the project interpreter '/usr/bin' is a directory, not the interpreter"],
        INTERPRETER_REPAIR,
    ),
    Bad(
        "an interpreter the worker may replace",
        lambda p: ["--interpreter", _interpreter(p, "src/app/bin/python")],
        lambda p: [f"lies in {p.worktree}/src/app/bin, which the worker may write"],
        INTERPRETER_REPAIR,
    ),
]


def request_flags(p: Any) -> list[str]:
    return [str(p.request_file), "--backend", "claude"]


@pytest.mark.req("A worker reads beside its grant only what its caller lists")
@pytest.mark.parametrize("bad", BAD, ids=[b.name for b in BAD])
def test_plan_refuses_a_runtime_path_or_interpreter_naming_it_and_the_repair(
    project: Any, bad: Bad
) -> None:
    argv = ["plan", *request_flags(project), *bad.flags(project)]
    text = cli(*argv)
    assert text.status == 2, text.out
    both = text.out + text.err
    assert (
        "concorde-workers: refused: request_invalid (input)\n" in text.err
        or "\nREFUSED request_invalid (reason input)\n" in text.out
    ), both
    for phrase in bad.says(project):
        assert flat(phrase) in flat(both), (phrase, both)
    assert flat(bad.repair) in flat(both)
    assert "Deny rules" not in text.out and "Round 1 command" not in text.out
    assert terminal_safe(both)
    doc = cli(*argv, "--json")
    assert doc.status == 2
    data = doc.json()
    assert data["verdict"] == "refused" and "round1" not in data
    assert (data["refusal"]["code"], data["refusal"]["reason"]) == ("request_invalid", "input")
    for phrase in bad.says(project):
        assert flat(phrase) in flat(data["refusal"]["message"])


def test_plan_with_an_empty_runtime_path_from_the_home_never_uncovers_the_home(
    project: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reported case: run from the home, '' resolved to the home, which became readable."""
    monkeypatch.chdir(project.home)
    result = cli("plan", *request_flags(project), "--runtime-path", "", "--json")
    assert result.status == 2
    data = result.json()
    assert data["refusal"]["code"] == "request_invalid"
    assert data.get("sandbox") is None


def test_another_run_s_runtime_directory_is_refused(
    project: Any, another_runtime_directory: Path
) -> None:
    config = another_runtime_directory / "config"
    result = cli("plan", *request_flags(project), "--runtime-path", str(config))
    assert result.status == 2
    assert flat(
        f"the runtime path '{config}' lies in {another_runtime_directory.name}, the "
        "runtime directory of a run"
    ) in flat(result.out + result.err)


def test_a_credential_origin_outside_the_home_is_refused(
    project: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = project.root / "claude-config"
    config.mkdir()
    (config / ".credentials.json").write_text('{"claudeAiOauth": {}}\n')
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    for path, says in (
        (config, f"is {config}, where the user's credentials are"),
        (config / ".credentials.json", "where the user's credentials are"),
        (project.home / ".config", f"holds {project.model_map}, where the user's credentials are"),
    ):
        result = cli("plan", *request_flags(project), "--runtime-path", str(path), "--json")
        assert result.status == 2, result.out
        assert flat(says) in flat(result.json()["refusal"]["message"])


def test_the_run_directories_folder_is_refused(project: Any) -> None:
    parent = project.root / "trace"
    (parent / "checks").mkdir(parents=True)
    request = project.request(name="with-parent.json", parent=str(parent))
    for path, says in (
        (parent, f"holds {parent}/workers, the folder of the run directories"),
        (parent / "checks", None),
    ):
        result = cli("plan", str(request), "--backend", "claude", "--runtime-path", str(path))
        if says is None:  # the folder of check logs beside workers/ is what runtime paths are for
            assert result.status == 0, result.out
        else:
            assert result.status == 2 and flat(says) in flat(result.out)


@pytest.mark.req("A worker reads beside its grant only what its caller lists")
def test_runtime_paths_that_uncover_nothing_reach_the_plan_exactly_as_given(project: Any) -> None:
    venv = project.worktree / ".venv"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.symlink_to(shutil.which("python3") or "/usr/bin/python3")
    (project.home / ".local" / "share").mkdir(parents=True)
    given = [f"{venv}/", "/usr/lib/../lib", str(project.home / ".local" / "share")]
    argv = [arg for path in given for arg in ("--runtime-path", path)]
    result = cli("plan", *request_flags(project), *argv, "--interpreter", str(python), "--json")
    assert result.status == 0, result.out
    data = result.json()
    assert data["resolution"]["runtime_paths"]["value"] == given
    for path in given:
        assert path in data["sandbox"]["allowRead"]
    assert data["round1"]["environment"]["PATH"].startswith(f"{venv}/bin:")


def test_a_workers_json_runtime_entry_that_uncovers_git_metadata_is_refused(project: Any) -> None:
    workers = copy.deepcopy(project.workers_json)
    workers["runtime"] = ["../../../.git"]
    project.write_json(project.config_file, workers)
    project.commit_configuration()
    result = cli(
        "plan",
        str(project.request_file),
        "--operation",
        "implement",
        "--worker",
        "worker",
        "--declare",
        "implement:reviewer",
    )
    assert result.status == 2
    assert 'runtime lists "../../../.git", which has a .git segment' in result.out
    workers["runtime"] = [str(project.home)]
    project.write_json(project.config_file, workers)
    project.commit_configuration()
    result = cli(
        "plan",
        str(project.request_file),
        "--operation",
        "implement",
        "--worker",
        "worker",
        "--declare",
        "implement:reviewer",
        "--json",
    )
    assert result.status == 2
    refusal = result.json()["refusal"]
    assert refusal["code"] == "request_invalid"
    assert flat(f"the runtime path '{project.home}' is the user's home") in flat(refusal["message"])


# --- grant paths with control characters ---------------------------------------------------------

GRANT_PATHS = [
    ("newline", "src/app/a\nb.py", "\\n (line feed) at position 10"),
    ("escape", f"docs/{OSC}", "\\x1b (escape) at position 6"),
    ("carriage return", "src/\r", "\\r (carriage return) at position 5"),
    ("C1 NEL", "src/a\x85", "\\x85"),
    ("line separator", "src/a\u2028b/", "\\u2028 (line separator)"),
]


@pytest.mark.req("A malformed grant's refusal names the entry")
@pytest.mark.parametrize(("row", "path", "says"), GRANT_PATHS, ids=[g[0] for g in GRANT_PATHS])
def test_a_grant_path_with_a_control_character_is_refused_naming_the_entry(
    project: Any, row: str, path: str, says: str
) -> None:
    grant = copy.deepcopy(project.grant)
    grant["entries"].insert(1, {"path": path, "level": "ro"})
    file = project.write_json(project.root / "grant-ctl.json", grant)
    argv = [
        "plan",
        "--worktree",
        str(project.worktree),
        "--grant",
        str(file),
        "--backend",
        "claude",
        "--instructions",
        "x",
    ]
    text = cli(*argv)
    assert text.status == 2
    assert "\nREFUSED grant_malformed (reason input)\n" in text.out
    assert "grant entry 2 (" in text.out and flat(says) in flat(text.out)
    assert "rename the file, or leave it out of the grant" in flat(text.out)
    assert terminal_safe(text.out)
    doc = cli(*argv, "--json")
    assert doc.status == 2 and doc.json()["refusal"]["code"] == "grant_malformed"
    assert doc.json()["grant"] == []  # nothing of the grant was taken


# --- run: refused before a run exists -------------------------------------------------------------

RESULT_WITH_ESCAPES: dict[str, Any] = {
    "status": "ok",
    "summary": f"all good{OSC}{CLEAR}\x9b2J\u202e",
    "error": None,
    "proposed_deletions": [f"src/app/{OSC}gone.py", "src/app/x\nrun w-1: ok"],
    "output": {},
}


@pytest.fixture
def parent(project: Any) -> Path:
    folder = project.root / "trace"
    folder.mkdir()
    return Path(folder)


@pytest.mark.req("A worker reads beside its grant only what its caller lists")
@pytest.mark.parametrize(
    "bad",
    [
        b
        for b in BAD
        if b.name
        in (
            "empty",
            "missing",
            "$HOME",
            "a .venv linking to /",
            "the common Git directory",
            "a missing interpreter",
            "an interpreter the worker may replace",
        )
    ],
    ids=lambda b: b.name,
)
def test_run_refuses_before_a_run_exists(project: Any, parent: Path, bad: Bad) -> None:
    scenarios = [[Step.session("s-1"), Step.result(RESULT_WITH_ESCAPES)]]
    argv = ["run", str(project.request_file), "--parent", str(parent), *bad.flags(project)]
    text = cli(*argv, container=program_container(scenarios))
    assert text.status == 2, text.out + text.err
    assert text.out == ""
    assert text.err.startswith("concorde-workers: refused: request_invalid (input)\n")
    for phrase in bad.says(project):
        assert flat(phrase) in flat(text.err)
    assert flat(bad.repair) in flat(text.err)
    doc = cli(*argv, "--json", container=program_container(scenarios))
    assert doc.status == 2 and doc.json()["refusal"]["code"] == "request_invalid"
    assert list(parent.iterdir()) == []  # no run directory, no progress file, no record


# --- show and run: what a worker returned, escaped --------------------------------------------------


def test_run_and_show_print_worker_text_escaped_and_json_verbatim(
    project: Any, parent: Path
) -> None:
    scenarios = [
        [
            Step.session("s-1"),
            Step.transcript(),
            Step.write("{worktree}/src/app/main.py", "print('hello')\n"),
            Step.result(RESULT_WITH_ESCAPES),
        ]
    ]
    ran = cli(
        "run",
        str(project.request_file),
        "--parent",
        str(parent),
        container=program_container(scenarios),
    )
    assert ran.status == 0, ran.out + ran.err
    assert terminal_safe(ran.out) and terminal_safe(ran.err)
    assert "worker result: ok — all good\\x1b]0;pwned\\x07\\x1b[2J\\x1b[H\\x9b2J\\u202e" in ran.out
    assert "src/app/\\x1b]0;pwned\\x07gone.py, src/app/x\\nrun w-1: ok" in ran.out
    run_dir = next((parent / "workers").iterdir())
    shown = cli("show", str(run_dir))
    assert shown.status == 0 and shown.out == ran.out
    record = cli("show", str(run_dir), "--json")
    assert terminal_safe(record.out)
    assert record.json()["worker_result"] == RESULT_WITH_ESCAPES
    assert record.json()["deletions_absent"] == RESULT_WITH_ESCAPES["proposed_deletions"]


def test_a_request_that_makes_no_command_line_ends_its_run_launch_failed_not_in_a_defect(
    project: Any, parent: Path
) -> None:
    """request_invalid is no run code: a run that met it crashed in the error link (exit 3,
    `internal error (ValueError ...)`). It now ends launch_failed with its final record."""
    request = project.request(name="bad-level.json", reasoning="-x", backend="claude")
    result = cli("run", str(request), "--parent", str(parent), "--json")
    assert result.status == 1, result.err
    record = result.json()
    assert record["status"] == "failed" and record["error"]["code"] == "launch_failed"
    assert record["error"]["detail"] == (
        "the run could not launch (request_invalid): the request cannot make a command line: "
        "invalid value for --effort: '-x'"
    )
    assert (parent / "workers" / record["run_id"] / "trace.json").is_file()
