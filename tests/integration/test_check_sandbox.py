"""The real check sandbox as an attacker's check meets it (issue 13 §2): no network (not even
loopback), no credential, no home, no other worktree, no run record, no host variable; the
runtime paths readable, nothing of the worktree written."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from concorde_workers.adapters.machine.filesystem import LocalFileSystem
from concorde_workers.adapters.processes.liveness import ProcTable
from concorde_workers.adapters.processes.process import SubprocessRunner
from concorde_workers.adapters.sandboxes.checks import SandboxedCheckRunner
from concorde_workers.application.preparation.requests import RequestBuilder, RequestFlags
from concorde_workers.container import layer_tools
from concorde_workers.domain.configuration.request import RunRequest
from concorde_workers.domain.gitview.git_commands import SANDBOX_ARGS
from concorde_workers.domain.isolation.check_copies import CopyOwner, is_copy_name, parse_copy_owner
from concorde_workers.domain.isolation.check_layer import LayerTools
from concorde_workers.domain.isolation.check_sandbox import CheckPlace
from concorde_workers.domain.run.checks import Check, CheckStatus


@pytest.fixture(params=["layer", "copies"])
def setting(
    request: pytest.FixtureRequest, tmp_path: Path
) -> tuple[SandboxedCheckRunner, CheckPlace, Path]:
    """A run's world and the real runner: over copy-on-write layers (as this machine runs every
    check), and over copies (where no layer can be made)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        pytest.fail("bubblewrap is required by the checks' sandbox: run ./scripts/setup")
    primary = tmp_path / "repo"
    worktree = primary / ".claude" / "worktrees" / "t"
    worktree.mkdir(parents=True)
    (primary / "secret-of-the-primary.txt").write_text("primary\n")
    (primary / ".claude" / "worktrees" / "other").mkdir()
    (primary / ".claude" / "worktrees" / "other" / "theirs.txt").write_text("theirs\n")
    creds = tmp_path / "creds"
    creds.mkdir()
    (creds / "auth.json").write_text('{"token": "sk-secret"}\n')
    lone = tmp_path / "lone-credentials.json"
    lone.write_text("sk-lone\n")
    records = tmp_path / "trace" / "workers"
    records.mkdir(parents=True)
    (records / "record.json").write_text("{}\n")
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    (runtime / "lib.txt").write_text("library\n")
    copies = tmp_path / "copies"
    copies.mkdir()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        "ANTHROPIC_API_KEY": "sk-host",
        "HTTPS_PROXY": "http://127.0.0.1:9",
    }
    tools = layer_tools() if request.param == "layer" else None
    if request.param == "layer" and tools is None:
        pytest.fail("unshare and mount (util-linux) are required: run ./scripts/setup")
    runner = SandboxedCheckRunner(
        SubprocessRunner(),
        LocalFileSystem(),
        bwrap,
        env,
        (str(creds), str(lone)),
        str(copies),
        layer_tools=tools,
    )
    place = CheckPlace(
        worktree=str(worktree),
        hidden=(str(primary), str(records)),
        runtime_paths=(str(runtime), sys.prefix, sys.base_prefix),
        project_interpreter=sys.executable,
    )
    return runner, place, tmp_path


def run(runner: SandboxedCheckRunner, place: CheckPlace, command: str) -> tuple[int | None, str]:
    copy = runner.copy(place.worktree)
    try:
        ran = runner.run(Check(id="x", command=command, timeout_seconds=60), copy, place)
    finally:
        runner.discard(copy)
    assert ran.status in (CheckStatus.PASSED, CheckStatus.FAILED), ran
    return ran.exit_code, ran.log.decode()


def test_a_check_cannot_reach_the_network_even_on_loopback(setting) -> None:  # type: ignore[no-untyped-def]
    runner, place, _ = setting
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    code, log = run(
        runner,
        place,
        f"python -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5)\"",
    )
    # A connection the check made would wait in the backlog now that the check has ended.
    server.setblocking(False)
    with pytest.raises(BlockingIOError):
        server.accept()
    server.close()
    assert code != 0 and "Error" in log


