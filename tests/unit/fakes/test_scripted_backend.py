"""ScriptedBackend: a real AgentBackend over scripted rounds."""

from __future__ import annotations

import json

import pytest
from fakes.agent import FAKE_PROGRAM, Round, ScriptedBackend, make_context, to_fake_process
from fakes.agent_stream import TestStreamReader
from fakes.filesystem import FakeFileSystem
from fakes.process import FakeProcessRunner, FakeStart

from concorde_workers.adapters.claude.environment import claude_environment
from concorde_workers.adapters.pi.environment import pi_environment
from concorde_workers.container import PROFILES
from concorde_workers.domain.ground.errors import Reason, Refusal
from concorde_workers.domain.ground.text import digest_text
from concorde_workers.domain.run.rounds import RoundEnding
from concorde_workers.ports.agents.agent import AgentBackend, RoundKind
from concorde_workers.ports.processes.process import ProcessStartFailed

RT = "/tmp/concorde-abc123-k9"
RESULT = {"status": "ok", "summary": "done", "error": None}


def test_it_is_an_agent_backend_standing_in_for_pi_or_claude() -> None:
    assert isinstance(ScriptedBackend("pi"), AgentBackend)
    assert isinstance(ScriptedBackend("claude"), AgentBackend)
    with pytest.raises(ValueError, match="stands in for"):
        ScriptedBackend("gemini")


@pytest.mark.parametrize(
    ("name", "settings"),
    [("claude", f"{RT}/control/settings.json"), ("pi", f"{RT}/control/permission.ts")],
)
def test_generate_writes_real_control_files_from_the_policy(name: str, settings: str) -> None:
    context = make_context(backend=name, runtime_dir=RT)
    generated = ScriptedBackend(name).generate(context)
    assert set(generated.files) == {settings, f"{RT}/control/result.schema.json"}
    assert generated.files[f"{RT}/control/result.schema.json"] == context.result_schema
    assert generated.settings_digest == digest_text(generated.files[settings])
    text = generated.files[settings]
    assert context.policy.sandbox.allow_write and context.policy.deny_rules
    assert all(json.dumps(p) in text for p in context.policy.sandbox.allow_write)
    assert all(json.dumps(rule) in text for rule in context.policy.deny_rules)
    assert generated.tools == PROFILES[name].tool_set(context.policy.grant)
    assert (generated.program, generated.program_found) == (FAKE_PROGRAM, True)


def test_the_settings_digest_follows_the_grant() -> None:
    one = ScriptedBackend("claude").generate(make_context(entries={"src/": "rw"}))
    other = ScriptedBackend("claude").generate(make_context(entries={"lib/": "rw"}))
    assert one.settings_digest != other.settings_digest


def test_command_environment_transcript_and_reader() -> None:
    backend = ScriptedBackend("claude", clock=None)
    context = make_context(
        backend="claude",
        runtime_dir=RT,
        environ={"PATH": "/bin", "ANTHROPIC_API_KEY": "k", "OTHER": "x"},
    )
    first = backend.command(context, RoundKind.INITIAL, None)
    retry = backend.command(context, RoundKind.RETRY, "s-1")
    assert first.argv == (FAKE_PROGRAM, "initial", "-") and first.cwd == f"{RT}/work"
    assert retry.argv == (FAKE_PROGRAM, "retry", "s-1")
    assert backend.commands == [(RoundKind.INITIAL, None), (RoundKind.RETRY, "s-1")]
    assert backend.environment(context) == claude_environment(context.environ, RT)
    assert "OTHER" not in backend.environment(context)
    assert pi_environment(context.environ, RT) == ScriptedBackend("pi").environment(context)
    assert backend.transcript(context, "s-1") == f"{RT}/config/sessions/s-1.jsonl"
    assert backend.transcript(context, None) is None
    assert backend.transcript(context, "../escape") is None
    reader = backend.reader(context)
    assert isinstance(reader, TestStreamReader) and reader.backend == "claude"
    assert backend.readers == [reader]


def test_credentials_and_check_are_configurable() -> None:
    context = make_context(runtime_dir=RT)
    copies = [("/home/u/.pi/agent/auth.json", f"{RT}/config/auth.json")]
    assert ScriptedBackend("pi").credential_copies(context) == ()
    assert ScriptedBackend("pi", credentials=copies).credential_copies(context) == tuple(copies)
    by_context = ScriptedBackend(
        "pi", credentials=lambda c: [("/u/f", c.policy.runtime.copy_of("auth.json"))]
    )
    assert by_context.credential_copies(context) == (("/u/f", f"{RT}/config/auth.json"),)
    refusal = Refusal(code="pi_runtime_missing", reason=Reason.ENVIRONMENT, message="no pi")
    assert ScriptedBackend("pi", refusal=refusal).check("/p") == refusal
    assert ScriptedBackend("pi").check("/p") is None


def test_rounds_as_data_read_as_their_ending() -> None:
    cases = [
        (Round.ok(RESULT), RoundEnding.OK),
        (Round.no_result(), RoundEnding.OK),
        (Round.transient(), RoundEnding.TRANSIENT_ERROR),
        (Round.failed("boom"), RoundEnding.PROCESS_FAILED),
        (Round.failed(exit=2), RoundEnding.PROCESS_FAILED),
        (Round.limit(), RoundEnding.LIMIT_REACHED),
    ]
    for round_, ending in cases:
        reader = TestStreamReader()
        for line in round_.lines:
            reader.feed(line)
        assert reader.finish(round_.exit, False, "").ending is ending, round_
    assert Round.timeout().hang and Round.not_started().fail_to_start
    assert Round.ok(RESULT).transcript == "s-1" and Round.failed().transcript is None


def test_rounds_become_fake_processes_and_write_their_transcript() -> None:
    fs = FakeFileSystem()
    backend = ScriptedBackend("pi", fs, rounds=[Round.transient(), Round.ok(RESULT)])
    context = make_context(runtime_dir=RT)
    backend.generate(context)
    processes = backend.processes()
    assert len(processes) == 2
    runner = backend.runner()
    handle = runner.start(["fake-agent", "initial", "-"], {}, f"{RT}/work")
    assert [json.loads(line)["type"] for line in handle.lines()] == ["session", "error"]
    assert handle.wait(None) == 1
    handle = runner.start(["fake-agent", "retry", "s-1"], {}, f"{RT}/work")
    assert handle.wait(None) == 0 and list(handle.lines())[-1].startswith('{"type": "result"')
    transcript = fs.read_text(f"{RT}/config/sessions/s-1.jsonl")
    assert transcript.count("\n") == 2  # one line per round that named the session


def test_effects_timeouts_and_failed_starts_reach_the_fake_process() -> None:
    started: list[FakeStart] = []
    runner = FakeProcessRunner.scripted(
        *ScriptedBackend(
            "pi",
            rounds=[
                Round.ok(RESULT, effects=started.append, transcript=False),
                Round.timeout(),
                Round.not_started("Permission denied"),
            ],
        ).processes()
    )
    runner.start(["a"], {"K": "v"}, "/rt/work", stdin_text="brief").wait(None)
    assert started[0].env == {"K": "v"} and started[0].stdin_text == "brief"
    hung = runner.start(["a"], {}, "/rt/work", timeout_seconds=5)
    assert hung.wait(None) is not None and hung.timed_out
    with pytest.raises(ProcessStartFailed, match="Permission denied"):
        runner.start(["a"], {}, "/rt/work")
    assert to_fake_process(Round.failed(exit=-9)).exit_status == -9
