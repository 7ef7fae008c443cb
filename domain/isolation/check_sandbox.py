"""The sandbox a check runs in (issue 13 §2): the same network-less, cleared world as the worker's
Bash, over a throwaway view of the worktree (domain/isolation/check_layer.py: a copy-on-write layer
over
the worker's own view, or a copy of what the grant shows).

bubblewrap, as the host's own Git runs (`domain.gitview.git_commands.SANDBOX_ARGS`): the root
read-only,
a fresh /dev and /proc, every namespace unshared (no network, its own PIDs), dying with the
host, as uid 65534 with no capability, no further user namespace and
`no_new_privs` (issue 18 §1: no mask below can be taken down). The check's command runs in a
session of its own (`setsid` inside the namespace, not bwrap's `--new-session`, which would move
the namespace's init out of the process runner's group too): the init stays in the group the
lifeline's guard kills when the host dies (domain/isolation/launch.py `GUARD_SCRIPT`), and the
command can signal nothing of that group. Then:

* every place of the user's credentials and of other runs is an empty tmpfs: the homes, the
  credential origins, /tmp and the other temporary roots (every runtime directory), /run, the
  primary worktree (its `.git` and every other worktree) and the run records (`workers/`);
* the runtime paths are bound back read-only (the project interpreter's installation among them,
  as seed 000 asks the caller to list it);
* the throwaway view is at the worktree's own path, the check's working directory, so a virtual
  environment or a path a test names resolves as it would in place;
* the environment is cleared to PATH (the project interpreter's directory first), LANG,
  HOME=/tmp/home and TMPDIR=/tmp (`check_environment`).

Pure: which paths exist comes in as a callable.
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.boundary.beside import PYTHON_NAMES
from concorde_workers.domain.boundary.grant import Grant, Level, directory_level, entries_below
from concorde_workers.domain.configuration.resources import DEFAULT_LIMITS, ResourceLimits
from concorde_workers.domain.gitview.git_commands import SANDBOX_ARGS
from concorde_workers.domain.ground.paths import is_within, relative_to
from concorde_workers.domain.isolation.confinement import Mount
from concorde_workers.domain.isolation.control_groups import mask_args
from concorde_workers.domain.isolation.environment import worker_path
from concorde_workers.domain.isolation.launch import NAMESPACE_REPORT_FD, lifeline

ALWAYS_HIDDEN: tuple[str, ...] = (
    "/home",
    "/root",
    "/tmp",
    "/var/tmp",
    "/run",
    "/dev/shm",
    "/mnt",
    "/media",
)
"""Hidden in every check's sandbox: the homes, the temporary roots, the runtime state."""
CHECK_SANDBOX_ARGS = tuple(a for a in SANDBOX_ARGS if a != "--new-session")
"""The host's sandbox but its new session (the check's command gets one inside: `SETSID`)."""
SETSID = "/usr/bin/setsid"
CHECK_HOME = "/tmp/home"
CHECK_TMP = "/tmp"
SHELL = "/bin/sh"


class CheckPlace(BaseModel):
    """Where a run's checks run: the worktree (where the copy is seen), what of the run must be
    hidden besides the host's own list (the primary worktree, the run records), the runtime
    paths and the project interpreter."""

    model_config = ConfigDict(frozen=True)

    worktree: str
    hidden: tuple[str, ...] = ()
    runtime_paths: tuple[str, ...] = ()
    project_interpreter: str | None = None
    grant: Grant | None = None
    """What of the worktree a check's copy holds: what the grant lets the worker read (None:
    all of it, for a caller that says so)."""
    view: tuple[Mount, ...] | None = None
    """The run's mount plan inside the worktree, as the agent ran under it: what a check sees
    of the worktree itself (None: a tree that is already a copy of what the grant shows, seen
    whole)."""
    resources: ResourceLimits = DEFAULT_LIMITS
    """The run's limits: each check runs in a control group of its own with them (issue 20)."""

    def keep(self, rel: str) -> Keep:
        """What a check's copy keeps of the worktree-relative `rel` (`copy_rule`)."""
        return copy_rule(self.grant, rel)

    def later(self, rel: str) -> bool:
        """Whether the starting state's copy of the file `rel` may wait until a check fails
        (`copy_later`)."""
        return copy_later(self.grant, rel)

    def rules(self) -> CopyRules:
        """`keep` and `later` for one copy's walk, each folder's answer reused for its entries
        where it holds for all of them (`CopyRules`)."""
        return CopyRules(self.grant)


