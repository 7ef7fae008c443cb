"""The command line lists what the project interpreter needs (application/preparation/requests.py,
issue 19 §1), and never takes it from the worktree: a pyvenv.cfg there is the worker's to have
written (the next run's configuration out of the worker's reach, issue 18 §4's class)."""

from __future__ import annotations

from fakes.filesystem import FakeFileSystem

from concorde_workers.application.preparation.requests import RequestBuilder, RequestFlags
from concorde_workers.domain.configuration.request import RunRequest

WORKTREE = "/srv/p/.claude/worktrees/t"
BASE = "/home/ana/.pyenv/versions/3.12.1"


def build(fs: FakeFileSystem, interpreter: str) -> RunRequest:
    request = RequestBuilder(fs, "/srv/p").build(
        RequestFlags(
            worktree=WORKTREE,
            task_type="implement",
            instructions="x",
            backend="pi",
            interpreter=interpreter,
        )
    )
    assert isinstance(request, RunRequest), request
    return request


def test_a_venv_outside_the_worktree_lists_its_base() -> None:
    fs = FakeFileSystem()
    fs.mkdir(WORKTREE)
    fs.write(f"{BASE}/bin/python3.12", "ELF", 0o755)
    fs.write("/srv/venvs/p/pyvenv.cfg", f"home = {BASE}/bin\n")
    fs.symlink(f"{BASE}/bin/python3.12", "/srv/venvs/p/bin/python")
    assert build(fs, "/srv/venvs/p/bin/python").runtime_paths == ("/srv/venvs/p", BASE)


def test_a_pyvenv_cfg_in_the_worktree_is_never_read() -> None:
    """A worker with rw on the worktree's .venv rewrote its pyvenv.cfg to name ~/.ssh: the next
    run listed that folder, readable to every tool. Now nothing of the worktree is read."""
    fs = FakeFileSystem()
    fs.write("/home/ana/.ssh/id_rsa", "KEY")
    fs.write(f"{WORKTREE}/.venv/pyvenv.cfg", "home = /home/ana/.ssh/bin\n")
    fs.write(f"{WORKTREE}/.venv/bin/python", "ELF", 0o755)
    assert build(fs, f"{WORKTREE}/.venv/bin/python").runtime_paths == ()
    assert not any(op == ("read_text", f"{WORKTREE}/.venv/pyvenv.cfg") for op in fs.ops)
