"""FileSystem contract: LocalFileSystem in a temporary directory and FakeFileSystem alike."""

from __future__ import annotations

import errno
import hashlib
import os
from pathlib import Path
from typing import Any

import pytest

from concorde_workers.adapters.machine.filesystem import LocalFileSystem
from concorde_workers.domain.ground.paths import DirEntry, EntryKind
from concorde_workers.ports.machine.filesystem import (
    NUL_IN_PATH,
    SHARED_HOLDERS,
    DirectoryListing,
    FileReading,
    FileSystem,
    FileSystemError,
    FileWriting,
    Locking,
    PathFacts,
    Removing,
)

CAPABILITIES = (FileReading, PathFacts, DirectoryListing, FileWriting, Removing, Locking)


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def test_implements_the_port(fs_world: Any) -> None:
    assert isinstance(fs_world.fs, FileSystem)


@pytest.mark.parametrize("capability", CAPABILITIES, ids=lambda c: c.__name__)
def test_holds_each_capability(fs_world: Any, capability: type) -> None:
    """Issue 34 §6: consumers take a capability; the fake and the real adapter hold each."""
    assert isinstance(fs_world.fs, capability)


@pytest.mark.parametrize("capability", CAPABILITIES, ids=lambda c: c.__name__)
def test_every_method_of_each_capability_is_held_to_the_contract(capability: type) -> None:
    """Each capability's every method is called by a test here, so the fake is held to the
    real adapter for every capability (issue 34 §6)."""
    source = Path(__file__).read_text(encoding="utf-8")
    methods = {n for n, v in vars(capability).items() if callable(v) and not n.startswith("_")}
    assert methods
    assert {m for m in methods if f".{m}(" not in source} == set()


