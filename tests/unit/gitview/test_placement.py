"""Placement (seed 000 "Placement") and the Git administrative paths (notes/harness.md §3)."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from concorde_workers.domain.gitview.placement import (
    AdminPath,
    GitEntry,
    Placement,
    check_placement,
    collect_admin_paths,
    find_git_entries,
    looks_like_git_dir,
    parse_commondir_file,
    parse_gitdir_file,
    prune_admin_paths,
    walk_tree,
    worktrees_dir,
)
from concorde_workers.domain.ground.errors import Reason, Refusal
from concorde_workers.domain.ground.paths import DirEntry, EntryKind, ListDir, subdirs_of

PRIMARY = "/home/u/proj"
WT = f"{PRIMARY}/.claude/worktrees/t1"


def memory_tree(
    files: Iterable[str], links: Iterable[str] = (), dirs: Iterable[str] = ()
) -> ListDir:
    """An in-memory tree: files, symbolic links and (empty) directories by absolute path."""
    listing: dict[str, dict[str, EntryKind]] = {}

    def add(path: str, kind: EntryKind) -> None:
        parent, name = posixpath.split(path)
        listing.setdefault(parent, {})[name] = kind
        if parent != "/":
            add(parent, EntryKind.DIRECTORY)

    for f in files:
        add(f, EntryKind.FILE)
    for link in links:
        add(link, EntryKind.SYMLINK)
    for d in dirs:
        add(d, EntryKind.DIRECTORY)
        listing.setdefault(d, {})

    def list_dir(path: str) -> Sequence[DirEntry]:
        return [DirEntry(name=n, kind=k) for n, k in listing.get(path, {}).items()]

    return list_dir


# --- placement -----------------------------------------------------------------------------------

PLACED = [
    pytest.param(WT, PRIMARY, "t1", id="task worktree"),
    pytest.param(
        f"{PRIMARY}/.claude/worktrees/unbound-w-20260101T000000-abcdef",
        PRIMARY,
        "unbound-w-20260101T000000-abcdef",
        id="unbound checkout",
    ),
    pytest.param(f"{PRIMARY}/.claude/worktrees/t1/", f"{PRIMARY}/", "t1", id="trailing slashes"),
]


@pytest.mark.req("A worker runs only inside .claude/worktrees/")
@pytest.mark.parametrize(("worktree", "primary", "name"), PLACED)
def test_a_worktree_directly_in_claude_worktrees_is_placed(
    worktree: str, primary: str, name: str
) -> None:
    placed = check_placement(worktree, primary)
    assert placed == Placement(
        worktree=WT.rsplit("/", 1)[0] + "/" + name, primary=PRIMARY, name=name
    )


MISPLACED = [
    pytest.param(PRIMARY, PRIMARY, "is the primary worktree itself", id="primary itself"),
    pytest.param(
        f"{PRIMARY}/.claude/worktrees/a/b", PRIMARY, "lies below, not directly in", id="nested"
    ),
    pytest.param(f"{PRIMARY}/.claude/worktrees", PRIMARY, "folder itself", id="the folder"),
    pytest.param(f"{PRIMARY}/.claude/other/t1", PRIMARY, "does not lie in", id="other folder"),
    pytest.param("/srv/elsewhere/t1", PRIMARY, "does not lie in", id="elsewhere"),
    pytest.param(
        "/home/u/other/.claude/worktrees/t1",
        PRIMARY,
        "does not lie in",
        id="another repository's worktrees",
    ),
    pytest.param(
        f"{PRIMARY}/sub/.claude/worktrees/t1", PRIMARY, "does not lie in", id="a nested .claude"
    ),
]


@pytest.mark.req("A worker runs only inside .claude/worktrees/")
@pytest.mark.parametrize(("worktree", "primary", "what"), MISPLACED)
def test_any_other_placement_is_refused(worktree: str, primary: str, what: str) -> None:
    refusal = check_placement(worktree, primary)
    assert isinstance(refusal, Refusal)
    assert refusal.code == "worktree_misplaced"
    assert refusal.reason is Reason.ENVIRONMENT
    assert worktree in refusal.message
    assert what in refusal.message
    assert f"{PRIMARY}/.claude/worktrees/" in refusal.message


@pytest.mark.req("A worker runs only inside .claude/worktrees/")
@pytest.mark.parametrize("git_said", ["fatal: this operation must be run in a work tree", ""])
def test_no_primary_worktree_is_refused_with_what_git_said(git_said: str) -> None:
    refusal = check_placement(WT, None, git_said)
    assert isinstance(refusal, Refusal)
    assert refusal.code == "worktree_misplaced"
    assert refusal.reason is Reason.ENVIRONMENT
    assert WT in refusal.message
    assert (git_said or "nothing") in refusal.message


def test_worktrees_dir_keeps_its_trailing_slash() -> None:
    assert worktrees_dir(PRIMARY + "/") == f"{PRIMARY}/.claude/worktrees/"


# --- the walk for .git entries -------------------------------------------------------------------


def test_the_walk_finds_every_git_entry_and_enters_none() -> None:
    list_dir = memory_tree(
        files=[
            f"{WT}/.git",
            f"{WT}/src/a.py",
            f"{WT}/vendor/lib/.git",
            f"{WT}/nested/.git/config",
            f"{WT}/nested/.git/modules/x/.git",
            f"{WT}/.venv/pkg/.git",
            f"{WT}/deep/a/b/c/.git",
        ],
        links=[f"{WT}/linked", f"{WT}/vendor/.git_like"],
    )
    found = find_git_entries(WT, subdirs_of(list_dir), runtime_paths=[f"{WT}/.venv"])
    assert found == (
        GitEntry(path=f"{WT}/.git", kind=EntryKind.FILE),
        GitEntry(path=f"{WT}/deep/a/b/c/.git", kind=EntryKind.FILE),
        GitEntry(path=f"{WT}/nested/.git", kind=EntryKind.DIRECTORY),
        GitEntry(path=f"{WT}/vendor/lib/.git", kind=EntryKind.FILE),
    )


def test_the_walk_enters_no_symbolic_link() -> None:
    entered: list[str] = []
    base = memory_tree(files=[f"{WT}/a.txt"], links=[f"{WT}/up"])

    def list_dir(path: str) -> Sequence[DirEntry]:
        entered.append(path)
        return base(path)

    assert find_git_entries(WT, subdirs_of(list_dir)) == ()
    assert entered == [WT]


def test_a_git_symlink_is_listed_with_its_kind() -> None:
    found = find_git_entries(WT, subdirs_of(memory_tree(files=[], links=[f"{WT}/.git"])))
    assert found == (GitEntry(path=f"{WT}/.git", kind=EntryKind.SYMLINK),)


# --- .git files ----------------------------------------------------------------------------------

GITDIR_FILES = [
    pytest.param(
        "gitdir: /home/u/proj/.git/worktrees/t1\n",
        WT,
        "/home/u/proj/.git/worktrees/t1",
        id="absolute",
    ),
    pytest.param(
        "gitdir: ../../.git/modules/lib\n",
        f"{WT}/vendor/lib",
        f"{WT}/.git/modules/lib",
        id="relative to the file's directory",
    ),
    pytest.param("gitdir:   ./x/  \n", "/r", "/r/x", id="spaces and dot"),
    pytest.param("ref: refs/heads/main\n", "/r", None, id="no gitdir line"),
    pytest.param("gitdir:\n", "/r", None, id="empty target"),
    pytest.param("", "/r", None, id="empty file"),
]


@pytest.mark.parametrize(("text", "file_dir", "target"), GITDIR_FILES)
def test_a_git_file_names_its_git_directory(text: str, file_dir: str, target: str | None) -> None:
    assert parse_gitdir_file(text, file_dir) == target


@pytest.mark.parametrize(
    ("text", "target"),
    [
        ("../..\n", "/home/u/proj/.git"),
        ("/abs/common\n", "/abs/common"),
        ("\n", None),
        ("", None),
    ],
)
def test_commondir_is_relative_to_the_git_directory(text: str, target: str | None) -> None:
    assert parse_commondir_file(text, "/home/u/proj/.git/worktrees/t1") == target


# --- pruning -------------------------------------------------------------------------------------


def _d(path: str) -> AdminPath:
    return AdminPath(path=path, directory=True)


def _f(path: str) -> AdminPath:
    return AdminPath(path=path, directory=False)


PRUNES = [
    pytest.param(
        [_d("/p/.git"), _d("/p/.git/worktrees/t1"), _d("/p/.git/modules/x")],
        [_d("/p/.git")],
        id="common dir covers worktrees/ and modules/",
    ),
    pytest.param(
        [_d("/p/.git/worktrees/t1"), _d("/p/.git")], [_d("/p/.git")], id="order does not matter"
    ),
    pytest.param([_d("/p/.git"), _d("/p/.git")], [_d("/p/.git")], id="duplicates"),
    pytest.param(
        [_d("/p/.git"), _f(f"{WT}/.git"), _d("/q/.git")],
        [_d("/p/.git"), _f(f"{WT}/.git"), _d("/q/.git")],
        id="siblings kept in order",
    ),
    pytest.param(
        [_d("/p/.git"), _d("/p/.gitx")],
        [_d("/p/.git"), _d("/p/.gitx")],
        id="a name prefix is not below",
    ),
    pytest.param(
        [_f("/p/.git"), _d("/p/.git/x")],
        [_f("/p/.git"), _d("/p/.git/x")],
        id="nothing lies below a file",
    ),
]


@pytest.mark.req("Every Git administrative path is hidden")
@pytest.mark.parametrize(("given", "pruned"), PRUNES)
def test_no_admin_path_lies_below_another(given: list[AdminPath], pruned: list[AdminPath]) -> None:
    assert prune_admin_paths(given) == tuple(pruned)


@pytest.mark.req("Every Git administrative path is hidden")
def test_the_admin_paths_of_a_linked_worktree_with_a_submodule() -> None:
    paths = collect_admin_paths(
        git_dir="/home/u/proj/.git/worktrees/t1",
        common_dir="/home/u/proj/.git",
        git_entries=[_f(f"{WT}/.git"), _f(f"{WT}/vendor/lib/.git")],
        gitdir_targets=[
            "/home/u/proj/.git/worktrees/t1",
            "/home/u/proj/.git",
            "/home/u/proj/.git/worktrees/t1/modules/lib",
            "/elsewhere/repo.git",
        ],
    )
    assert paths == (
        _d("/home/u/proj/.git"),
        _f(f"{WT}/.git"),
        _f(f"{WT}/vendor/lib/.git"),
        _d("/elsewhere/repo.git"),
    )


# --- a directory Git takes for a Git directory, whatever its name (setup.c is_git_directory) ------

F, D, L = EntryKind.FILE, EntryKind.DIRECTORY, EntryKind.SYMLINK


@pytest.mark.parametrize(
    ("entries", "git_dir"),
    [
        ({"HEAD": F, "objects": D, "refs": D}, True),
        ({"HEAD": L, "objects": L, "refs": D, "config": F}, True),
        ({"HEAD": F, "commondir": F}, True),  # a linked worktree's Git directory
        ({"HEAD": F, "objects": D}, False),
        ({"HEAD": F, "refs": D}, False),
        ({"objects": D, "refs": D}, False),
        ({"HEAD": D, "objects": D, "refs": D}, False),
        ({"HEAD": F, "objects": F, "refs": D}, False),
    ],
)
def test_looks_like_git_dir_follows_gits_own_test(
    entries: dict[str, EntryKind], git_dir: bool
) -> None:
    assert looks_like_git_dir([DirEntry(name=n, kind=k) for n, k in entries.items()]) is git_dir


def test_the_walk_finds_a_bare_looking_git_directory_only_when_asked_and_never_enters_it() -> None:
    tree = memory_tree(
        files=[f"{WT}/src/evil/HEAD", f"{WT}/src/evil/inner/.git/HEAD", f"{WT}/src/ok.py"],
        dirs=[f"{WT}/src/evil/objects", f"{WT}/src/evil/refs"],
    )
    asked = walk_tree(f"{WT}/src", tree, files=True, git_dirs=True)
    assert asked.git_entries == (
        GitEntry(path=f"{WT}/src/evil", kind=EntryKind.DIRECTORY, bare=True),
    )
    assert asked.files == (f"{WT}/src/ok.py",)
    plain = walk_tree(f"{WT}/src", tree, files=False)
    assert [e.path for e in plain.git_entries] == [f"{WT}/src/evil/inner/.git"]


# --- the placement walk's fast listing is the general walk's (docs/benchmarks.md) --------------

_NAMES = st.sampled_from([".git", "a", "b", ".venv", "HEAD", "objects", "refs", "x.py"])
_KINDS = st.sampled_from([EntryKind.FILE, EntryKind.DIRECTORY, EntryKind.SYMLINK, EntryKind.OTHER])


@st.composite
def _trees(draw: st.DrawFn) -> tuple[ListDir, list[str]]:
    """A random tree below WT (every kind, `.git` of every kind at any depth, bare-looking
    directories) and some runtime paths in it."""
    listing: dict[str, dict[str, EntryKind]] = {WT: {}}
    frontier = [WT]
    while frontier:
        directory = frontier.pop()
        depth = directory.count("/") - WT.count("/")
        for name in draw(st.lists(_NAMES, max_size=0 if depth > 3 else 5, unique=True)):
            kind = draw(_KINDS)
            listing[directory][name] = kind
            if kind is EntryKind.DIRECTORY:
                listing[f"{directory}/{name}"] = {}
                frontier.append(f"{directory}/{name}")
    runtime = draw(st.lists(st.sampled_from(sorted(listing)), max_size=2))

    def list_dir(path: str) -> Sequence[DirEntry]:
        return [DirEntry(name=n, kind=k) for n, k in sorted(listing.get(path, {}).items())]

    return list_dir, runtime


@pytest.mark.req("Every Git administrative path is hidden")
@given(_trees())
def test_the_placement_walk_finds_what_the_general_walk_finds(
    tree: tuple[ListDir, list[str]],
) -> None:
    """find_git_entries over `ListSubdirs` finds exactly the `.git` entries walk_tree finds over
    the full listing: the same entries, none inside a `.git`, a link or a runtime path."""
    list_dir, runtime = tree
    assert (
        find_git_entries(WT, subdirs_of(list_dir), runtime)
        == walk_tree(WT, list_dir, runtime, files=False).git_entries
    )
