"""`concorde-workers run` and `show` through `cli.main(argv, out, err, container)` against the fakes,
and the formatting of adapters/cli/views/progress.py (the progress line) and display.py (the end-of-run
account).

The container is PlanWorld's (FakeFileSystem, FakeGit, FakeClock, FakeRandom) with the backends
replaced by ScriptedBackend and the process runner by its FakeProcessRunner: the run host runs
for real over them, in the CLI's worker thread, while the CLI's main thread watches status.json.
"""

from __future__ import annotations

import io
import json
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from dependency_injector import providers
from fakes.agent import Round, ScriptedBackend
from fakes.process import FakeStart
from fakes.world import PRIMARY, USER_HOME, WORKTREE, PlanWorld
from timing import eventually
from worlds.repository import GRANT

from concorde_workers.adapters.cli import main as cli
from concorde_workers.adapters.cli.views import watch
from concorde_workers.adapters.cli.views.display import account, error_lines, outcome_of, round_line
from concorde_workers.adapters.cli.views.progress import (
    ProgressWatcher,
    elapsed_text,
    progress_text,
)
from concorde_workers.application.tracing.reader import read_record
from concorde_workers.container import PROFILES, Container
from concorde_workers.domain.configuration.profile import programs_of
from concorde_workers.domain.configuration.program_versions import ProgramVersion
from concorde_workers.domain.evidence.records import (
    AuditRecord,
    LastAction,
    ProgressFile,
    RoundRecord,
    RunRecord,
    Usage,
)
from concorde_workers.domain.ground.errors import ErrorLink, Reason, Unhandled

PROGRAMS = programs_of(PROFILES)

PARENT = "/work/trace"
WORKERS_DIR = f"{PARENT}/workers"
RUN_ID = "w-20260101T000000-abc123"
RUN_DIR = f"{WORKERS_DIR}/{RUN_ID}"
HOST_PID = 4242
GRANT_FILE = "/work/grant.json"
REQUEST_FILE = "/work/request.json"
RESULT: dict[str, Any] = {
    "status": "ok",
    "summary": "greeting added",
    "error": None,
    "proposed_deletions": [],
    "output": {},
}
BLOCKED: dict[str, Any] = {
    "status": "blocked",
    "summary": "cannot",
    "proposed_deletions": [],
    "output": {},
    "error": {
        "code": "needs_decision",
        "detail": "which greeting?",
        "evidence": [],
        "attempts": [],
        "unhandled": {"reason": "decision", "explanation": "two options"},
        "options": ["hello", "hi"],
        "recommendation": "hello",
    },
}
WORKERS: dict[str, Any] = {
    "schema_version": 2,
    "enabled_models": {"m-claude": {"reasoning": "high"}, "m-local": {}},
    "default": {"model": "m-local"},
    "operations": {"implement": {"default": {"model": "m-local", "reasoning": "medium"}}},
    "limits": {"max_turns": 25, "rounds": 1},
}
MODELS: dict[str, Any] = {
    "schema_version": 1,
    "models": {"m-local": {"pi": "local/m-local"}, "m-claude": {"claude": "claude-x-1"}},
}


