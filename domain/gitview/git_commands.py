"""Every Git command line the host runs, in one table (issue 8 §1, docs/decisions.md "The
host's Git").

The host runs Git only to read: placement facts before the first round, and the audit's state
before and after every round (and, in the run's own change store, a round's change). Every
such call is built here and nowhere else, from `COMMANDS`,
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
  runs to compare content. The listing computes no diff text (no textconv, no diff driver, no
  external diff) and no rename.
- *No rule from a file a worker can write* (issue 30 §1). The untracked listing reads no
  `.gitignore` (only the host's exclude list, `Rules.EXCLUDES`), the tracked listing compares
  stat data only, and every command that reads content runs in the run's change store, a bare
  repository of the host's own, which reads no `.gitattributes` (only the host's attributes
  file, `Rules.ATTRIBUTES`): the rules are those committed at HEAD
  (`domain.gitview.committed_rules`).
- *No discovery after placement.* Placement asks Git where the worktree's Git directories are
  (`-C <path>`, stopped at the directory's parent by `GIT_CEILING_DIRECTORIES`); every later call
  names them (`--git-dir`, `--work-tree`), so a `.git` file the worker changed decides nothing.
- *Read-only.* `--no-optional-locks` and `GIT_OPTIONAL_LOCKS=0`: `git status` never writes
  its stat refresh into the index; `core.untrackedCache=false`: no untracked cache is read from
  or written into it. `--literal-pathspecs`: a path is never a pattern. The store commands (a
  round's change as evidence, issue 21) write, but only into the run's change store (its own
  index and objects, the one directory the sandbox binds writable); the repository's objects
  are read behind it, never written.

Where bubblewrap is present, every call also runs in `sandbox_args`: the whole system read-only,
a fresh /dev and /proc, no network and new namespaces, a new session, dying with the host,
without any capability or a way to gain one (as the host's own ids: docs/decisions.md "The
audit's listing"), so that a way to run a program nobody has thought of yet can neither write
nor reach anything, nor take a mask down.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.gitview.git_status import GitRepository
from concorde_workers.domain.ground.layout import CONFIG_PATH


class Scope(StrEnum):
    """How a command finds its repository."""

    DISCOVERY = "discovery"  # placement: `-C <path>`, Git finds the repository from there
    REPOSITORY = "repository"  # after placement: `--git-dir`, `--work-tree`, nothing found
    STORE = "store"
    """The run's change store, a bare repository of the host's own (`--git-dir=<store>`, no
    configuration but the host's; the repository's objects read behind it), run from the
    worktree (`-C`), whose files a hashing command names by relative path. A bare repository
    reads no `.gitattributes` at all, neither the working tree's nor an index's (attr.c; the
    repository's own `core.bare=false` would win over `-c core.bare=true`): content is
    converted by the host's attributes file alone (issue 30 §1)."""


class Rules(StrEnum):
    """How a command takes the host's rules (`domain.gitview.committed_rules`)."""

    EXCLUDES = "excludes"  # `--exclude-from=<file>`: the only ignore rules it reads
    ATTRIBUTES = "attributes"  # `-c core.attributesFile=<file>`: in the store, the only ones


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
    rules: Rules | None = None
    """Which of the host's rules it takes in place of the working tree's rule files (issue 30
    §1), given as a file's path (`git_argv`'s `rules`)."""
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

LISTING_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.checkStat", "default"),
    ("core.trustctime", "true"),
    ("core.ignoreStat", "false"),
    ("core.ignoreCase", "false"),
    ("core.precomposeUnicode", "false"),
)
"""What decides which paths the audit's listing names, whatever the repository's configuration
(or a file it includes, which may lie in the worktree) says: every stat field compared, the
change time trusted (no write leaves it as it was), no entry assumed unchanged, names matched
and printed as they are."""