class Keep(StrEnum):
    """What a check's copy keeps of one entry of the worktree."""

    CONTENT = "content"
    NAME = "name"
    NOTHING = "nothing"
    PRUNED = "nothing, nor anything below it"


def copy_rule(grant: Grant | None, rel: str) -> Keep:
    """A check's copy holds what the worker may read and nothing more (seed 000: the grant is
    the whole of what a worker may read of the project): the log of a failing check comes back
    to the worker as its repair, so whatever a check could print must be readable to it already.
    rw and ro: the content; names: the name (an empty file, as the confinement shows it); a path
    in no entry: nothing. A folder is made whenever something below it is kept."""
    if grant is None:
        return Keep.CONTENT
    level = grant.level_of(rel)
    if level in (Level.RW, Level.RO):
        return Keep.CONTENT
    if level is Level.NAMES:
        return Keep.NAME
    # A folder no entry reaches into is not walked at all (node_modules, a virtual environment).
    return Keep.NOTHING if entries_below(grant, rel.strip("/")) else Keep.PRUNED


def copy_later(grant: Grant | None, rel: str) -> bool:
    """A file the run cannot change may be copied into the starting state's copy when a check
    first fails, not before round 1 (issue 32 §3): ro and names entries, which the worker sees
    read-only (or as an empty file) and no round writes. An rw file is copied before round 1:
    the rounds change it. Without a grant (a caller that keeps everything) nothing waits."""
    if grant is None:
        return False
    return grant.level_of(rel) in (Level.RO, Level.NAMES)


def folder_rule(grant: Grant | None, folder: str) -> tuple[Keep, bool] | None:
    """What `copy_rule` and `copy_later` answer for every path below the folder `folder` when
    no entry of the grant lies below it; None when one does (each path is then asked). With no
    entry below, no path there has an exact entry, so the directory entry covering the folder
    decides for each of them, and nothing below is reached by an entry (`Keep.PRUNED` where
    the folder is hidden)."""
    if grant is None:
        return Keep.CONTENT, False
    folder = folder.strip("/")
    if entries_below(grant, folder):
        return None
    level = directory_level(grant, folder)
    if level in (Level.RW, Level.RO):
        keep = Keep.CONTENT
    else:
        keep = Keep.NAME if level is Level.NAMES else Keep.PRUNED
    return keep, level in (Level.RO, Level.NAMES)


class CopyRules:
    """`copy_rule` and `copy_later` of one grant for one walk of the worktree, each folder's
    `folder_rule` decided once (issue 32 §3: a starting state of 20,000 granted files asked the
    grant twice per file, about 0.2 s of a run with checks). The same answers as the two
    functions for every path; the folders' answers are kept for the walk's length."""

    def __init__(self, grant: Grant | None) -> None:
        self._grant = grant
        self._folders: dict[str, tuple[Keep, bool] | None] = {}

    def keep(self, rel: str) -> Keep:
        shared = self._shared(rel)
        return copy_rule(self._grant, rel) if shared is None else shared[0]

    def later(self, rel: str) -> bool:
        shared = self._shared(rel)
        return copy_later(self._grant, rel) if shared is None else shared[1]

    def _shared(self, rel: str) -> tuple[Keep, bool] | None:
        folder = rel.strip("/").rpartition("/")[0]
        if folder not in self._folders:
            self._folders[folder] = folder_rule(self._grant, folder)
        return self._folders[folder]


def primary_of(worktree: str) -> str | None:
    """The primary worktree of a worktree placed at `<primary>/.claude/worktrees/<name>`."""
    parent = posixpath.dirname(posixpath.normpath(worktree))
    if (
        posixpath.basename(parent) != "worktrees"
        or posixpath.basename(posixpath.dirname(parent)) != ".claude"
    ):
        return None
    return posixpath.dirname(posixpath.dirname(parent))