class TestReadWrite:
    def test_write_atomic_then_read(self, fs_world: Any) -> None:
        fs, path = fs_world.fs, fs_world.root + "/f.json"
        fs.write_atomic(path, '{"k": "é"}\n')
        assert fs.read_text(path) == '{"k": "é"}\n'
        assert fs.read_bytes(path) == '{"k": "é"}\n'.encode()
        fs.write_atomic(path, b"second", mode=0o600)
        assert fs.read_bytes(path) == b"second"
        assert fs.stat(path).mode == 0o600

    def test_read_regular_reads_a_file_up_to_its_bound(self, fs_world: Any) -> None:
        fs, path = fs_world.fs, fs_world.root + "/transcript.jsonl"
        fs.write_atomic(path, b"0123456789")
        assert fs.read_regular(path, 10) == b"0123456789"
        with pytest.raises(FileSystemError) as info:
            fs.read_regular(path, 9)
        assert info.value.op == "read_regular"

    def test_read_regular_never_follows_a_link(self, fs_world: Any) -> None:
        fs, root = fs_world.fs, fs_world.root
        fs.write_atomic(root + "/secret", b"the host's own")
        fs_world.symlink(root + "/secret", root + "/transcript.jsonl")
        with pytest.raises(FileSystemError) as info:
            fs.read_regular(root + "/transcript.jsonl", 1 << 20)
        assert info.value.op == "read_regular"

    def test_a_durable_write_is_the_same_write(self, fs_world: Any) -> None:
        fs, path = fs_world.fs, fs_world.root + "/record.json"
        fs.write_atomic(path, "old")
        fs.write_atomic(path, '{"end": true}\n', 0o600, durable=True)
        assert fs.read_text(path) == '{"end": true}\n'
        assert fs.stat(path).mode == 0o600
        assert [e.name for e in fs.listdir(fs_world.root)] == ["record.json"]

    def test_sync_directory_syncs_a_directory_and_refuses_a_missing_one(
        self, fs_world: Any
    ) -> None:
        fs, root = fs_world.fs, fs_world.root
        fs.sync_directory(root)
        with pytest.raises(FileSystemError) as info:
            fs.sync_directory(root + "/missing")
        assert (info.value.op, info.value.not_found) == ("sync_directory", True)

    def test_write_atomic_leaves_no_temporary_file(self, fs_world: Any) -> None:
        fs, root = fs_world.fs, fs_world.root
        fs.write_atomic(root + "/a", b"1")
        fs.write_atomic(root + "/a", b"2")
        assert fs.listdir(root) == [DirEntry(name="a", kind=EntryKind.FILE)]

    def test_write_atomic_replaces_a_link_not_its_target(self, fs_world: Any) -> None:
        fs, root = fs_world.fs, fs_world.root
        fs.write_atomic(root + "/target", b"keep")
        fs_world.symlink(root + "/target", root + "/link")
        fs.write_atomic(root + "/link", b"new")
        assert fs.read_bytes(root + "/target") == b"keep"
        assert not fs.is_symlink(root + "/link")
        assert fs.read_bytes(root + "/link") == b"new"

    def test_append_adds_at_the_end_and_makes_the_file_with_its_mode(self, fs_world: Any) -> None:
        fs, path = fs_world.fs, fs_world.root + "/journal.jsonl"
        fs.append(path, '{"a": 1}\n', 0o600)
        fs.append(path, b'{"b": 2}\n', durable=True)
        fs.append(path, "")
        assert fs.read_text(path) == '{"a": 1}\n{"b": 2}\n'
        assert fs.stat(path).mode == 0o600
        assert [e.name for e in fs.listdir(fs_world.root)] == ["journal.jsonl"]

    def test_append_refuses_a_link_and_leaves_its_target(self, fs_world: Any) -> None:
        fs, root = fs_world.fs, fs_world.root
        fs.write_atomic(root + "/target", b"keep")
        fs_world.symlink(root + "/target", root + "/link")
        with pytest.raises(FileSystemError) as info:
            fs.append(root + "/link", b"more")
        assert (info.value.op, info.value.errno) == ("append", errno.ELOOP)
        assert fs.read_bytes(root + "/target") == b"keep"

    def test_append_into_a_missing_directory_fails(self, fs_world: Any) -> None:
        with pytest.raises(FileSystemError) as info:
            fs_world.fs.append(fs_world.root + "/missing/f", b"x")
        assert (info.value.op, info.value.not_found) == ("append", True)

    def test_write_atomic_into_a_missing_directory_fails(self, fs_world: Any) -> None:
        with pytest.raises(FileSystemError) as info:
            fs_world.fs.write_atomic(fs_world.root + "/missing/f", b"x")
        assert info.value.op == "write_atomic"
        assert info.value.not_found

    def test_reading_a_missing_file_fails(self, fs_world: Any) -> None:
        with pytest.raises(FileSystemError) as info:
            fs_world.fs.read_bytes(fs_world.root + "/nothing")
        assert (info.value.op, info.value.not_found) == ("read_bytes", True)
        assert info.value.path == fs_world.root + "/nothing"

    def test_read_text_refuses_invalid_utf8(self, fs_world: Any) -> None:
        fs_world.fs.write_atomic(fs_world.root + "/bin", b"\xff\xfe")
        with pytest.raises(FileSystemError):
            fs_world.fs.read_text(fs_world.root + "/bin")

    def test_a_non_utf8_name_round_trips(self, fs_world: Any) -> None:
        name = b"caf\xe9 \nx".decode("utf-8", "surrogateescape")
        fs_world.fs.write_atomic(fs_world.root + "/" + name, b"x")
        assert [e.name for e in fs_world.fs.listdir(fs_world.root)] == [name]
        assert fs_world.fs.read_bytes(fs_world.root + "/" + name) == b"x"