def test_a_check_reads_no_credential_home_record_or_other_worktree(setting) -> None:  # type: ignore[no-untyped-def]
    runner, place, tmp = setting
    targets = [
        tmp / "creds" / "auth.json",
        tmp / "lone-credentials.json",
        tmp / "trace" / "workers" / "record.json",
        tmp / "repo" / "secret-of-the-primary.txt",
        tmp / "repo" / ".claude" / "worktrees" / "other" / "theirs.txt",
        Path(os.path.expanduser("~")) / ".bashrc",
    ]
    command = "; ".join(f"cat {t} 2>/dev/null" for t in targets) + "; true"
    code, log = run(runner, place, command)
    assert code == 0
    for secret in ("sk-secret", "sk-lone", "primary", "theirs", "{}"):
        assert secret not in log


def test_a_check_gets_a_cleared_environment_and_the_runtime_paths(setting) -> None:  # type: ignore[no-untyped-def]
    runner, place, tmp = setting
    code, log = run(
        runner,
        place,
        f"env; cat {tmp / 'runtime' / 'lib.txt'}; "
        "python -c 'import sys; print(sys.prefix)'; "
        "touch made-here; echo $PWD",
    )
    assert code == 0, log
    assert "sk-host" not in log and "PROXY" not in log
    assert "HOME=/tmp/home" in log and "library" in log
    assert sys.prefix in log and place.worktree in log
    assert not (Path(place.worktree) / "made-here").exists()


@pytest.mark.parametrize("bwrap", [None, "/bin/false"])
def test_a_check_never_runs_unsandboxed(tmp_path: Path, bwrap: str | None) -> None:
    """No bubblewrap, or one that cannot build the sandbox (here: a program that exits 1 at
    once, as bwrap does when a mount fails): the check could not start, which the validation
    answers checks_unavailable; it never runs outside the sandbox."""
    (tmp_path / "w").mkdir()
    runner = SandboxedCheckRunner(
        SubprocessRunner(), LocalFileSystem(), bwrap, {"PATH": "/usr/bin:/bin"}, (), str(tmp_path)
    )
    place = CheckPlace(worktree=str(tmp_path / "w"))
    copy = runner.copy(place.worktree)
    ran = runner.run(Check(id="x", command="touch ran-outside"), copy, place)
    runner.discard(copy)
    assert ran.status is CheckStatus.NOT_STARTED
    assert (
        "bubblewrap (bwrap) is not installed" if bwrap is None else "the sandbox could not be built"
    ) in ran.problem
    assert not (tmp_path / "w" / "ran-outside").exists()


@pytest.mark.req("Nothing but the trace outlives a worker")
def test_a_copy_s_folder_names_its_host_before_the_copy_and_goes_with_it(tmp_path: Path) -> None:
    """Issue 9 §1 for the checks' copies: the folder `concorde-check-<hex>` holds this host's
    owner record (what a sweep judges it by once the host is dead) beside the copy `tree/`, the
    only part a check sees; discarding the copy leaves nothing in the runtime parent."""
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "a.txt").write_text("alpha\n")
    copies = tmp_path / "copies"
    copies.mkdir()
    table = ProcTable()
    runner = SandboxedCheckRunner(
        SubprocessRunner(),
        LocalFileSystem(),
        shutil.which("bwrap"),
        {"PATH": "/usr/bin:/bin"},
        (),
        str(copies),
        table,
    )
    copy = Path(runner.copy(str(tmp_path / "w")))
    folder = copy.parent
    assert (copy.name, folder.parent) == ("tree", copies)
    assert is_copy_name(folder.name)
    assert sorted(p.name for p in folder.iterdir()) == ["owner.json", "tree"]
    owner = parse_copy_owner((folder / "owner.json").read_text())
    assert isinstance(owner, CopyOwner) and owner.host == table.own()
    assert (folder / "owner.json").stat().st_mode & 0o777 == 0o600
    assert [p.name for p in copy.iterdir()] == ["a.txt"]
    runner.discard(str(copy))
    assert list(copies.iterdir()) == []


# --- The check as an attacker (issue 18 §1): no capability, no mask taken down ----------------

ATTACK = (
    "grep -E '^(CapEff|CapPrm|NoNewPrivs)' /proc/self/status; id -u; "
    "for step in 'umount -l /tmp' 'umount -l /home' 'umount -l /root' "
    "'mount -o remount,rw,bind /' 'mount -t tmpfs none /mnt' 'unshare -m true' "
    "'unshare -Ur true' 'su -c true root'; do "
    '$step >/dev/null 2>&1 && echo "ALLOWED $step" || echo "refused $step"; done'
)


