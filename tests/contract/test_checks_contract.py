"""The CheckRunner contract: SandboxedCheckRunner (real bubblewrap, real copies) and
FakeCheckRunner (scripted commands over a FakeFileSystem) pass the same tests.

Each behaviour is one command text: the real runner runs it with /bin/sh, the fake has a
program of the same effect under the same text."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fakes.checks import HANG, FakeCheckRunner, FakeTree
from fakes.filesystem import FakeFileSystem
from timing import SLOW

from concorde_workers.adapters.machine.filesystem import LocalFileSystem
from concorde_workers.adapters.processes.process import SubprocessRunner
from concorde_workers.adapters.sandboxes.checks import SandboxedCheckRunner
from concorde_workers.application.runtime.cancellation import Cancellation
from concorde_workers.container import layer_tools
from concorde_workers.domain.boundary.grant import Grant, parse_grant
from concorde_workers.domain.ground.paths import EntryKind
from concorde_workers.domain.isolation.check_sandbox import CheckPlace, Keep, ProgramInView
from concorde_workers.domain.isolation.confinement import Mount, MountKind
from concorde_workers.domain.run.checks import Check, CheckStatus
from concorde_workers.ports.sandboxes.checks import CheckCopyFailed, CheckRunner

PASS_IF_FILE = "test -f a.txt"
PRINT_AND_FAIL = "echo out; echo err >&2; exit 3"
WRITE_CACHE = "mkdir -p cache && echo x > cache/f && echo y > a.txt && test ! -e .git"
HANGS = "sleep 60"
SEES_THE_PLAN = (
    'test "$(cat src/a.py)" = x && test -f README.md && test ! -s README.md && '
    "test ! -e secret.txt && test ! -e .git && test ! -e src/b.py && "
    "echo new > src/b.py && echo y > src/a.py && mkdir .pytest_cache"
)
MISSING = "no-such-program-here"
NO_MODULE = "python3 -m no_such_module_q7"


def _pass_if_file(tree: FakeTree) -> tuple[int, bytes]:
    return (0 if tree.read("a.txt") is not None else 1), b""


def _write_cache(tree: FakeTree) -> tuple[int, bytes]:
    tree.write("cache/f", "x\n")
    tree.write("a.txt", "y\n")
    return (1 if ".git" in tree.files() else 0), b""


def _sees_the_plan(tree: FakeTree) -> tuple[int, bytes]:
    seen = (
        tree.read("src/a.py") == b"x\n"
        and tree.read("README.md") == b""
        and tree.read("secret.txt") is None
        and tree.read(".git") is None
        and tree.read("src/b.py") is None
    )
    tree.write("src/b.py", "new\n")
    tree.write("src/a.py", "y\n")
    tree.write(".pytest_cache/x", "")
    return (0 if seen else 1), b""


PROGRAMS: dict[str, Any] = {
    SEES_THE_PLAN: _sees_the_plan,
    PASS_IF_FILE: _pass_if_file,
    PRINT_AND_FAIL: lambda tree: (3, b"out\nerr\n"),
    WRITE_CACHE: _write_cache,
    HANGS: HANG,
    NO_MODULE: lambda tree: (1, b"/usr/bin/python3: No module named no_such_module_q7\n"),
}


@dataclass
class World:
    runner: CheckRunner
    worktree: str
    kind: str
    fs: Any

    def write(self, rel: str, data: bytes, executable: bool = False) -> None:
        path = os.path.join(self.worktree, rel)
        if self.kind == "fake":
            self.fs.write(path, data, 0o755 if executable else 0o644)
            return
        os.makedirs(os.path.dirname(path), exist_ok=True)
        Path(path).write_bytes(data)
        os.chmod(path, 0o755 if executable else 0o644)

    def symlink(self, target: str, rel: str) -> None:
        path = os.path.join(self.worktree, rel)
        if self.kind == "fake":
            self.fs.symlink(target, path)
        else:
            os.symlink(target, path)

    def tree(self, root: str) -> dict[str, tuple[str, bytes | str, bool]]:
        """Every non-directory entry below `root`: kind, content or link target, executable."""
        if self.kind == "fake":
            prefix = root.rstrip("/") + "/"
            return {
                p[len(prefix) :]: (
                    "link" if n.kind is EntryKind.SYMLINK else "file",
                    n.target if n.kind is EntryKind.SYMLINK else n.data,
                    n.kind is not EntryKind.SYMLINK and bool(n.mode & 0o100),
                )
                for p, n in self.fs.files_under(root).items()
            }
        out: dict[str, tuple[str, bytes | str, bool]] = {}
        for top, dirs, files in os.walk(root):
            for name in [*files, *(d for d in dirs if os.path.islink(os.path.join(top, d)))]:
                path = os.path.join(top, name)
                rel = os.path.relpath(path, root)
                if os.path.islink(path):
                    out[rel] = ("link", os.readlink(path), False)
                else:
                    mode = os.stat(path).st_mode
                    out[rel] = ("file", Path(path).read_bytes(), bool(mode & stat.S_IXUSR))
        return out

    def exists(self, path: str) -> bool:
        return self.fs.node_at(path) is not None if self.kind == "fake" else os.path.lexists(path)

    def place(self) -> CheckPlace:
        return CheckPlace(worktree=self.worktree)


@pytest.fixture(params=["real", "real-copies", "fake"])
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    """The real runner over copy-on-write layers, the real runner where no layer can be made
    (over copies: no util-linux), and the fake."""
    worktree = str(tmp_path / "repo" / ".claude" / "worktrees" / "t")
    if request.param == "fake":
        fs = FakeFileSystem()
        fs.mkdir(worktree)
        yield World(FakeCheckRunner(fs, PROGRAMS), worktree, "fake", fs)
        return
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        pytest.fail("bubblewrap is required by the checks' sandbox: run ./scripts/setup")
    os.makedirs(worktree)
    copies = tmp_path / "copies"
    copies.mkdir()
    tools = layer_tools() if request.param == "real" else None
    if request.param == "real" and tools is None:
        pytest.fail("unshare and mount (util-linux) are required: run ./scripts/setup")
    runner = SandboxedCheckRunner(
        SubprocessRunner(),
        LocalFileSystem(),
        bwrap,
        {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
        (),
        str(copies),
        layer_tools=tools,
    )
    yield World(runner, worktree, "real", None)
    assert os.listdir(copies) == [], "a check's layer or copy outlived it"


def test_a_copy_holds_the_tree_without_git_metadata_and_links_as_links(world: World) -> None:
    world.write("a.txt", b"alpha\n")
    world.write("bin/run.sh", b"#!/bin/sh\n", executable=True)
    world.write(".git", b"gitdir: /somewhere/.git/worktrees/t\n")
    world.write("vendor/lib/.git/HEAD", b"ref: refs/heads/main\n")
    world.symlink("a.txt", "link.txt")
    copy = world.runner.copy(world.worktree)
    assert world.tree(copy) == {
        "a.txt": ("file", b"alpha\n", False),
        "bin/run.sh": ("file", b"#!/bin/sh\n", True),
        "link.txt": ("link", "a.txt", False),
    }
    world.runner.discard(copy)
    assert not world.exists(copy)


def test_a_check_sees_the_copy_at_the_worktree_and_its_writes_never_reach_it(world: World) -> None:
    world.write("a.txt", b"alpha\n")
    world.write(".git", b"gitdir: /somewhere\n")
    before = world.tree(world.worktree)
    copy = world.runner.copy(world.worktree)
    held = world.tree(copy)
    ran = world.runner.run(Check(id="w", command=WRITE_CACHE), copy, world.place())
    assert ran.status is CheckStatus.PASSED and ran.exit_code == 0
    assert world.tree(copy) == held  # the writes went to the check's own view
    assert world.tree(world.worktree) == before
    passed = world.runner.run(Check(id="p", command=PASS_IF_FILE), copy, world.place())
    assert passed.status is CheckStatus.PASSED
    world.runner.discard(copy)


def _planned(worktree: str) -> CheckPlace:
    """A run's plan inside its worktree for the grant src/ ro, README.md names: the worktree
    built from what is visible, as domain/isolation/mount_plan.py makes it."""
    grant = parse_grant(
        {
            "task_type": "implement",
            "context_identity": "sha256:" + "1" * 64,
            "entries": [{"path": "src/", "level": "ro"}, {"path": "README.md", "level": "names"}],
        }
    )
    assert isinstance(grant, Grant)
    view = (
        Mount(kind=MountKind.EMPTY_DIR, path=worktree, why="the task worktree", named=True),
        Mount(
            kind=MountKind.EMPTY_FILE, path=f"{worktree}/README.md", why="names only", named=True
        ),
        Mount(kind=MountKind.READ_ONLY, path=f"{worktree}/src", why="ro in the grant"),
    )
    return CheckPlace(worktree=worktree, grant=grant, view=view)


def test_a_check_over_the_worktree_sees_what_the_run_s_plan_shows_and_writes_nothing_there(
    world: World,
) -> None:
    """Issue 19 §1: a check runs over the worktree itself, seen as the run's mount plan shows
    it (a read-only entry readable, a names-only one empty, a hidden one and Git metadata not
    there), every write going to a throwaway layer: the tree is as it was."""
    world.write("src/a.py", b"x\n")
    world.write("README.md", b"names only\n")
    world.write("secret.txt", b"hidden\n")
    world.write(".git", b"gitdir: /somewhere\n")
    before = world.tree(world.worktree)
    ran = world.runner.run(
        Check(id="v", command=SEES_THE_PLAN), world.worktree, _planned(world.worktree)
    )
    assert (ran.status, ran.log) == (CheckStatus.PASSED, b""), ran
    assert world.tree(world.worktree) == before
    again = world.runner.run(
        Check(id="p", command=SEES_THE_PLAN), world.worktree, _planned(world.worktree)
    )
    assert again.status is CheckStatus.PASSED, "a second check saw the first one's writes"


def test_a_failing_check_reports_its_exit_code_and_both_streams(world: World) -> None:
    copy = world.runner.copy(world.worktree)
    ran = world.runner.run(Check(id="f", command=PRINT_AND_FAIL), copy, world.place())
    world.runner.discard(copy)
    assert ran.status is CheckStatus.FAILED and ran.exit_code == 3
    assert ran.log == b"out\nerr\n"
    assert ran.duration_seconds >= 0


def test_a_missing_program_is_a_check_that_could_not_run_with_sh_saying_so(world: World) -> None:
    """Issue 19 §1: a command the shell cannot find is no evidence of the round: the check
    could not run (checks_unavailable), never a failure that could be "pre-existing"."""
    copy = world.runner.copy(world.worktree)
    ran = world.runner.run(Check(id="m", command=MISSING), copy, world.place())
    world.runner.discard(copy)
    assert ran.status is CheckStatus.NOT_STARTED and ran.exit_code == 127
    assert b"no-such-program-here" in ran.log and b"not found" in ran.log
    assert ran.problem.startswith("its command was not found (exit status 127): "), ran.problem
    assert "no-such-program-here: not found" in ran.problem


def test_a_check_past_its_timeout_is_killed_and_timed_out(world: World) -> None:
    copy = world.runner.copy(world.worktree)
    ran = world.runner.run(Check(id="h", command=HANGS, timeout_seconds=0.5), copy, world.place())
    world.runner.discard(copy)
    assert ran.status is CheckStatus.TIMED_OUT
    assert not world.exists(copy)


def test_copying_what_is_not_there_fails_and_leaves_nothing(world: World) -> None:
    with pytest.raises(CheckCopyFailed):
        world.runner.copy(world.worktree + "-missing")


def test_a_copy_keeps_only_what_keep_says(world: World) -> None:
    world.write("src/app/a.py", b"rw\n")
    world.write("docs/notes.md", b"read only\n")
    world.write("README.md", b"names only\n", executable=True)
    world.write("secrets/token.txt", b"hidden\n")
    world.write("secrets/deep/x.txt", b"hidden\n")
    levels = {
        "src/app/a.py": Keep.CONTENT,
        "docs/notes.md": Keep.CONTENT,
        "README.md": Keep.NAME,
        "secrets/deep": Keep.PRUNED,
    }
    copy = world.runner.copy(world.worktree, lambda rel: levels.get(rel, Keep.NOTHING))
    assert world.tree(copy) == {
        "src/app/a.py": ("file", b"rw\n", False),
        "docs/notes.md": ("file", b"read only\n", False),
        "README.md": ("file", b"", True),
    }
    assert not world.exists(os.path.join(copy, "secrets"))
    world.runner.discard(copy)


def test_a_cancelled_run_kills_its_check_at_once(world: World) -> None:
    cancel = Cancellation()
    cancel.cancel("SIGINT")
    copy = world.runner.copy(world.worktree)
    ran = world.runner.run(
        Check(id="h", command=HANGS, timeout_seconds=SLOW), copy, world.place(), cancel.on_cancel
    )
    world.runner.discard(copy)
    assert ran.status is CheckStatus.FAILED and ran.problem == "killed: the run was cancelled"
    assert ran.exit_code is not None and ran.exit_code < 0


def test_a_module_the_command_runs_that_is_not_installed_could_not_run(world: World) -> None:
    copy = world.runner.copy(world.worktree)
    ran = world.runner.run(Check(id="m", command=NO_MODULE), copy, world.place())
    world.runner.discard(copy)
    assert ran.status is CheckStatus.NOT_STARTED and ran.exit_code == 1, ran
    assert ran.problem.startswith("the module its command runs is not installed: "), ran.problem


def test_plan_is_told_which_program_a_check_runs_or_that_none_is_there(world: World) -> None:
    """Issue 19 §1: `plan` runs nothing, but says what the check's first word resolves to in
    its view, or that none does there; issue 31 §2: such a check cannot start in any round, so
    a run with it is refused before round 1."""
    place = world.place()
    missing = world.runner.program(Check(id="m", command=MISSING), place)
    assert missing.said.startswith(f"`{MISSING}` is found nowhere in the check's view"), missing
    assert missing.said.endswith("a run would be refused with checks_unavailable before round 1")
    assert missing.unavailable is not None and missing.said.startswith(missing.unavailable)
    found = world.runner.program(Check(id="n", command=NO_MODULE), place)
    assert found.said.startswith("`python3` is /") and found.unavailable is None, found
    assert world.runner.program(Check(id="t", command=PASS_IF_FILE), place) == ProgramInView(
        said="`test` is the shell's own"
    )


@pytest.mark.parametrize("kind", ["real", "fake"])
def test_a_check_whose_sandbox_cannot_be_built_is_unavailable_before_any_round(
    kind: str, tmp_path: Path
) -> None:
    """Issue 31 §2: where no check can start (the real runner without bubblewrap, the fake's
    unstartable command), `program` says so before anything runs, as `run` then finds it."""
    worktree = str(tmp_path / "repo" / ".claude" / "worktrees" / "t")
    runner: CheckRunner
    if kind == "fake":
        fs = FakeFileSystem()
        fs.mkdir(worktree)
        runner = FakeCheckRunner(fs, PROGRAMS, unstartable=frozenset({PASS_IF_FILE}))
    else:
        os.makedirs(worktree)
        copies = tmp_path / "copies"
        copies.mkdir()
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
        runner = SandboxedCheckRunner(
            SubprocessRunner(), LocalFileSystem(), None, env, (), str(copies)
        )
    place = CheckPlace(worktree=worktree)
    check = Check(id="t", command=PASS_IF_FILE)
    said = runner.program(check, place)
    assert said.unavailable is not None and said.said == said.unavailable
    ran = runner.run(check, worktree, place)
    assert ran.status is CheckStatus.NOT_STARTED and ran.problem == said.unavailable


# --- the starting state's copy, completed when first needed (issue 32 §3) -----------------------

LATER_LEVELS = {
    "src/app/a.py": Keep.CONTENT,  # rw: copied at once
    "docs/notes.md": Keep.CONTENT,  # ro: later
    "README.md": Keep.NAME,  # names: later
}


def _later_copy(world: World) -> str:
    world.write("src/app/a.py", b"rw\n")
    world.write("docs/notes.md", b"read only\n")
    world.write("README.md", b"names only\n", executable=True)
    world.write("secrets/token.txt", b"hidden\n")
    return world.runner.copy(
        world.worktree,
        lambda rel: LATER_LEVELS.get(rel, Keep.NOTHING),
        lambda rel: rel in ("docs/notes.md", "README.md"),
    )


def test_a_copy_leaves_for_later_what_later_says_and_complete_copies_it(world: World) -> None:
    copy = _later_copy(world)
    assert world.tree(copy) == {"src/app/a.py": ("file", b"rw\n", False)}
    assert world.exists(os.path.join(copy, "docs"))  # the folders are there already
    world.write("src/app/a.py", b"changed by a round\n")  # what is copied is copied
    world.runner.complete(copy)
    assert world.tree(copy) == {
        "src/app/a.py": ("file", b"rw\n", False),
        "docs/notes.md": ("file", b"read only\n", False),
        "README.md": ("file", b"", True),
    }
    world.runner.complete(copy)  # a second time: nothing left to do
    world.runner.discard(copy)
    assert not world.exists(copy)


def test_a_file_left_for_later_that_changed_is_refused_not_copied(world: World) -> None:
    copy = _later_copy(world)
    notes = os.path.join(world.worktree, "docs/notes.md")
    if world.kind == "real":  # the same size and the same modification time: still caught
        times = os.stat(notes)
        Path(notes).write_bytes(b"READ ONLY\n")
        os.utime(notes, ns=(times.st_atime_ns, times.st_mtime_ns))
    else:
        world.write("docs/notes.md", b"READ ONLY\n")
    with pytest.raises(CheckCopyFailed) as refused:
        world.runner.complete(copy)
    assert refused.value.path == notes
    assert "changed after the run started" in refused.value.os_error_text
    assert b"READ ONLY\n" not in [v[1] for v in world.tree(copy).values()]
    world.runner.discard(copy)
    assert not world.exists(copy)


def test_a_file_left_for_later_replaced_by_a_link_is_refused(world: World) -> None:
    copy = _later_copy(world)
    secret = os.path.join(world.worktree, "secrets/token.txt")
    notes = os.path.join(world.worktree, "docs/notes.md")
    if world.kind == "real":
        os.unlink(notes)
        os.symlink(secret, notes)
    else:
        del world.fs.nodes[notes]
        world.symlink(secret, "docs/notes.md")
    with pytest.raises(CheckCopyFailed):
        world.runner.complete(copy)
    assert b"hidden\n" not in [v[1] for v in world.tree(copy).values()]
    world.runner.discard(copy)


def test_a_copy_discarded_before_it_was_completed_leaves_nothing(world: World) -> None:
    copy = _later_copy(world)
    world.runner.discard(copy)
    assert not world.exists(copy)
    world.runner.complete(copy)  # forgotten with it: nothing is copied anywhere
    assert not world.exists(copy)
