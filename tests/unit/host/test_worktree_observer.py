"""What Git does not show, the host walks itself (application/rounds/worktree_state.py; issue 8 §1):
Git metadata below rw, submodule paths and nested repositories, each submodule path's checked-out
commit; all before any Git command runs over the tree, and judged like any other path. Real
in-memory fakes (FakeGit, FakeFileSystem); tests/integration/test_host_git_real.py runs the same
observer on real repositories."""

from __future__ import annotations

import posixpath

import pytest
from fakes.filesystem import FakeFileSystem, Node
from fakes.git import FakeGit

from concorde_workers.application.rounds.worktree_state import WorktreeObserver
from concorde_workers.domain.boundary.grant import parse_grant
from concorde_workers.domain.gitview.git_metadata import GitMetadata, describe_git_metadata
from concorde_workers.domain.gitview.git_status import GitRepository
from concorde_workers.domain.ground.paths import EntryKind
from concorde_workers.domain.run.audit import FileState, audit, path_violation
from concorde_workers.ports.repository.git import GitCommandFailed

PRIMARY = "/work/repo"
WORKTREE = f"{PRIMARY}/.claude/worktrees/task"
COMMON = f"{PRIMARY}/.git"
COMMIT_A = "a" * 40
COMMIT_B = "b" * 40
GRANT = parse_grant(
    {
        "task_type": "implement",
        "entries": [{"path": "src/app/", "level": "rw"}, {"path": "docs/", "level": "ro"}],
        "context_identity": "sha256:" + "1" * 64,
    },
    "implement",
)


class World:
    """A repository with submodule paths src/app/vendor (rw) and docs/vendor (ro), and a
    nested repository docs/nested (ro) that placement found."""

    def __init__(self) -> None:
        self.fs = FakeFileSystem()
        self.git = FakeGit(self.fs)
        self.git.init(PRIMARY)
        for rel in ("src/app/main.py", "docs/notes.md", "README.md"):
            self.fs.write(f"{PRIMARY}/{rel}", f"{rel}\n")
        self.git.add_all(PRIMARY)
        for rel in ("src/app/vendor", "docs/vendor"):
            self.git.add_gitlink(PRIMARY, rel, COMMIT_A)
        self.git.commit(PRIMARY, "initial")
        wt = self.git.worktree_add(PRIMARY, WORKTREE, new_branch="task")
        self.repo = GitRepository(worktree=WORKTREE, git_dir=wt.git_dir, common_dir=COMMON)
        self.fs.write(f"{WORKTREE}/docs/nested/.git/HEAD", "ref: refs/heads/main\n")
        self.fs.write(f"{WORKTREE}/docs/nested/.git/config", "[core]\n")
        self.fs.write(f"{WORKTREE}/docs/nested/lib.c", "int x;\n")
        self.observer = WorktreeObserver(
            self.git,
            self.fs,
            self.repo,
            writable=["src/app/"],
            git_entries=[".git", "docs/nested/.git"],
        )

    def write(self, rel: str, text: str) -> None:
        self.fs.write(posixpath.join(WORKTREE, rel), text)

    def check_out_module(self, rel: str, commit: str) -> str:
        """An initialised submodule: its Git directory in the common modules/, its `.git` file
        naming it, HEAD at `commit`."""
        module = f"{COMMON}/modules/{rel}"
        self.fs.write(f"{module}/HEAD", f"{commit}\n")
        self.write(f"{rel}/.git", f"gitdir: {module}\n")
        return module


@pytest.fixture
def world() -> World:
    return World()


def test_a_fresh_worktree_is_clean(world: World) -> None:
    snapshot = world.observer.snapshot()
    seen = world.observer.observe(snapshot)
    assert audit(GRANT, snapshot, seen).clean
    assert snapshot.files["src/app/vendor"] == FileState(
        digest="gitlink not checked out", executable=False, gitlink=True
    )


@pytest.mark.req("Every round is audited")
def test_a_change_inside_a_submodule_path_is_judged_by_its_level(world: World) -> None:
    """Git (with --ignore-submodules=all) lists nothing of a submodule path: the walk does."""
    snapshot = world.observer.snapshot()
    world.write("src/app/vendor/new.c", "ok\n")
    world.write("docs/vendor/evil.c", "not ok\n")
    assert [e.path for e in world.git.status(world.repo).entries] == ["docs/nested/"]
    result = audit(GRANT, snapshot, world.observer.observe(snapshot))
    assert result.changed == ("docs/vendor/evil.c", "src/app/vendor/new.c")
    assert result.violation_texts == ("docs/vendor/evil.c",)


def test_a_change_inside_a_nested_repository_is_judged_by_its_level(world: World) -> None:
    snapshot = world.observer.snapshot()
    world.write("docs/nested/lib.c", "changed\n")
    result = audit(GRANT, snapshot, world.observer.observe(snapshot))
    assert result.violation_texts == ("docs/nested/lib.c",)