def test_a_check_holds_no_capability_and_takes_no_mask_down(setting) -> None:  # type: ignore[no-untyped-def]
    """The reproduction of issue 18 §1 on the real runner, as root: every way to take a mask
    down or win a capability back fails, and what the masks hide stays hidden after trying."""
    runner, place, tmp = setting
    escape = Path("/tmp") / f"check-escape-{os.getpid()}-{id(place)}"
    code, log = run(
        runner,
        place,
        f"{ATTACK}; cat {tmp / 'creds' / 'auth.json'}; "
        f"echo x > {escape}; ls /proc/1/root{tmp}/creds; "
        f"cat /proc/{os.getpid()}/environ; true",
    )
    try:
        assert code == 0, log
        assert "CapEff:\t0000000000000000" in log and "CapPrm:\t0000000000000000" in log
        assert "NoNewPrivs:\t1" in log and "65534" in log
        assert "ALLOWED" not in log and log.count("refused ") == 8, log
        assert "sk-secret" not in log and "sk-host" not in log
        assert not escape.exists(), "the check wrote on the host's /tmp"
    finally:
        escape.unlink(missing_ok=True)


@pytest.mark.parametrize("host", ["root", "a user"])
def test_the_host_s_sandbox_gives_no_power_as_root_or_as_a_user(host: str) -> None:
    """Every process the host starts over worker content (each check, each host Git call) runs
    in `SANDBOX_ARGS`: uid 65534, no capability, no_new_privs, no new user namespace, whether
    the host is root or a user (here: uid 65534 on the host, through setpriv)."""
    bwrap = shutil.which("bwrap")
    assert bwrap is not None, "run ./scripts/setup"
    prefix = (
        []
        if host == "root"
        else [
            shutil.which("setpriv") or "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
        ]
    )
    # Below /tmp itself: pytest's own folders are not the user's to enter.
    hidden = Path(tempfile.mkdtemp(prefix="sandbox-hidden-", dir="/tmp"))
    (hidden / "secret.txt").write_text("sk-behind-the-mask\n")
    hidden.chmod(0o755)
    try:
        log = attack_in_sandbox(bwrap, prefix, hidden)
    finally:
        shutil.rmtree(hidden)
    assert "CapEff:\t0000000000000000" in log and "NoNewPrivs:\t1" in log
    assert "ALLOWED" not in log and log.count("refused ") == 8, log
    assert "sk-behind-the-mask" not in log
    # Outside the copy nothing is writable: the root is read-only (a user host may be told
    # "Permission denied" first, the kernel checks the owner before the mount).
    assert "touch: cannot touch '/usr/escape'" in log, log


