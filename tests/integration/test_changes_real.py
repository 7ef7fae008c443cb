"""Each round's change kept as evidence (issue 21 §1), for real: `WorkerHost.run` with the real
Git, a real worktree and the test agent program. After each audit the host keeps
`rounds/<n>/changes.patch`, the patch against the round's starting state: binary-safe, in the
audit's order, what the worker could not read named with its digest and never shown, and the
file listed in the round's node. The patch is Git's own: `git apply` of each round's patch,
in order, onto the starting state gives the worktree the worker left."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest
from fakes.program_backend import Step
from integration.host_fixtures import HostHarness, ok_result
from integration.test_host_real import OPEN, assert_cleaned, harness
from timing import SLOW

from concorde_workers.application.runtime.validation import ValidationInput, ValidationOutcome
from concorde_workers.domain.configuration.request import Limits
from concorde_workers.domain.run.changes import MAX_FILE_BYTES, MAX_PATCH_BYTES

pytestmark = pytest.mark.integration
__all__ = ["harness"]

MAIN = "{worktree}/src/app/main.py"
SECRET = "the content of a file outside rw\n"


def patch_of(run_dir: Path, n: int) -> str:
    return (run_dir / "rounds" / str(n) / "changes.patch").read_text()


def test_a_round_s_patch_shows_its_rw_change_and_names_the_rest_by_digest(
    harness: HostHarness,
) -> None:
    before = (harness.worktree / "src/app/main.py").read_text()
    run = harness.run(
        [
            *OPEN,
            Step.write(MAIN, before + "print('hello')\n"),
            Step.write("{worktree}/src/app/data.bin", "\x00\x01\x02binary\x00"),
            Step.write("{worktree}/src/app/util.py", SECRET),
            Step.result(ok_result()),
        ],
        limits=Limits(timeout_seconds=SLOW, rounds=0, retries=0, retry_delay_seconds=0),
    )
    assert run.code == "audit_violation", run.record.error
    patch = patch_of(run.run_dir, 1)
    assert patch.startswith(
        "# concorde-workers: round 1's change against its starting state "
        "(2 file(s) in the patch, 1 named only)\n"
    ), patch
    digest = "sha256:" + hashlib.sha256(SECRET.encode()).hexdigest()
    assert f"# src/app/util.py: outside rw (ro), content not kept; now {digest}\n" in patch
    assert SECRET.strip() not in patch  # what the worker changed outside rw is never shown
    assert "+print('hello')\n" in patch
    assert "diff --git a/src/app/data.bin b/src/app/data.bin\n" in patch
    assert "GIT binary patch\n" in patch  # binary-safe: the bytes, not "Binary files differ"
    assert patch.index("src/app/data.bin b/") < patch.index("src/app/main.py b/")  # path order
    files = [f["path"] for f in run.trace("rounds/1/trace.json")["files"]]
    assert "changes.patch" in files
    assert_cleaned(harness, run)


def test_each_round_s_patch_is_its_own_and_the_patches_apply_in_order(
    harness: HostHarness, tmp_path: Path
) -> None:
    start = (harness.worktree / "src/app/main.py").read_text()

    def validation(given: ValidationInput) -> ValidationOutcome:
        return ValidationOutcome(repair="again" if given.round == 1 else None)

    run = harness.run(
        [
            *OPEN,
            Step.write(MAIN, start + "one\n"),
            Step.write("{worktree}/src/app/new.py", "n\n"),
            Step.result(ok_result()),
        ],
        [
            *OPEN,
            Step.write(MAIN, start + "one\ntwo\n"),
            Step.delete("{worktree}/src/app/new.py"),
            Step.result(ok_result()),
        ],
        validation=validation,
        limits=Limits(timeout_seconds=SLOW, rounds=2, retries=0, retry_delay_seconds=0),
    )
    assert run.record.status == "ok", run.record.error
    first, second = patch_of(run.run_dir, 1), patch_of(run.run_dir, 2)
    assert "+one\n" in first and "new file mode" in first and "+two" not in first
    assert "+two\n" in second and "+one" not in second and "deleted file mode" in second
    # Git's own patches: applied in order onto the starting state, the worktree as left.
    copy = tmp_path / "copy"
    subprocess.run(
        ["git", "clone", "-q", str(harness.worktree), str(copy)], check=True, env=harness.git_env
    )
    for patch in (first, second):
        subprocess.run(
            ["git", "apply", "--binary", "-"],
            input=patch.encode(),
            cwd=copy,
            check=True,
            env=harness.git_env,
        )
    assert (copy / "src/app/main.py").read_text() == start + "one\ntwo\n"
    assert not (copy / "src/app/new.py").exists()
    assert_cleaned(harness, run)


def test_a_file_past_the_store_s_bound_is_named_and_a_patch_past_its_bound_is_cut(
    harness: HostHarness,
) -> None:
    big = "x" * (MAX_FILE_BYTES + 1)
    lines = "".join(f"line {i}\n" for i in range(20_000))  # ~200 KB a file, 6 of them
    steps = [Step.write(f"{{worktree}}/src/app/part{i}.txt", lines) for i in range(6)]
    run = harness.run(
        [*OPEN, Step.write("{worktree}/src/app/big.txt", big), *steps, Step.result(ok_result())]
    )
    assert run.record.status == "ok", run.record.error
    patch = patch_of(run.run_dir, 1)
    assert (
        "# src/app/big.txt: larger than 262144 bytes, content not kept; now sha256:"
        f"{hashlib.sha256(big.encode()).hexdigest()}\n"
    ) in patch
    assert "x" * 100 not in patch
    assert len(patch.encode()) <= MAX_PATCH_BYTES + 1024
    cut = patch.rsplit("\n", 2)[-2]
    assert cut.startswith("# the patch stops here: ") and "src/app/part5.txt" in cut, cut
    assert "past the 1048576 bytes a round's patch holds" in cut
    assert_cleaned(harness, run)


def test_the_keeper_tells_a_path_behind_a_linked_folder(harness: HostHarness) -> None:
    """Git never lists a file behind a linked folder, but the audit's walk of nested
    repositories could: the keeper resolves each folder above a path before hashing it."""
    from concorde_workers.adapters.machine.filesystem import LocalFileSystem
    from concorde_workers.application.rounds.changes import ChangeKeeper
    from concorde_workers.domain.gitview.git_status import GitRepository

    outside = harness.root / "outside"
    outside.mkdir()
    (harness.worktree / "src/app/out").symlink_to(outside, target_is_directory=True)
    repo = GitRepository(worktree=str(harness.worktree), git_dir="/unused", common_dir="/unused")
    keeper = ChangeKeeper(None, LocalFileSystem(), repo, None, "/unused", None, None)  # type: ignore[arg-type]
    assert keeper._linked("src/app/out/secret.txt") is True
    assert keeper._linked("src/app/main.py") is False
    assert keeper._linked("top.txt") is False


def test_a_change_store_that_is_there_already_is_never_written_into(
    harness: HostHarness, tmp_path: Path
) -> None:
    from concorde_workers.adapters.repository.git import GitCliReader
    from concorde_workers.domain.gitview.git_status import GitRepository
    from concorde_workers.ports.repository.git import GitCommandFailed

    git = GitCliReader(environ=harness.git_env)
    common = harness.primary / ".git"
    repo = GitRepository(
        worktree=str(harness.worktree),
        git_dir=str(common / "worktrees/task"),
        common_dir=str(common),
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    planted = tmp_path / "planted-store"
    planted.symlink_to(elsewhere)
    for store in (planted, elsewhere):
        with pytest.raises(GitCommandFailed, match="the change store cannot be made"):
            git.open_store(repo, str(store))
    assert list(elsewhere.iterdir()) == []
    fresh = tmp_path / "store"
    git.open_store(repo, str(fresh))
    assert git.change_tree(repo, str(fresh), [], base=True)
