"""Reading beside the grant (seed 000): which runtime paths and which project interpreter a run
takes exactly as given, and which it refuses (domain/boundary/beside.py), row by row.

A runtime path is readable to every tool and wins over the hiding, so one AT or ABOVE anything
the Harness hides (a home, the primary worktree, the worktree) uncovers it, and one at, above or
INSIDE Git metadata, a runtime or a run directory does; one strictly inside a home, the primary
worktree or the worktree (.venv, node_modules) is what runtime paths are for. Every form of a
path is judged: as given and with its links resolved.
"""

from __future__ import annotations

from typing import Any

import pytest

from concorde_workers.domain.boundary.beside import (
    INTERPRETER_REPAIR,
    PYVENV_CFG,
    RUNTIME_REPAIR,
    Given,
    interpreter_installation,
    interpreter_problem,
    judge_beside,
    runtime_path_problem,
    surroundings,
)
from concorde_workers.domain.boundary.grant import Grant, parse_grant
from concorde_workers.domain.ground.errors import Reason

HOME = "/home/u"
ENV_HOME = "/srv/h"  # $HOME, when it is not the password database's home
PRIMARY = f"{HOME}/proj"
WT = f"{PRIMARY}/.claude/worktrees/t1"
COMMON = f"{PRIMARY}/.git"
BARE = "/srv/repos/lib.git"  # a nested repository's Git directory, named by its .git file
TEMP = "/tmp"
PARENT = "/srv/trace/op-1"
CLAUDE_CONFIG = "/etc/claude-config"  # CLAUDE_CONFIG_DIR outside the home
MODEL_MAP = "/srv/concorde/models.json"
RUNS = f"{PARENT}/workers"

GRANT = parse_grant(
    {
        "task_type": "implement",
        "context_identity": "c",
        "entries": [
            {"path": "src/app/", "level": "rw"},
            {"path": "tools/", "level": "ro"},
            {"path": "src/app/.venv/", "level": "rw"},
        ],
    }
)
assert isinstance(GRANT, Grant)


def around(runtime_paths: tuple[str, ...] = ()) -> Any:
    return surroundings(
        homes=[HOME, ENV_HOME],
        primary=[PRIMARY],
        worktree=[WT],
        git=[COMMON, f"{COMMON}/worktrees/t1", f"{WT}/.git", BARE],
        credentials=[
            CLAUDE_CONFIG,
            f"{CLAUDE_CONFIG}/.credentials.json",
            f"{HOME}/.pi/agent/auth.json",
            MODEL_MAP,
        ],
        temp_root=[TEMP],
        run_dirs=[RUNS],
        grant=GRANT,
        runtime_paths=runtime_paths,
    )


def existing(path: str, real: str | None = None) -> Given:
    return Given(path=path, real=real or path, exists=True, directory=True)


# --- runtime paths, row by row ------------------------------------------------------------------

