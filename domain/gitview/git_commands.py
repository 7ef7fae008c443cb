"""Every Git command line the host runs, in one table (issue 8 §1, docs/decisions.md "The
host's Git").

The host runs Git only to read: placement facts before the first round, and the audit's state
before and after every round. Every such call is built here and nowhere else, from `COMMANDS`,
`GIT_OPTIONS`, `SAFETY_CONFIG` and `git_environment`; the adapter only fills in the program, the
paths and the filter overrides. What the table guarantees for every call:

- *No configuration from a place a worker can write.* The environment is built whole, never
  inherited: no system or global configuration (`GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL`,
  `GIT_ATTR_NOSYSTEM`), HOME at `/dev/null` (no `~/.gitconfig`, no XDG `git/config`, `git/ignore`
  or `git/attributes`), nothing of the user's environment (no credential, no `*_API_KEY`, no
  inherited `GIT_*`). Git then reads only the repository's own administrative directory, and the
  command line (`SAFETY_CONFIG`) overrides what could run a program there.
- *No program runs.* `core.fsmonitor=false` (no fsmonitor hook), `core.hooksPath=/dev/null` (no
  hook), `--ignore-submodules=all` with `diff.ignoreSubmodules=all`, `submodule.recurse=false`
  and `status.submoduleSummary=false` (status never starts a Git in a submodule's worktree,
  where a worker can plant configuration), `protocol.allow=never` (no transport, so no lazy
  fetch of a partial clone and no ssh), `--no-pager`; every filter driver the repository's
  configuration (includes followed) defines is switched off through `GIT_CONFIG_COUNT`
  (`domain.gitview.git_config.filter_overrides`), since a clean filter is the one program `git
  status`
  runs to compare content. `status` computes no diff text (no textconv, no diff driver, no
  external diff) and no rename (`--no-renames`).
- *No discovery after placement.* Placement asks Git where the worktree's Git directories are
  (`-C <path>`, stopped at the directory's parent by `GIT_CEILING_DIRECTORIES`); every later call
  names them (`--git-dir`, `--work-tree`), so a `.git` file the worker changed decides nothing.
- *Read-only.* `--no-optional-locks` and `GIT_OPTIONAL_LOCKS=0`: `git status` never writes
  its stat refresh into the index; `core.untrackedCache=false`: no untracked cache is read from
  or written into it. `--literal-pathspecs`: a path is never a pattern. The four `changes_*`
  commands (a round's change as evidence, issue 21) write, but only into the run's change
  store (its own `GIT_INDEX_FILE` and `GIT_OBJECT_DIRECTORY`, the one directory the sandbox
  binds writable); the repository's objects are read behind it, never written.

Where bubblewrap is present, every call also runs in `SANDBOX_ARGS`: the whole system read-only,
a fresh /dev and /proc, no network and new namespaces, a new session, dying with the host, as
uid 65534 without any capability or a way to gain one, so that a way to run a program nobody
has thought of yet can neither write nor reach anything, nor take a mask down.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.configuration.config import CONFIG_PATH
from concorde_workers.domain.gitview.git_status import GitRepository


class Scope(StrEnum):
    """How a command finds its repository."""

    DISCOVERY = "discovery"  # placement: `-C <path>`, Git finds the repository from there
    REPOSITORY = "repository"  # after placement: `--git-dir`, `--work-tree`, nothing found


class GitCommand(BaseModel):
    """One command of the table: its arguments after the global options, how it finds its
    repository, whether discovery stops at the given directory's parent, the exit statuses
    that are answers, and why the host runs it."""

    model_config = ConfigDict(frozen=True)

    name: str
    args: tuple[str, ...]
    scope: Scope
    ceiling: bool = False
    ok: tuple[int, ...] = (0,)
    config: tuple[tuple[str, str], ...] = ()
    """Settings of this command alone, over the repository's (through `GIT_CONFIG_COUNT`)."""
    store: bool = False
    """It reads and writes the run's own change store (`change_store_environment`), never
    the repository's index or objects."""
    why: str


GIT_OPTIONS: tuple[str, ...] = ("--no-pager", "--no-optional-locks", "--literal-pathspecs")
"""Global options of every call, before the command."""

SAFETY_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.untrackedCache", "false"),
    ("core.attributesFile", "/dev/null"),
    ("diff.ignoreSubmodules", "all"),
    ("submodule.recurse", "false"),
    ("status.submoduleSummary", "false"),
    ("protocol.allow", "never"),
)
"""`-c` settings of every call: they win over the repository's own configuration."""

DIFF_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.quotePath", "false"),
    ("diff.noprefix", "false"),
    ("diff.mnemonicPrefix", "false"),
    ("diff.relative", "false"),
    ("diff.suppressBlankEmpty", "false"),
    ("diff.algorithm", "myers"),
    ("diff.context", "3"),
    ("diff.interHunkContext", "0"),
    ("color.ui", "never"),
)
"""What the patch's shape must not take from the repository's configuration: `a/` and `b/`
prefixes, paths quoted only where Git must, three lines of context."""

