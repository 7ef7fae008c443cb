"""The host's Git command table (domain/gitview/git_commands.py), entry by entry: the flags that keep
every call read-only and free of anything a worker can configure, and the environment it runs
with (issue 8 §1; docs/decisions.md "The host's Git")."""

from __future__ import annotations

import pytest

from concorde_workers.domain.gitview.git_commands import (
    BASE_ENVIRONMENT,
    COMMANDS,
    GIT_OPTIONS,
    SAFETY_CONFIG,
    SANDBOX_ARGS,
    GitCommand,
    Rules,
    Scope,
    change_store_environment,
    git_argv,
    git_environment,
    sandbox_args,
    sandboxed,
)
from concorde_workers.domain.gitview.git_config import filter_overrides
from concorde_workers.domain.gitview.git_status import GitRepository

GIT = "/usr/bin/git"
WORKTREE = "/r/.claude/worktrees/task"
REPO = GitRepository(worktree=WORKTREE, git_dir="/r/.git/worktrees/task", common_dir="/r/.git")

# Each entry's own arguments, as the table must hold them: any change here is a decision.
EXPECTED_ARGS: dict[str, tuple[str, ...]] = {
    "toplevel": ("rev-parse", "--show-toplevel"),
    "git_dir": ("rev-parse", "--path-format=absolute", "--git-dir"),
    "common_dir": ("rev-parse", "--path-format=absolute", "--git-common-dir"),
    "worktree_list": ("worktree", "list", "--porcelain", "-z"),
    # The audit's listing (issue 30 §1): tracked paths by stat data alone, untracked files by
    # the host's exclude list alone, content hashed under the committed attributes alone.
    "tracked": ("diff-files", "-z", "--raw", "--ignore-submodules=all"),
    "untracked": ("ls-files", "-z", "--others"),
    "content": ("hash-object", "--stdin-paths"),
    "index": ("ls-files", "--stage", "-v", "-z"),
    # The worker configuration as committed (issue 18 §4): read-only, no filter (`cat-file
    # blob` applies none), never the working copy.
    "head_commit": ("rev-parse", "--verify", "--quiet", "HEAD^{commit}"),
    "rules_list": ("ls-tree", "-r", "-z", "-l", "--full-tree", "HEAD"),
    "rules_blobs": ("cat-file", "--batch"),
    "config_entry": ("ls-tree", "-z", "-l", "HEAD", "--", ".concorde/workers.json"),
    "config_blob": ("cat-file", "blob", "HEAD:.concorde/workers.json"),
    # A round's change (issue 21 §1): only into the run's change store (GIT_INDEX_FILE,
    # GIT_OBJECT_DIRECTORY), paths on stdin, a patch that runs no diff driver.
    "changes_base": ("read-tree",),
    "changes_hash": ("hash-object", "-w", "--stdin-paths"),
    "changes_links": ("hash-object", "-w", "--no-filters", "--stdin-paths"),
    "changes_index": ("update-index", "-z", "--index-info"),
    "changes_tree": ("write-tree",),
    "changes_patch": (
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
    "verify_base": ("read-tree",),
    "verify_apply": ("apply", "--cached", "--binary", "--whitespace=nowarn", "-"),
    "verify_tree": ("write-tree",),
}
REQUIRED_CONFIG = {
    "core.fsmonitor": "false",  # no fsmonitor hook
    "core.hooksPath": "/dev/null",  # no hook
    "core.untrackedCache": "false",  # no untracked cache read from or written to the index
    "core.attributesFile": "/dev/null",  # attributes only from the tree and info/attributes
    "diff.ignoreSubmodules": "all",  # no Git started in a submodule's worktree
    "submodule.recurse": "false",
    "status.submoduleSummary": "false",
    "protocol.allow": "never",  # no transport: no lazy fetch, no ssh
}


STORE = "/rt/control/changes"
RULES = "/proc/self/fd/7"


def where(command: GitCommand) -> str | GitRepository:
    return WORKTREE if command.scope is Scope.DISCOVERY else REPO


def argv_of(command: GitCommand) -> list[str]:
    """The command line as the adapter builds it: its store and rules file given."""
    store = STORE if command.scope is Scope.STORE else None
    return git_argv(GIT, command, where(command), store, RULES if command.rules else None)


def test_the_table_holds_exactly_the_host_s_commands() -> None:
    assert {name: c.args for name, c in COMMANDS.items()} == EXPECTED_ARGS
    assert all(c.why for c in COMMANDS.values())


@pytest.mark.req("Every round is audited")
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_carries_the_safety_options(name: str) -> None:
    command = COMMANDS[name]
    argv = argv_of(command)
    assert argv[0] == GIT
    assert argv[1 : 1 + len(GIT_OPTIONS)] == list(GIT_OPTIONS)
    assert {"--no-pager", "--no-optional-locks", "--literal-pathspecs"} <= set(argv)
    pairs = [argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "-c"]
    safety = dict(pairs[: len(SAFETY_CONFIG)])  # first, and a later -c wins
    assert safety == REQUIRED_CONFIG
    assert dict(SAFETY_CONFIG) == REQUIRED_CONFIG
    later = dict(pairs[len(SAFETY_CONFIG) :])
    expected_later = {}
    if command.rules is Rules.ATTRIBUTES:
        expected_later["core.attributesFile"] = RULES
    assert later == expected_later
    args = argv[-len(command.args) - (1 if command.rules is Rules.EXCLUDES else 0) :]
    assert args[: len(command.args)] == list(command.args)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_discovery_command_starts_from_its_directory_and_an_audit_command_names_its_repository(
    name: str,
) -> None:
    """After placement nothing is discovered: no `.git` file in the worktree decides which
    repository Git reads."""
    command = COMMANDS[name]
    argv = argv_of(command)
    if command.scope is Scope.DISCOVERY:
        assert argv[argv.index("-C") : argv.index("-C") + 2] == ["-C", WORKTREE]
        assert not any(a.startswith(("--git-dir=", "--work-tree=")) for a in argv)
        with pytest.raises(TypeError):
            git_argv(GIT, command, REPO)
        return
    if command.scope is Scope.STORE:  # a bare repository of its own: no attribute file read
        assert f"--git-dir={STORE}" in argv and not any(a.startswith("--work-tree") for a in argv)
        assert argv[argv.index("-C") + 1] == WORKTREE  # a hashing command names files from there
        with pytest.raises(TypeError):
            git_argv(GIT, command, REPO)  # no store named
    else:
        assert f"--git-dir={REPO.git_dir}" in argv and f"--work-tree={WORKTREE}" in argv
    # -C comes after --git-dir, so the absolute paths are read before any directory change
    assert argv.index("-C") > next(i for i, a in enumerate(argv) if a.startswith("--git-dir="))
    with pytest.raises(TypeError):
        git_argv(GIT, command, WORKTREE)


@pytest.mark.parametrize("name", sorted(n for n, c in COMMANDS.items() if c.rules))
def test_a_command_that_takes_the_host_s_rules_never_runs_without_them(name: str) -> None:
    """Issue 30 §1: the untracked listing reads only the host's exclude list, a hashing
    command only the host's attributes file (bare mode reads no per-directory one)."""
    command = COMMANDS[name]
    store = STORE if command.scope is Scope.STORE else None
    with pytest.raises(TypeError):
        git_argv(GIT, command, REPO, store)
    argv = argv_of(command)
    if command.rules is Rules.EXCLUDES:
        assert argv[-1] == f"--exclude-from={RULES}"
        assert "--exclude-standard" not in argv and "--exclude-per-directory" not in " ".join(argv)
    else:
        assert command.scope is Scope.STORE
        assert argv[argv.index(f"core.attributesFile={RULES}") - 1] == "-c"


def test_the_listing_takes_no_stat_setting_from_the_repository() -> None:
    """Whatever the configuration (or a file it includes) says, every stat field is compared
    and the change time trusted: no write goes unlisted for a setting."""
    for name in ("tracked", "untracked"):
        assert dict(COMMANDS[name].config) == {
            "core.checkStat": "default",
            "core.trustctime": "true",
            "core.ignoreStat": "false",
            "core.ignoreCase": "false",
            "core.precomposeUnicode": "false",
        }
    for name in ("content", "changes_hash"):
        assert dict(COMMANDS[name].config) == {
            "core.autocrlf": "false",
            "core.eol": "lf",
            "core.safecrlf": "false",
        }


def test_placement_finds_the_git_directories_from_the_worktree_and_no_directory_above() -> None:
    for name in ("git_dir", "common_dir", "worktree_list"):
        env = git_environment(GIT, COMMANDS[name], WORKTREE)
        assert env["GIT_CEILING_DIRECTORIES"] == "/r/.claude/worktrees"
    # toplevel must see a subdirectory's top level to say what is wrong with it.
    assert "GIT_CEILING_DIRECTORIES" not in git_environment(GIT, COMMANDS["toplevel"], WORKTREE)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_runs_in_an_environment_built_whole(name: str) -> None:
    """Nothing of the host's environment reaches Git: not its credentials or API keys, not an
    inherited GIT_* variable, not its HOME (no ~/.gitconfig, no XDG configuration)."""
    command = COMMANDS[name]
    env = git_environment(GIT, command, where(command))
    expected = {**BASE_ENVIRONMENT, "PATH": "/usr/bin:/bin"}
    if command.ceiling:
        expected["GIT_CEILING_DIRECTORIES"] = "/r/.claude/worktrees"
    if command.config:  # the command's own settings, over the repository's
        expected["GIT_CONFIG_COUNT"] = str(len(command.config))
        for index, (key, value) in enumerate(command.config):
            expected[f"GIT_CONFIG_KEY_{index}"], expected[f"GIT_CONFIG_VALUE_{index}"] = key, value
    assert env == expected
    assert env["HOME"] == "/dev/null" and env["GIT_CONFIG_GLOBAL"] == "/dev/null"
    assert env["GIT_CONFIG_NOSYSTEM"] == env["GIT_ATTR_NOSYSTEM"] == "1"
    assert env["GIT_OPTIONAL_LOCKS"] == "0" and env["LC_ALL"] == "C"


def test_git_s_own_directory_leads_the_path() -> None:
    env = git_environment("/opt/git/bin/git", COMMANDS["index"], REPO)
    assert env["PATH"] == "/opt/git/bin:/usr/bin:/bin"


def test_overrides_travel_as_separate_keys_and_values() -> None:
    """A driver name holding `=` or a dot cannot be read as another setting: GIT_CONFIG_KEY_n
    and GIT_CONFIG_VALUE_n keep the key and its value apart (a `-c key=value` could not)."""
    overrides = filter_overrides(["lfs", "a=b.c"])
    env = git_environment(GIT, COMMANDS["index"], REPO, overrides)
    assert env["GIT_CONFIG_COUNT"] == "8"
    pairs = [(env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"]) for i in range(8)]
    assert pairs == [
        ("filter.a=b.c.clean", ""),
        ("filter.a=b.c.smudge", ""),
        ("filter.a=b.c.process", ""),
        ("filter.a=b.c.required", "false"),
        ("filter.lfs.clean", ""),
        ("filter.lfs.smudge", ""),
        ("filter.lfs.process", ""),
        ("filter.lfs.required", "false"),
    ]


def test_the_sandbox_is_read_only_network_less_and_dies_with_the_host() -> None:
    argv = sandboxed("/usr/bin/bwrap", [GIT, "status"])
    assert argv[0] == "/usr/bin/bwrap" and argv[-3:] == ["--", GIT, "status"]
    options = argv[1 : argv.index("--")]
    assert options == list(SANDBOX_ARGS)
    assert options[options.index("--uid") + 1] == options[options.index("--gid") + 1] == "65534"
    assert options[:3] == ["--ro-bind", "/", "/"]
    assert not any(o in ("--bind", "--dev-bind", "--share-net") for o in options)
    assert {"--unshare-all", "--die-with-parent", "--new-session"} <= set(options)
    assert sandboxed(None, [GIT, "status"]) == [GIT, "status"]


def test_a_host_git_call_shows_the_host_s_own_ids_with_no_capability() -> None:
    """docs/decisions.md "The audit's listing": the owner Git compares with the index's
    record is the one that wrote it; the same user outside, no capability inside."""
    argv = sandboxed("/usr/bin/bwrap", [GIT, "diff-files"], ids=(1000, 1001))
    options = argv[1 : argv.index("--")]
    assert options == list(sandbox_args(1000, 1001))
    assert options[options.index("--uid") + 1 :][:3] == ["1000", "--gid", "1001"]
    assert {"--cap-drop", "ALL", "--disable-userns"} <= set(options)


def test_masked_directories_are_empty_and_read_only_in_the_sandbox() -> None:
    argv = sandboxed("/usr/bin/bwrap", [GIT, "status"], ["/w/src/vendor"])
    options = argv[1 : argv.index("--")]
    assert options == [*SANDBOX_ARGS, "--tmpfs", "/w/src/vendor", "--remount-ro", "/w/src/vendor"]
    assert sandboxed(None, [GIT, "status"], ["/w/src/vendor"]) == [GIT, "status"]
    many = [f"/w/m{i}" for i in range(300)]
    assert "--tmpfs" not in sandboxed("/usr/bin/bwrap", [GIT, "status"], many)


def test_a_store_command_writes_only_into_the_run_s_change_store() -> None:
    """Issue 21 §1: the store's index and objects, the repository's objects only read; verify's
    replay (issue 30 §4) writes only into a store of its own the same way."""
    assert {name for name, c in COMMANDS.items() if c.store} == {
        "content",
        "changes_base",
        "changes_hash",
        "changes_links",
        "changes_index",
        "changes_tree",
        "changes_patch",
        "verify_base",
        "verify_apply",
        "verify_tree",
    }
    assert change_store_environment("/rt/control/changes", "/r/.git") == {
        "GIT_INDEX_FILE": "/rt/control/changes/index",
        "GIT_OBJECT_DIRECTORY": "/rt/control/changes/objects",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES": "/r/.git/objects",
    }
    argv = sandboxed("/usr/bin/bwrap", ["git", "write-tree"], writable=["/rt/control/changes"])
    assert argv[: len(SANDBOX_ARGS) + 1] == ["/usr/bin/bwrap", *SANDBOX_ARGS]
    assert argv[len(SANDBOX_ARGS) + 1 :] == [
        "--bind",
        "/rt/control/changes",
        "/rt/control/changes",
        "--",
        "git",
        "write-tree",
    ]


def test_the_patch_takes_no_shape_from_the_repository_s_configuration() -> None:
    assert dict(COMMANDS["changes_patch"].config) == {
        "core.quotePath": "false",
        "diff.noprefix": "false",
        "diff.mnemonicPrefix": "false",
        "diff.relative": "false",
        "diff.suppressBlankEmpty": "false",
        "diff.algorithm": "myers",
        "diff.context": "3",
        "diff.interHunkContext": "0",
        "color.ui": "never",
    }
