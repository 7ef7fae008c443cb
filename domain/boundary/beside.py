"""Reading beside the grant: which runtime paths and which project interpreter a run takes.

Seed 000 "Reading beside the grant": the runtime paths are the only material besides the grant a
worker may read, every tool of it, and the caller alone decides them; Workers hands them to the
Harness exactly as given, adding none and widening none ("A worker reads beside its grant only
what its caller lists"). Workers may therefore refuse a runtime path, never rewrite one. It
refuses one that would uncover what the Harness hides, because a runtime path is readable to every
tool and wins over the hiding (the read table's runtime row comes before the boundary rows, the
deny-rule walks keep the way to it, the sandbox lists it in allowRead).

The judgement, for each form of the path (normalised as given, and with every link resolved),
rows in order, the first that matches decides (docs/decisions.md "Runtime paths and the project
interpreter"):

| row | a runtime path is refused when it | it would uncover |
|---|---|---|
| text | is empty, holds a control character, is relative | (it names nothing) |
| missing | does not exist | (nothing: a typo) |
| / | is `/` | everything |
| home | is at or above a home (the password database's, `$HOME`) | the home |
| credentials | is at or above a credential's origin (`boundary.credentials`: Claude Code's and | |
| | pi's configuration directories, their credential files, the model map) | credentials |
| primary | is at or above the primary worktree | the primary worktree |
| worktree | is at or above the worktree | what the grant withholds |
| git | has a `.git` segment; is at, above or inside a Git admin path | Git metadata |
| runtime | is at or above the runtime directories' folder (the temp root), | credential copies |
| | or lies in a `concorde-*` runtime directory | |
| run | is at, above or inside the trace parent's `workers/` | records, transcripts |

A runtime path strictly inside a home, a configuration directory, the primary worktree or the
worktree stays allowed: a virtual environment, `node_modules`, an installation under the home are
what runtime paths are for (seed 000: ".venv or node_modules"). The homes and the credentials'
origins are `domain.configuration.credentials`' own, the ones `domain.boundary.hidden` and the
policy hide.

The project interpreter is not made readable: its directory comes first on PATH and the brief
names it. It is refused when it is empty, holds a control character, is relative, does not exist,
is no executable file, lies in Git metadata, a runtime or a run directory, or when its directory
is writable by the worker (rw in the grant and below no runtime path): the agent program itself
looks programs up on that PATH (Claude Code starts its sandbox's bwrap and socat by name, outside
the sandbox), so a program the worker planted there would run on the host.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Sequence
from enum import Enum

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.boundary.grant import Grant, Level
from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.ground.errors import Reason, Refusal
from concorde_workers.domain.ground.paths import is_within, relative_to
from concorde_workers.domain.ground.run_id import RUNTIME_PREFIX
from concorde_workers.domain.ground.text import control_problem

RUNTIME_DIRECTORY = re.compile(re.escape(RUNTIME_PREFIX) + r"[0-9a-f]{6}-[A-Za-z0-9_]{1,32}\Z")
"""The name of a run's runtime directory (`domain.ground.run_id.runtime_directory_name`)."""

RUNTIME_REPAIR = (
    "list only what the worker needs to read beside its grant, such as a virtual environment, "
    "node_modules or a folder of check logs, as an absolute path: change --runtime-path, the "
    "request's runtime_paths, or the runtime list of the worktree's .concorde/workers.json"
)
PYTHON_NAMES = ("python", "pypy", "graalpy")
"""How a Python interpreter's file is named (CPython's `python3.12`, a venv's `python`, PyPy,
GraalPy): the project interpreter's name begins with one of them."""
INTERPRETER_REPAIR = (
    "give the absolute path of the project's own Python interpreter as its checks run it "
    "(Workers never looks it up itself), with --interpreter or the request's project_interpreter, "
    "and list the folders it needs among the runtime paths"
)


class Relation(Enum):
    """How a path must lie to a hidden path to uncover it."""

    AT_OR_ABOVE = "at or above"
    AT_ABOVE_OR_INSIDE = "at, above or inside"


class Hidden(BaseModel):
    """One thing the Harness hides, in every form its paths take (as given, real)."""

    model_config = ConfigDict(frozen=True)

    row: str
    what: str
    """What it is, `{path}` standing for the path."""
    paths: tuple[str, ...]
    relation: Relation


class Surroundings(BaseModel):
    """What a path given beside the grant is judged against, in the order of the table."""

    model_config = ConfigDict(frozen=True)

    hidden: tuple[Hidden, ...]
    grant: Grant | None = None
    worktree: tuple[str, ...] = ()
    runtime_paths: tuple[str, ...] = ()


class Given(BaseModel):
    """A path as the caller gave it and what the disk says of it (filled by the application)."""

    model_config = ConfigDict(frozen=True)

    path: str
    real: str | None = None
    exists: bool = False
    executable_file: bool = False
    directory: bool = False
    directory_real: str | None = None


