"""The host reads a worker-named path only where the worker could read (issue 18 §2)."""

from __future__ import annotations

from concorde_workers.domain.gitview.placement import host_may_read


def test_a_target_inside_a_writable_directory_may_be_read() -> None:
    assert host_may_read("/w/src/app/g2/real", "/w", ("src/app",))


def test_a_target_outside_the_worktree_is_never_read() -> None:
    assert not host_may_read("/home/u/.config/git", "/w", ("src/app",))
    assert not host_may_read("/w2/src/app", "/w", ("",))


def test_the_primary_git_directory_and_other_worktree_paths_are_not_read() -> None:
    assert not host_may_read("/w/.git", "/w", ("src/app",))
    assert not host_may_read("/w/secrets", "/w", ("src/app",))


def test_a_prefix_that_is_not_a_directory_boundary_does_not_count() -> None:
    assert not host_may_read("/w/src/application", "/w", ("src/app",))


def test_a_worktree_wide_grant_covers_the_worktree_only() -> None:
    assert host_may_read("/w/x/.git", "/w", (".",))
    assert not host_may_read("/", "/w", (".",))


def test_the_worktrees_own_git_directory_is_never_read_even_under_a_worktree_wide_grant() -> None:
    assert not host_may_read("/w/.git", "/w", (".",))
    assert not host_may_read("/w/.git/modules/x", "/w", ("",))
