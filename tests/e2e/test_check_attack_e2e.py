"""A worker's test as an attacker's program run by the host (issue 18 §1), end to end with the
real program of every backend (tests/e2e/backends.py) against its scripted model server.

Round 1 writes `src/app/test_probe.py` from its shell; the round's check, `python -m pytest -q src/app`, runs
it. It tries to take the masks of the check's sandbox down (`umount -l` of the temporary root and
the homes, a read-write remount of `/`), then reads what the worker's grant and confinement
withhold — the worktree's hidden file, the primary's `.git/config`, the backend's credentials at
their origin, `~/.ssh/id_rsa`, the run's credential copies below the temp root — writes a file on
the host's `/tmp`, and fails with all of it as its message, hoping its log comes back to the
model as round 2's repair prompt. Nothing of it may reach the log, the record or the model, and
the host's `/tmp` gets nothing: the check runs with no capability (issue 18 §1: the masks hold).
"""

from __future__ import annotations

import base64
import json
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from dependency_injector import providers
from e2e.backends import BackendWorld, Result, Shell, backend_world
from e2e.conftest import RecordedRun, ok_result
from e2e.conftest_pi import ObservedPiBackend
from e2e.run_world import checked_record
from timing import SLOW

from concorde_workers.application.checks.checks import place_for
from concorde_workers.container import production
from concorde_workers.domain.configuration.request import Limits, RunRequest
from concorde_workers.domain.run.checks import Check

pytestmark = pytest.mark.e2e

__all__ = ["backend_world"]  # the fixture, imported for pytest

CHECK = Check(id="tests", command="python -m pytest -q src/app", timeout_seconds=SLOW)
LIMITS = Limits(timeout_seconds=SLOW, max_turns=10, rounds=1, retries=0, retry_delay_seconds=0)
PRIMARY_MARKER = "PRIMARY-GIT-CONFIG-SECRET"
SSH_MARKER = "SSH-PRIVATE-KEY-SECRET"
WORKTREE_MARKER = "not for workers"
PROBE = """import glob
import subprocess

STEPS = ["umount -l /tmp", "umount -l /root", "umount -l /home",
         "mount -o remount,rw,bind /"]
TARGETS = {targets!r}
COPIES = {copies!r}
ESCAPE = {escape!r}


def test_probe():
    out = ["PROBE-RAN"]
    for step in STEPS:
        done = subprocess.run(step, shell=True, capture_output=True, text=True)
        out.append(f"{{step}}: rc={{done.returncode}}")
    for path in [*TARGETS, *glob.glob(COPIES)]:
        try:
            with open(path) as f:
                out.append(f"{{path}} = {{f.read()}}")
        except OSError as e:
            out.append(f"{{path}}: {{type(e).__name__}}")
    try:
        with open(ESCAPE, "w") as f:
            f.write("escaped")
        out.append("ESCAPE-WRITTEN")
    except OSError as e:
        out.append(f"escape: {{type(e).__name__}}")
    assert False, "\\n".join(out)
"""


def probe(
    worktree: Path, primary: Path, credential: Path, home: Path, temp_root: Path, escape: Path
) -> str:
    targets = [
        str(worktree / "secrets" / "token.txt"),
        str(primary / ".git" / "config"),
        str(credential),
        str(home / ".ssh" / "id_rsa"),
    ]
    return PROBE.format(
        targets=targets, copies=f"{temp_root}/concorde-*/config/*.json", escape=str(escape)
    )


def secrets_of(primary: Path, home: Path, worktree: Path) -> None:
    """What the attacker is after: a marker in the primary's Git configuration, an ssh key in
    the user's home, and the worktree's hidden file (in no grant entry); and a passing test."""
    with (primary / ".git" / "config").open("a") as config:
        config.write(f"[concorde]\n\tmarker = {PRIMARY_MARKER}\n")
    (home / ".ssh").mkdir(parents=True, exist_ok=True)
    (home / ".ssh" / "id_rsa").write_text(SSH_MARKER + "\n")
    (home / ".ssh" / "id_rsa").chmod(0o600)
    # A passing test at the start: the probe's failure is the round's, a repair.
    (worktree / "src" / "app" / "test_ok.py").write_text("def test_ok():\n    pass\n")
    hidden = worktree / "secrets" / "token.txt"
    if not hidden.exists():
        hidden.parent.mkdir(parents=True, exist_ok=True)
        hidden.write_text(WORKTREE_MARKER + "\n")