class TtyText(io.StringIO):
    """A StringIO that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@dataclass
class Result:
    status: int
    out: str
    err: str

    def json(self) -> dict[str, Any]:
        data = json.loads(self.out)
        assert isinstance(data, dict)
        return data


@dataclass
class RunWorld:
    """PlanWorld with a parent trace node folder, a grant file and a request file in the fake
    filesystem, and a container whose backend plays `rounds`."""

    rounds: Sequence[Round] = ()
    backend: str = "pi"
    world: PlanWorld = field(default_factory=PlanWorld)

    def __post_init__(self) -> None:
        fs = self.world.fs
        fs.mkdir("/work/trace")
        fs.write(GRANT_FILE, json.dumps(GRANT))
        fs.write(
            REQUEST_FILE,
            json.dumps(
                {
                    "worktree": WORKTREE,
                    "task_type": "implement",
                    "grant": GRANT,
                    "instructions": "add a greeting",
                }
            ),
        )
        self.scripted = ScriptedBackend(self.backend, fs, rounds=self.rounds)  # type: ignore[arg-type]
        self.runner = self.scripted.runner()
        self.container: Container = self.world.container()
        self.container.backends.override(
            providers.Dict(
                pi=providers.Object(
                    self.scripted if self.backend == "pi" else ScriptedBackend("pi", fs)
                ),
                claude=providers.Object(
                    self.scripted if self.backend == "claude" else ScriptedBackend("claude", fs)
                ),
            )
        )
        self.container.processes.override(providers.Object(self.runner))
        self.container.host_pid.override(providers.Object(HOST_PID))

    @property
    def fs(self) -> Any:
        return self.world.fs

    def main(self, *argv: str, err: io.StringIO | None = None) -> Result:
        out, err = io.StringIO(), err if err is not None else io.StringIO()
        status = cli.main(list(argv), out, err, container=self.container)
        result = Result(status, out.getvalue(), err.getvalue())
        assert "Traceback" not in result.out + result.err
        assert "internal error" not in result.err, result.err
        return result

    def run(self, *argv: str, err: io.StringIO | None = None) -> Result:
        return self.main("run", REQUEST_FILE, "--parent", PARENT, *argv, err=err)

    def run_dirs(self) -> list[str]:
        if not self.fs.is_dir(WORKERS_DIR):
            return []
        return [e.name for e in self.fs.listdir(WORKERS_DIR)]


def write(path: str, text: str) -> Callable[[FakeStart], None]:
    def effect(started: FakeStart) -> None:
        World.current.fs.write(path, text)

    return effect


class World:
    """The world the scripted effects act on (set by each test that uses `write`)."""

    current: RunWorld


def world(*rounds: Round, backend: str = "pi") -> RunWorld:
    made = RunWorld(rounds=rounds, backend=backend)
    World.current = made
    return made


@pytest.fixture(autouse=True)
def quick_refresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watch, "REFRESH_SECONDS", 0.02)


# --- the progress line ---------------------------------------------------------------------------


def progress(**fields: Any) -> ProgressFile:
    data: dict[str, Any] = {
        "run_id": RUN_ID,
        "task_type": "implement",
        "backend": "pi",
        "worktree": WORKTREE,
        "operation_run_id": None,
        "phase": "worker",
        "round": 2,
        "last_action": None,
        "status": None,
        "host_pid": HOST_PID,
        "started_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:00:30Z",
    }
    return ProgressFile.model_validate(data | fields)


def test_the_progress_line_names_run_round_phase_last_action_and_elapsed_time() -> None:
    action = LastAction.of("Write", f"{WORKTREE}/src/app/main.py", "2026-01-01T00:01:00Z")
    line = progress_text(progress(last_action=action), datetime(2026, 1, 1, 0, 1, 5, tzinfo=UTC))
    assert line == f"{RUN_ID} · round 2 · worker · Write {WORKTREE}/src/app/main.py · 1m05s"


def test_a_finished_progress_line_shows_the_final_status_and_the_run_s_length() -> None:
    line = progress_text(
        progress(phase="finished", status="interrupted"), datetime(2026, 1, 1, 5, tzinfo=UTC)
    )
    assert line == f"{RUN_ID} · round 2 · finished interrupted · 30s"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (7.9, "7s"), (65, "1m05s"), (3600 + 180 + 5, "1h03m"), (-3, "0s")],
)
def test_elapsed_text(seconds: float, text: str) -> None:
    assert elapsed_text(seconds) == text


# --- the account ---------------------------------------------------------------------------------


def link(
    code: str, detail: str, reason: Reason = Reason.ENVIRONMENT, causes: Sequence[ErrorLink] = ()
) -> ErrorLink:
    return ErrorLink(
        level="workers",
        actor=f"Workers run {RUN_ID} (implement worker)",
        code=code,
        detail=detail,
        unhandled=Unhandled(reason=reason, explanation="x"),
        causes=tuple(causes),
    )


def usage() -> Usage:
    return Usage(
        tokens_in=None,
        tokens_out=None,
        tokens_cache_read=None,
        tokens_cache_write=None,
        cost_usd=None,
        turns=None,
        duration_seconds=3,
    )


def record(**fields: Any) -> RunRecord:
    data: dict[str, Any] = {
        "run_id": RUN_ID,
        "status": "ok",
        "error": None,
        "started_at": "2026-01-01T00:00:00Z",
        "ended_at": "2026-01-01T00:02:00Z",
        "task_type": "implement",
        "operation": None,
        "worker": None,
        "backend": "pi",
        "backend_source": None,
        "model": None,
        "local_model": None,
        "model_map": None,
        "reasoning": None,
        "worktree": WORKTREE,
        "context_identity": None,
        "grant_digest": None,
        "settings_digest": None,
        "brief_digest": None,
        "tools": None,
        "transcript": None,
        "stderr_tail": "",
        "worker_result": None,
        "deleted": (),
        "deletions_refused": (),
        "deletions_absent": (),
        "deletions_failed": (),
        "trace_failures": (),
        "run_directory": RUN_DIR,
        "runtime_directory": "/tmp/concorde-abc123-x",
        "rounds": (),
    }
    return RunRecord(**(data | fields))


def test_the_error_chain_is_indented_by_depth_with_code_reason_and_detail() -> None:
    chain = link(
        "cleanup_failed",
        "the runtime directory remains\nsecond line",
        causes=[
            link(
                "audit_violation",
                "round 1: docs/notes.md",
                Reason.PERMISSION,
                causes=[link("worker_failed", "it broke", Reason.CAPABILITY)],
            )
        ],
    )
    assert error_lines(chain) == [
        "  cleanup_failed (environment): the runtime directory remains",
        "    second line",
        "    audit_violation (permission): round 1: docs/notes.md",
        "      worker_failed (capability): it broke",
    ]


def test_a_round_line_has_prompt_exit_audit_changed_and_violations() -> None:
    violations = [f"v{i}" for i in range(7)]
    line = round_line(
        RoundRecord(
            round=1,
            prompt="initial",
            session="s-1",
            exit=0,
            duration=3,
            usage=usage(),
            audit=AuditRecord(
                verdict="violation", changed=("a", "b", *violations), violations=tuple(violations)
            ),
            evidence=(),
            validation="clean",
        )
    )
    assert line[0] == (
        "  1  initial  exit 0  audit violation  changed 9  violations 7: "
        "v0, v1, v2, v3, v4 and 2 more  3s"
    )
    assert line[1].strip() == "validation: clean"
    unaudited = round_line(RoundRecord(round=2, prompt="retry", usage=usage()))
    assert "exit -" in unaudited[0] and "audit not run" in unaudited[0]


def test_the_account_names_the_model_as_the_record_has_it() -> None:
    """Issue 19 §2: a request with only a local id said "model - (id)"."""
    only_local = account(record(local_model="claude-opus-4-8"))
    assert ", local model claude-opus-4-8 (no project model named)" in only_local
    assert "model -" not in only_local
    both = account(record(model="m-local", local_model="local/m-local"))
    assert ", model m-local (local/m-local)" in both
    assert "model" not in account(record()).split("\n")[1]


def test_the_account_of_an_ok_run() -> None:
    text = account(
        record(
            worker_result=RESULT,
            operation="implement",
            worker="w1",
            model="m-local",
            local_model="local/m-local",
            reasoning="medium",
            transcript=f"{RUN_DIR}/transcript.jsonl",
            deleted=("src/app/old.py",),
            deletions_absent=("src/app/gone.py",),
            rounds=(
                RoundRecord(
                    round=1,
                    prompt="initial",
                    session="s-1",
                    exit=0,
                    duration=3,
                    usage=usage(),
                    audit=AuditRecord(verdict="clean", changed=("src/app/main.py",), violations=()),
                ),
            ),
        )
    )
    assert text.startswith(f"run {RUN_ID}: ok\n")
    assert (
        "implement worker w1 of Operation implement on pi, model m-local (local/m-local), "
        "reasoning medium" in text
    )
    assert "worker result: ok — greeting added" in text
    assert "ended 2026-01-01T00:02:00Z (2m00s)" in text
    assert "  1  initial  exit 0  audit clean  changed 1  violations 0  3s" in text
    assert "  deleted src/app/old.py" in text and "  absent  src/app/gone.py" in text
    assert "\nerror\n" not in text
    assert f"record        {RUN_DIR}/trace.json" in text
    assert f"transcript    {RUN_DIR}/transcript.jsonl" in text


def test_the_account_names_the_agent_programs_the_run_was_prepared_with() -> None:
    """Issue 11: the versions from the run directory's programs.json, under the worker line."""
    programs = (
        ProgramVersion(
            spec=PROGRAMS["pi"], path="/opt/bin/pi", version="0.73.1", source="/opt/pi/package.json"
        ),
        ProgramVersion(
            spec=PROGRAMS["sandbox-runtime"],
            path="/opt/srt",
            version="0.0.83",
            source="/opt/srt/package.json",
        ),
    )
    lines = account(record(), programs).splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  implement worker"))
    assert lines[at + 1 : at + 3] == [
        "  program pi 0.73.1 (at least 0.73.1) /opt/bin/pi  ← /opt/pi/package.json",
        "  program sandbox-runtime 0.0.83 (at least 0.0.78) /opt/srt  ← /opt/srt/package.json",
    ]
    assert "  program " not in account(record())