RUNTIME_ROWS: list[tuple[str, Given, str | None]] = [
    # (row, the given path as the disk knows it, the problem or None when taken)
    ("text: empty", Given(path=""), "is empty"),
    ("text: NUL", Given(path="/opt/a\x00b"), "contains the character \\x00 (NUL) at position 7"),
    ("text: newline", Given(path="/opt/a\nb"), "contains the character \\n (line feed)"),
    ("text: ESC", Given(path="/opt/\x1b[2J"), "contains the character \\x1b (escape)"),
    ("text: C1 CSI", Given(path="/opt/\x9b2J"), "contains the character \\x9b"),
    (
        "text: line separator",
        Given(path="/opt/a\u2028b"),
        "contains the character \\u2028 (line separator)",
    ),
    ("text: relative", Given(path=".venv"), "is not an absolute path"),
    ("text: relative dot", Given(path="."), "is not an absolute path"),
    ("missing", Given(path="/opt/nope", real="/opt/nope"), "does not exist"),
    ("missing: a dangling link", Given(path=f"{WT}/.venv", real="/gone"), "does not exist"),
    ("/", existing("/"), "is / itself, which holds everything Workers hides"),
    ("/ lexically", existing("/opt/.."), "is / itself"),
    ("home", existing(HOME), f"is the user's home {HOME}"),
    ("home: $HOME", existing(ENV_HOME), f"is the user's home {ENV_HOME}"),
    ("home: above", existing("/home"), f"holds the user's home {HOME}"),
    (
        "home: through a link",
        existing("/opt/link", real=HOME),
        f"resolves to {HOME}, which is the user's home {HOME}",
    ),
    ("home: inside stays allowed", existing(f"{HOME}/.pyenv/versions/3.12"), None),
    (
        "credentials: a configuration directory",
        existing(CLAUDE_CONFIG),
        f"is {CLAUDE_CONFIG}, where the user's credentials are",
    ),
    ("credentials: above it", existing("/etc"), f"holds {CLAUDE_CONFIG}, where the user's"),
    (
        "credentials: a credential file",
        existing(f"{CLAUDE_CONFIG}/.credentials.json"),
        f"is {CLAUDE_CONFIG}/.credentials.json, where",
    ),
    (
        "credentials: the folder of pi's auth.json",
        existing(f"{HOME}/.pi"),
        f"holds {HOME}/.pi/agent/auth.json, where the user's credentials are",
    ),
    ("credentials: the folder of the model map", existing("/srv/concorde"), f"holds {MODEL_MAP}"),
    (
        "credentials: inside a configuration directory stays allowed",
        existing(f"{CLAUDE_CONFIG}/local/node_modules"),
        None,
    ),
    ("primary", existing(PRIMARY), f"is the primary worktree {PRIMARY}"),
    ("primary: trailing slash", existing(PRIMARY + "/"), f"is the primary worktree {PRIMARY}"),
    ("primary: inside stays allowed", existing(f"{PRIMARY}/.venv"), None),
    (
        "worktree",
        existing(WT),
        f"is the worktree {WT}, of which the grant alone says what is readable",
    ),
    ("worktree: above", existing(f"{PRIMARY}/.claude/worktrees"), "holds the worktree"),
    ("worktree: inside stays allowed (.venv)", existing(f"{WT}/.venv"), None),
    ("worktree: inside stays allowed (withheld)", existing(f"{WT}/secrets"), None),
    ("git: the common directory", existing(COMMON), "has a .git segment: it is Git metadata"),
    ("git: inside it", existing(f"{COMMON}/objects"), "has a .git segment"),
    ("git: a bare directory", existing(BARE), f"is the Git metadata {BARE}"),
    ("git: inside a bare directory", existing(f"{BARE}/hooks"), f"lies in the Git metadata {BARE}"),
    ("git: above a bare directory", existing("/srv/repos"), f"holds the Git metadata {BARE}"),
    ("git: a .git segment anywhere", existing("/opt/x/.git/info"), "has a .git segment"),
    (
        "git: through a link",
        existing(f"{WT}/meta", real=f"{COMMON}/modules"),
        f"resolves to {COMMON}/modules, which has a .git segment",
    ),
    ("git: .github is no .git", existing(f"{WT}/.github"), None),
    ("runtime: the temp root", existing(TEMP), f"is {TEMP}, the folder of the runtime directories"),
    (
        "runtime: another run's",
        existing("/tmp/concorde-0a1b2c-xyz9/config"),
        "lies in concorde-0a1b2c-xyz9, the runtime directory of a run",
    ),
    (
        "runtime: another run's, any folder",
        existing("/var/tmp/concorde-0a1b2c-Q_1"),
        "lies in concorde-0a1b2c-Q_1, the runtime directory of a run",
    ),
    ("runtime: a like name is no runtime directory", existing("/tmp/concorde-notes"), None),
    ("runtime: inside the temp root stays allowed", existing("/tmp/toolchain"), None),
    ("run: the workers folder", existing(RUNS), f"is {RUNS}, the folder of the run directories"),
    ("run: the parent", existing(PARENT), f"holds {RUNS}, the folder of the run directories"),
    (
        "run: a run's directory",
        existing(f"{RUNS}/w-20260101T000000-abc123"),
        f"lies in {RUNS}, the folder of the run directories",
    ),
    ("run: beside workers/ stays allowed (check logs)", existing(f"{PARENT}/checks"), None),
    ("elsewhere stays allowed", existing("/usr/lib/python3.11"), None),
    (
        "elsewhere: a file",
        Given(path="/etc/ssl/certs/ca.pem", real="/etc/ssl/certs/ca.pem", exists=True),
        None,
    ),
]


