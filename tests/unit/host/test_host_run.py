"""WorkerHost.run over the fakes: the run's files and records, the progress file, the round
validation's call and answer, proposed deletions, credential copies, the transcript, the
runtime directory, refused trace writes, cancellation, process groups, and the worktree left
alone (seed 000 "Run directory and runtime directory", "Progress file", "Run record", "Round
validation", "Proposed deletions"; seed 002 trace contracts).
"""

from __future__ import annotations

import itertools
import json
import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from fakes.agent import Round, ScriptedBackend
from fakes.agent_stream import TestStreamReader, result_line, session_line
from fakes.host_world import (
    CREDENTIALS_SOURCE,
    RUN_ID,
    RUNTIME_DIR,
    TRACE_PARENT,
    HostWorld,
    ok_result,
    worker_error_result,
    write_file,
)
from fakes.process import FakeProcessHandle, FakeStart
from fakes.space import FakeSpaces
from fakes.world import WORKTREE
from pytest_mock import MockerFixture
from worlds.repository import GRANT

from concorde_workers.application.runtime.cancellation import Cancellation
from concorde_workers.application.runtime.validation import (
    LinkAnswer,
    ValidationInput,
    ValidationOutcome,
)
from concorde_workers.application.tracing.progress import ProgressWriter
from concorde_workers.contracts import validator as contract_validator
from concorde_workers.domain.configuration.resources import ResourceLimits
from concorde_workers.domain.evidence.records import RunRecord

OWNER_RECORD = f"{RUNTIME_DIR}/control/owner.json"

RUN_DIR = f"{TRACE_PARENT}/workers/{RUN_ID}"
CREDENTIAL_COPY = f"{RUNTIME_DIR}/config/.credentials.json"
NODE = contract_validator("contract.tracing.node")


def assert_node(node: dict[str, Any]) -> None:
    errors = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in NODE.iter_errors(node)]
    assert not errors, errors


class Spy:
    """Every write_atomic of the world's filesystem: (path, text, monotonic time)."""

    def __init__(self, world: HostWorld) -> None:
        self.world = world
        self.writes: list[tuple[str, str, float]] = []
        original = world.fs.write_atomic

        def write_atomic(
            path: str, data: bytes | str, mode: int = 0o644, *, durable: bool = False
        ) -> None:
            original(path, data, mode, durable=durable)
            text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
            self.writes.append((path, text, world.clock.monotonic()))

        world.fs.write_atomic = write_atomic  # type: ignore[method-assign]

    def of(self, path: str) -> list[dict[str, Any]]:
        return [json.loads(text) for p, text, _ in self.writes if p == path]

    def progress(self) -> list[tuple[dict[str, Any], float]]:
        return [
            (json.loads(text), at) for p, text, at in self.writes if p == f"{RUN_DIR}/status.json"
        ]


# --- the run record's writes --------------------------------------------------------------------


@pytest.mark.req("A run is recorded before its launch")
@pytest.mark.req("Every run leaves a final record")
def test_the_run_node_is_written_at_start_after_every_round_and_at_the_end() -> None:
    world = HostWorld()
    spy = Spy(world)
    seen: list[dict[str, Any]] = []

    def read_node(_: FakeStart) -> None:
        seen.append(world.run_node(RUN_DIR))

    world.run([Round.transient(effects=read_node), Round.ok(ok_result(), effects=read_node)])
    # before each launch: running, with the round being launched counted
    assert [(n["status"], n["ended_at"], n["content"]["rounds"]) for n in seen] == [
        ("running", None, 1),
        ("running", None, 2),
    ]
    assert seen[0]["metadata"]["settings_digest"] is not None
    writes = spy.of(f"{RUN_DIR}/trace.json")
    assert writes[0]["status"] == "running" and writes[0]["content"]["rounds"] == 0
    # after each round's final node write, the run node is written again
    order = [p.removeprefix(RUN_DIR) for p, _, _ in spy.writes if p.endswith("trace.json")]
    assert order == [
        "/trace.json",
        "/trace.json",  # start, prepared
        "/rounds/1/trace.json",
        "/trace.json",  # round 1 launched
        "/rounds/1/trace.json",  # its agent ended: still running, what is known so far
        "/rounds/1/trace.json",  # audited: still running, with its audit
        "/rounds/1/trace.json",
        "/trace.json",  # round 1 ended
        "/rounds/2/trace.json",
        "/trace.json",
        "/rounds/2/trace.json",
        "/rounds/2/trace.json",
        "/rounds/2/trace.json",
        "/trace.json",
        "/trace.json",
    ]  # the end
    rounds = spy.of(f"{RUN_DIR}/rounds/1/trace.json")
    assert [r["status"] for r in rounds] == ["running", "running", "running", "failed"]
    assert rounds[1]["content"]["exit"] is not None and rounds[1]["content"]["audit"] is None
    assert rounds[2]["content"]["audit"] is not None and rounds[2]["ended_at"] is None
    final = world.run_node()
    assert (final["status"], final["outcome"]) == ("ok", "ok")
    assert final["ended_at"] is not None and final["content"]["rounds"] == 2
    for node in writes:
        assert_node(node)


def _snapshot_fails(world: HostWorld) -> RunRecord:
    world.git.fail("status")
    return world.run([Round.ok(ok_result())])


REFUSALS: list[Any] = [
    pytest.param(
        lambda w: w.run([], task_type="deploy"), "grant_unavailable", id="grant_unavailable"
    ),
    pytest.param(
        lambda w: w.run([], grant={**GRANT, "entries": [{"path": "a", "level": "x"}]}),
        "grant_malformed",
        id="grant_malformed",
    ),
    pytest.param(
        lambda w: w.run([], worktree="/work/repo/src"),
        "worktree_misplaced",
        id="worktree_misplaced",
    ),
    pytest.param(_snapshot_fails, "snapshot_failed", id="snapshot_failed"),
]