def test_the_account_of_an_interrupted_run_and_its_outcome() -> None:
    interrupted = record(status="failed", error=link("interrupted", "SIGINT"))
    assert outcome_of(interrupted) == "interrupted"
    text = account(interrupted)
    assert text.startswith(f"run {RUN_ID}: failed (interrupted): interrupted\n")
    assert "none: the run ended before its first round" in text
    after_cleanup = record(
        status="failed", error=link("cleanup_failed", "x", causes=[link("interrupted", "SIGTERM")])
    )
    assert outcome_of(after_cleanup) == "interrupted"
    assert outcome_of(record(status="blocked", error=link("worker_blocked", "b"))) == "blocked"
    assert outcome_of(record()) == "ok"


def test_the_account_lists_refused_trace_writes() -> None:
    text = account(record(trace_failures=(f"{RUN_DIR}/trace.json (end): Permission denied",)))
    assert f"trace write refused: {RUN_DIR}/trace.json (end): Permission denied" in text


# --- the watcher -----------------------------------------------------------------------------------


def test_the_watcher_finds_the_single_new_run_folder_and_ignores_older_ones() -> None:
    w = world()
    w.fs.mkdir(f"{WORKERS_DIR}/w-20250101T000000-000001")
    stream = io.StringIO()
    watcher = ProgressWatcher(w.fs, PARENT, stream, live=False, now=w.world.clock.now_utc)
    watcher.refresh()
    assert watcher.run_dir is None and stream.getvalue() == ""
    w.fs.write(f"{RUN_DIR}/status.json", progress(round=1).model_dump_json())
    watcher.refresh()
    watcher.refresh()  # no change of phase: no second line
    assert watcher.run_dir == RUN_DIR
    assert stream.getvalue() == f"concorde-workers: {RUN_ID} · round 1 · worker · 0s\n"
    w.fs.write(f"{RUN_DIR}/status.json", "{half written")
    watcher.refresh()  # skipped: an observation aid only
    assert stream.getvalue().count("\n") == 1