@pytest.mark.req("Every round is audited")
def test_a_moved_gitlink_is_a_violation_whatever_the_level(world: World) -> None:
    module = world.check_out_module("src/app/vendor", COMMIT_A)
    snapshot = world.observer.snapshot()
    world.fs.write(f"{module}/HEAD", f"{COMMIT_B}\n")
    result = audit(GRANT, snapshot, world.observer.observe(snapshot))
    assert result.violation_texts == ("src/app/vendor",)


def test_the_module_is_the_one_the_snapshot_found_not_what_the_worker_names_later(
    world: World,
) -> None:
    module = world.check_out_module("src/app/vendor", COMMIT_A)
    snapshot = world.observer.snapshot()
    world.fs.write(f"{WORKTREE}/src/app/decoy/HEAD", f"{COMMIT_B}\n")
    world.write("src/app/vendor/.git", f"gitdir: {WORKTREE}/src/app/decoy\n")
    result = audit(GRANT, snapshot, world.observer.observe(snapshot))
    assert result.violation_texts == ("src/app/vendor/.git",)  # the .git file changed; HEAD did not
    assert world.fs.read_text(f"{module}/HEAD") == f"{COMMIT_A}\n"


@pytest.mark.parametrize("replace", ["remove", "file"])
def test_a_submodule_path_removed_or_replaced_is_a_violation(world: World, replace: str) -> None:
    snapshot = world.observer.snapshot()
    world.fs.rmtree(f"{WORKTREE}/src/app/vendor")
    if replace == "file":
        world.write("src/app/vendor", "a file now\n")
    result = audit(GRANT, snapshot, world.observer.observe(snapshot))
    assert result.violation_texts == (
        ("src/app/vendor (deleted)",) if replace == "remove" else ("src/app/vendor",)
    )


@pytest.mark.req("Workers never see Git")
def test_git_metadata_is_found_before_any_git_command_runs_over_the_tree(world: World) -> None:
    """The walk comes first: when Git then fails (or, on main before issue 8, ran a planted
    filter that erased what it found), what the walk found is still told."""
    snapshot = world.observer.snapshot()
    world.write("src/app/x/.git/config", '[core]\n\tfsmonitor = "sh -c evil"\n')
    world.write("src/app/vendor/.git/config", '[filter "x"]\n\tclean = steal\n')
    world.write("src/app/vendor/.git/hooks/pre-commit", "#!/bin/sh\n")
    world.git.fail("status")
    with pytest.raises(GitCommandFailed):
        world.observer.observe(snapshot)
    found = world.observer.git_metadata(snapshot)
    assert found == (
        GitMetadata(
            path="src/app/vendor/.git",
            created=True,
            kind="directory",
            submodule="src/app/vendor",
            runs=("filter.x.clean = steal",),
            hooks=("pre-commit",),
        ),
        GitMetadata(
            path="src/app/x/.git",
            created=True,
            kind="directory",
            runs=("core.fsmonitor = sh -c evil",),
        ),
    )


def test_a_dot_git_file_pointing_elsewhere_decides_nothing(world: World) -> None:
    """The worktree's own `.git` file is measured (a change is a violation) and never read to
    find the repository: the audit's Git calls name the Git directory placement found."""
    snapshot = world.observer.snapshot()
    world.fs.write("/elsewhere/.git/HEAD", "ref: refs/heads/evil\n")
    world.write(".git", "gitdir: /elsewhere/.git\n")
    world.write("src/app/main.py", "changed\n")
    seen = world.observer.observe(snapshot)
    assert seen.head_branch == "refs/heads/task"
    result = audit(GRANT, snapshot, seen)
    assert result.violation_texts == (".git",)
    (item,) = world.observer.git_metadata(snapshot, seen.files)
    assert (item.path, item.created, item.kind, item.points_to) == (
        ".git",
        False,
        "file",
        "/elsewhere/.git; not read: outside what the worker could read",
    )


def test_a_changed_configuration_of_a_known_repository_is_a_violation(world: World) -> None:
    snapshot = world.observer.snapshot()
    world.write("docs/nested/.git/config", "[core]\n\tfsmonitor = evil\n")
    result = audit(GRANT, snapshot, world.observer.observe(snapshot))
    assert result.violation_texts == ("docs/nested/.git",)


def test_a_planted_fifo_is_measured_never_opened(world: World) -> None:
    """Nothing the walk meets makes the host block: a `.git` that is no file or directory is a
    state of its own (the fake's OTHER kind stands for a FIFO)."""
    snapshot = world.observer.snapshot()
    world.fs.mkdir(f"{WORKTREE}/src/app/f")
    world.fs.nodes[f"{WORKTREE}/src/app/f/.git"] = Node(EntryKind.OTHER, 0o644)
    result = audit(GRANT, snapshot, world.observer.observe(snapshot))
    assert result.violation_texts == ("src/app/f/.git",)