@pytest.mark.req("A worker reads beside its grant only what its caller lists")
@pytest.mark.parametrize(
    ("row", "given", "problem"), RUNTIME_ROWS, ids=[r[0] for r in RUNTIME_ROWS]
)
def test_a_runtime_path_row_by_row(row: str, given: Given, problem: str | None) -> None:
    found = runtime_path_problem(given, around())
    if problem is None:
        assert found is None, found
    else:
        assert found is not None and problem in found, (row, found)


# --- the project interpreter, row by row --------------------------------------------------------


def interpreter(
    path: str, real: str | None = None, directory_real: str | None = None, **facts: Any
) -> Given:
    data: dict[str, Any] = {"exists": True, "executable_file": True}
    data.update(facts)
    return Given(path=path, real=real or path, directory_real=directory_real, **data)


INTERPRETER_ROWS: list[tuple[str, Given, tuple[str, ...], str | None]] = [
    ("text: empty", Given(path=""), (), "is empty"),
    ("text: relative", Given(path="python3"), (), "is not an absolute path"),
    (
        "text: a control character",
        Given(path="/usr/bin/py\x1b]0;t\x07"),
        (),
        "contains the character \\x1b (escape)",
    ),
    ("missing", Given(path="/opt/nope/python", real="/opt/nope/python"), (), "does not exist"),
    (
        "a directory",
        interpreter("/usr/bin/", executable_file=False, directory=True),
        (),
        "is a directory, not the interpreter",
    ),
    (
        "not executable",
        interpreter("/etc/passwd", executable_file=False),
        (),
        "is not an executable file",
    ),
    ("git", interpreter(f"{COMMON}/hooks/python"), (), "has a .git segment"),
    (
        "runtime",
        interpreter("/tmp/concorde-0a1b2c-xyz9/work/python"),
        (),
        "lies in concorde-0a1b2c-xyz9, the runtime directory of a run",
    ),
    (
        "run",
        interpreter(f"{RUNS}/w-1/python"),
        (),
        f"lies in {RUNS}, the folder of the run directories",
    ),
    (
        "a directory the worker writes (rw)",
        interpreter(f"{WT}/src/app/bin/python"),
        (),
        f"lies in {WT}/src/app/bin, which the worker may write",
    ),
    (
        "rw through a link",
        interpreter("/opt/py/python", directory_real=f"{WT}/src/app"),
        (),
        f"lies in {WT}/src/app, which the worker may write",
    ),
    (
        "rw but below a runtime path (never writable)",
        interpreter(f"{WT}/src/app/.venv/bin/python"),
        (f"{WT}/src/app/.venv",),
        None,
    ),
    ("ro in the worktree", interpreter(f"{WT}/tools/python"), (), None),
    (
        "a venv in the worktree",
        interpreter(f"{WT}/.venv/bin/python", real="/usr/bin/python3.11"),
        (),
        None,
    ),
    (
        "in the home (the caller lists its installation)",
        interpreter(f"{HOME}/.pyenv/versions/3.12/bin/python"),
        (),
        None,
    ),
    ("in the primary worktree", interpreter(f"{PRIMARY}/.venv/bin/python"), (), None),
    ("the host's", interpreter("/usr/bin/python3"), (), None),
    ("PyPy", interpreter("/opt/pypy/bin/pypy3.10"), (), None),
    ("a debug build", interpreter("/usr/bin/python3.11-dbg"), (), None),
    (
        "no Python at all (issue 31 §3)",
        interpreter("/bin/true"),
        (),
        "is named 'true', not like a Python interpreter (python, python3, python3.12, pypy3, "
        "graalpy)",
    ),
    (
        "another program",
        interpreter("/usr/bin/node"),
        (),
        "is named 'node', not like a Python interpreter",
    ),
]


@pytest.mark.req("The project's interpreter comes first on the worker's PATH")
@pytest.mark.parametrize(
    ("row", "given", "runtime_paths", "problem"),
    INTERPRETER_ROWS,
    ids=[r[0] for r in INTERPRETER_ROWS],
)
def test_the_project_interpreter_row_by_row(
    row: str, given: Given, runtime_paths: tuple[str, ...], problem: str | None
) -> None:
    found = interpreter_problem(given, around(runtime_paths))
    if problem is None:
        assert found is None, found
    else:
        assert found is not None and problem in found, (row, found)