CONTENT_CONFIG: tuple[tuple[str, str], ...] = (
    ("core.autocrlf", "false"),
    ("core.eol", "lf"),
    ("core.safecrlf", "false"),
)
"""Content is converted by the committed attributes alone, never by a conversion setting an
included file could give (issue 30 §1)."""

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
            name="tracked",
            args=("diff-files", "-z", "--raw", "--ignore-submodules=all"),
            scope=Scope.REPOSITORY,
            config=LISTING_CONFIG,
            why="the audit: every tracked path whose file is not as the index recorded it (its "
            "stat data differ, it is gone, its kind changed, it is unmerged), compared by stat "
            "alone, never by content (no attribute of the working tree is read); submodules are "
            "walked by the host itself",
        ),
        GitCommand(
            name="untracked",
            args=("ls-files", "-z", "--others"),
            scope=Scope.REPOSITORY,
            config=LISTING_CONFIG,
            rules=Rules.EXCLUDES,
            why="the audit: every untracked file not ignored by the host's exclude list (the "
            "committed .gitignore files and the user's own excludes); no .gitignore of the "
            "working tree is read (the adapter adds --exclude-from)",
        ),
        GitCommand(
            name="content",
            args=("hash-object", "--stdin-paths"),
            scope=Scope.STORE,
            store=True,
            config=CONTENT_CONFIG,
            rules=Rules.ATTRIBUTES,
            why="the audit: the blob a listed tracked file's content makes under the committed "
            "attributes, against the index's, so a file only touched is not taken as changed",
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
            why="HEAD's commit for the audit (1: an unborn branch, nothing is committed), and "
            "whether anything is committed before the worker configuration is read as committed "
            "(issue 18 §4)",
        ),
        GitCommand(
            name="rules_list",
            args=("ls-tree", "-r", "-z", "-l", "--full-tree", "HEAD"),
            scope=Scope.REPOSITORY,
            why="the evidence's rules (issue 30 §1): the .gitignore and .gitattributes files "
            "committed at HEAD when the run starts, with their sizes (bounded before read)",
        ),
        GitCommand(
            name="rules_blobs",
            args=("cat-file", "--batch"),
            scope=Scope.REPOSITORY,
            why="the evidence's rules: the committed rule files' bytes by object id, no filter",
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
            scope=Scope.STORE,
            store=True,
            why="a round's change (issue 21 §1): the store's index starts as the tree of HEAD's "
            "commit (the adapter appends it, or --empty on an unborn branch)",
        ),
        GitCommand(
            name="changes_hash",
            args=("hash-object", "-w", "--stdin-paths"),
            scope=Scope.STORE,
            store=True,
            config=CONTENT_CONFIG,
            rules=Rules.ATTRIBUTES,
            why="a round's change: the content of the changed rw files the host names on stdin, "
            "converted by the committed attributes alone, written into the store",
        ),
        GitCommand(
            name="changes_links",
            args=("hash-object", "-w", "--no-filters", "--stdin-paths"),
            scope=Scope.STORE,
            store=True,
            why="a round's change: the targets of the changed rw symbolic links, which the host "
            "read and wrote into the store as files, hashed as they are",
        ),
        GitCommand(
            name="changes_index",
            args=("update-index", "-z", "--index-info"),
            scope=Scope.STORE,
            store=True,
            why="a round's change: the store's index entries the host names (mode, blob, path; "
            "mode 0 removes), no file read",
        ),
        GitCommand(
            name="changes_tree",
            args=("write-tree",),
            scope=Scope.STORE,
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
            scope=Scope.STORE,
            store=True,
            config=DIFF_CONFIG,
            why="a round's change: the patch between the trees at the round's start and end (the "
            "adapter appends both), in the store with no attribute at all: a text file is "
            "diffed as text whatever an attribute claims",
        ),
        GitCommand(
            name="verify_base",
            args=("read-tree",),
            scope=Scope.STORE,
            store=True,
            why="verify (issue 30 §4): a store of verify's own starts as the tree of the commit "
            "the run's node names (the adapter appends it, or --empty)",
        ),
        GitCommand(
            name="verify_apply",
            args=("apply", "--cached", "--binary", "--whitespace=nowarn", "-"),
            scope=Scope.STORE,
            store=True,
            why="verify: a round's changes.patch, given on stdin, applied to the store's index "
            "alone (never the worktree)",
        ),
        GitCommand(
            name="verify_tree",
            args=("write-tree",),
            scope=Scope.STORE,
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
"""The uid (and gid) of every check the host runs over worker content ("nobody"), whether the
host runs as root or as a user: never uid 0, which owns the mount namespace's masks."""


def sandbox_args(uid: int = SANDBOX_UID, gid: int = SANDBOX_UID) -> tuple[str, ...]:
    """bubblewrap's options around a process the host starts over worker-written content, as
    `uid`/`gid` inside its own user namespace (`SANDBOX_ARGS`: as nobody)."""
    return (
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
        str(uid),
        "--gid",
        str(gid),
        "--cap-drop",
        "ALL",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
    )


SANDBOX_ARGS: tuple[str, ...] = sandbox_args()
"""bubblewrap's options around every process the host starts over worker-written content (each
check; each host Git call with the host's own ids, `sandboxed`; issue 18 §1): read-only, no
network, new namespaces, and no power over them. A user namespace of its own in which the
process has no capability (`--cap-drop ALL` empties the bounding set too: bwrap otherwise keeps
every capability for uid 0, and a check could unmount the masks and read what they hide), no
further user namespace (`--disable-userns`: no unshare to win capabilities back), and
`no_new_privs`, which bwrap always sets (no setuid program gains anything). As root and as a
user alike."""


def git_argv(
    git: str,
    command: GitCommand,
    where: str | GitRepository,
    store: str | None = None,
    rules: str | None = None,
) -> list[str]:
    """The command line of one call: a directory for a discovery command, the repository for
    the others (`store`: the change store, for a command that runs in it). `rules`: the file of
    the host's rules a command of `rules` reads (required for it: no such call runs without).
    `git` is the program's absolute path."""
    location: list[str]
    if command.scope is Scope.DISCOVERY:
        if not isinstance(where, str):
            raise TypeError(f"{command.name} finds its repository from a directory")
        location = ["-C", where]
    elif not isinstance(where, GitRepository):
        raise TypeError(f"{command.name} needs the repository placement found")
    elif command.scope is Scope.STORE:
        if store is None:
            raise TypeError(f"{command.name} runs in the change store")
        location = [f"--git-dir={store}", "-C", where.worktree]
    else:
        # -C last: Git itself reports a missing worktree ("cannot change to ..."), the
        # evidence a caller shows.
        location = [
            f"--git-dir={where.git_dir}",
            f"--work-tree={where.worktree}",
            "-C",
            where.worktree,
        ]
    config = [arg for key, value in SAFETY_CONFIG for arg in ("-c", f"{key}={value}")]
    args = list(command.args)
    if command.rules is not None:
        if rules is None:
            raise TypeError(f"{command.name} takes the host's {command.rules.value} file")
        if command.rules is Rules.ATTRIBUTES:
            config += ["-c", f"core.attributesFile={rules}"]  # after SAFETY_CONFIG: it wins
        else:
            args.append(f"--exclude-from={rules}")
    return [git, *GIT_OPTIONS, *config, *location, *args]


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
    bwrap: str | None,
    argv: Sequence[str],
    masked: Sequence[str] = (),
    writable: Sequence[str] = (),
    ids: tuple[int, int] = (SANDBOX_UID, SANDBOX_UID),
) -> list[str]:
    """`argv` inside bubblewrap's read-only, network-less sandbox, or as it is without one.
    Each of `masked` (absolute directories) is an empty read-only directory inside: a
    submodule path the host walks itself, whose `.git` (a worker may have planted one, even a
    FIFO that would block whoever opens it) Git then never reads. Each of `writable` (the
    run's change store, a directory of the host's own) is the one place it may write.

    `ids`: the uid and gid inside. A host Git call runs as the host's own (docs/decisions.md
    "The audit's listing"): the owner Git compares with the index's record is then the one
    that wrote it, so a file is not taken as touched for its owner alone; the process is the
    host's user outside whichever uid it shows inside (a mapped nobody opens what the host
    can), and has no capability either way."""
    if not bwrap:
        return list(argv)
    mounts = (
        [arg for path in masked for arg in ("--tmpfs", path, "--remount-ro", path)]
        if len(masked) <= MAX_MASKED
        else []
    )
    binds = [arg for path in writable for arg in ("--bind", path, path)]
    return [bwrap, *sandbox_args(*ids), *binds, *mounts, "--", *argv]


def change_store_environment(store: str, common_dir: str) -> dict[str, str]:
    """What points a store command at the run's change store (issue 21 §1): its own index
    and object directory, the repository's objects readable behind them (the blobs of HEAD's
    tree), so the repository's index and objects are never written."""
    return {
        "GIT_INDEX_FILE": posixpath.join(store, "index"),
        "GIT_OBJECT_DIRECTORY": posixpath.join(store, "objects"),
        "GIT_ALTERNATE_OBJECT_DIRECTORIES": posixpath.join(common_dir, "objects"),
    }
