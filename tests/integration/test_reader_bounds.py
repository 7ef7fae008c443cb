"""Issue 19 §4 "each reader's limits in one table, with a test per row": the bounds of the
readers that had one in code and no test of the bound itself (docs/decisions.md "Every reader
bounded"). Real files in a temporary directory, the real adapters."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from concorde_workers.adapters.repository.git_runner import (
    MAX_CONFIG_BYTES,
    MAX_INCLUDE_DEPTH,
    read_regular,
    repository_filter_names,
)
from concorde_workers.domain.gitview.git_status import GitRepository

pytestmark = pytest.mark.integration


def test_a_git_configuration_is_read_up_to_its_bound_and_never_from_a_fifo(tmp_path: Path) -> None:
    big = tmp_path / "config"
    big.write_bytes(b"#" * (MAX_CONFIG_BYTES + 100))
    assert read_regular(str(big)) == b"#" * MAX_CONFIG_BYTES
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert read_regular(str(fifo)) is None  # not opened in a way that blocks, not read
    (tmp_path / "dir").mkdir()
    assert read_regular(str(tmp_path / "dir")) is None


def test_includes_are_followed_to_the_bound_depth_and_no_deeper(tmp_path: Path) -> None:
    """A chain of includes, each file defining the filter `f<depth>`: names up to the bound are
    switched off, and a chain past it (or a cycle) ends."""
    common = tmp_path / "common"
    common.mkdir()
    chain = [common / "config", *(tmp_path / f"inc{i}" for i in range(1, MAX_INCLUDE_DEPTH + 4))]
    for depth, path in enumerate(chain):
        following = chain[depth + 1] if depth + 1 < len(chain) else chain[0]  # ends in a cycle
        path.write_text(f'[filter "f{depth}"]\n\tclean = x\n[include]\n\tpath = {following}\n')
    names = repository_filter_names(
        GitRepository(
            worktree=str(tmp_path), git_dir=str(tmp_path / "gitdir"), common_dir=str(common)
        )
    )
    assert {f"f{d}" for d in range(MAX_INCLUDE_DEPTH + 1)} <= names
    assert f"f{MAX_INCLUDE_DEPTH + 1}" not in names


@pytest.mark.parametrize(("padding", "listed"), [(0, True), (1, False)])
def test_a_pyvenv_cfg_is_read_only_within_its_bound(
    tmp_path: Path, padding: int, listed: bool
) -> None:
    """The command line lists a venv's base installation from its pyvenv.cfg `home` only when
    the file is a regular file of at most MAX_PYVENV_CFG_BYTES (domain/boundary/beside.py)."""
    import json

    from concorde_workers.adapters.machine.filesystem import LocalFileSystem
    from concorde_workers.application.preparation.requests import RequestBuilder, RequestFlags
    from concorde_workers.domain.boundary.beside import MAX_PYVENV_CFG_BYTES

    base = tmp_path / "home" / "u" / ".pyenv" / "versions" / "3.12.1"
    (base / "bin").mkdir(parents=True)
    (base / "bin" / "python3.12").write_text("")
    venv = tmp_path / "proj-venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text("")
    head = f"home = {base}/bin\nversion = 3.12.1\n"
    fill = MAX_PYVENV_CFG_BYTES - len(head.encode()) + padding
    (venv / "pyvenv.cfg").write_text(head + "#" * (fill - 1) + "\n")
    assert (venv / "pyvenv.cfg").stat().st_size == MAX_PYVENV_CFG_BYTES + padding
    grant = tmp_path / "grant.json"
    grant.write_text(
        json.dumps(
            {"task_type": "implement", "entries": [], "context_identity": "sha256:" + "1" * 64}
        )
    )
    built = RequestBuilder(LocalFileSystem(), str(tmp_path)).build(
        RequestFlags(
            worktree=str(tmp_path / "wt"),
            grant_file=str(grant),
            instructions="x",
            interpreter=str(venv / "bin" / "python"),
        )
    )
    assert not hasattr(built, "code"), built
    assert (str(base) in built.runtime_paths) is listed, built.runtime_paths  # type: ignore[union-attr]
