"""The audit's listing catches every way a file can change without its size changing (issue 32
§1, docs/decisions.md "The audit's listing"): real Git in a real linked worktree, the real
adapter in its sandbox, the snapshot and the observation the host makes. Each change keeps the
file's size; the times Git compares are set back where a process can set them. The audit must
list the file and measure its new content, as `git status` did before the host's Git ran as
the host's own ids."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from concorde_workers.adapters.machine.filesystem import LocalFileSystem
from concorde_workers.adapters.repository.git import GitCliReader, find_bwrap
from concorde_workers.application.rounds.worktree_state import WorktreeObserver
from concorde_workers.domain.boundary.grant import parse_grant
from concorde_workers.domain.gitview.git_status import GitRepository
from concorde_workers.domain.run.audit import audit

pytestmark = pytest.mark.integration

GRANT = parse_grant(
    {
        "task_type": "implement",
        "entries": [{"path": "src/", "level": "rw"}],
        "context_identity": "sha256:" + "1" * 64,
    },
    "implement",
)
FILE = "src/a.py"
BEFORE = b"value = 1\n"
AFTER = b"value = 2\n"  # the same size


class World:
    def __init__(self, root: Path) -> None:
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        self.env.update(HOME=str(root), GIT_CONFIG_NOSYSTEM="1")
        primary = root / "repo"
        self.git(root, "init", "-q", "-b", "main", str(primary))
        (primary / "src").mkdir()
        (primary / FILE).write_bytes(BEFORE)
        self.git(primary, "add", "-A")
        self.git(primary, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "i")
        self.worktree = primary / ".claude" / "worktrees" / "task"
        self.git(primary, "worktree", "add", "-q", "-b", "task", str(self.worktree))
        self.repo = GitRepository(
            worktree=str(self.worktree),
            git_dir=str(primary / ".git" / "worktrees" / "task"),
            common_dir=str(primary / ".git"),
        )
        bwrap = find_bwrap()
        assert bwrap is not None, "bubblewrap is missing: run ./scripts/setup"
        git = GitCliReader(environ=self.env, sandbox=bwrap)
        store = root / "store"
        git.open_store(self.repo, str(store))
        self.observer = WorktreeObserver(
            git, LocalFileSystem(), self.repo, writable=["src/"], store=str(store)
        )

    def git(self, cwd: Path, *args: str) -> None:
        subprocess.run(["git", *args], cwd=cwd, env=self.env, check=True, capture_output=True)

    @property
    def file(self) -> Path:
        return self.worktree / FILE

    def changed(self) -> tuple[str, ...]:
        return audit(GRANT, self.snapshot, self.observer.observe(self.snapshot)).changed

    def snap(self) -> None:
        self.snapshot = self.observer.snapshot()
        assert FILE not in self.snapshot.files  # the file is as the index records it


@pytest.fixture
def world(tmp_path: Path) -> World:
    made = World(tmp_path)
    made.snap()
    return made


def set_times(path: Path, stat: os.stat_result) -> None:
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


@pytest.mark.req("Every round is audited")
def test_a_same_size_edit_with_its_mtime_set_back(world: World) -> None:
    before = world.file.stat()
    world.file.write_bytes(AFTER)
    set_times(world.file, before)
    assert world.file.stat().st_mtime_ns == before.st_mtime_ns
    assert world.changed() == (FILE,)


@pytest.mark.req("Every round is audited")
def test_a_file_replaced_by_rename_with_the_same_size_and_times(world: World) -> None:
    before = world.file.stat()
    replacement = world.file.with_name("a.py.new")
    replacement.write_bytes(AFTER)
    set_times(replacement, before)
    replacement.rename(world.file)
    assert world.changed() == (FILE,)


@pytest.mark.req("Every round is audited")
def test_an_edit_in_the_same_second_as_the_index_write(world: World) -> None:
    """The index written now (its stat data of the file refreshed), the file edited at once
    and its mtime set to the index's own: Git's racy-entry rule and the change time both
    say it may have changed."""
    world.git(world.worktree, "update-index", "--refresh")
    index = Path(world.repo.git_dir) / "index"
    world.snap()
    world.file.write_bytes(AFTER)
    written = index.stat()
    os.utime(world.file, ns=(written.st_atime_ns, written.st_mtime_ns))
    assert world.changed() == (FILE,)


@pytest.mark.req("Every round is audited")
def test_a_change_of_mode(world: World) -> None:
    before = world.file.stat()
    world.file.chmod(0o755)
    set_times(world.file, before)
    assert world.changed() == (FILE,)
    observed = world.observer.observe(world.snapshot)
    state = observed.files[FILE]
    assert state is not None and state.executable


def test_a_file_only_touched_is_no_change(world: World) -> None:
    """The check has a counterpart: stat data alone changed, content and mode as they were."""
    world.file.write_bytes(BEFORE)
    os.utime(world.file, None)
    assert world.changed() == ()


@pytest.mark.req("Every round is audited")
def test_a_same_size_edit_in_the_same_second_as_the_index_entry(world: World) -> None:
    """The index entry written, then within that second the file edited at its size and its
    mtime set back: whole seconds of every time are equal, and Git's racy-entry rule (or,
    where Git compares them, the change time's nanoseconds) still tells. The edit is redone
    until it lands in the entry's second (a condition the test checks, not a timing it hopes
    for)."""
    for _ in range(50):
        world.file.write_bytes(BEFORE)
        world.git(world.worktree, "update-index", "--refresh")
        world.snap()
        before = world.file.stat()
        world.file.write_bytes(AFTER)
        set_times(world.file, before)
        if world.file.stat().st_ctime_ns // 10**9 == before.st_ctime_ns // 10**9:
            break
    else:
        pytest.fail("no edit landed in the second of the index entry's change time")
    assert world.changed() == (FILE,)