def surroundings(
    *,
    homes: Sequence[str],
    primary: Sequence[str],
    worktree: Sequence[str],
    git: Sequence[str],
    temp_root: Sequence[str],
    run_dirs: Sequence[str],
    credentials: Sequence[str] = (),
    grant: Grant | None = None,
    runtime_paths: Sequence[str] = (),
) -> Surroundings:
    """The rows of the table as data; every argument lists a path in all its forms."""

    def norm(paths: Sequence[str]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(posixpath.normpath(p) for p in paths if p))

    at, around = Relation.AT_OR_ABOVE, Relation.AT_ABOVE_OR_INSIDE
    rows = (
        Hidden(row="/", what="/, which holds everything Workers hides", paths=("/",), relation=at),
        Hidden(row="home", what="the user's home {path}", paths=norm(homes), relation=at),
        Hidden(
            row="credentials",
            what="{path}, where the user's credentials are",
            paths=norm(credentials),
            relation=at,
        ),
        Hidden(row="primary", what="the primary worktree {path}", paths=norm(primary), relation=at),
        Hidden(
            row="worktree",
            what="the worktree {path}, of which the grant alone says what is readable",
            paths=norm(worktree),
            relation=at,
        ),
        Hidden(row="git", what="the Git metadata {path}", paths=norm(git), relation=around),
        Hidden(
            row="runtime",
            what="{path}, the folder of the runtime directories",
            paths=norm(temp_root),
            relation=at,
        ),
        Hidden(
            row="run",
            what="{path}, the folder of the run directories",
            paths=norm(run_dirs),
            relation=around,
        ),
    )
    return Surroundings(
        hidden=rows, grant=grant, worktree=norm(worktree), runtime_paths=tuple(runtime_paths)
    )


def _forms(given: Given) -> list[str]:
    forms = [posixpath.normpath(given.path)]
    if given.real is not None and posixpath.normpath(given.real) not in forms:
        forms.append(posixpath.normpath(given.real))
    return forms


def _relation(path: str, hidden: str, relation: Relation) -> str | None:
    """How `path` lies to `hidden` when that uncovers it: "is", "holds" or "lies in"."""
    if path == hidden:
        return "is"
    if is_within(hidden, path):
        return "holds"
    if relation is Relation.AT_ABOVE_OR_INSIDE and is_within(path, hidden):
        return "lies in"
    return None


def _shown(form: str, given: Given) -> str:
    """How a problem names the form it found: the real path when that is what matched."""
    return "" if form == posixpath.normpath(given.path) else f"resolves to {form}, which "


def _segment_problem(row: str, form: str) -> str | None:
    """The rows judged by a path's own segments: a `.git` segment, a runtime directory."""
    segments = form.split("/")
    if row == "git" and ".git" in segments:
        return "has a .git segment: it is Git metadata"
    name = next((s for s in segments if RUNTIME_DIRECTORY.match(s)), None)
    if row == "runtime" and name is not None:
        return f"lies in {name}, the runtime directory of a run"
    return None


def _row_problem(form: str, hidden: Hidden, file: bool) -> str | None:
    if hidden.row == "/":
        return "is / itself, which holds everything Workers hides" if form == "/" else None
    problem = _segment_problem(hidden.row, form)
    if problem is not None:
        return problem
    for path in hidden.paths:
        relation = _relation(form, path, hidden.relation)
        if relation == "holds" and file:
            continue  # a file holds nothing
        if relation is not None:
            return f"{relation} {hidden.what.format(path=path)}"
    return None


def uncovers(given: Given, around: Surroundings, rows: Sequence[str] | None = None) -> str | None:
    """What hidden thing a path would uncover (rows `/` to `run` of the table), or None.
    `rows` limits the judgement to some rows and judges the path as a file (the
    interpreter's)."""
    for form in _forms(given):
        for hidden in around.hidden:
            if rows is not None and hidden.row not in rows:
                continue
            problem = _row_problem(form, hidden, file=rows is not None)
            if problem is not None:
                return _shown(form, given) + problem
    return None


def text_problem(path: str) -> str | None:
    """Rows "text": empty, a control character, relative."""
    if path == "":
        return "is empty"
    problem = control_problem(path)
    if problem is not None:
        return problem
    if not path.startswith("/"):
        return "is not an absolute path"
    return None


def runtime_path_problem(given: Given, around: Surroundings) -> str | None:
    """The first row of the table a runtime path meets, or None when it is taken."""
    problem = text_problem(given.path)
    if problem is None and not given.exists:
        problem = "does not exist"
    return problem or uncovers(given, around)


def _writable(directory: str, around: Surroundings) -> bool:
    """True when the worker may write in `directory`: rw in the grant, below no runtime path."""
    if around.grant is None or any(is_within(directory, r) for r in around.runtime_paths):
        return False
    for worktree in around.worktree:
        if is_within(directory, worktree):
            rel = relative_to(directory, worktree)
            return rel != "" and around.grant.level_of(rel) is Level.RW
    return False


