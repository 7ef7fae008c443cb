"""The runtime directory and the trace on a real disk (adapters.machine.filesystem.LocalFileSystem).

A worker's tools may leave directories unreadable and unwritable (chmod 000, 0500), nested, with
files inside, and plant symbolic links to the host's files: the cleanup removes all of it without
touching a link's target. A trace write the operating system refuses is recorded, not raised.

The tests may run as root, where chmod does not stop root's own reads and writes: the opening-up
is then proved by the modes the removal meets (every directory u+rwx before it is removed), and
a refused write by another real refusal (a parent that is a file, a name too long).
"""

from __future__ import annotations

import copy
import errno
import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from fakes.system import FakeClock, FakeRandom

from concorde_workers.adapters.machine.filesystem import LocalFileSystem
from concorde_workers.application.runtime.runtime_directory import (
    cleanup_runtime_directory,
    create_runtime_directory,
)
from concorde_workers.application.tracing.progress import ProgressWriter
from concorde_workers.application.tracing.reader import read_record
from concorde_workers.application.tracing.writer import TraceWriter
from concorde_workers.contracts import load
from concorde_workers.domain.evidence.records import RunRecord, TraceNode
from concorde_workers.domain.evidence.sweep import OwnerRecord, ProcessIdentity
from concorde_workers.domain.ground.layout import RunLayout, RuntimeLayout

pytestmark = pytest.mark.integration

RUN_ID = "w-20261002T101500-a1b2c3"
AS_ROOT = os.geteuid() == 0
OWNER = OwnerRecord.of(
    RUN_ID,
    f"/trace/workers/{RUN_ID}",
    "pi",
    ProcessIdentity(pid=os.getpid(), start_ticks=None, boot_id=None, pid_namespace=None),
)


class WatchedFileSystem(LocalFileSystem):
    """The real adapter, noting the mode of every directory the removal meets."""

    def __init__(self) -> None:
        self.modes_at_removal: dict[str, int] = {}

    def rmtree(self, path: str) -> None:
        for directory, dirs, _files in os.walk(path, followlinks=False):
            for name in [directory, *(os.path.join(directory, d) for d in dirs)]:
                info = os.lstat(name)
                if stat.S_ISDIR(info.st_mode):
                    self.modes_at_removal[name] = stat.S_IMODE(info.st_mode)
        super().rmtree(path)


def make_runtime(fs: LocalFileSystem, tmp_path: Path) -> RuntimeLayout:
    temp_root = tmp_path / "tmp"
    temp_root.mkdir()
    layout = create_runtime_directory(
        fs, str(temp_root), RUN_ID, FakeRandom.scripted(["0badf00d"]), owner=OWNER
    )
    assert isinstance(layout, RuntimeLayout), layout
    return layout


def test_the_runtime_directory_is_private_with_its_five_folders(tmp_path: Path) -> None:
    layout = make_runtime(LocalFileSystem(), tmp_path)
    assert Path(layout.root).name == "concorde-a1b2c3-0badf00d"
    for path in (
        layout.root,
        *(os.path.join(layout.root, d) for d in ("control", "config", "home", "tmp", "work")),
    ):
        info = os.lstat(path)
        assert stat.S_ISDIR(info.st_mode) and stat.S_IMODE(info.st_mode) == 0o700, path


def test_an_existing_runtime_directory_is_never_reused(tmp_path: Path) -> None:
    (tmp_path / "tmp").mkdir()
    taken = tmp_path / "tmp" / "concorde-a1b2c3-0badf00d"
    taken.mkdir()
    layout = create_runtime_directory(
        LocalFileSystem(),
        str(tmp_path / "tmp"),
        RUN_ID,
        FakeRandom.scripted(["0badf00d", "cafe0123"]),
        owner=OWNER,
    )
    assert isinstance(layout, RuntimeLayout)
    assert layout.root.endswith("concorde-a1b2c3-cafe0123")