def test_with_two_new_run_folders_the_watcher_takes_the_one_of_its_process() -> None:
    w = world()
    other = f"{WORKERS_DIR}/w-20260101T000000-ffffff"
    watcher = ProgressWatcher(
        w.fs, PARENT, io.StringIO(), live=False, now=w.world.clock.now_utc, host_pid=HOST_PID
    )
    w.fs.write(f"{other}/status.json", progress(host_pid=1).model_dump_json())
    w.fs.write(f"{RUN_DIR}/status.json", progress().model_dump_json())
    watcher.refresh()
    assert watcher.run_dir == RUN_DIR


# --- run -----------------------------------------------------------------------------------------


def ok_round(**more: Any) -> Round:
    return Round.ok(
        RESULT,
        tools=[("Write", f"{WORKTREE}/src/app/main.py")],
        effects=write(f"{WORKTREE}/src/app/main.py", "print('hello')\n"),
        **more,
    )


def test_an_ok_run_exits_0_and_prints_its_account() -> None:
    w = world(ok_round())
    result = w.run()
    assert result.status == 0, result.err
    assert result.out.startswith(f"run {RUN_ID}: ok\n")
    assert "  1  initial  exit 0  audit clean  changed 1  violations 0" in result.out
    assert f"run directory {RUN_DIR}" in result.out
    assert f"concorde-workers: {RUN_ID} · round 1 · finished ok" in result.err
    assert w.run_dirs() == [RUN_ID]


@pytest.mark.req("A running run shows its progress")
def test_while_the_run_runs_its_phase_round_and_last_action_show_on_stderr() -> None:
    err = io.StringIO()

    def wait_until_shown(started: FakeStart) -> None:
        World.current.fs.write(f"{WORKTREE}/src/app/main.py", "print('hello')\n")
        # The progress line is printed by the CLI's own thread: wait for it, however long.
        eventually(lambda: "· worker" in err.getvalue(), "the progress line of the worker phase")

    w = world(
        Round.ok(RESULT, tools=[("Write", f"{WORKTREE}/src/app/main.py")], effects=wait_until_shown)
    )
    result = w.run(err=err)
    assert result.status == 0
    lines = result.err.splitlines()
    assert f"concorde-workers: {RUN_ID} · round 1 · worker · 0s" in lines
    assert lines[-1] == f"concorde-workers: {RUN_ID} · round 1 · finished ok · 0s"


