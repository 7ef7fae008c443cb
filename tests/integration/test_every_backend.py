"""The host's generic machinery over every registered backend (issue 22 §1): whatever backend the
registry holds (container.py `PROFILES`), a whole run through `WorkerHost.run` with real Git, the
real filesystem and process runner, and an agent program that plays each round as a real process
(tests/fakes/agent_programs/agent.py, through the ProgramBackend standing in for the backend),
takes from that backend's profile alone what is the program's: the tool set, the brief's ending,
the round's environment, where the generated settings lie, which credential files are copied and
removed, and the code a failed program ends the run with. A backend added to the registry is
tested here without a line of this module changed.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fakes.program_backend import Step
from integration.host_fixtures import HostHarness, HostRun, ok_result, porcelain
from timing import SLOW, Gate, Signal

from concorde_workers.container import PROFILES
from concorde_workers.domain.boundary.grant import Grant, parse_grant
from concorde_workers.domain.configuration.credentials import config_directory
from concorde_workers.domain.configuration.profile import BackendProfile
from concorde_workers.domain.configuration.request import Limits
from concorde_workers.domain.ground.text import digest_text
from concorde_workers.ports.agents.agent import BackendContext

pytestmark = pytest.mark.integration

MAIN = "{worktree}/src/app/main.py"
OPEN = (Step.session("s-1"), Step.transcript())


TAKEN: dict[str, Any] = {
    "auth.json": {"local": {"type": "api_key", "key": "s3cret"}},
    "models.json": {"providers": {}},
}
"""What the program takes in a file a run copies (pi judges its own: issue 31 §1); any other
file is only read within its bound."""


@dataclass
class ProfileHarness(HostHarness):
    """A HostHarness whose credentials are the profile's own files, made in the test's home."""

    @property
    def profile(self) -> BackendProfile:
        return PROFILES[self.backend_name]

    def credentials(self, context: BackendContext) -> Sequence[tuple[str, str]]:
        spec = self.profile.credentials
        folder = Path(config_directory(spec, {"HOME": str(self.home)}) or self.home)
        pairs = []
        for name in spec.files:
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(json.dumps(TAKEN.get(name, {"secret": "s3cret"})))
            pairs.append((str(folder / name), context.policy.runtime.copy_of(name)))
        return tuple(pairs)


@pytest.fixture(params=sorted(PROFILES))
def harness(request: pytest.FixtureRequest, project: Any) -> ProfileHarness:
    return ProfileHarness(
        root=project.root,
        worktree=project.worktree,
        primary=project.primary,
        tmp=project.tmp,
        home=project.home,
        git_env=project.git_env,
        backend_name=request.param,
    )


def _grant(raw: Any) -> Grant:
    grant = parse_grant(raw, raw["task_type"])
    assert isinstance(grant, Grant), grant
    return grant


@pytest.mark.req("One grant for the whole run")
def test_a_run_takes_its_tool_set_brief_environment_and_settings_from_the_profile(
    harness: ProfileHarness,
) -> None:
    seen = harness.root / "round.json"
    run = harness.run(
        [
            *OPEN,
            Step.write(MAIN, "print('hello')\n"),
            Step.record(str(seen)),
            Step.result(ok_result()),
        ]
    )
    profile, context = harness.profile, run.context
    assert run.record.status == "ok", run.record.error
    assert run.record.backend == profile.name
    assert run.record.tools == ",".join(profile.tool_set(_grant(context.request.grant)))
    assert profile.brief.ending in (run.run_dir / "brief.md").read_text()
    settings = context.policy.runtime.at(profile.settings_file)
    assert run.record.settings_digest == digest_text(run.backend.generate(context).files[settings])
    round_env = json.loads(seen.read_text())["env"]
    expected = profile.environment(context.environ, context.policy.runtime, None)
    assert {k: round_env.get(k) for k in expected} == expected
    assert not run.runtime_dir.exists()


@pytest.mark.req("Nothing but the trace outlives a worker")
def test_the_profile_s_credential_copies_are_there_in_the_round_and_gone_after(
    harness: ProfileHarness,
) -> None:
    inside, gate = Signal(harness.root / "inside.fifo"), Gate(harness.root / "inside.gate")
    runs: list[HostRun] = []
    thread = threading.Thread(
        target=lambda: runs.append(
            harness.run(
                [*OPEN, Step.signal(inside.path), Step.gate(gate.path), Step.result(ok_result())]
            )
        )
    )
    thread.start()
    try:
        inside.wait()
        copies = sorted(harness.tmp.glob("concorde-*/config/*"))
        assert sorted(p.name for p in copies if p.is_file()) == sorted(
            harness.profile.credentials.files
        )
    finally:
        gate.release()
        thread.join(SLOW)
    run = runs[0]
    assert run.record.status == "ok", run.record.error
    assert not run.runtime_dir.exists() and all(not p.exists() for p in copies)


@pytest.mark.req("Every round is audited")
def test_a_write_outside_rw_is_a_violation_on_every_backend(harness: ProfileHarness) -> None:
    before = porcelain(harness.git_env, harness.worktree)
    run = harness.run(
        [*OPEN, Step.write("{worktree}/src/app/util.py", "changed\n"), Step.result(ok_result())]
    )
    assert run.code == "audit_violation"
    assert run.audit()["verdict"] == "violation"
    assert porcelain(harness.git_env, harness.worktree) != before


@pytest.mark.req("Any other error ends the run at once")
def test_a_crash_ends_the_run_with_the_profile_s_failure_code(harness: ProfileHarness) -> None:
    run = harness.run(
        [*OPEN, Step.stderr(text="it broke\n"), Step.crash("exit", status=3)],
        limits=Limits(timeout_seconds=SLOW, rounds=2, retries=2, retry_delay_seconds=0),
    )
    assert run.code == harness.profile.failure_code
    error = run.record.error
    assert error is not None and error.causes and "it broke" in error.causes[0].detail
    assert len(run.record.rounds) == 1
    assert not run.runtime_dir.exists()