def interpreter_problem(given: Given, around: Surroundings) -> str | None:
    """The first problem of the project interpreter, or None when it is taken."""
    problem = text_problem(given.path)
    if problem is not None:
        return problem
    if not given.exists:
        return "does not exist"
    if given.directory or not given.executable_file:
        return (
            "is a directory, not the interpreter"
            if given.directory
            else ("is not an executable file")
        )
    name = posixpath.basename(posixpath.normpath(given.path))
    if not name.startswith(PYTHON_NAMES):
        # Seed 000: "the project's own Python interpreter", whose directory comes first on the
        # worker's PATH and which the brief names as the project's Python (issue 31 §3:
        # `--interpreter /bin/true` was taken).
        return (
            f"is named {name!r}, not like a Python interpreter (python, python3, python3.12, "
            "pypy3, graalpy): the brief would tell the worker to run the project's code with it"
        )
    problem = uncovers(given, around, rows=("git", "runtime", "run"))
    if problem is not None:
        return problem
    directory = posixpath.dirname(posixpath.normpath(given.path))
    for form in dict.fromkeys((directory, given.directory_real or directory)):
        if _writable(form, around):
            return (
                f"lies in {form}, which the worker may write: the agent program looks "
                "programs up on the PATH this directory comes first on, outside the "
                "sandbox, so a program the worker planted there would run on the host"
            )
    return None


def runtime_path_refusal(given: Given, problem: str) -> Refusal:
    return Refusal(
        code=Code.REQUEST_INVALID,
        reason=Reason.INPUT,
        message=f"the runtime path {given.path!r} {problem}; a runtime path is "
        f"readable by every tool of the worker, beside its grant: {RUNTIME_REPAIR}",
    )


def interpreter_refusal(given: Given, problem: str) -> Refusal:
    return Refusal(
        code=Code.REQUEST_INVALID,
        reason=Reason.INPUT,
        message=f"the project interpreter {given.path!r} {problem}; {INTERPRETER_REPAIR}",
    )


Inspect = Callable[[str], Given]
"""What the application learns of a given path from the disk."""


def judge_beside(
    runtime_paths: Sequence[str], interpreter: str | None, inspect: Inspect, around: Surroundings
) -> Refusal | None:
    """Every runtime path in the order given, then the project interpreter: the first refusal,
    or None when the run takes them all exactly as given."""
    for path in runtime_paths:
        given = inspect(path)
        problem = runtime_path_problem(given, around)
        if problem is not None:
            return runtime_path_refusal(given, problem)
    if interpreter is not None:
        given = inspect(interpreter)
        problem = interpreter_problem(given, around)
        if problem is not None:
            return interpreter_refusal(given, problem)
    return None


PYVENV_CFG = "pyvenv.cfg"
MAX_PYVENV_CFG_BYTES = 64 * 1024
"""A virtual environment's pyvenv.cfg is read only when a regular file within this size."""
SYSTEM_PREFIXES = frozenset({"/", "/usr", "/usr/local"})
"""Installations every view shows already (the root is bound read-only): never listed."""


def interpreter_installation(
    interpreter: str, realpath: Callable[[str], str], pyvenv_cfg: Callable[[str], str | None]
) -> tuple[str, ...]:
    """What the project interpreter needs readable to start (issue 19 §1), for a caller to list
    among the runtime paths: a virtual environment's own folder (the one holding pyvenv.cfg
    above its `bin/`), the base installation its `home` names (the folder above that `bin/`),
    and the installation the interpreter's real file lies in. `pyvenv_cfg` reads that file
    (None: none, or not a regular file within MAX_PYVENV_CFG_BYTES). The system's own prefixes
    are left out; a path above a home is left to the judgement of every runtime path
    (`judge_beside`), which refuses it."""
    found: list[str] = []
    given = posixpath.normpath(interpreter)
    prefix = posixpath.dirname(posixpath.dirname(given))
    text = pyvenv_cfg(posixpath.join(prefix, PYVENV_CFG))
    if text is not None:
        found.append(prefix)
        home = _cfg_home(text)
        if home is not None:
            found.append(_above_bin(home))
    real = posixpath.normpath(realpath(given))
    if posixpath.basename(posixpath.dirname(real)) == "bin":
        found.append(_above_bin(posixpath.dirname(real)))
    out: list[str] = []
    for path in found:
        if path not in SYSTEM_PREFIXES and not any(is_within(path, kept) for kept in out):
            out = [k for k in out if not is_within(k, path)] + [path]
    return tuple(out)


def _cfg_home(text: str) -> str | None:
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == "home":
            value = value.strip()
            if posixpath.isabs(value) and control_problem(value) is None:
                return posixpath.normpath(value)
    return None


def _above_bin(directory: str) -> str:
    return posixpath.dirname(directory) if posixpath.basename(directory) == "bin" else directory