def attack_in_sandbox(bwrap: str, prefix: list[str], hidden: Path) -> str:
    script = f"{ATTACK}; cat {hidden}/secret.txt 2>&1; touch /usr/escape 2>&1; true"
    done = subprocess.run(
        [*prefix, bwrap, *SANDBOX_ARGS, "--tmpfs", str(hidden), "--", "/bin/sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


def test_a_venv_whose_base_python_lies_in_a_hidden_home_starts_in_a_check(setting) -> None:  # type: ignore[no-untyped-def]
    """Issue 19 §1, the user's report: a virtual environment made from a pyenv Python under a
    home could not start in a check (`python: not found`, exit 127) until its base was listed
    by hand. The command line, as the caller, now lists the venv and the base installation its
    pyvenv.cfg names (RequestBuilder); the check's sandbox binds them read-only and the
    interpreter starts, while the rest of the home stays hidden."""
    runner, place, tmp_path = setting
    base = tmp_path / "home" / "ana" / ".pyenv" / "versions" / "9.9.1"
    (base / "bin").mkdir(parents=True)
    python = base / "bin" / "python9.9"
    python.write_text('#!/bin/sh\necho base-python-ran "$@"\n')
    python.chmod(0o755)
    (tmp_path / "home" / "ana" / ".ssh").mkdir()
    (tmp_path / "home" / "ana" / ".ssh" / "id_rsa").write_text("KEY-OF-THE-HOME\n")
    venv = tmp_path / "proj-venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(python)
    (venv / "pyvenv.cfg").write_text(f"home = {base}/bin\nversion = 9.9.1\n")
    interpreter = str(venv / "bin" / "python")
    request = RequestBuilder(LocalFileSystem(), str(tmp_path)).build(
        RequestFlags(
            worktree=place.worktree,
            task_type="implement",
            instructions="x",
            backend="pi",
            interpreter=interpreter,
        )
    )
    assert isinstance(request, RunRequest), request
    assert request.runtime_paths == (str(venv), str(base))
    bare = place.model_copy(update={"runtime_paths": (), "project_interpreter": interpreter})
    copy = runner.copy(place.worktree)
    try:
        before = runner.run(Check(id="t", command="python -c pass"), copy, bare)
        listed = bare.model_copy(update={"runtime_paths": request.runtime_paths})
        now = runner.run(
            Check(id="t", command=f"python -c pass; cat {tmp_path}/home/ana/.ssh/id_rsa"),
            copy,
            listed,
        )
    finally:
        runner.discard(copy)
    assert before.status is CheckStatus.NOT_STARTED and before.exit_code == 127, before
    assert "python: not found" in before.problem
    log = now.log.decode()
    assert "base-python-ran -c pass" in log, now
    assert "KEY-OF-THE-HOME" not in log and now.exit_code != 0


def _layered(tmp_path: Path, tools: LayerTools | None = None) -> tuple[SandboxedCheckRunner, Path]:
    bwrap = shutil.which("bwrap")
    tools = tools or layer_tools()
    assert bwrap is not None and tools is not None, "run ./scripts/setup"
    copies = tmp_path / "copies"
    copies.mkdir()
    return SandboxedCheckRunner(
        SubprocessRunner(),
        LocalFileSystem(),
        bwrap,
        {"PATH": "/usr/bin:/bin"},
        (),
        str(copies),
        layer_tools=tools,
    ), copies


def test_a_check_s_layer_runs_no_program_the_worker_planted_on_its_path(tmp_path: Path) -> None:
    """The layer is made with CAP_SYS_ADMIN in the check's own user namespace, before any
    sandbox, in the check's environment, whose PATH starts with the project interpreter's
    directory, which may lie in the worktree: a `mkdir`, `mount` or `unshare` the worker put
    there must never run (every program of the layer by absolute path)."""
    worktree = tmp_path / "w"
    planted = worktree / ".venv" / "bin"
    planted.mkdir(parents=True)
    marker = tmp_path / "planted-ran"
    for name in ("mkdir", "mount", "unshare", "sh", "bwrap"):
        (planted / name).write_text(f"#!/bin/sh\necho {name} >> {marker}\nexit 0\n")
        (planted / name).chmod(0o755)
    (planted / "python").symlink_to(sys.executable)
    runner, copies = _layered(tmp_path)
    place = CheckPlace(worktree=str(worktree), project_interpreter=str(planted / "python"))
    ran = runner.run(Check(id="x", command="test -d .venv"), str(worktree), place)
    assert (ran.status, ran.view) == (CheckStatus.PASSED, "layer"), ran
    assert runner.view().startswith("over a copy-on-write layer of the worker's own view")
    assert not marker.exists(), marker.read_text()
    assert os.listdir(copies) == []


def test_where_no_layer_can_be_made_each_check_runs_over_a_copy_and_says_why(
    tmp_path: Path,
) -> None:
    """A kernel that refuses an overlay in a user namespace (here: a `mount` that fails): the
    checks still run, over copies, and `plan` and each check's node say so; never silently."""
    tools = layer_tools()
    assert tools is not None
    runner, copies = _layered(tmp_path, tools.model_copy(update={"mount": "/bin/false"}))
    worktree = tmp_path / "w"
    worktree.mkdir()
    (worktree / "a.txt").write_text("a\n")
    ran = runner.run(
        Check(id="x", command="test -f a.txt && echo b > a.txt"),
        str(worktree),
        CheckPlace(worktree=str(worktree)),
    )
    assert (ran.status, ran.view) == (CheckStatus.PASSED, "copy"), ran
    assert (worktree / "a.txt").read_text() == "a\n"
    said = runner.view()
    assert said.startswith(
        "over a copy of what the grant lets the worker read (the kernel "
        "refused an overlay in a user namespace"
    ), said
    assert os.listdir(copies) == []