@pytest.mark.req("Every run leaves a final record")
@pytest.mark.req("Nothing is generated from a malformed grant")
@pytest.mark.req("A worker runs only inside .claude/worktrees/")
@pytest.mark.parametrize("refuse,code", REFUSALS)
def test_a_refusal_writes_a_final_record_and_generates_nothing(
    refuse: Callable[[HostWorld], RunRecord], code: str
) -> None:
    world = HostWorld()
    spy = Spy(world)
    record = refuse(world)
    assert record.error is not None and record.error.code == code
    assert record.rounds == () and world.runner.starts == []
    node = world.run_node()
    assert (node["status"], node["outcome"]) == ("failed", "failed")
    assert node["ended_at"] is not None and node["error"]["code"] == code
    assert_node(node)
    # nothing generated: the only file the runtime directory ever held is the host's own
    # owner record, written when the directory was made (for a sweep after a SIGKILL)
    assert [p for p, _, _ in spy.writes if p.startswith(RUNTIME_DIR)] == [OWNER_RECORD]
    assert not world.exists(f"{RUN_DIR}/brief.md")
    assert world.runtime_dirs() == [] and world.status()["phase"] == "finished"


def test_the_context_identity_is_the_parsed_grant_s() -> None:
    """Issue 34 §2 (docs/decisions.md "The house's floors"): the record's context identity is
    read from the grant as parsed, never from the raw input: a malformed grant's says nothing,
    one the placement refuses (the grant itself well formed) says its own."""
    malformed = HostWorld().run([], grant={**GRANT, "entries": [{"path": "a", "level": "x"}]})
    assert malformed.error is not None and malformed.error.code == "grant_malformed"
    assert malformed.context_identity is None
    misplaced = HostWorld().run([], worktree="/work/repo/src")
    assert misplaced.error is not None and misplaced.error.code == "worktree_misplaced"
    assert misplaced.context_identity == GRANT["context_identity"]


@pytest.mark.req("A run the deny rules would disable is refused")
def test_run_directory_denied_writes_a_final_record_and_generates_nothing() -> None:
    world = HostWorld(temp_root="/work/repo/.git/tmp")
    world.fs.symlink("/work/repo/.git/tmp", "/var/tmp")  # a temporary root, really in .git
    spy = Spy(world)
    record = world.run([], backend="claude")
    assert record.error is not None and record.error.code == "run_directory_denied"
    assert world.run_node()["status"] == "failed" and world.runner.starts == []
    assert [
        p
        for p, _, _ in spy.writes
        if p.startswith("/work/repo/.git/tmp/") and not p.endswith("/control/owner.json")
    ] == []
    assert world.runtime_dirs() == []


@pytest.mark.req("Every run leaves a final record")
@pytest.mark.req("Nothing but the trace outlives a worker")
def test_a_round_that_could_not_start_leaves_a_final_record_and_nothing_generated() -> None:
    world = HostWorld()
    record = world.run([Round.not_started("Exec format error")])
    assert record.error is not None and record.error.code == "launch_failed"
    assert record.rounds[0].audit is None
    node = world.run_node()
    assert node["status"] == "failed" and node["ended_at"] is not None
    assert world.round_node(1)["content"]["audit"] is None
    assert world.under(RUNTIME_DIR) == [] and not world.exists(RUNTIME_DIR)


@pytest.mark.req("Every run leaves a final record")
def test_a_run_whose_node_cannot_be_created_still_removes_its_runtime_directory() -> None:
    world = HostWorld()
    record = world.run([Round.ok(ok_result())], parent="/work/no-such-trace")
    assert world.runtime_dirs() == []
    assert record.trace_failures  # every write of its trace.json was refused, and said so


# --- the run directory's files ------------------------------------------------------------------


@pytest.mark.req("One grant for the whole run")
@pytest.mark.req("Every round keeps its standard error")
def test_the_run_directory_holds_grant_brief_status_rounds_and_transcript() -> None:
    world = HostWorld()
    record = world.run(
        [Round.transient(stderr=b"first round\n"), Round.ok(ok_result(), stderr=b"second round\n")]
    )
    assert json.loads(world.text(f"{RUN_DIR}/grant.json")) == GRANT
    brief = world.text(f"{RUN_DIR}/brief.md")
    assert brief == world.runner.starts[0].stdin_text
    assert WORKTREE in brief
    assert world.stderr(1) == b"first round\n" and world.stderr(2) == b"second round\n"
    assert record.stderr_tail == "second round\n"
    node = world.run_node()
    assert [f["path"] for f in node["files"]] == [
        "status.json",
        "grant.json",
        "brief.md",
        "transcript.jsonl",
    ]
    assert node["content"]["transcript"] == "transcript.jsonl"
    assert node["metadata"]["grant_digest"] == record.grant_digest
    assert node["metadata"]["context_identity"] == GRANT["context_identity"]
    for n in (1, 2):
        round_node = world.round_node(n)
        assert_node(round_node)
        assert round_node["parent"] == RUN_ID and round_node["id"] == f"{RUN_ID}/{n}"
    assert world.round_node(1)["status"] == "failed" and world.round_node(2)["status"] == "ok"
    assert world.status()["status"] == "ok"