COMMANDS: dict[str, GitCommand] = {
    command.name: command
    for command in (
        GitCommand(
            name="toplevel",
            args=("rev-parse", "--show-toplevel"),
            scope=Scope.DISCOVERY,
            why="placement: the top level of the worktree the request names (a subdirectory or the "
            "primary is refused by the answer)",
        ),
        GitCommand(
            name="git_dir",
            args=("rev-parse", "--path-format=absolute", "--git-dir"),
            scope=Scope.DISCOVERY,
            ceiling=True,
            why="placement: the worktree's own Git directory, named by every later call",
        ),
        GitCommand(
            name="common_dir",
            args=("rev-parse", "--path-format=absolute", "--git-common-dir"),
            scope=Scope.DISCOVERY,
            ceiling=True,
            why="placement: the common Git directory (hidden from the worker, its configuration "
            "and excludes digested by the audit)",
        ),
        GitCommand(
            name="worktree_list",
            args=("worktree", "list", "--porcelain", "-z"),
            scope=Scope.DISCOVERY,
            ceiling=True,
            why="placement: the primary worktree is the first worktree Git lists (seed 000)",
        ),
        GitCommand(
            name="status",
            args=(
                "status",
                "--porcelain=v2",
                "-z",
                "--branch",
                "--no-ahead-behind",
                "--untracked-files=all",
                "--no-renames",
                "--ignored=no",
                "--ignore-submodules=all",
            ),
            scope=Scope.REPOSITORY,
            why="the audit (seed 000): HEAD and every tracked change and untracked file; "
            "submodules are walked by the host itself, without Git",
        ),
        GitCommand(
            name="index",
            args=("ls-files", "--stage", "-v", "-z"),
            scope=Scope.REPOSITORY,
            why="the audit's index digest and the gitlinks the host walks itself",
        ),
        GitCommand(
            name="head_commit",
            args=("rev-parse", "--verify", "--quiet", "HEAD^{commit}"),
            scope=Scope.REPOSITORY,
            ok=(0, 1),
            why="the worker configuration is read as committed (issue 18 §4): whether HEAD has a "
            "commit at all (1: an unborn branch, nothing is committed)",
        ),
        GitCommand(
            name="config_entry",
            args=("ls-tree", "-z", "-l", "HEAD", "--", CONFIG_PATH),
            scope=Scope.REPOSITORY,
            why="the worker configuration is read as committed (issue 18 §4): the committed "
            "file's mode, kind and size (bounded before its blob is read), none when HEAD has "
            "no such file",
        ),
        GitCommand(
            name="config_blob",
            args=("cat-file", "blob", f"HEAD:{CONFIG_PATH}"),
            scope=Scope.REPOSITORY,
            why="the worker configuration is read as committed (issue 18 §4): the committed "
            "bytes, never the working copy a worker may have rewritten",
        ),
        GitCommand(
            name="changes_base",
            args=("read-tree",),
            scope=Scope.REPOSITORY,
            store=True,
            why="a round's change (issue 21 §1): the store's index starts as HEAD's tree (the "
            "adapter appends HEAD, or --empty on an unborn branch)",
        ),
        GitCommand(
            name="changes_add",
            args=("update-index", "--add", "--remove", "--replace", "-z", "--stdin"),
            scope=Scope.REPOSITORY,
            store=True,
            why="a round's change: the content of the changed rw paths the host names on stdin, "
            "hashed into the store",
        ),
        GitCommand(
            name="changes_tree",
            args=("write-tree",),
            scope=Scope.REPOSITORY,
            store=True,
            why="a round's change: the tree of the worktree's rw state, in the store",
        ),
        GitCommand(
            name="changes_patch",
            args=(
                "diff-tree",
                "-r",
                "-p",
                "--binary",
                "--full-index",
                "--no-renames",
                "--no-ext-diff",
                "--no-textconv",
                "--no-color",
            ),
            scope=Scope.REPOSITORY,
            store=True,
            config=DIFF_CONFIG,
            why="a round's change: the patch between the trees at the round's start and end (the "
            "adapter appends both)",
        ),
        GitCommand(
            name="verify_base",
            args=("read-tree",),
            scope=Scope.REPOSITORY,
            store=True,
            why="verify (issue 30 §4): a store of verify's own starts as the tree of the commit "
            "the run's node names (the adapter appends it, or --empty)",
        ),
        GitCommand(
            name="verify_apply",
            args=("apply", "--cached", "--binary", "--whitespace=nowarn", "-"),
            scope=Scope.REPOSITORY,
            store=True,
            why="verify: a round's changes.patch, given on stdin, applied to the store's index "
            "alone (never the worktree)",
        ),
        GitCommand(
            name="verify_tree",
            args=("write-tree",),
            scope=Scope.REPOSITORY,
            store=True,
            why="verify: the tree of the store's index, compared with the tree the round's node "
            "records",
        ),
    )
}

