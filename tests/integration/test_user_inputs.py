"""Issue 31 §3, the inputs the user writes, through `concorde-workers plan` and `run` as a user
gives them at a shell (the real filesystem, Git and adapters; the agent programs are the
conftest's stubs, which plan never starts): every file the user names is read bounded and only
when it is a regular file; empty or oversized instructions are refused with the repair."""

from __future__ import annotations

import io
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from concorde_workers.adapters.cli.main import main
from concorde_workers.application.preparation.requests import (
    MAX_GRANT_FILE_BYTES,
    MAX_INSTRUCTIONS_BYTES,
    MAX_REQUEST_FILE_BYTES,
)

pytestmark = pytest.mark.integration


@dataclass
class Said:
    status: int
    out: str
    err: str

    @property
    def both(self) -> str:
        return " ".join((self.out + self.err).split())

    def json(self) -> Any:
        return json.loads(self.out)


def cli(*argv: str) -> Said:
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), out, err)
    said = Said(status, out.getvalue(), err.getvalue())
    assert "Traceback" not in said.out + said.err
    assert "internal error" not in said.err, said.err
    return said


def flags(project: Any, *extra: str) -> list[str]:
    return [
        *("--worktree", str(project.worktree), "--grant", str(project.grant_file)),
        *("--task-type", "implement", "--backend", "claude"),
        *extra,
    ]


class FifoWriter:
    """A FIFO with a writer that gives `text` to whoever opens it for reading and then closes:
    a reader that opens it gets the text and its end (never a hang); one that never opens it
    leaves the writer waiting, which `release` ends by opening it itself."""

    def __init__(self, path: Path, text: bytes) -> None:
        self.path = path
        os.mkfifo(path)
        self._thread = threading.Thread(target=self._write, args=(text,), daemon=True)
        self._thread.start()

    def _write(self, text: bytes) -> None:
        with open(self.path, "wb") as fifo:  # blocks until a reader opens it
            fifo.write(text)

    def release(self) -> None:
        fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            self._thread.join()
        finally:
            os.close(fd)


@pytest.fixture
def fifo(tmp_path: Path) -> Any:
    made: list[FifoWriter] = []

    def make(text: bytes = b"Do the task.") -> Path:
        writer = FifoWriter(tmp_path / f"fifo-{len(made)}", text)
        made.append(writer)
        return writer.path

    yield make
    for writer in made:
        writer.release()


def sparse(path: Path, size: int) -> Path:
    with open(path, "wb") as f:
        f.truncate(size)
    return path


# --- the instructions ------------------------------------------------------------------------------


def test_instructions_from_a_device_are_refused_at_once_naming_the_file(project: Any) -> None:
    """`--instructions @/dev/zero` hung; a device is never opened (here /dev/null, which on a
    reader that opens it ends at once, so the test cannot hang however the program reads)."""
    said = cli("plan", *flags(project, "--instructions", "@/dev/null"))
    assert said.status == 2
    assert "the instructions file /dev/null cannot be read: it is not a regular file" in said.both
    assert "give a regular file of at most 1,048,576 bytes of UTF-8 text" in said.both


def test_instructions_from_a_fifo_are_refused_and_the_fifo_never_opened(
    project: Any, fifo: Any
) -> None:
    path = fifo()
    said = cli("plan", *flags(project, "--instructions", f"@{path}"))
    assert said.status == 2, said.out
    assert f"the instructions file {path} cannot be read: it is not a regular file" in said.both


def test_an_instructions_file_past_its_bound_is_refused_unread(
    project: Any, tmp_path: Path
) -> None:
    """A 27 MB instructions file became the brief."""
    big = sparse(tmp_path / "task.md", MAX_INSTRUCTIONS_BYTES + 1)
    said = cli("plan", *flags(project, "--instructions", f"@{big}"))
    assert said.status == 2
    assert (
        f"the instructions file {big} cannot be read: it is {MAX_INSTRUCTIONS_BYTES + 1} bytes, "
        f"past the limit of {MAX_INSTRUCTIONS_BYTES} bytes this reader reads"
    ) in said.both
    at_bound = tmp_path / "ok.md"
    at_bound.write_text("x" * MAX_INSTRUCTIONS_BYTES)
    assert cli("plan", *flags(project, "--instructions", f"@{at_bound}")).status == 0