@pytest.mark.req("Every round keeps its standard error")
def test_each_round_keeps_the_last_80000_bytes_of_its_own_standard_error() -> None:
    world = HostWorld()
    big = b"x" * 90_000 + b"END"
    world.run(
        [Round.ok(ok_result(), stderr=big), Round.ok(ok_result(), stderr=b"two")],
        lambda _: ValidationOutcome(repair="again"),
        limits={"rounds": 1},
    )
    assert world.stderr(1) == big[-80_000:] and world.stderr(2) == b"two"


# --- the progress file --------------------------------------------------------------------------


def _phases(spy: Spy) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    for status, _ in spy.progress():
        step = (status["phase"], status["round"])
        if not out or out[-1] != step:
            out.append(step)
    return out


@pytest.mark.req("A running run shows its progress")
def test_the_progress_file_moves_through_the_phases_in_order() -> None:
    world = HostWorld()
    spy = Spy(world)
    world.run(
        [Round.transient(), Round.ok(ok_result()), Round.ok(ok_result())],
        lambda given: ValidationOutcome(repair="more") if given.round == 2 else ValidationOutcome(),
    )
    assert _phases(spy) == [
        ("preparing", 1),
        ("worker", 1),
        ("audit", 1),
        ("waiting", 1),
        ("worker", 2),
        ("audit", 2),
        ("validation", 2),
        ("worker", 3),
        ("audit", 3),
        ("validation", 3),
        ("finished", 3),
    ]
    statuses = [s["status"] for s, _ in spy.progress()]
    assert statuses[-1] == "ok" and set(statuses[:-1]) == {None}
    final = world.status()
    assert (
        final["run_id"],
        final["task_type"],
        final["backend"],
        final["worktree"],
        final["host_pid"],
    ) == (RUN_ID, "implement", "pi", WORKTREE, 42)


@pytest.mark.req("A running run shows its progress")
def test_worker_activity_rewrites_the_progress_file_at_most_once_a_second() -> None:
    world = HostWorld()
    monotonic = world.clock.monotonic

    def ticking() -> float:  # every look at the clock takes 0.3 s
        world.clock.advance(0.3)
        return monotonic()

    world.clock.monotonic = ticking  # type: ignore[method-assign]
    spy = Spy(world)
    tools = [("write", f"{WORKTREE}/src/app/f{i}.py") for i in range(12)]
    world.run([Round.ok(ok_result(), tools=tools)], operation_run_id="r-1")
    progress = spy.progress()
    worker = [(s, at) for s, at in progress if s["phase"] == "worker"]
    activity = worker[1:]  # the first is the phase change itself
    assert activity, "some activity was written"
    times = [at for _, at in worker]
    assert all(b - a >= 1.0 for a, b in itertools.pairwise(times))
    assert len(activity) < len(tools)
    # the latest action reaches the file by the next phase change at the latest
    audit = next(s for s, _ in progress if s["phase"] == "audit")
    assert audit["last_action"]["target"] == f"{WORKTREE}/src/app/f11.py"
    assert audit["operation_run_id"] == "r-1"


@pytest.mark.req("A running run shows its progress")
def test_the_last_action_target_is_its_first_line_cut_at_200_characters() -> None:
    world = HostWorld()
    world.run([Round.ok(ok_result(), tools=[("bash", "echo " + "y" * 300 + "\nsecond line")])])
    action = world.status()["last_action"]
    assert action["tool"] == "bash"
    assert action["target"] == ("echo " + "y" * 300)[:200]


# --- the round validation -----------------------------------------------------------------------


@pytest.mark.req("The round validation follows every clean ok round")
def test_the_validation_is_called_once_after_every_clean_ok_round_and_never_otherwise(
    mocker: MockerFixture,
) -> None:
    world = HostWorld()
    validate = mocker.Mock(side_effect=[ValidationOutcome(repair="more"), ValidationOutcome()])
    record = world.run(
        [
            Round.ok(ok_result(summary="one")),  # validated: repair
            Round.transient(),  # not validated: retried
            Round.ok(ok_result(summary="three")),  # validated: clean
        ],
        validate,
    )
    assert record.status == "ok"
    calls: list[ValidationInput] = [c.args[0] for c in validate.call_args_list]
    assert [(c.round, c.worktree, c.round_dir, c.result["summary"]) for c in calls] == [
        (1, WORKTREE, f"{RUN_DIR}/rounds/1", "one"),
        (3, WORKTREE, f"{RUN_DIR}/rounds/3", "three"),
    ]
    assert record.rounds[1].validation is None and record.rounds[1].evidence is None


@pytest.mark.req("The round validation follows every clean ok round")
@pytest.mark.parametrize(
    "round_",
    [
        pytest.param(lambda w: Round.ok(worker_error_result("blocked")), id="blocked"),
        pytest.param(lambda w: Round.ok({"status": "ok"}), id="invalid result"),
        pytest.param(
            lambda w: Round.ok(ok_result(), effects=write_file(w, "docs/notes.md")),
            id="audit violation",
        ),
        pytest.param(
            lambda w: Round(
                lines=(session_line("s-1"), result_line(ok_result())), hang=True, transcript="s-1"
            ),
            id="timed out",
        ),
        pytest.param(lambda w: Round.failed("boom", transcript="s-1"), id="process failed"),
    ],
)
def test_no_validation_after_a_round_that_is_not_clean_and_ok(
    round_: Callable[[HostWorld], Round], mocker: MockerFixture
) -> None:
    world = HostWorld()
    validate = mocker.Mock(return_value=ValidationOutcome())
    world.run([round_(world)], validate, limits={"timeout_seconds": 60})
    calls = validate.call_args_list
    assert calls == []
    assert world.round_node(1)["content"]["validation"] is None


