"""What the fakes offer beyond the port: records of calls, injected failures, setup helpers."""

from __future__ import annotations

from typing import Any

import pytest
from fakes.filesystem import FakeFileSystem
from fakes.git import FakeGit

from concorde_workers.ports.machine.filesystem import FileSystemError
from concorde_workers.ports.repository.git import GitCommandFailed


def test_fake_filesystem_records_operations_and_injects_failures() -> None:
    fs = FakeFileSystem()
    fs.mkdir("/r")
    fs.write_atomic("/r/a", b"x")
    fs.fail("remove", "/r/a", "Operation not permitted", 1, times=1)
    with pytest.raises(FileSystemError) as info:
        fs.remove("/r/a")
    assert info.value.os_error_text == "Operation not permitted"
    fs.remove("/r/a")  # the failure was for one call only
    assert fs.ops == [("write_atomic", "/r/a"), ("remove", "/r/a"), ("remove", "/r/a")]


def test_fake_filesystem_link_loop_is_an_error_not_a_hang() -> None:
    fs = FakeFileSystem()
    fs.symlink("/l2", "/l1")
    fs.symlink("/l1", "/l2")
    with pytest.raises(FileSystemError):
        fs.read_bytes("/l1")
    assert fs.realpath("/l1/x").startswith("/l")


def test_fake_git_records_calls_and_injects_failures(fake_git_world: Any) -> None:
    w = fake_git_world
    w.git.status(w.repo)
    w.git.fail("status", GitCommandFailed(["git", "status"], "fatal: index file corrupt", 128))
    with pytest.raises(GitCommandFailed) as info:
        w.git.status(w.repo)
    assert info.value.output == "fatal: index file corrupt"
    assert w.git.calls == [("status", w.worktree), ("status", w.worktree)]


def test_fake_git_writes_the_admin_files_a_walk_finds(fake_git_world: Any) -> None:
    w = fake_git_world
    assert w.fs.read_text(w.worktree + "/.git") == f"gitdir: {w.worktree_git_dir}\n"
    assert w.fs.read_text(w.worktree_git_dir + "/commondir") == "../..\n"
    assert w.fs.is_dir(w.common_dir)


def test_fake_git_assume_unchanged_hides_a_change_but_changes_the_index(
    fake_git_world: Any,
) -> None:
    w = fake_git_world
    before = w.git.index(w.repo).digest
    w.git.assume_unchanged(w.worktree, "a.txt")
    w.write("a.txt", b"hidden\n")
    assert w.git.status(w.repo).entries == ()
    assert w.git.index(w.repo).digest != before


def test_fake_git_bare_primary() -> None:
    fs = FakeFileSystem()
    git = FakeGit(fs)
    git.init("/srv/bare.git", bare=True)
    (info,) = git.worktrees("/srv/bare.git")
    assert info.bare
    with pytest.raises(GitCommandFailed):
        git.toplevel("/srv/bare.git")


def test_real_assume_unchanged_agrees(real_git_world: Any) -> None:
    w = real_git_world
    before = w.git.index(w.repo).digest
    w.run_in(w.worktree, "update-index", "--assume-unchanged", "a.txt")
    w.write("a.txt", b"hidden\n")
    assert w.git.status(w.repo).entries == ()
    assert w.git.index(w.repo).digest != before
