"""The checks' copy reads only the file it judged (adapters/sandboxes/check_copy.py): each file
is opened without following a link or waiting and judged by its opened descriptor, so a FIFO or
another file put in a regular file's place is refused, never waited on or read."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from concorde_workers.adapters.sandboxes.check_copy import Later, TreeCopier, _identity
from concorde_workers.ports.sandboxes.checks import CheckCopyFailed


def _refused_without_waiting(copy: object, fifo: Path) -> BaseException | None:
    """Run `copy` in a thread; if it blocks on the FIFO, open the FIFO's other end so the thread
    ends, and say it blocked."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            copy()  # type: ignore[operator]
        except BaseException as error:
            raised.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(10)
    if thread.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # let the blocked open end
        thread.join(10)
        pytest.fail("the copy waited on a FIFO in a regular file's place")
    return raised[0] if raised else None


def test_a_fifo_in_a_walked_file_s_place_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "main.py"
    os.mkfifo(fifo)
    raised = _refused_without_waiting(
        lambda: TreeCopier().copy_file(str(fifo), str(tmp_path / "copy.py"), 0o644), fifo
    )
    assert isinstance(raised, CheckCopyFailed)
    assert raised.path == str(fifo)
    assert not (tmp_path / "copy.py").exists()


def test_a_fifo_in_a_waiting_file_s_place_is_refused_without_waiting(tmp_path: Path) -> None:
    src = tmp_path / "data.bin"
    src.write_bytes(b"recorded")
    entry = Later(str(src), str(tmp_path / "copy.bin"), _identity(os.lstat(src)), True)
    src.unlink()
    os.mkfifo(src)
    raised = _refused_without_waiting(lambda: TreeCopier().copy_later(entry), src)
    assert isinstance(raised, CheckCopyFailed)
    assert not (tmp_path / "copy.bin").exists()


def test_a_regular_file_is_copied_with_its_mode(tmp_path: Path) -> None:
    src = tmp_path / "main.py"
    src.write_text("print('ok')\n")
    TreeCopier().copy_file(str(src), str(tmp_path / "copy.py"), 0o640)
    assert (tmp_path / "copy.py").read_text() == "print('ok')\n"
    assert (tmp_path / "copy.py").stat().st_mode & 0o777 == 0o640