@pytest.mark.req("The round validation's answer is recorded")
def test_the_validation_evidence_and_outcome_are_kept_in_the_round_node() -> None:
    world = HostWorld()

    def validate(given: ValidationInput) -> ValidationOutcome:
        log = posixpath.join(given.round_dir, "checks", "unit", "log.txt")
        world.fs.write(log, "2 failed\n")
        evidence = [{"check": "unit", "status": "failed", "log": log, "note": "/etc/hosts"}]
        if given.round == 1:
            return ValidationOutcome(evidence=evidence, repair="fix 2 failures")
        return ValidationOutcome(evidence=[{"check": "unit", "status": "passed"}])

    record = world.run([Round.ok(ok_result()), Round.ok(ok_result())], validate)
    node = world.round_node(1)["content"]
    assert node["validation"] == "fix 2 failures"
    assert node["evidence"] == [
        {"check": "unit", "status": "failed", "log": "checks/unit/log.txt", "note": "/etc/hosts"}
    ]
    assert world.round_node(2)["content"]["validation"] == "clean"
    assert record.rounds[0].evidence == (
        {
            "check": "unit",
            "status": "failed",
            "log": f"{RUN_DIR}/rounds/1/checks/unit/log.txt",
            "note": "/etc/hosts",
        },
    )
    assert record.rounds[1].evidence == ({"check": "unit", "status": "passed"},)


@pytest.mark.req("The round validation's answer is recorded")
@pytest.mark.parametrize(
    "answer,text",
    [
        (
            ValidationOutcome(unavailable=LinkAnswer("checks_unavailable", detail="no runner")),
            "unavailable (checks_unavailable): no runner",
        ),
        (
            ValidationOutcome(violation=LinkAnswer("audit_violation", detail="glossary.md#Grant")),
            "violation (audit_violation): glossary.md#Grant",
        ),
        (RuntimeError("it broke"), "the round validation raised RuntimeError: it broke"),
    ],
)
def test_each_validation_outcome_is_kept_in_the_round_node(
    answer: ValidationOutcome | Exception, text: str
) -> None:
    world = HostWorld()

    def validate(_: ValidationInput) -> ValidationOutcome:
        if isinstance(answer, Exception):
            raise answer
        return answer

    world.run([Round.ok(ok_result())], validate)
    assert world.round_node(1)["content"]["validation"] == text


# --- proposed deletions -------------------------------------------------------------------------


def _tracked(world: HostWorld, *rels: str) -> None:
    for rel in rels:
        world.fs.write(f"{WORKTREE}/{rel}", "old\n")
        world.git.add(WORKTREE, rel)
    world.git.commit(WORKTREE, "files to delete")


OLD = "src/app/old.py"


@dataclass
class Deleting:
    rounds: Callable[[HostWorld], list[Round]]
    validation: Callable[[ValidationInput], ValidationOutcome] | None = None
    deleted: bool = True


def _with_old(status: str = "ok") -> dict[str, Any]:
    base = ok_result() if status == "ok" else worker_error_result(status)
    return base | {"proposed_deletions": [OLD]}


def _raise(_: ValidationInput) -> ValidationOutcome:
    raise RuntimeError("no")


DELETING: list[Any] = [
    pytest.param(Deleting(lambda w: [Round.ok(_with_old())]), id="ok run"),
    pytest.param(Deleting(lambda w: [Round.ok(_with_old("blocked"))]), id="blocked worker"),
    pytest.param(Deleting(lambda w: [Round.ok(_with_old("failed"))]), id="failed worker"),
    pytest.param(
        Deleting(
            lambda w: [
                Round(
                    lines=(session_line("s-1"), result_line(_with_old())),
                    hang=True,
                    transcript="s-1",
                )
            ]
        ),
        id="timed out after the result",
    ),
    pytest.param(
        Deleting(
            lambda w: [
                Round(
                    lines=(session_line("s-1"), result_line(_with_old())), exit=3, transcript="s-1"
                )
            ]
        ),
        id="agent process failed after the result",
    ),
    pytest.param(
        Deleting(lambda w: [Round.ok(_with_old())], _raise), id="validation could not validate"
    ),
    pytest.param(
        Deleting(
            lambda w: [Round.ok(_with_old())] * 2,
            lambda _: ValidationOutcome(repair="r", failure=LinkAnswer("x_failed")),
        ),
        id="validation failed the run",
    ),
    pytest.param(
        Deleting(
            lambda w: [Round.ok(_with_old())],
            lambda _: ValidationOutcome(violation=LinkAnswer("audit_violation")),
            deleted=False,
        ),
        id="validation violation",
    ),
    pytest.param(
        Deleting(
            lambda w: [Round.ok(_with_old(), effects=write_file(w, "README.md"))], deleted=False
        ),
        id="audit violation",
    ),
    pytest.param(
        Deleting(
            lambda w: [Round.ok(_with_old()), Round.ok({"status": "ok"})],
            lambda g: ValidationOutcome(repair="r") if g.round == 1 else ValidationOutcome(),
            deleted=False,
        ),
        id="an earlier round's valid result, the last round's invalid",
    ),
]


@pytest.mark.req("Proposed deletions follow every clean last round")
@pytest.mark.req("Only the host deletes")
@pytest.mark.parametrize("case", DELETING)
def test_proposed_deletions_after_a_clean_last_round_with_a_valid_result(case: Deleting) -> None:
    world = HostWorld()
    _tracked(world, OLD)
    record = world.run(
        case.rounds(world), case.validation, limits={"timeout_seconds": 60, "rounds": 1}
    )
    assert world.exists(f"{WORKTREE}/{OLD}") is not case.deleted
    assert record.deleted == ((OLD,) if case.deleted else ())
    assert tuple(world.run_node()["content"]["deleted"]) == record.deleted