def test_on_a_terminal_the_progress_is_one_line_rewritten_in_place_then_cleared() -> None:
    err = TtyText()
    w = world(ok_round())
    result = w.run(err=err)
    assert result.status == 0
    assert result.err.startswith("\rconcorde-workers: ")
    assert "\n" not in result.err
    assert result.err.endswith("\r\x1b[K")


def test_json_prints_the_returned_run_record() -> None:
    w = world(ok_round())
    result = w.run("--json")
    assert result.status == 0
    data = result.json()
    assert data["run_id"] == RUN_ID and data["status"] == "ok"
    assert data["rounds"][0]["audit"]["changed"] == ["src/app/main.py"]
    RunRecord.model_validate(data)


def test_an_audit_violation_exits_1_and_accounts_for_the_violation() -> None:
    w = world(Round.ok(RESULT, effects=write(f"{WORKTREE}/docs/notes.md", "changed\n")))
    result = w.run()
    assert result.status == 1
    assert result.out.startswith(f"run {RUN_ID}: failed: audit_violation\n")
    assert "audit violation  changed 1  violations 1: docs/notes.md" in result.out
    assert "\nerror\n  audit_violation (permission): " in result.out


def test_a_blocked_worker_exits_1_with_the_worker_s_link_as_a_cause() -> None:
    w = world(Round.ok(BLOCKED))
    result = w.run()
    assert result.status == 1
    assert result.out.startswith(f"run {RUN_ID}: blocked: worker_blocked\n")
    assert "\n    needs_decision (decision): which greeting?" in result.out


def test_a_refusal_of_the_preparation_is_a_run_that_failed_with_its_record() -> None:
    bad = dict(GRANT, entries=[{"path": "/etc/passwd", "level": "rw"}])
    w = world(ok_round())
    w.fs.write(GRANT_FILE, json.dumps(bad))
    result = w.run("--grant", GRANT_FILE)
    assert result.status == 1
    assert "grant_malformed" in result.out.splitlines()[0]
    assert w.run_dirs() == [RUN_ID]
    assert not w.runner.starts


def test_flags_win_over_the_request_file() -> None:
    w = world(ok_round())
    result = w.run("--instructions", "another task", "--json")
    assert result.status == 0
    assert "another task" in w.runner.starts[0].stdin_text  # the brief holds the instructions


def test_operation_and_worker_resolve_through_the_worker_configuration() -> None:
    w = world(ok_round())
    w.world.commit_config(WORKERS)
    w.world.write_model_map(MODELS)
    result = w.run("--operation", "implement", "--worker", "w1", "--json")
    assert result.status == 0, result.out + result.err
    data = result.json()
    assert (
        data["operation"],
        data["worker"],
        data["model"],
        data["local_model"],
        data["reasoning"],
    ) == ("implement", "w1", "m-local", "local/m-local", "medium")
    assert data["model_map"] == f"{USER_HOME}/.config/concorde/models.json"


def refused(result: Result, *needles: str) -> None:
    assert result.status == 2, result
    assert result.out == ""
    assert "concorde-workers: refused: " in result.err
    for needle in needles:
        assert needle in result.err, (needle, result.err)


def test_a_configuration_refusal_exits_2_before_any_run_directory_exists() -> None:
    w = world(ok_round())  # no .concorde/workers.json committed
    result = w.run("--operation", "implement", "--worker", "w1")
    refused(result, "config_missing", f"{WORKTREE}/.concorde/workers.json")
    assert not w.fs.lexists(WORKERS_DIR)
    assert not w.runner.starts


def test_a_configuration_refusal_in_json_is_one_document_on_stdout() -> None:
    w = world(ok_round())
    result = w.run("--operation", "implement", "--worker", "w1", "--json")
    assert result.status == 2
    assert result.json()["refusal"]["code"] == "config_missing"


@pytest.mark.parametrize(
    ("argv", "needles"),
    [
        (["run", REQUEST_FILE], ["request_invalid", "--parent DIR"]),
        (
            ["run", REQUEST_FILE, "--parent", "/work/none"],
            ["/work/none (--parent) does not exist", "create it"],
        ),
        (["run", REQUEST_FILE, "--parent", GRANT_FILE], [f"{GRANT_FILE} (--parent) is not a dir"]),
        (["run", "/work/missing.json", "--parent", PARENT], ["/work/missing.json cannot be read"]),
        (
            ["run", REQUEST_FILE, "--parent", PARENT, "--operation", "implement"],
            ["without a worker id", "--operation and --worker"],
        ),
        (
            ["run", REQUEST_FILE, "--parent", PARENT, "--declare", "nocolon"],
            ["--declare 'nocolon' is not OPERATION:WORKER"],
        ),
        (["run", "--parent", PARENT], ["names no worktree", "--worktree"]),
    ],
)
def test_every_bad_input_is_a_refusal_naming_the_flag_or_file(
    argv: list[str], needles: list[str]
) -> None:
    w = world(ok_round())
    refused(w.main(*argv), *needles)
    assert not w.fs.lexists(WORKERS_DIR)