def test_instructions_given_inline_past_the_bound_are_refused(project: Any) -> None:
    request = project.request(name="long.json", instructions="x" * (MAX_INSTRUCTIONS_BYTES + 1))
    said = cli("plan", str(request), "--backend", "claude")
    assert said.status == 2
    assert (
        f"the request file {request} gives 1,048,577 bytes of instructions, past the "
        "1,048,576 a brief may hold"
    ) in said.both


@pytest.mark.parametrize("given", [None, "", "  \n\t"])
def test_a_request_without_instructions_is_refused_by_run_and_plan_says_so(
    project: Any, given: str | None
) -> None:
    """A worker sent with nothing to do: `run` refuses it before a run exists; `plan` shows
    the whole plan with the same refusal as its verdict."""
    argv = flags(project) if given is None else flags(project, "--instructions", given)
    shown = cli("plan", *argv)
    assert shown.status == 2
    first = shown.out.splitlines()[0]
    assert first.startswith("concorde-workers plan — a run would be refused: request_invalid: ")
    assert "a worker needs its task; give --instructions TEXT or --instructions @FILE" in first
    assert "\nRound 1 command" in shown.out  # the plan is shown whole
    parent = project.root / "trace"
    parent.mkdir()
    ran = cli("run", *argv, "--parent", str(parent))
    assert ran.status == 2
    assert ran.err.startswith("concorde-workers: refused: request_invalid (input)\n")
    assert "a worker needs its task" in ran.both
    assert list(parent.iterdir()) == []  # no run directory


# --- the request file and the grant file -----------------------------------------------------------


@pytest.mark.parametrize("what", ["request file", "grant file"])
def test_a_request_or_grant_file_that_is_no_regular_file_is_refused_unopened(
    project: Any, fifo: Any, what: str
) -> None:
    path = fifo(json.dumps({"task_type": "implement"}).encode())
    argv = [str(path)] if what == "request file" else flags(project, "--grant", str(path))
    said = cli("plan", *argv, "--instructions", "x")
    assert said.status == 2, said.out
    assert f"the {what} {path} cannot be read: it is not a regular file" in said.both


@pytest.mark.parametrize(
    ("what", "bound"),
    [("request file", MAX_REQUEST_FILE_BYTES), ("grant file", MAX_GRANT_FILE_BYTES)],
)
def test_a_request_or_grant_file_past_its_bound_is_refused_unread(
    project: Any, tmp_path: Path, what: str, bound: int
) -> None:
    path = sparse(tmp_path / "big.json", bound + 1)
    argv = [str(path)] if what == "request file" else flags(project, "--grant", str(path))
    said = cli("plan", *argv, "--instructions", "x")
    assert said.status == 2
    assert f"it is {bound + 1} bytes, past the limit of {bound} bytes" in said.both


def test_a_grant_file_behind_a_link_is_read_as_the_file_it_names(project: Any) -> None:
    """The user's own file: a link to it is followed (its target judged as a regular file)."""
    link = project.root / "grant-link.json"
    link.symlink_to(project.grant_file)
    said = cli("plan", *flags(project, "--grant", str(link), "--instructions", "x"))
    assert said.status == 0, said.out


# --- show --html FILE --------------------------------------------------------------------------------