@pytest.mark.req("Proposed deletions follow every clean last round")
def test_an_interrupted_run_deletes_nothing() -> None:
    world = HostWorld()
    _tracked(world, OLD)
    cancel = Cancellation()
    record = world.run(
        [Round.ok(_with_old(), effects=lambda _: cancel.cancel("SIGTERM"))], cancel=cancel
    )
    assert record.error is not None and record.error.code == "interrupted"
    assert world.exists(f"{WORKTREE}/{OLD}") and record.deleted == ()


@pytest.mark.req("A repeated deletion is performed once")
@pytest.mark.req("An absent target is recorded, not refused")
@pytest.mark.req("Only the host deletes")
def test_each_proposed_path_is_judged_once() -> None:
    world = HostWorld()
    _tracked(world, OLD, "src/app/two.py", "docs/old.md")
    world.fs.mkdir(f"{WORKTREE}/src/app/pkg")
    world.fs.symlink("/etc", f"{WORKTREE}/src/app/etc")
    proposed = [
        OLD,
        f"{WORKTREE}/{OLD}",
        "src/app/./old.py",
        "src/app/two.py",
        "src/app/gone.py",
        "src/app/gone.py",
        "docs/old.md",
        "src/app/pkg",
        "../outside.py",
        "/etc/passwd",
        "src/app/etc/passwd",
        "src/app/util.py",
    ]
    record = world.run([Round.ok(ok_result(proposed_deletions=proposed))])
    assert record.status == "ok"
    assert record.deleted == (OLD, "src/app/two.py")
    assert record.deletions_absent == ("src/app/gone.py",)
    assert record.deletions_refused == (
        "docs/old.md",
        "src/app/pkg",
        "../outside.py",
        "/etc/passwd",
        "src/app/etc/passwd",
        "src/app/util.py",
    )
    assert world.exists(f"{WORKTREE}/docs/old.md") and world.exists(f"{WORKTREE}/src/app/pkg")
    removes = [p for op, p in world.fs.ops if op == "remove" and p.startswith(WORKTREE)]
    assert removes == [f"{WORKTREE}/{OLD}", f"{WORKTREE}/src/app/two.py"]


@pytest.mark.req("A failed deletion fails the run without stopping the others")
def test_a_failed_deletion_fails_the_run_and_the_others_are_still_attempted() -> None:
    world = HostWorld()
    _tracked(world, OLD, "src/app/two.py")
    world.fs.fail("remove", f"{WORKTREE}/{OLD}", "Operation not permitted", 1)
    record = world.run(
        [Round.ok(worker_error_result("blocked") | {"proposed_deletions": [OLD, "src/app/two.py"]})]
    )
    assert record.status == "failed"
    assert record.deleted == ("src/app/two.py",) and record.deletions_failed == (OLD,)
    assert not world.exists(f"{WORKTREE}/src/app/two.py")
    link = record.error
    assert link is not None and link.code == "deletion_failed"
    assert "deleted: src/app/two.py" in link.detail
    assert f"failed: {OLD} (Operation not permitted)" in link.detail
    assert [c.code for c in link.causes] == ["worker_blocked"]
    assert world.run_node()["outcome"] == "failed"


# --- credentials, transcript, runtime directory -------------------------------------------------


def _credentials_seen(world: HostWorld, seen: list[bool]) -> Callable[[FakeStart], None]:
    def effect(_: FakeStart) -> None:
        seen.append(
            world.exists(CREDENTIAL_COPY)
            and world.text(CREDENTIAL_COPY) == world.text(CREDENTIALS_SOURCE)
        )

    return effect


def _cancel_during(
    cancel: Cancellation, then: Callable[[FakeStart], None]
) -> Callable[[FakeStart], None]:
    def effect(start: FakeStart) -> None:
        then(start)
        cancel.cancel("the launching run was cancelled")

    return effect


ENDINGS: list[Any] = [
    pytest.param(lambda e, c: [Round.ok(ok_result(), effects=e)], "ok", id="ok"),
    pytest.param(
        lambda e, c: [Round.failed("boom", transcript="s-1", effects=e)], "pi_failed", id="failed"
    ),
    pytest.param(
        lambda e, c: [Round.timeout(transcript="s-1", effects=e)], "worker_timeout", id="timeout"
    ),
    pytest.param(
        lambda e, c: [Round.ok(ok_result(), effects=_cancel_during(c, e))],
        "interrupted",
        id="interrupted",
    ),
]


@pytest.mark.req("Nothing but the trace outlives a worker")
@pytest.mark.req("The transcript is kept before the runtime directory goes")
@pytest.mark.parametrize("rounds,code", ENDINGS)
def test_credentials_are_there_during_the_round_and_gone_after_every_ending(
    rounds: Callable[[Callable[[FakeStart], None], Cancellation], list[Round]], code: str
) -> None:
    world = HostWorld()
    seen: list[bool] = []
    cancel = Cancellation()
    record = world.run(
        rounds(_credentials_seen(world, seen), cancel),
        cancel=cancel,
        limits={"timeout_seconds": 60},
    )
    assert seen == [True]
    assert (record.error.code if record.error else "ok") == code
    assert not world.exists(CREDENTIAL_COPY) and world.runtime_dirs() == []
    assert world.text(f"{RUN_DIR}/transcript.jsonl") == '{"type": "session", "id": "s-1"}\n'
    assert record.transcript == f"{RUN_DIR}/transcript.jsonl"
    removes = [p for op, p in world.fs.ops if op in ("remove", "rmtree")]
    assert removes.index(CREDENTIAL_COPY) < removes.index(RUNTIME_DIR)