# --- the refusal --------------------------------------------------------------------------------


@pytest.mark.req("A worker reads beside its grant only what its caller lists")
def test_the_first_bad_path_is_refused_naming_it_and_the_repair() -> None:
    disk = {"/opt/venv": existing("/opt/venv"), HOME: existing(HOME)}
    refusal = judge_beside(["/opt/venv", HOME, ""], None, disk.__getitem__, around())
    assert refusal is not None
    assert (refusal.code, refusal.reason) == ("request_invalid", Reason.INPUT)
    assert refusal.message == (
        f"the runtime path '{HOME}' is the user's home {HOME}; a runtime path is readable by "
        f"every tool of the worker, beside its grant: {RUNTIME_REPAIR}"
    )
    assert "--runtime-path" in RUNTIME_REPAIR and "workers.json" in RUNTIME_REPAIR


def test_the_interpreter_is_judged_after_the_runtime_paths() -> None:
    disk = {"/opt/venv": existing("/opt/venv"), "/nope/python": Given(path="/nope/python")}
    refusal = judge_beside(["/opt/venv"], "/nope/python", disk.__getitem__, around())
    assert refusal is not None
    assert refusal.message == (
        f"the project interpreter '/nope/python' does not exist; {INTERPRETER_REPAIR}"
    )
    assert "--interpreter" in INTERPRETER_REPAIR


@pytest.mark.req("A worker reads beside its grant only what its caller lists")
def test_paths_that_uncover_nothing_are_taken_as_given() -> None:
    disk = {p: existing(p) for p in ("/opt/venv/", f"{WT}/node_modules", "/usr/lib/x/../y")}
    assert judge_beside(list(disk), None, disk.__getitem__, around()) is None


# --- what the project interpreter needs to start (issue 19 §1) ---------------------------------

PYENV = "/home/ana/.pyenv/versions/3.12.1"
UV = "/home/ana/.local/share/uv/python/cpython-3.12.3-linux-x86_64-gnu"
VENV = "/srv/proj/.venv"

INSTALLATION_ROWS = {
    "a venv of a pyenv Python": (
        f"{VENV}/bin/python",
        {f"{VENV}/bin/python": f"{PYENV}/bin/python3.12"},
        f"home = {PYENV}/bin\nversion = 3.12.1\n",
        (VENV, PYENV),
    ),
    "a uv venv": (
        f"{VENV}/bin/python",
        {f"{VENV}/bin/python": f"{UV}/bin/python3.12"},
        f"home = {UV}/bin\nimplementation = CPython\nuv = 0.5.1\n",
        (VENV, UV),
    ),
    "a venv of the system Python": (
        f"{VENV}/bin/python",
        {f"{VENV}/bin/python": "/usr/bin/python3.12"},
        "home = /usr/bin\n",
        (VENV,),
    ),
    "a pyenv Python itself": (f"{PYENV}/bin/python3.12", {}, None, (PYENV,)),
    "the system Python": ("/usr/bin/python3", {}, None, ()),
    "a venv whose pyvenv.cfg names no home": (
        f"{VENV}/bin/python",
        {f"{VENV}/bin/python": "/usr/bin/python3"},
        "version = 3\n",
        (VENV,),
    ),
    "a relative home is no home": (
        f"{VENV}/bin/python",
        {f"{VENV}/bin/python": "/usr/bin/python3"},
        "home = bin\n",
        (VENV,),
    ),
}


@pytest.mark.parametrize(
    ("interpreter", "links", "cfg", "expected"),
    INSTALLATION_ROWS.values(),
    ids=INSTALLATION_ROWS.keys(),
)
def test_the_interpreter_s_installation_row_by_row(
    interpreter: str, links: dict[str, str], cfg: str | None, expected: tuple[str, ...]
) -> None:
    def pyvenv_cfg(path: str) -> str | None:
        return cfg if path == f"{VENV}/{PYVENV_CFG}" else None

    found = interpreter_installation(interpreter, lambda p: links.get(p, p), pyvenv_cfg)
    assert found == expected
    assert not any(p in ("/", "/home", "/home/ana") for p in found)  # never a whole home
