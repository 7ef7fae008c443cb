"""GitReader contract: the real adapter on a real repository and FakeGit answer alike.

The real world is a repository with a linked worktree at `.claude/worktrees/task` made by
`git worktree add`, as the spec's Placement requires of every run (seed 000, Placement, Audit).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from fakes.git import blob_oid

from concorde_workers.adapters.repository.git import GitCliReader
from concorde_workers.domain.gitview.git_status import (
    NULL_MODE,
    GitRepository,
    StatusEntry,
    StatusKind,
)
from concorde_workers.ports.repository.git import GitCommandFailed, GitReader


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def changed(
    status: str, path: str, mode_index: str, mode_worktree: str, oid_index: str
) -> StatusEntry:
    return StatusEntry(
        kind=StatusKind.CHANGED,
        path=path,
        status=status,
        mode_index=mode_index,
        mode_worktree=mode_worktree,
        oid_index=oid_index,
    )


def untracked(path: str) -> StatusEntry:
    return StatusEntry(kind=StatusKind.UNTRACKED, path=path)


ALPHA = blob_oid(b"alpha\n")
BETA = blob_oid(b"beta\n")
DEL = blob_oid(b"to be deleted\n")
# A name that is not UTF-8: Latin-1 "é" then a space and a newline.
ODD_BYTES = b"caf\xe9 new\nline.txt"
ODD = ODD_BYTES.decode("utf-8", "surrogateescape")


def test_implements_the_port(git_world: Any) -> None:
    assert isinstance(git_world.git, GitReader)


class TestPlacementFacts:
    def test_worktree_list_names_the_primary_first(self, git_world: Any) -> None:
        expected = [git_world.primary, git_world.worktree]
        assert [w.path for w in git_world.git.worktrees(git_world.worktree)] == expected
        assert [w.path for w in git_world.git.worktrees(git_world.primary)] == expected

    def test_worktrees_carry_branch_and_bare(self, git_world: Any) -> None:
        infos = git_world.git.worktrees(git_world.worktree)
        assert [(w.path, w.branch, w.bare, w.detached) for w in infos] == [
            (git_world.primary, "refs/heads/main", False, False),
            (git_world.worktree, "refs/heads/task", False, False),
        ]

    def test_toplevel_from_a_subdirectory(self, git_world: Any) -> None:
        assert git_world.git.toplevel(git_world.worktree + "/dir") == git_world.worktree
        assert git_world.git.toplevel(git_world.primary) == git_world.primary

    def test_git_dirs_are_absolute_and_real(self, git_world: Any) -> None:
        assert git_world.git.git_dirs(git_world.worktree) == (
            git_world.worktree_git_dir,
            git_world.common_dir,
        )
        assert git_world.git.git_dirs(git_world.primary) == (
            git_world.common_dir,
            git_world.common_dir,
        )

    def test_outside_any_repository_is_a_command_failure(
        self, git_world: Any, tmp_path: Path
    ) -> None:
        outside = str(tmp_path.resolve() / "elsewhere")
        if git_world.kind == "real":
            os.mkdir(outside)
        else:
            git_world.fs.mkdir(outside)
        with pytest.raises(GitCommandFailed) as info:
            git_world.git.toplevel(outside)
        assert info.value.returncode == 128
        assert "not a git repository" in info.value.output

    def test_git_dirs_are_found_from_the_worktree_itself_not_above(self, git_world: Any) -> None:
        """Discovery stops at the directory's parent (GIT_CEILING_DIRECTORIES): a directory
        below the top level is no worktree of its own."""
        with pytest.raises(GitCommandFailed) as info:
            git_world.git.git_dirs(git_world.worktree + "/dir")
        assert info.value.returncode == 128
        assert "not a git repository" in info.value.output

    def test_a_missing_directory_is_a_command_failure(self, git_world: Any) -> None:
        missing = git_world.repo.model_copy(update={"worktree": git_world.worktree + "/no-dir"})
        with pytest.raises(GitCommandFailed) as info:
            git_world.git.status(missing)
        assert info.value.returncode == 128
        assert "cannot change to" in info.value.output


class TestStatus:
    def test_a_fresh_worktree_is_clean(self, git_world: Any) -> None:
        assert git_world.git.status(git_world.repo).entries == ()

    def test_the_primary_sees_the_linked_worktree_as_a_nested_repository(
        self, git_world: Any
    ) -> None:
        assert git_world.git.status(git_world.primary_repo).entries == (
            untracked(".claude/worktrees/task/"),
        )

    def test_modified_deleted_executable_untracked_and_ignored(self, git_world: Any) -> None:
        w = git_world
        w.write("a.txt", b"changed\n")
        w.delete("del.txt")
        w.set_executable("dir/b.txt", True)
        w.write("new dir/n.txt", b"new\n")
        w.write(ODD, b"odd\n")
        w.write("with space.txt", b"space\n", executable=False)  # unchanged rewrite
        w.write("x.log", b"ignored\n")
        w.write("build/out.bin", b"ignored\n")
        w.write("tool.sh", b"#!/bin/sh\n", executable=True)
        assert w.git.status(w.repo).entries == (
            changed("M", "a.txt", "100644", "100644", ALPHA),
            changed("D", "del.txt", "100644", NULL_MODE, DEL),
            changed("M", "dir/b.txt", "100644", "100755", BETA),
            untracked(ODD),
            untracked("new dir/n.txt"),
            untracked("tool.sh"),
        )

    def test_executable_bit_as_git_sees_it(self, git_world: Any) -> None:
        git_world.set_executable("run.sh", False)
        (entry,) = git_world.git.status(git_world.repo).entries
        assert (entry.path, entry.mode_index, entry.mode_worktree) == ("run.sh", "100755", "100644")

    def test_a_symbolic_link_retargeted_is_modified(self, git_world: Any) -> None:
        git_world.delete("link")
        git_world.symlink("dir/b.txt", "link")
        (entry,) = git_world.git.status(git_world.repo).entries
        assert (entry.status, entry.path, entry.mode_worktree) == ("M", "link", "120000")

    def test_a_file_replaced_by_a_link_is_a_type_change(self, git_world: Any) -> None:
        git_world.delete("a.txt")
        git_world.symlink("/etc/passwd", "a.txt")
        (entry,) = git_world.git.status(git_world.repo).entries
        assert (entry.status, entry.path, entry.mode_worktree) == ("T", "a.txt", "120000")

    def test_a_staged_change_the_worktree_keeps_is_not_listed(self, git_world: Any) -> None:
        """The listing compares the worktree with the index, which the audit digests whole
        (a change of it is a violation): what is staged and left as staged is no change."""
        git_world.write("a.txt", b"staged\n")
        git_world.write("added.txt", b"added\n")
        git_world.stage("a.txt", "added.txt")
        assert git_world.git.status(git_world.repo).entries == ()
        git_world.write("a.txt", b"alpha\n")  # back to HEAD's content: not the index's
        assert git_world.git.status(git_world.repo).entries == (
            changed("M", "a.txt", "100644", "100644", blob_oid(b"staged\n")),
        )

    def test_a_change_undone_is_no_longer_listed(self, git_world: Any) -> None:
        git_world.write("a.txt", b"changed\n")
        assert len(git_world.git.status(git_world.repo).entries) == 1
        git_world.write("a.txt", b"alpha\n")
        assert git_world.git.status(git_world.repo).entries == ()

    def test_unmerged_entries(self, git_world: Any) -> None:
        git_world.conflict("c.txt", b"base\n", b"ours\n", b"theirs\n")
        (entry,) = git_world.git.status(git_world.repo).entries
        assert entry.kind is StatusKind.UNMERGED
        assert (entry.status, entry.path, entry.mode_worktree) == ("U", "c.txt", "100644")


class TestRules:
    """Issue 30 §1: which files are ignored comes from the rules committed at HEAD, never from
    a rule file a worker writes in the working tree; a file only touched is no change."""

    def test_the_rules_are_the_committed_ones(self, git_world: Any) -> None:
        before = git_world.git.evidence_rules(git_world.repo)
        assert ".gitignore" in before.sources and b"*.log\n" in before.excludes
        git_world.write(".gitignore", b"*\n")
        git_world.write("dir/.gitignore", b"*\n")
        assert git_world.git.evidence_rules(git_world.repo) == before

    def test_a_gitignore_written_in_the_worktree_hides_nothing(self, git_world: Any) -> None:
        git_world.write(".gitignore", b"*\nnew.txt\n")
        git_world.write("new.txt", b"new\n")
        git_world.write("x.log", b"ignored as committed\n")
        rules = git_world.git.evidence_rules(git_world.repo)
        assert git_world.git.status(git_world.repo, rules=rules).entries == (
            changed("M", ".gitignore", "100644", "100644", blob_oid(b"*.log\nbuild/\n")),
            untracked("new.txt"),
        )

    def test_a_file_touched_but_unchanged_is_not_listed(self, git_world: Any) -> None:
        git_world.touch("a.txt")
        git_world.write("dir/b.txt", b"beta\n")  # rewritten as it was
        assert git_world.git.status(git_world.repo).entries == ()


class TestHead:
    def test_branch_and_commit(self, git_world: Any) -> None:
        head = git_world.git.status(git_world.repo).head
        primary = git_world.git.status(git_world.primary_repo).head
        assert head.branch == "refs/heads/task"
        assert primary.branch == "refs/heads/main"
        assert head.commit is not None
        assert head.commit == primary.commit

    def test_a_commit_moves_the_commit_not_the_branch(self, git_world: Any) -> None:
        before = git_world.git.status(git_world.repo).head
        git_world.write("a.txt", b"next\n")
        git_world.stage("a.txt")
        git_world.commit()
        after = git_world.git.status(git_world.repo).head
        assert after.branch == before.branch
        assert after.commit != before.commit

    def test_switching_branch_and_detaching(self, git_world: Any) -> None:
        before = git_world.git.status(git_world.repo).head
        git_world.switch("other", create=True)
        assert git_world.git.status(git_world.repo).head.branch == "refs/heads/other"
        git_world.detach()
        detached = git_world.git.status(git_world.repo).head
        assert (detached.branch, detached.commit) == (None, before.commit)


class TestCommittedConfig:
    """The worker configuration as committed at HEAD (issue 18 §4), never the working copy."""

    def test_a_working_copy_change_is_not_what_is_committed(self, git_world: Any) -> None:
        git_world.write(".concorde/workers.json", b'{"committed": true}\n')
        git_world.stage(".concorde/workers.json")
        git_world.commit()
        git_world.write(".concorde/workers.json", b'{"worker": "rewrote it"}\n')
        assert git_world.git.committed_config(git_world.repo) == b'{"committed": true}\n'

    def test_a_file_only_in_the_working_copy_is_not_committed(self, git_world: Any) -> None:
        git_world.write(".concorde/workers.json", b'{"uncommitted": true}\n')
        assert git_world.git.committed_config(git_world.repo) is None

    def test_a_staged_file_is_not_committed(self, git_world: Any) -> None:
        git_world.write(".concorde/workers.json", b'{"staged": true}\n')
        git_world.stage(".concorde/workers.json")
        assert git_world.git.committed_config(git_world.repo) is None


class TestConfigDigest:
    """What decides which files Git lists and what it runs: a changed info/exclude,
    info/attributes, config, config.worktree or hook changes the digest, as it could hide a
    file from the audit or run a program for the next Git command."""

    @pytest.mark.parametrize(
        "which",
        ["info/exclude", "info/attributes", "config", "config.worktree", "hooks/pre-commit"],
    )
    def test_changes_with_each_file_that_decides_what_git_lists(
        self, git_world: Any, which: str
    ) -> None:
        before = git_world.git.config_digest(git_world.repo)
        assert before == git_world.git.config_digest(git_world.repo)
        folder = git_world.worktree_git_dir if which == "config.worktree" else git_world.common_dir
        path = f"{folder}/{which}"
        old = git_world.fs.read_bytes(path) if git_world.fs.lexists(path) else b""
        git_world.fs.makedirs(path.rsplit("/", 1)[0])
        git_world.fs.write_atomic(path, old + b"\n# planted: secrets/\n")
        assert git_world.git.config_digest(git_world.repo) != before

    def test_a_stat_refresh_or_a_worktree_write_leaves_it(self, git_world: Any) -> None:
        before = git_world.git.config_digest(git_world.repo)
        git_world.write("a.txt", b"changed\n")
        git_world.refresh()
        assert git_world.git.config_digest(git_world.repo) == before


class TestIndexDigest:
    def test_stable_across_a_stat_refresh(self, git_world: Any) -> None:
        before = git_world.git.index(git_world.repo).digest
        git_world.touch("a.txt")
        git_world.touch("dir/b.txt")
        git_world.refresh()
        assert git_world.git.index(git_world.repo).digest == before

    def test_changes_when_something_is_staged(self, git_world: Any) -> None:
        before = git_world.git.index(git_world.repo).digest
        git_world.write("a.txt", b"changed\n")
        assert git_world.git.index(git_world.repo).digest == before  # worktree only
        git_world.stage("a.txt")
        assert git_world.git.index(git_world.repo).digest != before

    def test_is_a_sha256(self, git_world: Any) -> None:
        digest = git_world.git.index(git_world.repo).digest
        assert digest.startswith("sha256:")
        assert len(digest) == len("sha256:") + 64


def test_fake_and_real_agree_byte_for_byte(real_git_world: Any, fake_git_world: Any) -> None:
    """Same scenario on both: status entries, HEAD's branch and the index digest are equal,
    since the fake computes real blob ids and hashes the bytes `ls-files --stage -v -z`
    prints."""
    worlds = [real_git_world, fake_git_world]
    for w in worlds:
        w.write("a.txt", b"changed\n")
        w.stage("a.txt")
        w.write("a.txt", b"changed again\n", executable=True)
        w.delete("del.txt")
        w.write(ODD, b"odd\n")
        w.write("z/new.txt", b"new\n")
    real, fake = worlds
    real_status, fake_status = real.git.status(real.repo), fake.git.status(fake.repo)
    assert real_status.entries == fake_status.entries
    assert real_status.head.branch == fake_status.head.branch  # commit ids are the fake's own
    assert real.git.index(real.repo) == fake.git.index(fake.repo)


# -- real adapter only: read-only, environment, hooks ----------------------------------------


def _tree_state(root: str) -> dict[str, tuple[bytes, int]]:
    """Every file under `root` with its bytes and mtime (ns), links as their targets."""
    state: dict[str, tuple[bytes, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            if os.path.islink(path):
                state[path] = (os.readlink(path).encode(), st.st_mtime_ns)
            else:
                with open(path, "rb") as f:
                    state[path] = (f.read(), st.st_mtime_ns)
    return state


def test_the_adapter_never_writes_the_repository(real_git_world: Any) -> None:
    w = real_git_world
    # Stat-dirty files: an ordinary `git status` would now rewrite the index.
    w.touch("a.txt")
    w.touch("dir/b.txt")
    w.write("untracked.txt", b"u\n")
    (Path(w.primary) / "a.txt").touch()
    os.utime(Path(w.primary) / "a.txt", ns=(0, 1_000_000_000))
    before = _tree_state(w.common_dir)
    for where, repo in ((w.worktree, w.repo), (w.primary, w.primary_repo)):
        w.git.worktrees(where)
        w.git.toplevel(where)
        w.git.git_dirs(where)
        w.git.index(repo)
        w.git.status(repo)
        w.git.config_digest(repo)
    assert _tree_state(w.common_dir) == before
    # The check has teeth: an ordinary status does rewrite the worktree's index.
    w.refresh()
    index = os.path.join(w.worktree_git_dir, "index")
    assert _tree_state(w.common_dir)[index] != before[index]


def test_inherited_git_variables_are_stripped(real_git_world: Any, tmp_path: Path) -> None:
    w = real_git_world
    hostile = dict(
        w.env,
        GIT_DIR=str(tmp_path / "nowhere"),
        GIT_WORK_TREE="/",
        GIT_INDEX_FILE=str(tmp_path / "other-index"),
        GIT_CONFIG_PARAMETERS="'core.fsmonitor'='/bin/false'",
    )
    git = GitCliReader(environ=hostile)
    assert git.toplevel(w.worktree) == w.worktree
    assert git.status(w.repo).entries == ()
    assert not (tmp_path / "other-index").exists()


def test_repository_configured_fsmonitor_and_hooks_never_run(
    real_git_world: Any, tmp_path: Path
) -> None:
    w = real_git_world
    marker = tmp_path / "ran"
    script = tmp_path / "fsmonitor.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    script.chmod(0o755)
    w.run_in(w.primary, "config", "core.fsmonitor", str(script))
    w.touch("a.txt")
    w.git.status(w.repo)
    w.git.index(w.repo)
    assert not marker.exists()
    # The check has teeth: an ordinary status runs the configured fsmonitor.
    w.refresh()
    assert marker.exists()


def test_a_missing_git_program_is_a_command_failure(real_git_world: Any) -> None:
    git = GitCliReader(environ=real_git_world.env, git_program="/nonexistent/git")
    with pytest.raises(GitCommandFailed) as info:
        git.status(real_git_world.repo)
    assert info.value.returncode is None


def test_an_unborn_branch_has_no_commit(tmp_path: Path, git_env: dict[str, str]) -> None:
    env = git_env
    repo = tmp_path / "fresh"
    subprocess.run(["git", "init", "-q", "-b", "trunk", str(repo)], env=env, check=True)
    git = GitCliReader(environ=env)
    git_dir, common = git.git_dirs(str(repo))
    status = git.status(GitRepository(worktree=str(repo), git_dir=git_dir, common_dir=common))
    assert (status.head.branch, status.head.commit) == ("refs/heads/trunk", None)
    assert status.entries == ()


def test_a_reused_index_answer_is_never_stale(real_git_world: Any) -> None:
    """The adapter answers again from an index file whose identity (inode, size, mtime,
    ctime) has not changed; every way Git changes the index renames a new file over it, so
    each answer equals one read afresh."""
    w = real_git_world
    reused = w.git
    fresh = GitCliReader(environ=w.env, reuse_index=False)
    seen = [reused.index(w.repo)]
    for change in (
        lambda: w.stage("a.txt"),
        lambda: w.write("a.txt", b"staged\n") or w.stage("a.txt"),
        lambda: w.run_in(w.worktree, "update-index", "--assume-unchanged", "a.txt"),
        lambda: w.refresh(),
    ):
        assert reused.index(w.repo) == fresh.index(w.repo)
        change()
        seen.append(reused.index(w.repo))
        assert seen[-1] == fresh.index(w.repo)
    assert len({s.digest for s in seen}) == 3  # unchanged, staged, assume-unchanged (refresh)