class TestLinksAndKinds:
    @pytest.fixture
    def tree(self, fs_world: Any) -> Any:
        """root/{d/, d/f, f, link-f -> f, link-d -> d (absolute), dangling -> nowhere,
        rel -> d/f (relative), chain -> link-d}"""
        fs, root = fs_world.fs, fs_world.root
        fs.makedirs(root + "/d")
        fs.write_atomic(root + "/d/f", b"in d")
        fs.write_atomic(root + "/f", b"top")
        fs_world.symlink("f", root + "/link-f")
        fs_world.symlink(root + "/d", root + "/link-d")
        fs_world.symlink(root + "/nowhere", root + "/dangling")
        fs_world.symlink("d/f", root + "/rel")
        fs_world.symlink("link-d", root + "/chain")
        return fs_world

    def test_listdir_reports_links_as_links_sorted(self, tree: Any) -> None:
        assert tree.fs.listdir(tree.root) == [
            DirEntry(name="chain", kind=EntryKind.SYMLINK),
            DirEntry(name="d", kind=EntryKind.DIRECTORY),
            DirEntry(name="dangling", kind=EntryKind.SYMLINK),
            DirEntry(name="f", kind=EntryKind.FILE),
            DirEntry(name="link-d", kind=EntryKind.SYMLINK),
            DirEntry(name="link-f", kind=EntryKind.SYMLINK),
            DirEntry(name="rel", kind=EntryKind.SYMLINK),
        ]

    def test_listdir_of_a_missing_directory_fails(self, tree: Any) -> None:
        with pytest.raises(FileSystemError):
            tree.fs.listdir(tree.root + "/missing")

    def test_subdirectories_are_the_real_directories_and_the_wanted_kinds(self, tree: Any) -> None:
        names, kinds, leaves = tree.fs.subdirectories(
            tree.root, frozenset({"f", "link-d", "d", "dangling", "absent"})
        )
        # a link to a directory is no subdirectory; `d` may be known as a leaf (it holds none)
        assert sorted([*names, *leaves]) == ["d"]
        assert all(dict(inside) == {"f": EntryKind.FILE} for inside in leaves.values())
        assert dict(kinds) == {
            "f": EntryKind.FILE,
            "link-d": EntryKind.SYMLINK,
            "d": EntryKind.DIRECTORY,
            "dangling": EntryKind.SYMLINK,
        }
        listed = tree.fs.listdir(tree.root)
        assert sorted([*names, *leaves]) == [
            e.name for e in listed if e.kind is EntryKind.DIRECTORY
        ]

    def test_subdirectories_of_a_missing_directory_fail(self, tree: Any) -> None:
        with pytest.raises(FileSystemError):
            tree.fs.subdirectories(tree.root + "/missing", frozenset())

    def test_realpath_resolves_every_link(self, tree: Any) -> None:
        fs, root = tree.fs, tree.root
        assert fs.realpath(root + "/link-f") == root + "/f"
        assert fs.realpath(root + "/link-d/f") == root + "/d/f"
        assert fs.realpath(root + "/chain/f") == root + "/d/f"
        assert fs.realpath(root + "/rel") == root + "/d/f"
        assert fs.realpath(root + "/dangling") == root + "/nowhere"
        assert fs.realpath(root + "/d/../link-d/./x/y") == root + "/d/x/y"

    def test_predicates(self, tree: Any) -> None:
        fs, root = tree.fs, tree.root
        assert (fs.exists(root + "/dangling"), fs.lexists(root + "/dangling")) == (False, True)
        assert fs.is_symlink(root + "/dangling")
        assert fs.is_dir(root + "/link-d") and fs.is_symlink(root + "/link-d")
        assert fs.is_file(root + "/link-f")
        assert not fs.is_file(root + "/d")
        assert not fs.exists(root + "/missing")

    def test_remove_a_link_leaves_its_target(self, tree: Any) -> None:
        fs, root = tree.fs, tree.root
        fs.remove(root + "/link-f")
        fs.remove(root + "/link-d")
        fs.remove(root + "/dangling")
        assert fs.read_bytes(root + "/f") == b"top"
        assert fs.read_bytes(root + "/d/f") == b"in d"
        assert not fs.lexists(root + "/link-f")

    def test_remove_refuses_a_directory_and_a_missing_path(self, tree: Any) -> None:
        with pytest.raises(FileSystemError):
            tree.fs.remove(tree.root + "/d")
        with pytest.raises(FileSystemError) as info:
            tree.fs.remove(tree.root + "/missing")
        assert info.value.not_found

    def test_rmtree_does_not_follow_links(self, tree: Any) -> None:
        fs, root = tree.fs, tree.root
        fs.makedirs(root + "/t/sub")
        fs.write_atomic(root + "/t/sub/x", b"x")
        tree.symlink(root + "/d", root + "/t/to-d")
        fs.rmtree(root + "/t")
        assert not fs.lexists(root + "/t")
        assert fs.read_bytes(root + "/d/f") == b"in d"
        fs.rmtree(root + "/link-d")  # a link at the top is removed as a link
        assert fs.is_dir(root + "/d")

    def test_stat_does_not_follow_the_final_link(self, tree: Any) -> None:
        fs, root = tree.fs, tree.root
        assert fs.stat(root + "/link-f").kind is EntryKind.SYMLINK
        st = fs.stat(root + "/f")
        assert (st.kind, st.size, st.executable) == (EntryKind.FILE, 3, False)
        fs.chmod(root + "/f", 0o755)
        assert fs.stat(root + "/f").executable
        assert fs.stat(root + "/f").mode == 0o755
        assert fs.stat(root + "/d").kind is EntryKind.DIRECTORY

    def test_stat_names_the_owner_and_the_modification_time(self, fs_world: Any) -> None:
        fs, root = fs_world.fs, fs_world.root
        fs.write_atomic(root + "/f", b"x")
        fs.makedirs(root + "/d")
        fs_world.symlink(root + "/f", root + "/link")
        for name in ("f", "d", "link"):
            st = fs.stat(f"{root}/{name}")
            assert st.uid == fs_world.uid
            # the kernel stamps with a coarse clock: a little before time.time() is possible
            assert abs(st.mtime - fs_world.now()) < 5

    def test_file_digest_of_files_and_links(self, tree: Any) -> None:
        fs, root = tree.fs, tree.root
        assert fs.file_digest(root + "/f") == sha(b"top")
        # A link is digested as its target text, as Git stores it; never followed.
        assert fs.file_digest(root + "/link-f") == sha(b"f")
        assert fs.file_digest(root + "/dangling") == sha((root + "/nowhere").encode())
        with pytest.raises(FileSystemError):
            fs.file_digest(root + "/d")
        with pytest.raises(FileSystemError):
            fs.file_digest(root + "/missing")