def test_a_malformed_request_file_is_refused_naming_it() -> None:
    w = world(ok_round())
    w.fs.write(REQUEST_FILE, "{not json")
    refused(w.run(), REQUEST_FILE, "not valid JSON", "repair the file")


# --- interruption ----------------------------------------------------------------------------------


def raise_signal(signum: signal.Signals) -> Callable[[FakeStart], None]:
    """The round's effect: the signal arrives while the worker runs (the handler the CLI
    installed is called as Python would call it)."""

    def effect(started: FakeStart) -> None:
        handler = signal.getsignal(signum)
        assert callable(handler), "the CLI installed no handler for the run"
        handler(signum, None)

    return effect


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_mid_round_ends_the_run_interrupted_with_exit_130(signum: signal.Signals) -> None:
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    w = world(Round.timeout(effects=raise_signal(signum), transcript="s-1"))
    result = w.run()
    assert result.status == 130, result.out
    assert result.out.startswith(f"run {RUN_ID}: failed (interrupted): interrupted\n"), result.out
    assert f"concorde-workers received {signum.name}" in result.out
    assert w.runner.kills  # the worker's process group was killed
    assert {s: signal.getsignal(s) for s in before} == before  # handlers restored
    node = json.loads(w.fs.read_text(f"{RUN_DIR}/trace.json"))
    assert node["outcome"] == "interrupted"
    assert not w.fs.lexists("/tmp/concorde-abc123-0badcafe")


def test_signal_handlers_are_restored_after_a_refused_run_too() -> None:
    before = signal.getsignal(signal.SIGINT)
    w = world()
    w.main("run", REQUEST_FILE)
    assert signal.getsignal(signal.SIGINT) == before


# --- show ----------------------------------------------------------------------------------------


def test_show_prints_the_same_account_and_record_as_the_run() -> None:
    w = world(ok_round())
    ran = w.run("--json")
    shown = w.main("show", RUN_DIR, "--json")
    assert shown.status == 0
    expected = ran.json() | {"runtime_directory": shown.json()["runtime_directory"]}
    assert shown.json() == expected
    text = w.main("show", RUN_DIR)
    assert text.status == 0
    rebuilt = read_record(w.fs, RUN_DIR)
    assert isinstance(rebuilt, RunRecord)
    assert text.out == account(rebuilt)
    assert text.out.startswith(f"run {RUN_ID}: ok\n")


def test_show_takes_a_run_directory_relative_to_the_working_directory() -> None:
    w = world(ok_round())
    w.run()
    relative = f"../trace/workers/{RUN_ID}"  # the world's cwd is PRIMARY, /work/repo
    assert PRIMARY == "/work/repo"
    assert w.main("show", relative).status == 0


@pytest.mark.parametrize(
    ("setup", "needles"),
    [
        ("missing", [f"{RUN_DIR} does not exist", "give RUN_DIR as the run directory"]),
        ("no trace", [f"{RUN_DIR}/trace.json: missing", "give RUN_DIR"]),
        ("malformed", [f"{RUN_DIR}/trace.json: not JSON"]),
        ("running", [f"{RUN_DIR}/trace.json: the run has not ended"]),
    ],
)
def test_show_refuses_a_missing_or_malformed_run_directory_naming_the_file(
    setup: str, needles: list[str]
) -> None:
    w = world(ok_round())
    if setup != "missing":
        w.run()
    if setup == "no trace":
        w.fs.remove(f"{RUN_DIR}/trace.json")
    elif setup == "malformed":
        w.fs.write(f"{RUN_DIR}/trace.json", "{")
    elif setup == "running":
        node = json.loads(w.fs.read_text(f"{RUN_DIR}/trace.json"))
        node.update(status="running", ended_at=None, outcome=None, error=None)
        w.fs.write(f"{RUN_DIR}/trace.json", json.dumps(node))
    result = w.main("show", RUN_DIR)
    refused(result, "record_unreadable", *needles)


def test_show_refusal_in_json() -> None:
    w = world()
    result = w.main("show", RUN_DIR, "--json")
    assert result.status == 2
    refusal = result.json()["refusal"]
    assert refusal["code"] == "record_unreadable" and refusal["file"] == RUN_DIR


