"""The one face for callers (issue 22 §3): `import concorde_workers as cw` is enough to run a
worker, validate its rounds and read the run back; importing it loads nothing else."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from dependency_injector import providers
from fakes.program_backend import ProgramBackend, Step
from integration.host_fixtures import HostHarness, ok_result
from integration.test_host_real import OPEN, harness

import concorde_workers as cw

pytestmark = pytest.mark.integration
__all__ = ["harness"]


def test_every_name_of_the_face_resolves() -> None:
    for name in cw.__all__:
        assert getattr(cw, name) is not None, name
    with pytest.raises(AttributeError):
        cw.no_such_name  # noqa: B018


def test_importing_the_face_loads_none_of_the_package() -> None:
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import concorde_workers, sys; print(sorted(m for m in "
            "sys.modules if m.startswith('concorde_workers.')))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert loaded == "[]"


def test_the_face_runs_validates_and_reads_a_run(harness: HostHarness) -> None:
    backend = ProgramBackend(
        name="claude",
        scenarios=[
            [*OPEN, Step.write("{worktree}/src/app/main.py", "one\n"), Step.result(ok_result())],
            [*OPEN, Step.write("{worktree}/src/app/main.py", "two\n"), Step.result(ok_result())],
        ],
        credentials=harness.credentials,
    )
    container = cw.production(dict(os.environ))
    container.temp_root.override(providers.Object(str(harness.tmp)))
    container.backends.override(
        providers.Dict(claude=providers.Object(backend), pi=providers.Object(backend))
    )
    host: cw.WorkerHost = container.worker_host()
    request = cw.RunRequest.model_validate(
        harness.request(
            limits=cw.Limits(timeout_seconds=60, rounds=1, retries=0, retry_delay_seconds=0)
        ).model_dump(mode="json")
    )
    seen: list[int] = []

    def validation(given: cw.ValidationInput) -> cw.ValidationOutcome:
        seen.append(given.round)
        return cw.ValidationOutcome(repair="again" if given.round == 1 else None)

    record = host.run(request, validation=validation, cancel=cw.Cancellation())
    assert isinstance(record, cw.RunRecord) and record.status == "ok", record.error
    assert seen == [1, 2]
    again = cw.read_run(record.run_directory)
    assert isinstance(again, cw.RunRecord)
    assert (again.run_id, again.status, len(again.rounds)) == (record.run_id, "ok", 2)
    refused = cw.read_run(str(harness.root / "no-such-run"))
    assert isinstance(refused, cw.Refusal)


def test_a_request_the_host_refuses_raises_the_face_s_refusal(harness: HostHarness) -> None:
    host = cw.production(dict(os.environ)).worker_host()
    request = harness.request().model_copy(update={"runtime_paths": ("relative/path",)})
    with pytest.raises(cw.RequestRefused):
        host.run(request)