@pytest.mark.req("Nothing but the trace outlives a worker")
def test_a_refused_run_leaves_no_credentials_and_no_runtime_directory() -> None:
    world = HostWorld()
    world.run([], grant={"task_type": "implement"})
    assert world.runtime_dirs() == [] and world.under("/tmp") == []


@pytest.mark.req("A cleanup that failed fails the run")
def test_a_runtime_directory_that_cannot_be_removed_fails_the_run_with_cleanup_failed() -> None:
    world = HostWorld()
    world.fs.fail("rmtree", RUNTIME_DIR, "Device or resource busy", 16)
    record = world.run([Round.failed("boom", transcript="s-1")])
    link = record.error
    assert link is not None and link.code == "cleanup_failed"
    assert f"{RUNTIME_DIR}: Device or resource busy" in link.detail
    assert [c.code for c in link.causes] == ["pi_failed"]
    assert link.unhandled.reason.value == "environment"
    assert world.run_node()["error"]["code"] == "cleanup_failed"
    assert not world.exists(CREDENTIAL_COPY)  # removed first, before the rest failed


@pytest.mark.req("A cleanup that failed fails the run")
def test_a_credential_copy_that_cannot_be_removed_is_named_with_its_error() -> None:
    world = HostWorld()
    world.fs.fail("remove", CREDENTIAL_COPY, "Operation not permitted", 1)
    world.fs.fail("rmtree", RUNTIME_DIR, "Directory not empty", 39)
    record = world.run([Round.ok(ok_result())])
    link = record.error
    assert link is not None and link.code == "cleanup_failed"
    assert f"{CREDENTIAL_COPY}: Operation not permitted" in link.detail
    assert link.causes == ()
    assert record.status == "failed"


# --- refused trace writes -----------------------------------------------------------------------


@pytest.mark.req("A failed trace write is reported, never silent")
@pytest.mark.parametrize(
    "worker,status", [(ok_result(), "ok"), (worker_error_result("failed"), "failed")]
)
def test_refused_trace_writes_are_listed_without_changing_the_status(
    worker: dict[str, Any], status: str
) -> None:
    world = HostWorld()
    round_trace = f"{RUN_DIR}/rounds/1/trace.json"
    world.fs.fail("write_atomic", round_trace, "No space left on device", 28)
    record = world.run([Round.ok(worker)])
    failures = (
        f"{round_trace} (start): No space left on device",
        # what is known once its agent ended, once it was audited, and its end
        *[f"{round_trace} (update): No space left on device"] * 3,
    )
    assert record.status == status
    assert record.trace_failures == failures
    assert tuple(world.run_node()["content"]["trace_failures"]) == failures
    if status == "ok":
        assert record.error is None
    else:
        assert record.error is not None
        writes = [
            (e.kind, e.ref, e.detail) for e in record.error.evidence if e.kind == "trace-write"
        ]
        assert writes == [
            ("trace-write", round_trace, "start: No space left on device"),
            ("trace-write", round_trace, "update: No space left on device"),
        ]  # the same failure is one piece of evidence


@pytest.mark.req("A failed trace write is reported, never silent")
def test_a_refused_final_write_is_carried_by_the_returned_record() -> None:
    world = HostWorld()
    world.fs.fail("write_atomic", f"{RUN_DIR}/trace.json", "Input/output error", 5)
    record = world.run([Round.ok(worker_error_result("blocked"))])
    assert record.status == "blocked"
    assert f"{RUN_DIR}/trace.json (end): Input/output error" in record.trace_failures
    assert f"{RUN_DIR}/trace.json (start): Input/output error" in record.trace_failures
    assert record.error is not None
    assert ("trace-write", f"{RUN_DIR}/trace.json", "end: Input/output error") in [
        (e.kind, e.ref, e.detail) for e in record.error.evidence
    ]


# --- cancellation ---------------------------------------------------------------------------------


@pytest.mark.req("The transcript is kept before the runtime directory goes")
@pytest.mark.req("Proposed deletions follow every clean last round")
def test_a_cancellation_during_a_round_ends_the_run_interrupted() -> None:
    world = HostWorld()
    _tracked(world, OLD)
    cancel = Cancellation()
    hanging = Round(
        lines=(session_line("s-1"), result_line(_with_old())),
        hang=True,
        transcript="s-1",
        effects=lambda _: cancel.cancel("SIGTERM"),
    )
    record = world.run([hanging], cancel=cancel)
    assert record.status == "failed" and record.error is not None
    assert (record.error.code, record.error.unhandled.reason.value) == (
        "interrupted",
        "environment",
    )
    assert "SIGTERM" in record.error.detail
    node = world.run_node()
    assert (node["status"], node["outcome"]) == ("failed", "interrupted")
    assert world.status()["phase"] == "finished" and world.status()["status"] == "interrupted"
    assert record.deleted == () and world.exists(f"{WORKTREE}/{OLD}")
    assert world.exists(f"{RUN_DIR}/transcript.jsonl")
    assert world.runtime_dirs() == []
    assert world.runner.kills and set(world.runner.kills) == {world.runner.handles[0].pid}
    assert len(world.runner.starts) == 1


@pytest.mark.req("No worker process outlives its round")
def test_the_whole_process_group_is_killed_when_each_round_ends() -> None:
    world = HostWorld()
    world.run([Round.transient(), Round.failed("x", transcript="s-1")])
    pids = [h.pid for h in world.runner.handles]
    assert len(pids) == 2
    assert [h.kill_calls >= 1 for h in world.runner.handles] == [True, True]
    assert set(world.runner.kills) == set(pids)