def test_the_account_shows_a_retried_round_s_transient_error() -> None:
    w = world(
        Round.transient("API Error: 529 Overloaded"),
        Round.ok(RESULT, effects=write(f"{WORKTREE}/src/app/main.py", "x\n")),
    )
    result = w.run()
    assert result.status == 0, result.out
    lines = result.out.splitlines()
    assert (
        lines[lines.index("rounds (2)") + 2]
        .strip()
        .startswith("transient: API Error: 529 Overloaded (retried after")
    )
    assert lines[lines.index("rounds (2)") + 3].startswith("  2  retry    exit 0  audit clean")


def test_a_fault_of_the_host_is_one_line_with_status_3_and_the_handlers_restored() -> None:
    class Broken:
        def refusal_before_run(self, request: Any) -> None:
            return None  # the command line's check before the run asks the host that runs it

        def git_dir(self, request: Any) -> None:
            return None  # no worktree the command line's lock could lie beside

        def run(self, *args: Any, **kwargs: Any) -> None:
            raise RuntimeError("the host broke")

    before = signal.getsignal(signal.SIGINT)
    w = world()
    w.container.worker_host.override(providers.Object(Broken()))
    out, err = io.StringIO(), io.StringIO()
    assert cli.main(["run", REQUEST_FILE, "--parent", PARENT], out, err, container=w.container) == 3
    assert (
        err.getvalue()
        .splitlines()[-1]
        .startswith("concorde-workers: internal error (RuntimeError: the host broke)")
    )
    assert "Traceback" not in err.getvalue()
    assert signal.getsignal(signal.SIGINT) == before


def test_the_parent_may_come_from_the_request_file_and_is_named_there_when_missing() -> None:
    w = world(ok_round())
    data = json.loads(w.fs.read_text(REQUEST_FILE))
    w.fs.write(REQUEST_FILE, json.dumps(data | {"parent": "/work/elsewhere"}))
    refused(
        w.main("run", REQUEST_FILE),
        f'/work/elsewhere (the "parent" field of the request file {REQUEST_FILE}) does not exist',
    )
    w.fs.write(REQUEST_FILE, json.dumps(data | {"parent": PARENT}))
    assert w.main("run", REQUEST_FILE).status == 0
    assert w.run_dirs() == [RUN_ID]


def test_plan_uses_the_given_container_too() -> None:
    w = world()
    result = w.main("plan", REQUEST_FILE, "--json")
    assert result.status == 0, result.out
    assert result.json()["verdict"] == "launch"
    assert not w.fs.lexists(WORKERS_DIR)


# --- every ending told truly: refusals, the progress line, show -------------------------------


def test_a_run_refused_before_any_round_says_no_round_in_its_progress_line() -> None:
    w = world(ok_round())
    w.fs.write(GRANT_FILE, json.dumps(dict(GRANT, entries=[{"path": "/etc", "level": "rw"}])))
    result = w.run("--grant", GRANT_FILE)
    assert result.status == 1 and not w.runner.starts
    assert f"{RUN_ID} · no round · finished failed" in result.err
    assert "round 1" not in result.err


def test_a_finished_line_of_a_run_without_a_round_says_no_round() -> None:
    line = progress_text(
        progress(phase="finished", status="failed", round=1),
        datetime(2026, 1, 1, 5, tzinfo=UTC),
        round_begun=False,
    )
    assert line == f"{RUN_ID} · no round · finished failed · 30s"


USAGE_ERRORS = [
    pytest.param(
        ["plan", "--bogus", "--json"], "unrecognized arguments: --bogus", id="an unknown flag"
    ),
    pytest.param(
        ["run", "--json", "--parent"],
        "argument --parent: expected one argument",
        id="a flag without its value",
    ),
    pytest.param(["bogus", "--json"], "invalid choice: 'bogus'", id="an unknown command"),
    pytest.param(["--json"], "the following arguments are required: COMMAND", id="no command"),
    pytest.param(
        ["show", "--json"],
        "the following arguments are required: RUN_DIR",
        id="show without RUN_DIR",
    ),
]


@pytest.mark.parametrize(("argv", "said"), USAGE_ERRORS)
def test_a_usage_error_under_json_is_one_json_refusal(argv: list[str], said: str) -> None:
    result = world().main(*argv)
    assert result.status == 2 and result.err == ""
    refusal = result.json()["refusal"]
    assert refusal["code"] == "request_invalid" and refusal["reason"] == "input"
    assert said in refusal["message"] and "--help" in refusal["message"]