class TestDirectoriesAndPrograms:
    def test_makedirs_nested_and_idempotent(self, fs_world: Any) -> None:
        fs, root = fs_world.fs, fs_world.root
        fs.makedirs(root + "/a/b/c")
        fs.makedirs(root + "/a/b/c")
        assert fs.is_dir(root + "/a/b/c")

    def test_makedirs_over_a_file_fails(self, fs_world: Any) -> None:
        fs, root = fs_world.fs, fs_world.root
        fs.write_atomic(root + "/file", b"")
        with pytest.raises(FileSystemError):
            fs.makedirs(root + "/file/sub")

    def test_which_searches_the_given_path(self, fs_world: Any) -> None:
        fs, root = fs_world.fs, fs_world.root
        fs.makedirs(root + "/bin1")
        fs.makedirs(root + "/bin2")
        fs.write_atomic(root + "/bin1/tool", b"not executable", mode=0o644)
        fs.write_atomic(root + "/bin2/tool", b"#!/bin/sh\n", mode=0o755)
        search = f"{root}/bin1:{root}/bin2"
        assert fs.which("tool", search) == root + "/bin2/tool"
        assert fs.which("absent", search) is None
        assert fs.which(root + "/bin2/tool", "") == root + "/bin2/tool"
        assert fs.which(root + "/bin1/tool", "") is None
        assert fs.which("tool", f"{root}/bin1") is None


NUL_CALLS: list[tuple[str, tuple[Any, ...]]] = [
    ("read_bytes", ()),
    ("read_text", ()),
    ("write_atomic", (b"x",)),
    ("realpath", ()),
    ("listdir", ()),
    ("makedirs", ()),
    ("remove", ()),
    ("rmtree", ()),
    ("chmod", (0o600,)),
    ("stat", ()),
    ("file_digest", ()),
]


@pytest.mark.parametrize(("op", "args"), NUL_CALLS, ids=[op for op, _ in NUL_CALLS])
def test_a_path_with_a_nul_byte_is_a_filesystem_error(
    fs_world: Any, op: str, args: tuple[Any, ...]
) -> None:
    """No file name holds a NUL byte: every operation refuses such a path the port's way (never
    with the ValueError os raises), so a flag or request naming one is a refusal, no defect."""
    path = fs_world.root + "/a\0b"
    with pytest.raises(FileSystemError) as info:
        getattr(fs_world.fs, op)(path, *args)
    reading = "read_bytes" if op == "read_text" else op  # read_text reads through read_bytes
    assert (info.value.op, info.value.errno) == (reading, errno.EINVAL)
    assert info.value.os_error_text == NUL_IN_PATH