def check_argv(
    bwrap: str,
    place: CheckPlace,
    shown: Sequence[str],
    command: str,
    host_hidden: Sequence[str],
    kind: Callable[[str], str | None],
    control_groups: Sequence[str] = (),
) -> list[str]:
    """The command line of one check: `command` run by /bin/sh inside the sandbox, with the
    worktree's path made by the mounts `shown` (a copy bound there, or the view over the
    layer: domain/isolation/check_layer.py). `kind` says what a path is without following a last
    link:
    "dir", "file", "link" or None (missing); a hidden directory becomes an empty tmpfs, a hidden
    file an empty read-only file; a missing one needs nothing, and neither does a link (bwrap
    would follow it: the caller lists its target too). Each of the host's control group mounts
    (`control_groups`) is an empty read-only folder: a check names no other run's group (issue
    30 §2; domain/isolation/control_groups.py)."""
    # --info-fd: the process runner ends the run only once the namespace's init has exited, that
    # is once every process of the check is gone, before its copy is removed.
    argv = [bwrap, *CHECK_SANDBOX_ARGS, "--info-fd", NAMESPACE_REPORT_FD]
    for path in _outermost([*ALWAYS_HIDDEN, *host_hidden, *place.hidden]):
        found = kind(path)
        if found == "dir":
            argv += ["--tmpfs", path]
        elif found == "file":
            argv += ["--ro-bind", "/dev/null", path]
    groups, empty = mask_args(control_groups)
    argv += groups
    for path in empty:
        argv += ["--remount-ro", path]
    outside = [p for p in place.runtime_paths if not is_within(p, place.worktree)]
    inside = [p for p in place.runtime_paths if is_within(p, place.worktree)]
    for path in outside:
        argv += ["--ro-bind-try", path, path]
    argv += ["--dir", CHECK_HOME, *shown]
    for path in inside:  # over the view: the installation as it is, read-only
        argv += ["--ro-bind-try", path, path]
    argv += [
        "--chdir",
        place.worktree,
        "--",
        SETSID,
        "--wait",
        "--",
        *lifeline(),
        SHELL,
        "-c",
        command,
    ]
    return argv


def check_environment(host_env: Mapping[str, str], interpreter: str | None) -> dict[str, str]:
    """The cleared environment of a check: what the worker's Bash gets of the host (PATH with the
    project interpreter's directory first, LANG), a home and a temporary directory of its own."""
    env = {"HOME": CHECK_HOME, "TMPDIR": CHECK_TMP}
    path = worker_path(host_env, interpreter)
    if path:
        env["PATH"] = path
    if host_env.get("LANG"):
        env["LANG"] = host_env["LANG"]
    return env


def _outermost(paths: Sequence[str]) -> list[str]:
    """The absolute paths given, normalized, without those inside another, shortest first."""
    normal = sorted(
        {posixpath.normpath(p) for p in paths if posixpath.isabs(p)},
        key=lambda p: (p.count("/"), p),
    )
    out: list[str] = []
    for path in normal:
        if path != "/" and not any(is_within(path, kept) for kept in out):
            out.append(path)
    return out


# What `plan` says of a check's command (issue 19 §1): the program its first word resolves to
# in the check's own view, or that none does. The shell's own words run without a program.
SHELL_WORDS = frozenset(
    {
        "!",
        ".",
        ":",
        "[",
        "{",
        "(",
        "case",
        "cd",
        "command",
        "echo",
        "eval",
        "exec",
        "exit",
        "export",
        "false",
        "for",
        "if",
        "printf",
        "read",
        "set",
        "source",
        "test",
        "true",
        "type",
        "unset",
        "until",
        "while",
    }
)


def first_program(command: str) -> str | None:
    """The first word of a shell command that names a program, past `NAME=value` assignments;
    None when the text does not split as the shell would (quotes left open)."""
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        return None
    for word in words:
        name, sep, _ = word.partition("=")
        if sep and name.isidentifier():
            continue
        return word
    return None


