"""The placement walk on the local disk skips listing the directories that hold no subdirectory
(their link count of 2, on a file system that keeps it: domain.ground.paths.LINK_COUNTED) and
finds exactly what the full listing finds (issue 32 §2; see
docs/decisions.md "The walk lists no leaf where the disk keeps link counts"): every `.git` of
every kind at any depth, none inside a `.git`, a link or a runtime path. The trees are real,
made below the test's temporary directory; the reference is the general walk over `listdir`,
which lists every directory."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from concorde_workers.adapters.machine.filesystem import LocalFileSystem
from concorde_workers.domain.gitview.placement import find_git_entries, walk_tree
from concorde_workers.domain.ground.paths import leaf_devices

pytestmark = pytest.mark.integration

NAMES = [".git", "a", "b", "objects", "x.py", "HEAD"]


def _make(root: Path, rng: random.Random, depth: int = 0) -> None:
    """A random directory: files, directories (some without any subdirectory, some empty),
    links, FIFOs, and `.git` as each of them."""
    for name in rng.sample(NAMES, rng.randint(0, 4 if depth < 4 else 0)):
        path = root / name
        kind = rng.choice(["file", "dir", "dir", "link", "fifo"])
        if kind == "file":
            path.write_text("gitdir: /nowhere\n" if name == ".git" else "x")
        elif kind == "dir":
            path.mkdir()
            _make(path, rng, depth + 1)
        elif kind == "link":
            path.symlink_to(rng.choice(["/", "a", "/nowhere"]))
        else:
            os.mkfifo(path)


def _runtime_paths(root: Path, rng: random.Random) -> list[str]:
    directories = sorted(str(p) for p in root.rglob("*") if p.is_dir() and not p.is_symlink())
    return rng.sample(directories, min(len(directories), rng.randint(0, 2)))


@pytest.mark.req("Every Git administrative path is hidden")
@pytest.mark.parametrize("seed", range(40))
def test_the_walk_that_skips_leaves_finds_what_listing_every_directory_finds(
    tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    root = tmp_path / "wt"
    root.mkdir()
    _make(root, rng)
    (root / "deep" / "er" / "est").mkdir(parents=True)
    (root / "deep" / "er" / "est" / ".git").write_text("gitdir: /nowhere\n")
    (root / "deep" / "leaf").mkdir()
    (root / "deep" / "leaf" / ".git").symlink_to("/nowhere")
    runtime = _runtime_paths(root, rng)
    fs = LocalFileSystem()
    found = find_git_entries(str(root), fs.subdirectories, runtime)
    assert found == walk_tree(str(root), fs.listdir, runtime, files=False).git_entries
    deepest = str(root / "deep" / "er" / "est" / ".git")
    hidden = any(deepest == r or deepest.startswith(r + "/") for r in runtime)
    assert (deepest in [e.path for e in found]) is not hidden


def test_a_directory_without_subdirectories_is_not_listed_where_the_disk_keeps_link_counts(
    tmp_path: Path,
) -> None:
    """The leaves are known on a disk whose file system keeps directory link counts (the
    benchmark's 48 -> 5 ms); elsewhere (tmpfs, overlay, FUSE, NFS) every directory is listed,
    as before."""
    (tmp_path / "leaf").mkdir()
    (tmp_path / "leaf" / ".git").write_text("gitdir: /nowhere\n")
    (tmp_path / "parent" / "child").mkdir(parents=True)
    names, _kinds, leaves = LocalFileSystem().subdirectories(str(tmp_path), frozenset({".git"}))
    with open("/proc/self/mountinfo", encoding="utf-8") as table:
        devices = leaf_devices(table.read())
    st = os.stat(tmp_path)
    if (os.major(st.st_dev), os.minor(st.st_dev)) in devices:
        assert (sorted(names), {k: dict(v) for k, v in leaves.items()}) == (
            ["parent"],
            {"leaf": {".git": "file"}},
        )
    else:
        assert (sorted(names), leaves) == (["leaf", "parent"], {})


def test_only_link_counted_file_systems_on_real_devices_are_trusted() -> None:
    table = "\n".join(
        [
            "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw",
            "28 27 8:17 / /data rw shared:5 - xfs /dev/sdb1 rw",
            "29 27 0:25 / /tmp rw - tmpfs tmpfs rw",
            "30 27 0:40 / /mnt/f rw - fuse.sshfs host:/ rw",
            "31 27 0:41 / /mnt/c rw - cifs //host/share rw",
            "32 27 0:42 / /mnt/n rw - nfs4 host:/ rw",
            "33 27 0:43 / /var/lib/x rw - overlay overlay rw",
            "34 27 0:44 / /b rw - btrfs /dev/sdc rw",
            "35 27 8:33 / /old rw master:1 - ext2 /dev/sdc1 rw",
            "not a mount line",
            "36 27 9:1 / /odd rw",
        ]
    )
    assert leaf_devices(table) == {(254, 0), (8, 17), (8, 33)}