def test_a_path_with_a_nul_byte_names_nothing(fs_world: Any) -> None:
    fs, path = fs_world.fs, fs_world.root + "/a\0b"
    assert not any(
        check(path) for check in (fs.exists, fs.lexists, fs.is_dir, fs.is_file, fs.is_symlink)
    )


class TestArchive:
    """`archive`: a tar of an entry and what lies below it, links stored as links, never larger
    than its bound (what does not fit is left out and counted)."""

    @pytest.fixture
    def tree(self, fs_world: Any) -> str:
        """root/g/{HEAD, config, link -> /etc/passwd, objects/{a, b}, zbig (3,000 bytes)}"""
        fs, root = fs_world.fs, fs_world.root
        fs.makedirs(root + "/g/objects")
        fs.write_atomic(root + "/g/HEAD", b"ref: refs/heads/main\n")
        fs.write_atomic(root + "/g/config", b"[core]\n")
        fs.write_atomic(root + "/g/zbig", b"x" * 3000)
        fs.write_atomic(root + "/g/objects/a", b"a")
        fs.write_atomic(root + "/g/objects/b", b"b")
        fs_world.symlink("/etc/passwd", root + "/g/link")
        return str(root)

    @staticmethod
    def members(fs: Any, archive: str) -> dict[str, tuple[str, bytes]]:
        import io
        import tarfile

        found: dict[str, tuple[str, bytes]] = {}
        with tarfile.open(fileobj=io.BytesIO(fs.read_bytes(archive))) as tar:
            for info in tar.getmembers():
                data = tar.extractfile(info).read() if info.isreg() else b""  # type: ignore[union-attr]
                kind = (
                    "link " + info.linkname if info.issym() else ("dir" if info.isdir() else "file")
                )
                found[info.name] = (kind, data)
        return found

    def test_everything_within_a_large_bound(self, fs_world: Any, tree: str) -> None:
        fs = fs_world.fs
        outcome = fs.archive(tree + "/g", tree + "/g.tar", 10**6)
        assert (outcome.entries_left_out, outcome.bytes_left_out) == (0, 0)
        found = self.members(fs, tree + "/g.tar")
        assert found["g/zbig"] == ("file", b"x" * 3000)
        assert found["g/link"] == ("link /etc/passwd", b"")  # stored as a link, never followed
        assert sorted(found) == [
            "g",
            "g/HEAD",
            "g/config",
            "g/link",
            "g/objects",
            "g/objects/a",
            "g/objects/b",
            "g/zbig",
        ]
        assert fs.stat(tree + "/g.tar").mode == 0o600

    def test_what_does_not_fit_is_left_out_and_counted(self, fs_world: Any, tree: str) -> None:
        from concorde_workers.ports.machine.filesystem import ARCHIVE_END_BYTES, tar_member_cost

        fs = fs_world.fs
        # Room for the directory, HEAD, config and the link (the first in name order), not for
        # objects/ (left out as a whole, what is below it uncounted) nor for zbig.
        bound = (
            ARCHIVE_END_BYTES
            + sum(
                tar_member_cost(n, s)
                for n, s in [("g", 0), ("g/HEAD", 21), ("g/config", 7), ("g/link", 0)]
            )
            + 100
        )
        outcome = fs.archive(tree + "/g", tree + "/g.tar", bound)
        found = self.members(fs, tree + "/g.tar")
        assert sorted(found) == ["g", "g/HEAD", "g/config", "g/link"]
        assert (outcome.entries_left_out, outcome.bytes_left_out) == (2, 3000)
        assert fs.stat(tree + "/g.tar").size <= bound

    def test_an_existing_archive_is_refused(self, fs_world: Any, tree: str) -> None:
        fs_world.fs.write_atomic(tree + "/g.tar", b"mine")
        with pytest.raises(FileSystemError):
            fs_world.fs.archive(tree + "/g", tree + "/g.tar", 10**6)
        assert fs_world.fs.read_bytes(tree + "/g.tar") == b"mine"