@pytest.mark.req("Nothing but the trace outlives a worker")
@pytest.mark.req("The transcript is kept before the runtime directory goes")
def test_a_worker_s_locked_nested_directories_and_planted_links_are_removed(
    tmp_path: Path,
) -> None:
    fs = WatchedFileSystem()
    layout = make_runtime(fs, tmp_path)
    root = Path(layout.root)
    # the host's credential copy and the agent's transcript in config/
    credential = root / "config" / ".credentials.json"
    credential.write_text('{"token": "secret"}')
    credential.chmod(0o600)
    transcript = root / "config" / "projects" / "work" / "session-1.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_bytes(b'{"type":"user"}\n{"type":"assistant"}\n')
    # what the worker's tools left: nested, files inside, unreadable and unwritable
    locked = root / "work" / "build" / "locked"
    (locked / "deeper").mkdir(parents=True)
    (locked / "deeper" / "f.txt").write_text("inside")
    (locked / "g.txt").write_text("inside too")
    (locked / "deeper").chmod(0o000)
    locked.chmod(0o000)
    readonly = root / "home" / ".cache" / "ro"
    readonly.mkdir(parents=True)
    (readonly / "h.txt").write_text("x")
    readonly.chmod(0o500)
    (root / "tmp").chmod(0o000)
    # symbolic links to the host's files and folders, outside the runtime directory
    outside = tmp_path / "host"
    (outside / "folder").mkdir(parents=True)
    (outside / "folder" / "keep.txt").write_text("keep me")
    (outside / "folder").chmod(0o500)
    (outside / "secret.txt").write_text("host secret")
    (root / "work" / "to-folder").symlink_to(outside / "folder")
    (root / "home" / "to-secret").symlink_to(outside / "secret.txt")
    os.symlink(outside / "folder", root / "work" / "build" / "nested-link")  # inside a dir
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    dest = run_dir / "transcript.jsonl"

    result = cleanup_runtime_directory(fs, layout, [str(credential)], str(transcript), str(dest))

    assert result.ok, result
    assert result.transcript_kept
    assert dest.read_bytes() == b'{"type":"user"}\n{"type":"assistant"}\n'
    assert not os.path.lexists(root)
    # the link targets are untouched, contents and modes
    assert (outside / "folder" / "keep.txt").read_text() == "keep me"
    assert stat.S_IMODE(os.lstat(outside / "folder").st_mode) == 0o500
    assert (outside / "secret.txt").read_text() == "host secret"
    # every directory the removal met was opened up (root's chmod is no proof by itself)
    assert fs.modes_at_removal, "the removal met no directory"
    for directory, mode in fs.modes_at_removal.items():
        assert mode & 0o700 == 0o700, (directory, oct(mode))
    assert str(locked / "deeper") in fs.modes_at_removal
    assert str(outside / "folder") not in fs.modes_at_removal
    (outside / "folder").chmod(0o700)  # let pytest clean tmp_path


class SwappingFileSystem(WatchedFileSystem):
    """The real adapter, and a worker's last move: right after the host has looked at the
    directory `victim` (an lstat) or as it opens it by name, the directory is swapped for a link
    to `target` — between the host's check and its change of the mode."""

    def __init__(self, victim: Path, target: Path) -> None:
        super().__init__()
        self.victim, self.target, self.swapped = victim, target, False

    def swap(self) -> None:
        if not self.swapped and self.victim.is_dir() and not self.victim.is_symlink():
            self.swapped = True
            self.victim.rename(self.target.with_name("moved-away"))
            self.victim.symlink_to(self.target)

    def stat(self, path: str) -> Any:
        found = super().stat(path)
        if path == str(self.victim):
            self.swap()
        return found