BASE_ENVIRONMENT: dict[str, str] = {
    "LC_ALL": "C",
    "HOME": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_TERMINAL_PROMPT": "0",
}
"""Every call's environment besides PATH; nothing else of the host's environment reaches Git."""

SYSTEM_PATH = "/usr/bin:/bin"

SANDBOX_UID = 65534
"""The uid (and gid) of every process the host runs over worker content ("nobody"), whether the
host runs as root or as a user: never uid 0, which owns the mount namespace's masks."""

SANDBOX_ARGS: tuple[str, ...] = (
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--proc",
    "/proc",
    "--unshare-all",
    "--unshare-user",
    "--uid",
    str(SANDBOX_UID),
    "--gid",
    str(SANDBOX_UID),
    "--cap-drop",
    "ALL",
    "--disable-userns",
    "--die-with-parent",
    "--new-session",
)
"""bubblewrap's options around every process the host starts over worker-written content (each
host Git call, each check; issue 18 §1): read-only, no network, new namespaces, and no power
over them. A user namespace of its own in which the process is uid 65534 with no capability
(`--cap-drop ALL`: bwrap otherwise keeps every capability for uid 0, and a check could unmount
the masks and read what they hide), no further user namespace (`--disable-userns`: no unshare
to win capabilities back), and `no_new_privs`, which bwrap always sets (no setuid program gains
anything). As root and as a user alike."""


def git_argv(git: str, command: GitCommand, where: str | GitRepository) -> list[str]:
    """The command line of one call: a directory for a discovery command, the repository for
    the others. `git` is the program's absolute path."""
    location: list[str]
    if command.scope is Scope.DISCOVERY:
        if not isinstance(where, str):
            raise TypeError(f"{command.name} finds its repository from a directory")
        location = ["-C", where]
    else:
        if not isinstance(where, GitRepository):
            raise TypeError(f"{command.name} needs the repository placement found")
        # -C last: Git itself reports a missing worktree ("cannot change to ..."), the
        # evidence a caller shows.
        location = [
            f"--git-dir={where.git_dir}",
            f"--work-tree={where.worktree}",
            "-C",
            where.worktree,
        ]
    config = [arg for key, value in SAFETY_CONFIG for arg in ("-c", f"{key}={value}")]
    return [git, *GIT_OPTIONS, *config, *location, *command.args]


def git_environment(
    git: str,
    command: GitCommand,
    where: str | GitRepository,
    config: Sequence[tuple[str, str]] = (),
) -> dict[str, str]:
    """The whole environment of one call: `BASE_ENVIRONMENT`, a PATH of Git's own directory
    and the system's, the discovery ceiling, and `config` (such as the filter overrides)
    through `GIT_CONFIG_COUNT`, which carries a key and its value apart, so no name of the
    repository's can be read as another setting."""
    env = dict(BASE_ENVIRONMENT)
    config = (*config, *command.config)
    env["PATH"] = ":".join(
        dict.fromkeys([posixpath.dirname(git) or "/usr/bin", *SYSTEM_PATH.split(":")])
    )
    if command.ceiling and isinstance(where, str):
        parent = posixpath.dirname(posixpath.normpath(where))
        if parent and parent != posixpath.normpath(where):
            env["GIT_CEILING_DIRECTORIES"] = parent
    if config:
        env["GIT_CONFIG_COUNT"] = str(len(config))
        for index, (key, value) in enumerate(config):
            env[f"GIT_CONFIG_KEY_{index}"] = key
            env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env


MAX_MASKED = 256
"""At most this many directories are masked in one call; beyond, none are (the call still runs
read-only, its reads bounded by the adapter's timeout)."""


def sandboxed(
    bwrap: str | None, argv: Sequence[str], masked: Sequence[str] = (), writable: Sequence[str] = ()
) -> list[str]:
    """`argv` inside bubblewrap's read-only, network-less sandbox, or as it is without one.
    Each of `masked` (absolute directories) is an empty read-only directory inside: a
    submodule path the host walks itself, whose `.git` (a worker may have planted one, even a
    FIFO that would block whoever opens it) Git then never reads. Each of `writable` (the
    run's change store, a directory of the host's own) is the one place it may write."""
    if not bwrap:
        return list(argv)
    mounts = (
        [arg for path in masked for arg in ("--tmpfs", path, "--remount-ro", path)]
        if len(masked) <= MAX_MASKED
        else []
    )
    binds = [arg for path in writable for arg in ("--bind", path, path)]
    return [bwrap, *SANDBOX_ARGS, *binds, *mounts, "--", *argv]


def change_store_environment(store: str, common_dir: str) -> dict[str, str]:
    """What points a store command at the run's change store (issue 21 §1): its own index
    and object directory, the repository's objects readable behind them (the blobs of HEAD's
    tree), so the repository's index and objects are never written."""
    return {
        "GIT_INDEX_FILE": posixpath.join(store, "index"),
        "GIT_OBJECT_DIRECTORY": posixpath.join(store, "objects"),
        "GIT_ALTERNATE_OBJECT_DIRECTORIES": posixpath.join(common_dir, "objects"),
    }