@pytest.mark.req("No worker process outlives its round")
def test_a_round_that_hangs_past_its_result_is_killed() -> None:
    world = HostWorld()
    world.run(
        [Round(lines=(session_line("s-1"), result_line(ok_result())), hang=True, transcript="s-1")],
        limits={"timeout_seconds": 60},
    )
    handle = world.runner.handles[0]
    assert handle.kill_calls >= 1 and world.runner.kills[0] == handle.pid


# --- the worktree ---------------------------------------------------------------------------------


@pytest.mark.req("The host creates no file for the worker")
@pytest.mark.req("The worker never works in the worktree")
def test_the_host_creates_nothing_in_the_worktree() -> None:
    world = HostWorld()
    world.forget_calls()
    world.run([Round.transient(), Round.ok(ok_result())], lambda _: ValidationOutcome())
    assert world.writes_under(WORKTREE) == []
    assert world.writes_under("/work/repo") == []
    assert {s.cwd for s in world.runner.starts} == {f"{RUNTIME_DIR}/work"}


@pytest.mark.req("The run's configuration never changes between rounds")
def test_every_round_runs_with_the_same_settings_tools_brief_and_environment() -> None:
    world = HostWorld()
    spy = Spy(world)
    record = world.run(
        [Round.transient(), Round.ok(ok_result()), Round.ok(ok_result())],
        lambda g: ValidationOutcome(repair="r") if g.round == 2 else ValidationOutcome(),
    )
    assert len(world.runner.starts) == 3
    assert len({json.dumps(s.env, sort_keys=True) for s in world.runner.starts}) == 1
    assert len({s.cwd for s in world.runner.starts}) == 1
    control = [p for p, _, _ in spy.writes if p.startswith(f"{RUNTIME_DIR}/control/")]
    assert len(control) == len(set(control))  # each control file written once, before round 1
    assert len(world.backend.contexts) == 1
    assert record.settings_digest == world.run_node()["metadata"]["settings_digest"]


@pytest.mark.req("Proposed deletions follow every clean last round")
def test_a_cancellation_during_the_round_validation_interrupts_without_deletions() -> None:
    world = HostWorld()
    _tracked(world, OLD)
    cancel = Cancellation()

    def validate(_: ValidationInput) -> ValidationOutcome:
        cancel.cancel("the operation run was cancelled")
        return ValidationOutcome(repair="go on")  # a repair: no resume round may start either

    record = world.run([Round.ok(_with_old()), Round.ok(_with_old())], validate, cancel=cancel)
    assert record.error is not None and record.error.code == "interrupted"
    assert "round 1: the operation run was cancelled" in record.error.detail
    assert world.run_node()["outcome"] == "interrupted"
    assert record.deleted == () and world.exists(f"{WORKTREE}/{OLD}")
    assert len(world.runner.starts) == 1
    assert world.round_node(1)["content"]["validation"] == "go on"


# --- what the worker could plant for the agent program's own process (notes/pi.md §9) ---------

SCRATCH = (f"{RUNTIME_DIR}/tmp/jiti", f"{RUNTIME_DIR}/work/.pi")


def _plant(world: HostWorld) -> Callable[[FakeStart], None]:
    def effects(start: FakeStart) -> None:
        world.fs.write(f"{SCRATCH[0]}/control-permission.mjs", "POISONED\n")
        world.fs.write(f"{SCRATCH[1]}/settings.json", '{"retry": {"enabled": false}}\n')

    return effects


def test_the_host_clears_the_agents_scratch_before_every_round() -> None:
    world = HostWorld()
    seen: list[bool] = []

    def second_round(start: FakeStart) -> None:
        seen.append(any(world.exists(p) for p in SCRATCH))

    repair = ValidationOutcome(repair="again")
    answers = iter([repair, ValidationOutcome()])
    record = world.run(
        [
            Round.ok(ok_result(), effects=_plant(world), transcript="s-1"),
            Round.ok(ok_result(), effects=second_round, transcript="s-1"),
        ],
        validation=lambda _: next(answers),
        scratch=SCRATCH,
    )
    assert record.status == "ok" and len(record.rounds) == 2
    assert seen == [False]


def test_a_round_does_not_start_when_its_scratch_cannot_be_cleared() -> None:
    world = HostWorld()
    world.fs.write(f"{SCRATCH[0]}/planted.mjs", "POISONED\n")
    world.fs.fail("rmtree", SCRATCH[0], "Device or resource busy", 16)
    record = world.run([Round.ok(ok_result())], scratch=SCRATCH)
    assert record.error is not None and record.error.code == "launch_failed"
    assert f"could not clear {SCRATCH[0]}" in record.error.detail
    assert world.runner.starts == []


def test_a_control_file_that_cannot_be_written_ends_the_run_launch_failed() -> None:
    world = HostWorld()
    world.fs.fail(
        "write_atomic", f"{RUNTIME_DIR}/control/result.schema.json", "No space left on device", 28
    )
    record = world.run([Round.ok(ok_result())])
    assert record.error is not None and record.error.code == "launch_failed"
    assert "No space left on device" in record.error.detail
    assert world.runner.starts == [] and world.runtime_dirs() == []


# --- an exception of our own mid-run ------------------------------------------------------------