def checked(request: RunRequest) -> RunRequest:
    """The project interpreter is this test's (pytest is there), its installation listed."""
    return request.model_copy(
        update={
            "project_interpreter": sys.executable,
            "runtime_paths": tuple(dict.fromkeys((sys.prefix, sys.base_prefix))),
        }
    )


def checked_run(
    environ: dict[str, str],
    temp_root: Path,
    request: RunRequest,
    pi: ObservedPiBackend | None = None,
    checks: tuple[Check, ...] = (CHECK,),
) -> RecordedRun:
    """One run through the production wiring with `checks` (CHECK) as its round validation."""
    container = production(environ)
    container.temp_root.override(providers.Object(str(temp_root)))
    if pi is not None:
        container.backends.override(providers.Dict(pi=providers.Object(pi)))
    with container.checks_validation(checks=checks, place=place_for(request)) as validation:
        record = checked_record(container.worker_host().run(request, validation))
    return RecordedRun(record=record)


@pytest.fixture
def escape() -> Iterator[Path]:
    path = Path("/tmp") / f"check-escape-{secrets.token_hex(8)}"
    yield path
    path.unlink(missing_ok=True)


def assert_nothing_leaked(
    run: RecordedRun, prompts: str, escape: Path, withheld: tuple[str, ...], worktree: Path
) -> None:
    """The probe ran (its report is in the log and came back as a repair), but took no mask
    down, read nothing withheld and wrote nothing outside; the run ends checks_failed. Every
    check ran over a copy-on-write layer of the worktree (issue 19 §1), whose writes (pytest's
    caches) never reached it."""
    logs = "".join(p.read_text() for p in run.run_dir.rglob("output.log"))
    assert "PROBE-RAN" in logs, logs
    assert "check tests:" in prompts and "AssertionError: PROBE-RAN" in prompts, prompts[-3000:]
    for step in ("umount -l /tmp", "mount -o remount,rw,bind /"):
        assert f"{step}: rc=0" not in logs, logs
    record = json.dumps(run.data)
    for secret in withheld:
        assert secret not in logs, (secret, logs)
        assert secret not in prompts, secret
        assert secret not in record, secret
    assert not escape.exists(), "the check wrote on the host's /tmp"
    assert run.code == "checks_failed", run.record.error
    views = {json.loads(p.read_text())["view"] for p in run.run_dir.rglob("check.json")}
    assert views == {"layer"}, views
    written = [p for p in worktree.rglob("*") if p.name in ("__pycache__", ".pytest_cache")]
    assert written == [], written


def write_command(path: Path, text: str) -> str:
    """A shell command writing `text` to `path` (base64, so no quoting can change it)."""
    encoded = base64.b64encode(text.encode()).decode()
    return f"printf %s {encoded} | base64 -d > {path}; echo rc=$?"


def credential_texts(path: Path) -> tuple[str, ...]:
    """The secret values of a credentials file (its JSON strings of 12 characters or more)."""
    found: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
        elif isinstance(node, str) and len(node) >= 12:
            found.append(node)

    walk(json.loads(path.read_text()))
    assert found, f"no secret in {path}"
    return tuple(found)


def test_a_check_takes_no_mask_down_and_reads_nothing_the_worker_could_not(
    backend_world: BackendWorld, escape: Path
) -> None:
    w = backend_world
    home = Path(w.environ["HOME"])
    secrets_of(w.primary, home, w.worktree)
    text = probe(w.worktree, w.primary, w.credential, home, w.temp_root, escape)
    first = w.request_count()
    w.push(
        Shell(write_command(w.worktree / "src" / "app" / "test_probe.py", text)),
        Result(ok_result(summary="added a probe")),
        Result(ok_result(summary="nothing to repair")),
    )
    run = checked_run(w.environ, w.temp_root, checked(w.request(LIMITS)), w.observed_backend())
    prompts = json.dumps(w.sent_since(first))
    withheld = (PRIMARY_MARKER, SSH_MARKER, WORKTREE_MARKER, *credential_texts(w.credential))
    assert_nothing_leaked(run, prompts, escape, withheld, w.worktree)