class TestOpenUp:
    def test_every_directory_below_gets_u_rwx_and_no_link_is_followed(self, fs_world: Any) -> None:
        fs, root = fs_world.fs, fs_world.root
        fs.makedirs(root + "/t/a/deeper")
        fs.makedirs(root + "/outside")
        fs.write_atomic(root + "/t/a/f", b"x", mode=0o400)
        fs_world.symlink(root + "/outside", root + "/t/to-outside")
        fs.chmod(root + "/outside", 0o500)
        fs.chmod(root + "/t/a/deeper", 0o000)
        fs.chmod(root + "/t/a", 0o100)
        assert fs.open_up(root + "/t") == []
        for directory in ("/t", "/t/a", "/t/a/deeper"):
            assert fs.stat(root + directory).mode & 0o700 == 0o700, directory
        assert fs.stat(root + "/outside").mode == 0o500  # through the link: never
        assert fs.stat(root + "/t/a/f").mode == 0o400  # files are left as they are
        fs.chmod(root + "/outside", 0o700)

    def test_a_link_or_a_missing_root_is_reported_not_followed(self, fs_world: Any) -> None:
        fs, root = fs_world.fs, fs_world.root
        fs.makedirs(root + "/outside")
        fs.chmod(root + "/outside", 0o500)
        fs_world.symlink(root + "/outside", root + "/link")
        (failed,) = fs.open_up(root + "/link")
        assert failed.path == root + "/link" and failed.op == "open_up"
        assert fs.stat(root + "/outside").mode == 0o500
        (missing,) = fs.open_up(root + "/nothing")
        assert missing.not_found
        fs.chmod(root + "/outside", 0o700)


class TestHoldLock:
    """One run at a time in a worktree (issue 19 §3): the lock beside its Git files."""

    def test_a_held_lock_says_its_holder_until_it_is_released(self, fs_world: Any) -> None:
        fs, path = fs_world.fs, fs_world.root + "/concorde-workers.lock"
        first = fs.hold_lock(path, '{"run_id": "w-1"}')
        assert not isinstance(first, str)
        assert fs.hold_lock(path, '{"run_id": "w-2"}') == '{"run_id": "w-1"}'
        first.release()
        second = fs.hold_lock(path, '{"run_id": "w-3"}')
        assert not isinstance(second, str)
        assert fs.read_text(path) == '{"run_id": "w-3"}'
        assert fs.stat(path).mode == 0o600
        second.release()
        second.release()  # released twice: nothing more happens
        assert not fs.lexists(path), "a released lock leaves nothing behind"

    def test_shared_holders_keep_out_only_an_exclusive_taker(self, fs_world: Any) -> None:
        """Runs that only read a worktree share its lock (issue 31 §4): each other's company
        is fine; one that writes waits until they are gone, and a reader waits for a writer."""
        fs, path = fs_world.fs, fs_world.root + "/concorde-workers.lock"
        first = fs.hold_lock(path, "reader 1", shared=True)
        second = fs.hold_lock(path, "reader 2", shared=True)
        assert not isinstance(first, str) and not isinstance(second, str)
        assert fs.read_text(path) == ""  # readers write nothing
        assert fs.hold_lock(path, '{"run_id": "w-1"}') == SHARED_HOLDERS
        first.release()
        assert fs.hold_lock(path, '{"run_id": "w-1"}') == SHARED_HOLDERS
        second.release()
        second.release()  # released twice: nothing more happens
        writer = fs.hold_lock(path, '{"run_id": "w-1"}')
        assert not isinstance(writer, str)
        assert fs.hold_lock(path, "reader 3", shared=True) == '{"run_id": "w-1"}'
        writer.release()
        assert not fs.lexists(path)

    def test_a_link_at_the_lock_s_place_is_never_followed(self, fs_world: Any) -> None:
        fs, root = fs_world.fs, fs_world.root
        fs.write_atomic(root + "/elsewhere", b"keep\n")
        fs_world.symlink(root + "/elsewhere", root + "/concorde-workers.lock")
        with pytest.raises(FileSystemError):
            fs.hold_lock(root + "/concorde-workers.lock", "x")
        assert fs.read_bytes(root + "/elsewhere") == b"keep\n"


def test_read_regular_never_waits_on_a_fifo(tmp_path: Path) -> None:
    """The real filesystem: a FIFO in a transcript's place is refused at once, never read."""
    fifo = tmp_path / "transcript.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(FileSystemError) as info:
        LocalFileSystem().read_regular(str(fifo), 1 << 20)
    assert info.value.op == "read_regular"