def test_a_usage_error_without_json_is_a_refusal_on_stderr() -> None:
    result = world().main("plan", "--bogus")
    assert result.status == 2 and result.out == ""
    assert result.err.startswith("concorde-workers: refused: request_invalid (input)\n")
    assert "unrecognized arguments: --bogus" in result.err


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["--grant", "/work/gra\0nt.json"], id="--grant"),
        pytest.param(["--instructions", "@/work/inst\0ructions.md"], id="--instructions @FILE"),
    ],
)
def test_a_nul_byte_in_a_flag_path_is_a_refusal(argv: list[str]) -> None:
    w = world(ok_round())
    result = w.main("run", REQUEST_FILE, "--parent", PARENT, *argv, "--json")
    assert result.status == 2, result.err
    refusal = result.json()["refusal"]
    assert refusal["code"] == "request_invalid" and "NUL byte" in refusal["message"]
    assert w.run_dirs() == []


@pytest.mark.parametrize("damage", ["", "{", '{"run_id": 1}', "\ufffd"])
def test_show_reads_a_run_whose_progress_file_is_damaged(damage: str) -> None:
    w = world(ok_round())
    ran = w.run("--json")
    w.fs.write(f"{RUN_DIR}/status.json", damage)
    shown = w.main("show", RUN_DIR, "--json")
    assert shown.status == 0, shown.out + shown.err
    record, rebuilt = ran.json(), shown.json()
    assert rebuilt["worktree"] == WORKTREE  # named by the brief as sent
    for key in ("stderr_tail", "runtime_directory"):
        record.pop(key), rebuilt.pop(key)
    assert rebuilt == record


def test_a_run_through_the_command_line_asks_git_each_placement_question_once() -> None:
    """The command line's check before the run and the run itself share one host, and with it
    Git's placement answers (application/preparation/placement_answers.py)."""
    w = world(ok_round())
    assert w.run().status == 0
    asked = [
        call[0] for call in w.world.git.calls if call[0] in ("toplevel", "worktrees", "git_dirs")
    ]
    assert sorted(asked) == ["git_dirs", "toplevel", "worktrees"]


# --- the command line's lock on the worktree (issue 31 §4) ------------------------------------

LOCK = f"{PRIMARY}/.git/worktrees/task/concorde-workers.lock"
READING = {
    **GRANT,
    "task_type": "review-architecture",
    "entries": [{"path": "src/", "level": "ro"}],
}


def with_grant(w: RunWorld, grant: dict[str, Any], task_type: str) -> None:
    data = json.loads(w.fs.read_text(REQUEST_FILE))
    w.fs.write(REQUEST_FILE, json.dumps(data | {"grant": grant, "task_type": task_type}))


@pytest.mark.parametrize(
    ("held_shared", "reads", "refused"),
    [
        pytest.param(False, False, True, id="a writing run beside a writing one"),
        pytest.param(False, True, True, id="a reading run beside a writing one"),
        pytest.param(True, False, True, id="a writing run beside a reading one"),
        pytest.param(True, True, False, id="a reading run beside a reading one"),
    ],
)
def test_the_command_line_holds_the_worktree_for_its_run(
    held_shared: bool, reads: bool, refused: bool
) -> None:
    """Seed 000 leaves the worktree's isolation to the caller and lets readers go on: the
    command line, a shell user's caller, takes the worktree's lock around its run (exclusive
    when the grant writes, shared when it only reads) and refuses, in its own words, a run that
    cannot have it; nothing of the run is made then."""
    w = world(ok_round(), ok_round())
    if reads:
        with_grant(w, READING, "review-architecture")
    other = w.fs.hold_lock(
        LOCK, '{"command": "concorde-workers run", "host_pid": 4242}', held_shared
    )
    assert not isinstance(other, str)
    result = w.run("--json")
    if refused:
        assert result.status == 2, result.err
        refusal = result.json()["refusal"]
        assert refusal["code"] == "worktree_busy", refusal
        assert "where another run works now" in refusal["message"]
        assert ("4242" in refusal["message"]) != held_shared, refusal["message"]
        assert w.run_dirs() == []
    else:  # the run is made (its scripted write is its own audit's business)
        assert result.status != 2 and w.run_dirs() != [], result.err
    other.release()
    assert w.run().status != 2  # free again: the run holds it, and lets it go at its end
    assert not w.fs.lexists(LOCK) or w.fs.read_text(LOCK) == ""