class ProgramInView(BaseModel):
    """What a check's first word resolves to in its sandbox (`said`, as `plan` prints it), and
    when no round can change that, why the check cannot start at all (`unavailable`): a run
    with such a check is refused before round 1 (decisions.md "A check that cannot start")."""

    model_config = ConfigDict(frozen=True)

    said: str
    unavailable: str | None = None


UNAVAILABLE_ENDING = "a run would be refused with checks_unavailable before round 1"


def program_in_view(
    command: str,
    place: CheckPlace,
    search_path: str,
    hidden: Sequence[str],
    realpath: Callable[[str], str],
    executable: Callable[[str], bool],
) -> ProgramInView:
    """Which program the check's first word resolves to in its sandbox: the PATH it gets
    (`search_path`), where every place of `hidden` is an empty folder and the runtime paths and
    the worktree are seen; a program whose real file lies hidden cannot start there. `executable`
    says whether a path (links followed) is an executable file on the host.

    A program found nowhere makes the check unavailable for the whole run, unless one of the
    places it is looked for lies where the grant lets the worker write (`rw`): a round may yet
    make it, so the run goes on and the check's own run says."""
    word = first_program(command)
    if word is None:
        return ProgramInView(
            said="its first word cannot be told apart (a quote left open): run as written"
        )
    if word in SHELL_WORDS:
        return ProgramInView(said=f"`{word}` is the shell's own")
    if "/" in word:
        candidates = [posixpath.normpath(posixpath.join(place.worktree, word))]
    else:
        candidates = [posixpath.join(d, word) for d in search_path.split(":") if posixpath.isabs(d)]
    found, behind = _lookup(candidates, place, hidden, realpath, executable)
    if found is not None:
        return ProgramInView(said=f"`{word}` is {found}")
    why = (
        f"; {behind} lies where the check does not see: list its installation as a runtime path"
        if behind
        else ""
    )
    writable = next((c for c in candidates if _worker_may_write(place, c)), None)
    if writable is not None:
        return ProgramInView(
            said=f"`{word}` is not there yet{why}; {writable} lies where the worker may write "
            "(rw): if no round makes it, the run ends checks_unavailable after that round"
        )
    problem = f"`{word}` is found nowhere in the check's view" + (
        why or ": install it, or give the check a program its PATH holds"
    )
    if place.project_interpreter is None and word.startswith(PYTHON_NAMES):
        # The check's PATH has the project interpreter's directory first, as the worker's.
        problem += "; or give the project's Python with --interpreter"
    return ProgramInView(said=f"{problem}; {UNAVAILABLE_ENDING}", unavailable=problem)


def _lookup(
    candidates: Sequence[str],
    place: CheckPlace,
    hidden: Sequence[str],
    realpath: Callable[[str], str],
    executable: Callable[[str], bool],
) -> tuple[str | None, str | None]:
    """The first candidate the check sees with its real file (said with that file), else None
    and the first executable one that lies hidden (or whose real file does)."""

    def seen(path: str) -> bool:
        if any(is_within(path, r) for r in place.runtime_paths):
            return True
        if is_within(path, place.worktree):  # the copy: what the grant lets the worker read
            return place.keep(relative_to(path, place.worktree)) is Keep.CONTENT
        return not any(is_within(path, h) for h in hidden)

    behind: str | None = None
    for candidate in candidates:
        if not executable(candidate):
            continue
        real = realpath(candidate)
        if seen(candidate) and seen(real):
            return candidate + (f" (its real file {real})" if real != candidate else ""), None
        behind = behind or (real if seen(candidate) else candidate)
    return None, behind


def _worker_may_write(place: CheckPlace, path: str) -> bool:
    """Whether the worker may write `path` (rw in the grant), so a round may make it; a place
    with no grant keeps everything and says nothing of who writes, so it may."""
    if not is_within(path, place.worktree) or path == posixpath.normpath(place.worktree):
        return False
    if place.grant is None:
        return True
    return place.grant.level_of(relative_to(path, place.worktree)) is Level.RW