# --- the audit's rule and the description ---------------------------------------------------------


def test_a_gitlink_state_change_is_git_metadata_even_in_rw() -> None:
    before = FileState(digest="gitlink " + COMMIT_A, executable=False, gitlink=True)
    after = FileState(digest="gitlink " + COMMIT_B, executable=False, gitlink=True)
    assert str(path_violation(GRANT, "src/app/vendor", after, before)) == "src/app/vendor"
    plain = FileState(digest="sha256:x", executable=False)
    assert str(path_violation(GRANT, "src/app/vendor", plain, before)) == "src/app/vendor"
    assert path_violation(GRANT, "src/app/vendor/a.c", plain) is None


def test_the_description_says_what_it_is_what_it_would_run_and_where_it_is() -> None:
    moved = GitMetadata(
        path="src/app/vendor/.git",
        created=True,
        kind="directory",
        submodule="src/app/vendor",
        runs=("filter.x.clean = steal",),
        hooks=("pre-commit",),
        moved_to="/run/planted-git/1.tar",
    )
    left = GitMetadata(
        path="src/app/y/.git",
        created=True,
        kind="file",
        points_to="/tmp/evil",
        left="the run was interrupted",
    )
    text = describe_git_metadata([moved, left], "/w")
    assert text == (
        "src/app/vendor/.git is a Git repository the worker created in the submodule path "
        "src/app/vendor, where a plain git status in the worktree goes; the next Git command "
        "there would run what it configures: filter.x.clean = steal; hooks pre-commit; the host "
        "moved it out of the worktree, as evidence, into /run/planted-git/1.tar. "
        "src/app/y/.git is a .git file the worker created, naming the Git directory /tmp/evil; "
        "its configuration names no program; it is still in the worktree (the run was "
        "interrupted): remove it before running Git there (rm -rf -- /w/src/app/y/.git)."
    )


SECRET = "SECRET-MARKER"


@pytest.mark.parametrize(
    "target", ["/home/user/.config/git", COMMON, f"{WORKTREE}/docs/nested/.git"]
)
def test_a_planted_pointer_outside_what_the_worker_could_write_is_quoted_by_its_text_only(
    world: World, target: str
) -> None:
    """Issue 18 §2: the host never opens or lists where a worker-written `.git` file leads
    outside the grant's rw directories; the pointer's text is the evidence."""
    world.fs.write(f"{target}/config", f"[core]\n\tsshCommand = {SECRET}\n")
    world.fs.write(f"{target}/config.worktree", f"[credential]\n\thelper = {SECRET}\n")
    world.fs.write(f"{target}/hooks/{SECRET}", "#!/bin/sh\n")
    snapshot = world.observer.snapshot()
    world.write("src/app/g2/.git", f"gitdir: {target}\n")
    seen = world.observer.observe(snapshot)
    items = world.observer.git_metadata(snapshot, seen.files)
    (item,) = [i for i in items if i.path == "src/app/g2/.git"]
    assert item.runs == () and item.hooks == ()
    assert item.points_to == f"{target}; not read: outside what the worker could read"
    assert SECRET not in describe_git_metadata((item,), WORKTREE)


def test_a_planted_pointer_inside_the_rw_directories_is_still_inspected(world: World) -> None:
    snapshot = world.observer.snapshot()
    world.write("src/app/real/config", "[core]\n\tsshCommand = planted\n")
    world.write("src/app/g2/.git", "gitdir: ../real\n")
    seen = world.observer.observe(snapshot)
    (item,) = [
        i for i in world.observer.git_metadata(snapshot, seen.files) if i.path == "src/app/g2/.git"
    ]
    assert item.runs == ("core.sshcommand = planted",)


def test_a_planted_git_directory_whose_hooks_link_elsewhere_lists_nothing_there(
    world: World,
) -> None:
    """Issue 18 §2: a `hooks` link inside a planted Git directory is not followed either."""
    world.fs.write(f"/home/user/private/{SECRET}", "x\n")
    snapshot = world.observer.snapshot()
    world.write("src/app/g3/.git/HEAD", "ref: refs/heads/main\n")
    world.write("src/app/g3/.git/config", "[core]\n")
    world.fs.symlink("/home/user/private", f"{WORKTREE}/src/app/g3/.git/hooks")
    seen = world.observer.observe(snapshot)
    (item,) = [
        i for i in world.observer.git_metadata(snapshot, seen.files) if i.path == "src/app/g3/.git"
    ]
    assert item.hooks == ()
    assert SECRET not in describe_git_metadata((item,), WORKTREE)