def _special(kind: str, path: Path) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "link":
        path.symlink_to(path.parent / "elsewhere.html")
    else:
        path.mkdir()


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("fifo", "it is a device, a FIFO or a socket, not a regular file"),
        ("link", "it is a symbolic link, not a regular file"),
        ("directory", "it is a directory, not a regular file"),
    ],
)
def test_show_html_never_renames_over_what_is_no_regular_file(
    tmp_path: Path, kind: str, said: str
) -> None:
    """`show --html FILE` renamed a new file over whatever FILE was: as root it replaced
    /dev/full (a device is EntryKind.OTHER, as a FIFO is)."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    target = tmp_path / "report.html"
    _special(kind, target)
    shown = cli("show", str(run_dir), "--html", str(target))
    assert shown.status == 2, shown.out
    assert f"the report cannot be written to {target}: {said}" in shown.both
    assert "give --html a new file name or a regular file to replace" in shown.both
    still = {"fifo": target.is_fifo(), "link": target.is_symlink(), "directory": target.is_dir()}
    assert still[kind], f"{target} was replaced"
    assert not (tmp_path / "elsewhere.html").exists()


def test_show_html_writes_a_new_name_or_over_a_regular_file_and_dash_is_stdout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    monkeypatch.chdir(tmp_path)
    new = cli("show", str(run_dir), "--html", "new.html")
    assert new.status == 0 and (tmp_path / "new.html").read_text().startswith("<!DOCTYPE html>")
    (tmp_path / "old.html").write_text("old")
    assert cli("show", str(run_dir), "--html", "old.html").status == 0
    assert (tmp_path / "old.html").read_text().startswith("<!DOCTYPE html>")
    dash = cli("show", str(run_dir), "--html", "-")
    assert dash.status == 0 and dash.out.startswith("<!DOCTYPE html>")
    assert not (tmp_path / "-").exists()


# --- the interpreter, the limits, the model id ----------------------------------------------------


def test_an_interpreter_that_is_no_python_is_refused_by_plan_and_run(project: Any) -> None:
    """`--interpreter /bin/true` was taken: its directory first on the worker's PATH and the
    brief telling the worker to run the project's code with it."""
    argv = flags(project, "--instructions", "x", "--interpreter", "/bin/true")
    shown = cli("plan", *argv)
    assert shown.status == 2
    assert shown.out.splitlines()[0].startswith(
        "concorde-workers plan — a run would be refused: request_invalid: the project "
        "interpreter '/bin/true' is named 'true', not like a Python interpreter"
    )
    parent = project.root / "trace"
    parent.mkdir()
    ran = cli("run", *argv, "--parent", str(parent))
    assert ran.status == 2 and "is named 'true', not like a Python interpreter" in ran.both
    assert list(parent.iterdir()) == []


def test_a_round_timeout_no_run_can_honour_is_refused_in_workers_json(project: Any) -> None:
    """`limits.timeout_seconds: 1e9` (31 years) was taken; past 9.2e9 the round's timer failed
    and the round ran with no timeout at all."""
    config = json.loads(project.config_file.read_text())
    config["limits"] = {"timeout_seconds": 1e9}
    project.config_file.write_text(json.dumps(config))
    project.commit_configuration()
    said = cli(
        "plan",
        str(project.request_file),
        *("--operation", "implement", "--worker", "worker", "--declare", "implement:reviewer"),
    )
    assert said.status == 2
    assert said.out.startswith("concorde-workers plan — a run would be refused: config_invalid: ")
    assert (
        "limits.timeout_seconds is 1e+09 (32 years): a round's timeout is at most 86,400 "
        "seconds (a day); give at most 86400"
    ) in said.both


@pytest.mark.parametrize(
    ("limits", "says"),
    [
        ({"timeout_seconds": 1e10}, "limits.timeout_seconds is 1e+10 (317 years)"),
        ({"retries": 40}, "limits.retries 40 with retry_delay_seconds 15 would wait up to"),
        ({"retries": 5000, "retry_delay_seconds": 0}, "limits.retries is 5000"),
    ],
)
def test_limits_no_run_can_honour_are_refused_in_a_request_file(
    project: Any, limits: dict[str, Any], says: str
) -> None:
    request = project.request(name="limits.json", limits=limits)
    said = cli("plan", str(request), "--backend", "claude")
    assert said.status == 2
    assert "refused: request_invalid" in said.err and says in said.both


def test_a_pi_model_id_without_its_provider_is_said_and_the_run_goes_on(project: Any) -> None:
    models = json.loads(project.model_map.read_text())
    models["models"]["m-local"]["pi"] = "m-local"
    project.model_map.write_text(json.dumps(models))
    said = cli(
        "plan",
        str(project.request_file),
        *("--operation", "implement", "--worker", "worker", "--declare", "implement:reviewer"),
        "--json",
    )
    assert said.status == 0, said.out
    assert (
        f"the pi model id 'm-local' (from the model map {project.model_map}) names no provider"
    ) in " ".join(said.json()["notes"])