@pytest.mark.req("Nothing but the trace outlives a worker")
@pytest.mark.req("No worker process outlives its round")
def test_an_exception_escaping_mid_round_still_kills_the_group_and_removes_the_runtime(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = HostWorld()
    events: list[str] = []

    def feed(self: TestStreamReader, line: str) -> None:
        raise RuntimeError("a defect of the host's own stream reading")

    original_wait, original_kill = FakeProcessHandle.wait, FakeProcessHandle.kill_group

    def wait(self: FakeProcessHandle, timeout: float | None) -> int | None:
        events.append(f"wait {timeout}")
        return original_wait(self, timeout)

    def kill_group(self: FakeProcessHandle) -> None:
        events.append("kill")
        original_kill(self)

    monkeypatch.setattr(TestStreamReader, "feed", feed)
    monkeypatch.setattr(FakeProcessHandle, "wait", wait)
    monkeypatch.setattr(FakeProcessHandle, "kill_group", kill_group)
    with pytest.raises(RuntimeError, match="a defect"):
        world.run([Round.ok(ok_result())])
    assert events == ["kill", "wait None"]  # killed, then waited for, before the cleanup
    assert not world.exists(CREDENTIAL_COPY) and world.runtime_dirs() == []
    node = world.run_node()
    assert node["status"] == "failed" and node["ended_at"] is not None


@pytest.mark.req("Nothing but the trace outlives a worker")
def test_an_exception_before_preparation_still_removes_the_runtime_directory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = HostWorld()

    def phase(self: ProgressWriter, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("a defect of the host's own progress file")

    monkeypatch.setattr(ProgressWriter, "phase", phase)
    with pytest.raises(RuntimeError, match="a defect"):
        world.run([Round.ok(ok_result())])
    assert world.runtime_dirs() == []


@pytest.mark.req("A cleanup that failed fails the run")
@pytest.mark.req("Nothing but the trace outlives a worker")
def test_a_transcript_lookup_that_raises_still_removes_the_runtime_directory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = HostWorld()

    def transcript(self: ScriptedBackend, context: Any, session: str | None) -> str | None:
        raise OSError("a defect of the backend's transcript lookup")

    monkeypatch.setattr(ScriptedBackend, "transcript", transcript)
    record = world.run([Round.failed("boom", transcript="s-1")])
    assert not world.exists(CREDENTIAL_COPY) and world.runtime_dirs() == []
    link = record.error
    assert link is not None and link.code == "cleanup_failed"
    assert "could not find its transcript" in link.detail
    assert record.transcript is None


@pytest.mark.req("Only the host deletes")
def test_a_directory_swapped_for_a_link_after_the_plan_is_never_followed() -> None:
    world = HostWorld()
    _tracked(world, OLD)
    world.fs.write("/outside/old.py", "not the worktree's\n")
    parent = f"{WORKTREE}/src/app"
    original = world.fs.realpath
    calls: list[str] = []

    def realpath(path: str) -> str:
        real = original(path)
        if path == parent and world.runner.handles:
            calls.append(path)
            if len(calls) == 1:  # the plan judged it: now a directory becomes a link
                world.fs.rmtree(parent)
                world.fs.symlink("/outside", parent)
        return real

    world.fs.realpath = realpath  # type: ignore[method-assign]
    record = world.run([Round.ok(_with_old())])
    assert world.text("/outside/old.py") == "not the worktree's\n"
    assert record.deleted == () and record.deletions_failed == (OLD,)
    assert record.error is not None and record.error.code == "deletion_failed"
    assert "changed since it was judged" in record.error.detail


# --- a confined run's writable space (issue 30 §2) ------------------------------------------------


def _space_world() -> tuple[HostWorld, FakeSpaces]:
    world = HostWorld()
    spaces = FakeSpaces(look=lambda runtime: world.exists(CREDENTIAL_COPY))
    return world, spaces


@pytest.mark.req("Bash runs sandboxed without network")
def test_a_confined_run_s_space_is_made_before_anything_is_written_there_and_entered_by_each_round() -> (
    None
):
    world, spaces = _space_world()
    record = world.run([Round.transient(), Round.ok(ok_result())], confined=True, spaces=spaces)
    assert record.status == "ok", record.error
    # made once, of the run's size, before the credential copy was written into it
    size = ResourceLimits().space_mib * 1024 * 1024
    assert [(root, asked) for root, asked, _ in spaces.opened] == [(RUNTIME_DIR, size)]
    assert spaces.held_at_open == [False]
    # every round enters it first, then the confinement (bwrap behind `env`)
    join = spaces.spaces[0].join()
    assert len(world.runner.starts) == 2
    for start in world.runner.starts:
        assert start.argv[: len(join)] == join
        assert "--unshare-ipc" in start.argv and "--unshare-cgroup" in start.argv
    # given back once the run ended, its runtime directory gone
    assert spaces.closed == [RUNTIME_DIR] and world.runtime_dirs() == []


@pytest.mark.parametrize(
    "spaces",
    [
        pytest.param(FakeSpaces(problem="the kernel said no"), id="the space cannot be made"),
        pytest.param(None, id="a host wired without spaces"),
    ],
)
def test_a_confined_run_whose_space_cannot_be_made_is_refused_before_anything_is_written(
    spaces: FakeSpaces | None,
) -> None:
    world = HostWorld()
    record = world.run([Round.ok(ok_result())], confined=True, spaces=spaces)
    assert record.error is not None and record.error.code == "launch_failed"
    assert "the runtime directory's writable space (512 MiB" in record.error.detail
    assert (spaces is None) or "the kernel said no" in record.error.detail
    assert world.runner.starts == []
    assert not any(p == CREDENTIAL_COPY for p, _ in world.writes_under(RUNTIME_DIR))
    assert world.runtime_dirs() == []


def test_an_unconfined_run_makes_no_space() -> None:
    world, spaces = _space_world()
    record = world.run([Round.ok(ok_result())], spaces=spaces)
    assert record.status == "ok" and spaces.opened == []