@pytest.mark.req("Nothing but the trace outlives a worker")
def test_a_directory_swapped_for_a_link_during_the_cleanup_never_redirects_a_chmod(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The opening-up gives each directory u+rwx; a directory swapped for a link to a host
    folder between the host's look and its chmod must not widen that folder's mode. Opening
    each directory relative to its parent with O_NOFOLLOW and changing the opened directory
    leaves no such window: the swap is met at the open (a link), never followed."""
    layout = make_runtime(LocalFileSystem(), tmp_path)
    victim = Path(layout.root) / "work" / "locked"
    victim.mkdir()
    victim.chmod(0o000)
    host_folder = tmp_path / "host-folder"
    host_folder.mkdir()
    host_folder.chmod(0o500)
    fs = SwappingFileSystem(victim, host_folder)
    real_open = os.open

    def opening(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if path == "locked" and kwargs.get("dir_fd") is not None:
            fs.swap()  # the same move, at the moment the new code opens the directory
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", opening)
    result = cleanup_runtime_directory(fs, layout, [], None, None)
    monkeypatch.setattr(os, "open", real_open)
    assert fs.swapped, "the swap never happened"
    assert stat.S_IMODE(os.lstat(host_folder).st_mode) == 0o500  # never changed through it
    assert result.ok, result
    assert not os.path.lexists(layout.root)
    host_folder.chmod(0o700)


@pytest.mark.req("A cleanup that failed fails the run")
def test_a_transcript_the_run_directory_refuses_is_reported_and_the_directory_still_goes(
    tmp_path: Path,
) -> None:
    fs = LocalFileSystem()
    layout = make_runtime(fs, tmp_path)
    transcript = Path(layout.config) / "s.jsonl"
    transcript.write_text("{}\n")
    not_a_folder = tmp_path / "run-is-a-file"
    not_a_folder.write_text("x")
    result = cleanup_runtime_directory(
        fs, layout, [], str(transcript), str(not_a_folder / "transcript.jsonl")
    )
    assert not result.ok and not result.transcript_kept
    assert "Not a directory" in (result.transcript_error or "")
    assert not os.path.lexists(layout.root)


# --- a real refused trace write ---------------------------------------------------------------


def run_node() -> TraceNode:
    data = copy.deepcopy(load("contract.tracing.node").example)
    data["id"] = RUN_ID
    data["content"]["rounds"] = 0
    return TraceNode.model_validate(data)


@pytest.mark.req("A failed trace write is reported, never silent")
def test_a_real_refused_trace_write_is_recorded_not_raised(tmp_path: Path) -> None:
    fs = LocalFileSystem()
    parent = tmp_path / "node"
    parent.mkdir()
    tracer = TraceWriter(fs, FakeClock())
    layout = tracer.create_run(str(parent), RUN_ID)
    assert isinstance(layout, RunLayout)
    assert tracer.write_run_node(layout, run_node(), "start") is None
    run_dir = Path(layout.run_dir)
    if not AS_ROOT:
        run_dir.chmod(0o500)  # a read-only run directory
        try:
            failure = tracer.write_run_node(layout, run_node(), "end")
        finally:
            run_dir.chmod(0o755)
        assert failure == f"{layout.trace} (end): Permission denied"
    else:
        # root writes into a 0500 folder: refuse for real with a parent that is a file
        moved = run_dir.with_name("moved")
        run_dir.rename(moved)
        run_dir.write_text("a file where the run directory was")
        failure = tracer.write_run_node(layout, run_node(), "end")
        assert failure == f"{layout.trace} (end): Not a directory"
    assert tracer.failures == [failure]
    assert tracer.final_failures == [failure]


@pytest.mark.req("A failed trace write is reported, never silent")
def test_a_round_folder_that_is_a_file_and_an_overlong_name_are_recorded_failures(
    tmp_path: Path,
) -> None:
    fs = LocalFileSystem()
    parent = tmp_path / ("p" * 200)
    parent.mkdir()
    tracer = TraceWriter(fs, FakeClock())
    layout = tracer.create_run(str(parent), RUN_ID)
    assert isinstance(layout, RunLayout)
    # a round folder that exists as a file: the operating system refuses the round's node
    Path(layout.round_dir(1)).write_text("not a folder")
    data = copy.deepcopy(load("contract.workers.worker-round-trace").example)
    node = TraceNode.model_validate(
        {
            "kind": "worker-round",
            "id": f"{RUN_ID}/1",
            "parent": RUN_ID,
            "started_at": "2026-10-02T10:15:01Z",
            "ended_at": None,
            "status": "running",
            "outcome": None,
            "error": None,
            "files": [],
            "metadata": {},
            "usage": {
                "tokens_in": None,
                "tokens_out": None,
                "tokens_cache_read": None,
                "tokens_cache_write": None,
                "cost_usd": None,
                "turns": None,
                "duration_seconds": None,
            },
            "content": data,
        }
    )
    failure = tracer.write_round_node(layout, 1, node, "start")
    assert failure is not None and failure.startswith(f"{layout.round_trace(1)} (start): ")
    assert "File exists" in failure or "Not a directory" in failure
    # an over-long file name: ENAMETOOLONG from the real system
    long_layout = RunLayout(run_dir=os.path.join(layout.run_dir, "x" * 300))
    too_long = tracer.write_run_node(long_layout, run_node(), "update")
    assert too_long is not None and os.strerror(errno.ENAMETOOLONG) in too_long
    assert tracer.failures == [failure, too_long]


def test_a_refused_progress_write_is_recorded_and_the_trace_reads_back(tmp_path: Path) -> None:
    fs = LocalFileSystem()
    parent = tmp_path / "node"
    parent.mkdir()
    clock = FakeClock()
    tracer = TraceWriter(fs, clock)
    layout = tracer.create_run(str(parent), RUN_ID)
    assert isinstance(layout, RunLayout)
    progress = ProgressWriter(
        fs,
        clock,
        os.path.join(layout.run_dir, "missing", "status.json"),
        run_id=RUN_ID,
        task_type="implement",
        backend="pi",
        worktree="/repo/.claude/worktrees/t",
        operation_run_id=None,
        host_pid=os.getpid(),
    )
    assert progress.phase("worker", 1) is False
    assert progress.failures and "No such file or directory" in progress.failures[0]
    assert tracer.failures == []
    tracer.write_run_node(layout, run_node(), "end")
    tracer.write_text(layout.grant, json.dumps({"entries": []}))
    record = read_record(fs, layout.run_dir, worktree="/repo/.claude/worktrees/t")
    assert isinstance(record, RunRecord), record
    files = tracer.run_files(layout)
    assert [f.path for f in files] == ["grant.json"]
    assert (
        files[0].digest
        == "sha256:" + hashlib.sha256(json.dumps({"entries": []}).encode()).hexdigest()
    )
