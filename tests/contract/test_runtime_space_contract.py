"""The RuntimeSpaces contract (issue 30 §2): KeeperSpaces (with SpacedFileSystem) and FakeSpaces
pass the same tests; the real one's own promises follow ("real" only).

Worlds:

- "real": `KeeperSpaces` over the production process runner and util-linux, the host's files
  through `SpacedFileSystem(LocalFileSystem())`, on a runtime directory of the test's own below
  /tmp (as the host makes them);
- "fake": `FakeSpaces`, the host's files through `LocalFileSystem` on the same kind of folder
  (the fake makes no namespace: its space is the folders on disk).

A round is stood in for by `sh` started behind the space's `join()`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fakes.space import FakeSpaces
from timing import SLOW

from concorde_workers.adapters.machine.filesystem import LocalFileSystem
from concorde_workers.adapters.processes.process import SubprocessRunner
from concorde_workers.adapters.sandboxes.space import KeeperSpaces, SpacedFileSystem, SpaceViews
from concorde_workers.domain.ground.layout import RuntimeLayout
from concorde_workers.domain.isolation.runtime_space import SPACE_DIRS, SpaceTools
from concorde_workers.ports.machine.filesystem import FileSystem, FileSystemError
from concorde_workers.ports.sandboxes.space import RuntimeSpace, RuntimeSpaces

MIB = 1024 * 1024
SIZE = 16 * MIB


def tools() -> SpaceTools:
    found = {
        name: shutil.which(name, path="/usr/sbin:/usr/bin:/sbin:/bin")
        for name in ("unshare", "nsenter", "mount", "mkdir", "setpriv", "sleep")
    }
    missing = [name for name, where in found.items() if where is None]
    if missing:
        pytest.fail(f"the space needs {', '.join(missing)} (util-linux, coreutils)")
    return SpaceTools(**{k: str(v) for k, v in found.items()})


@dataclass
class World:
    kind: str
    spaces: RuntimeSpaces
    fs: FileSystem
    runtime: RuntimeLayout

    def open(self, size: int = SIZE) -> RuntimeSpace:
        space = self.spaces.open(self.runtime, size, tools())
        assert not isinstance(space, str), space
        return space

    def round(self, space: RuntimeSpace, script: str) -> subprocess.CompletedProcess[str]:
        """`script` run by sh behind the space's join, as a round's command is."""
        return subprocess.run(
            [*space.join(), "/bin/sh", "-c", script, "round", self.runtime.root],
            capture_output=True,
            text=True,
            timeout=SLOW,
            check=False,
        )


@pytest.fixture
def runtime() -> Iterator[RuntimeLayout]:
    root = Path(tempfile.mkdtemp(prefix="concorde-space-test-", dir="/tmp"))
    for name in ("control", *SPACE_DIRS):
        (root / name).mkdir(mode=0o700)
    try:
        yield RuntimeLayout(root=str(root))
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(params=["real", "fake"])
def world(request: pytest.FixtureRequest, runtime: RuntimeLayout) -> World:
    if request.param == "real":
        views = SpaceViews()
        return World(
            "real",
            KeeperSpaces(SubprocessRunner(), views),
            SpacedFileSystem(LocalFileSystem(), views),
            runtime,
        )
    return World("fake", FakeSpaces(), LocalFileSystem(), runtime)


# --- both ---------------------------------------------------------------------------------------


def test_what_the_host_writes_a_round_reads_and_what_a_round_writes_the_host_reads(
    world: World,
) -> None:
    space = world.open()
    try:
        copy = world.runtime.copy_of(".credentials.json")
        world.fs.write_atomic(copy, "secret\n", 0o600)
        done = world.round(space, 'cat "$1/config/.credentials.json"; echo made > "$1/work/out"')
        assert (done.returncode, done.stdout) == (0, "secret\n"), done.stderr
        assert world.fs.read_text(f"{world.runtime.work}/out") == "made\n"
        assert [e.name for e in world.fs.listdir(world.runtime.work)] == ["out"]
        world.fs.remove(copy)
        assert not world.fs.lexists(copy)
    finally:
        space.close()


def test_close_is_idempotent(world: World) -> None:
    space = world.open()
    space.close()
    space.close()


# --- the real one ---------------------------------------------------------------------------------


@pytest.fixture
def real(runtime: RuntimeLayout) -> World:
    views = SpaceViews()
    return World(
        "real",
        KeeperSpaces(SubprocessRunner(), views),
        SpacedFileSystem(LocalFileSystem(), views),
        runtime,
    )


def test_real_a_write_past_a_space_is_refused_and_the_worker_s_fill_leaves_the_agent_room(
    real: World,
) -> None:
    """The worker's space (home/, tmp/, work/) is one budget; the agent's (config/) another of
    the same size, which no write of the worker's own folders can take."""
    space = real.open()
    try:
        done = real.round(
            space,
            'head -c 20M /dev/zero > "$1/work/fill"; w=$?; '
            'head -c 1M /dev/zero > "$1/home/more"; h=$?; '
            'head -c 1M /dev/zero > "$1/config/transcript"; c=$?; '
            'head -c 20M /dev/zero > "$1/config/fill"; f=$?; '
            'echo "$w $h $c $f $(du -k "$1/work/fill" | cut -f1) $(du -k "$1/config/fill" | cut -f1)"; '
            'df -k "$1/home" "$1/config" | tail -2',
        )
        first, *rows = done.stdout.splitlines()
        assert first.split()[:4] == ["1", "1", "0", "1"], done
        assert all(int(k) <= SIZE // 1024 for k in first.split()[4:]), done
        assert [r.split()[:2] for r in rows] == [["concorde-space", str(SIZE // 1024)]] * 2, done
        held = space.used()
        assert set(held) == {"agent", "worker"}
        assert all(n >= (SIZE // 1024 - 64) * 1024 for n in held.values()), held
    finally:
        space.close()


def test_real_nothing_of_the_space_is_on_the_host_s_disk_and_close_gives_it_back(
    real: World,
) -> None:
    space = real.open()
    root = Path(real.runtime.root)
    real.fs.write_atomic(real.runtime.copy_of("auth.json"), "secret\n", 0o600)
    assert real.round(space, 'echo x > "$1/home/x"; echo y > "$1/tmp/y"').returncode == 0
    assert all(not any((root / d).iterdir()) for d in SPACE_DIRS)  # the disk holds nothing
    assert real.fs.is_file(f"{real.runtime.home}/x")
    space.close()
    # given back: the host's filesystem sees the empty folders on disk again
    assert not real.fs.lexists(real.runtime.copy_of("auth.json"))
    assert real.fs.listdir(real.runtime.home) == []


def test_real_the_keeper_is_gone_once_the_space_is_made(real: World) -> None:
    """The host's descriptors hold the space: no process is left in its mount namespace."""
    space = real.open()
    try:
        held = next(a for a in space.join() if a.startswith("--mount=")).removeprefix("--mount=")
        namespace = f"mnt:[{os.stat(held).st_ino}]"
        inside = [pid for pid in os.listdir("/proc") if pid.isdigit() and _mnt(pid) == namespace]
        assert inside == []
        # a round entered it: that one was inside while it ran
        done = real.round(space, "readlink /proc/self/ns/mnt")
        assert done.stdout.strip() == namespace, done
    finally:
        space.close()


def test_real_a_missing_runtime_directory_is_a_refusal_and_leaves_nothing(real: World) -> None:
    gone = RuntimeLayout(root=real.runtime.root + "-missing")
    said = real.spaces.open(gone, SIZE, tools())
    assert isinstance(said, str) and "did not make it" in said, said


def test_real_an_error_names_the_path_as_given(real: World) -> None:
    space = real.open()
    try:
        missing = f"{real.runtime.config}/nothing"
        with pytest.raises(FileSystemError) as raised:
            real.fs.read_bytes(missing)
        assert raised.value.path == missing and raised.value.not_found
    finally:
        space.close()


def test_real_a_link_in_the_space_resolves_there(real: World) -> None:
    space = real.open()
    try:
        assert real.round(space, 'mkdir "$1/work/d"; ln -s d "$1/work/l"').returncode == 0
        assert real.fs.realpath(f"{real.runtime.work}/l/x") == f"{real.runtime.work}/d/x"
        assert real.fs.realpath(real.runtime.work) == real.runtime.work
    finally:
        space.close()


def _mnt(pid: str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/mnt")
    except OSError:
        return None
