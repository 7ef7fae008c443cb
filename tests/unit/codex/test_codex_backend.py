"""The Codex CLI backend's pure parts (issue 33 §1-3; docs/decisions.md 72): the command line,
the generated config.toml, the strict wire schema, the machine's codex.json, the round's
environment, the stream reader (thread, tool calls, cumulative usage, retries' texts, limits,
the decoded result), the rollout as transcript and the nested-namespace refusal. The real
program runs in tests/e2e/test_codex_smoke_e2e.py."""

from __future__ import annotations

import json
import tomllib

import pytest

from concorde_workers.adapters.codex.config import codex_config, wire_schema
from concorde_workers.adapters.codex.endpoint import CodexEndpoint, codex_endpoint
from concorde_workers.adapters.codex.environment import codex_environment
from concorde_workers.adapters.codex.launch import codex_command
from concorde_workers.adapters.codex.stream import CodexStreamReader, Prices, decode_result
from concorde_workers.adapters.codex.transcript import codex_events
from concorde_workers.contracts import worker_result_schema
from concorde_workers.domain.configuration.profile import nested_problem
from concorde_workers.domain.evidence.transcript import Call, Prompt, Result
from concorde_workers.domain.run.rounds import RoundEnding

RT = "/tmp/concorde-abc123-00000001"
WT = "/repo/.claude/worktrees/t"
CODEX = "/opt/nm/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"
THREAD = "01a24cf2-cefa-71b2-8c3a-2acbe5c06ea5"
TOOLS = ("exec_command", "view_image", "apply_patch")


def test_a_round_runs_exec_with_its_own_sandbox_on_and_resumes_its_thread() -> None:
    first = codex_command(runtime=RT, worktree=WT, tools=TOOLS, program=CODEX)
    assert first.argv == (
        CODEX,
        "exec",
        "--json",
        "--strict-config",
        "--skip-git-repo-check",
        "-s",
        "workspace-write",
        "-C",
        WT,
        "--output-schema",
        f"{RT}/control/codex-output.schema.json",
        "-o",
        f"{RT}/config/codex-last.json",
        "-",
    )
    again = codex_command(runtime=RT, worktree=WT, tools=TOOLS, program=CODEX, thread=THREAD)
    assert again.argv[-3:] == ("resume", THREAD, "-") and "--output-schema" in again.argv
    read_only = codex_command(runtime=RT, worktree=WT, tools=TOOLS[:2], program=CODEX)
    assert read_only.argv[5:7] == ("-s", "read-only")
    for argv in (first.argv, again.argv, read_only.argv):
        assert "danger-full-access" not in argv and "--trust" not in argv
    with pytest.raises(ValueError, match="thread id"):
        codex_command(runtime=RT, worktree=WT, tools=TOOLS, program=CODEX, thread="--last")


def test_the_config_reads_nothing_of_the_worktree_calls_only_the_model_and_owns_no_retry() -> None:
    endpoint = CodexEndpoint(base_url="http://127.0.0.1:4000/v1", key_env="LOCAL_API_KEY")
    text = codex_config(endpoint=endpoint, model="gpt-5.5", reasoning="high", sandbox="read-only")
    config = tomllib.loads(text)
    assert config["model"] == "gpt-5.5" and config["model_reasoning_effort"] == "high"
    assert (
        config["project_doc_max_bytes"] == 0 and config["skills"]["include_instructions"] is False
    )
    assert config["features"]["hooks"] is False and "mcp_servers" not in config
    assert config["notify"] == [] and config["analytics"]["enabled"] is False
    assert config["features"]["unbounded_connection_retries"] is False
    provider = config["model_providers"][config["model_provider"]]
    assert provider["base_url"] == "http://127.0.0.1:4000/v1"
    assert provider["env_key"] == "LOCAL_API_KEY" and provider["wire_api"] == "responses"
    assert provider["request_max_retries"] == 0 and provider["stream_max_retries"] == 0
    sandbox = config["sandbox_workspace_write"]
    assert sandbox["network_access"] is False and sandbox["exclude_slash_tmp"] is True
    assert config["shell_environment_policy"]["inherit"] == "core"
    assert "projects" not in config and config["sandbox_mode"] == "read-only"
    # a model id with TOML's specials stays one string
    assert (
        tomllib.loads(
            codex_config(endpoint=endpoint, model='a"b\\c\n', reasoning=None, sandbox="read-only")
        )["model"]
        == 'a"b\\c\n'
    )


def _strict(node: object) -> None:
    if isinstance(node, dict):
        if node.get("type") == "object" and "properties" in node:
            assert node["additionalProperties"] is False
            assert sorted(node["required"]) == sorted(node["properties"])
        assert "minLength" not in node and "pattern" not in node
        for value in node.values():
            _strict(value)
    elif isinstance(node, list):
        for value in node:
            _strict(value)


def test_the_wire_schema_is_strict_with_output_as_json_text_the_host_decodes() -> None:
    schema = wire_schema(worker_result_schema())
    _strict(schema)
    assert schema["properties"]["output"]["type"] == "string"
    answer = {
        "status": "ok",
        "summary": "s",
        "error": None,
        "proposed_deletions": [],
        "output": json.dumps({"n": 1}),
    }
    assert decode_result(json.dumps(answer)) == {**answer, "output": {"n": 1}}
    assert decode_result("Sure! here it is") is None
    kept = decode_result(json.dumps({**answer, "output": "not json"}))
    assert kept is not None and kept["output"] == "not json"  # the host's validation names it


def test_codex_json_names_an_endpoint_a_key_variable_and_prices_never_a_secret() -> None:
    env = {"LOCAL_API_KEY": "k-123", "OPENAI_API_KEY": "o-1"}
    text = json.dumps(
        {
            "schema_version": 1,
            "base_url": "http://127.0.0.1:4000/v1",
            "key_env": "LOCAL_API_KEY",
            "prices": {"input": 1, "output": 2},
        }
    )
    answer = codex_endpoint(text, "/h/codex.json", env)
    assert answer.problem is None and answer.adds == {"LOCAL_API_KEY": "k-123"}
    endpoint = CodexEndpoint.of_settings(answer.settings)
    assert endpoint.key_env == "LOCAL_API_KEY" and dict(endpoint.prices) == {
        "input": 1.0,
        "output": 2.0,
    }
    assert "k-123" not in json.dumps(dict(answer.settings)) + answer.said
    none = codex_endpoint(None, "/h/codex.json", env)
    assert none.adds == {"OPENAI_API_KEY": "o-1"} and "api.openai.com" in none.said
    # The one variable a run takes its key from, by name, with what names it: doctor's
    # credentials line says it as the round's environment gets it (issue 33).
    assert answer.credentials == ("LOCAL_API_KEY",)
    assert answer.credentials_origin == "the key variable /h/codex.json names"
    assert none.credentials == ("OPENAI_API_KEY",)
    assert none.credentials_origin == "the key variable without a codex.json"
    for bad, words in (
        ({"schema_version": 1, "base_url": "http://u:p@h/v1"}, "user name or password"),
        ({"schema_version": 1, "key_env": "PATH"}, "no secret's variable"),
        ({"schema_version": 1, "key_env": "MISSING_KEY"}, "does not set"),
        ({"schema_version": 1, "prices": {"input": -1, "output": 1}}, "prices must"),
        ({"schema_version": 1, "token": "x"}, "unknown field"),
    ):
        problem = codex_endpoint(json.dumps(bad), "/h/codex.json", env).problem
        assert problem is not None and words in problem and "/h/codex.json" in problem, problem


def test_the_round_environment_is_exact_and_codex_home_lies_outside_tmpdir() -> None:
    env = codex_environment({"PATH": "/usr/bin", "OPENAI_API_KEY": "x", "SECRET": "y"}, RT)
    assert env == {
        "PATH": "/usr/bin",
        "HOME": f"{RT}/home",
        "TMPDIR": f"{RT}/tmp",
        "CODEX_HOME": f"{RT}/config/codex",
    }


def _events(*events: dict[str, object]) -> list[str]:
    return [json.dumps(e) for e in events]


RESULT = json.dumps(
    {"status": "ok", "summary": "done", "error": None, "proposed_deletions": [], "output": "{}"}
)
USAGE = {"input_tokens": 1000, "cached_input_tokens": 400, "output_tokens": 100}


def test_a_round_reads_its_thread_calls_final_answer_and_its_own_usage() -> None:
    totals: dict[str, dict[str, int]] = {}
    reader = CodexStreamReader(
        prices=Prices(input=1.0, output=10.0, cached_input=0.1), totals=totals
    )
    command = {"id": "item_0", "type": "command_execution", "command": "/bin/bash -c 'ls'"}
    lines = _events(
        {"type": "thread.started", "thread_id": THREAD},
        {"type": "turn.started"},
        {"type": "item.started", "item": command},
        {"type": "item.completed", "item": {**command, "exit_code": 0}},
        {
            "type": "item.completed",
            "item": {"id": "item_1", "type": "agent_message", "text": RESULT},
        },
        {"type": "turn.completed", "usage": USAGE},
    )
    actions = [reader.feed(line) for line in lines]
    assert [a.tool for a in actions if a] == ["command_execution"]
    report = reader.finish(0, False, "")
    assert report.ending is RoundEnding.OK and report.session == THREAD
    assert report.worker_result is not None and report.worker_result["output"] == {}
    assert (report.usage.tokens_in, report.usage.tokens_cache_read, report.usage.turns) == (
        1000,
        400,
        1,
    )
    assert report.usage.cost_usd == pytest.approx((600 * 1 + 400 * 0.1 + 100 * 10) / 1e6)
    # the next round of the thread reports the thread's total: the round's own is the difference
    second = CodexStreamReader(totals=totals)
    for line in _events(
        {"type": "thread.started", "thread_id": THREAD},
        {"type": "turn.completed", "usage": {"input_tokens": 1300, "output_tokens": 140}},
    ):
        second.feed(line)
    usage = second.finish(0, False, "").usage
    assert (usage.tokens_in, usage.tokens_out) == (300, 40)


@pytest.mark.parametrize(
    ("message", "ending"),
    [
        ("exceeded retry limit, last status: 429 Too Many Requests", RoundEnding.TRANSIENT_ERROR),
        (
            "We\u2019re currently experiencing high demand, which may cause temporary errors.",
            RoundEnding.TRANSIENT_ERROR,
        ),
        (
            "stream disconnected before completion: stream closed before response.completed",
            RoundEnding.TRANSIENT_ERROR,
        ),
        ("Connection failed: error sending request", RoundEnding.TRANSIENT_ERROR),
        ("Quota exceeded. Check your plan and billing details.", RoundEnding.PROCESS_FAILED),
        (
            "unexpected status 401 Unauthorized: Incorrect API key provided",
            RoundEnding.PROCESS_FAILED,
        ),
    ],
)
def test_a_failed_turn_is_classified_by_the_retry_table(message: str, ending: RoundEnding) -> None:
    reader = CodexStreamReader()
    for line in _events(
        {"type": "thread.started", "thread_id": THREAD},
        {"type": "error", "message": message},
        {"type": "turn.failed", "error": {"message": message}},
    ):
        reader.feed(line)
    report = reader.finish(1, False, "")
    assert report.ending is ending, report
    if ending is RoundEnding.PROCESS_FAILED:
        assert report.process_link is not None and report.process_link.code == "codex_error"
    else:
        assert report.transient_error == message


def test_the_turn_limit_counts_tool_calls_and_the_budget_prices_tokens() -> None:
    reader = CodexStreamReader(max_turns=1)
    reader.feed(json.dumps({"type": "thread.started", "thread_id": THREAD}))
    for n in range(2):
        item = {"id": f"item_{n}", "type": "file_change", "changes": [{"path": f"{WT}/a"}]}
        reader.feed(json.dumps({"type": "item.started", "item": item}))
    assert reader.limit_reached is not None and "max_turns" in reader.limit_reached
    report = reader.finish(None, False, "")
    assert report.ending is RoundEnding.LIMIT_REACHED
    assert report.process_link is not None and report.process_link.code == "codex_limit_reached"
    budget = CodexStreamReader(max_budget_usd=0.01, prices=Prices(input=10.0, output=10.0))
    budget.feed(json.dumps({"type": "thread.started", "thread_id": THREAD}))
    assert budget.limit_reached is None
    budget.feed(json.dumps({"type": "turn.completed", "usage": {"input_tokens": 2000}}))
    assert budget.limit_reached is not None and "max_budget_usd" in budget.limit_reached


def test_no_thread_or_a_bad_exit_without_an_answer_is_the_program_s_failure() -> None:
    report = CodexStreamReader().finish(1, False, "Error: unknown configuration field")
    assert report.ending is RoundEnding.PROCESS_FAILED and "no thread" in (report.failure or "")
    assert report.process_link is not None
    assert "unknown configuration field" in report.process_link.detail
    reader = CodexStreamReader()
    reader.feed("not json")
    assert reader.ignored.count == 1


def test_the_rollout_tells_prompts_calls_and_results() -> None:
    def item(payload: dict[str, object]) -> dict[str, object]:
        return {"timestamp": "t", "type": "response_item", "payload": payload}

    context = {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "<environment_context>..."}],
    }
    prompt = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "x"}]}
    call = {"type": "function_call", "name": "exec_command", "arguments": "{}", "call_id": "c1"}
    out = {
        "type": "function_call_output",
        "call_id": "c1",
        "output": "Process exited with code 1\nOutput:\nno",
    }
    assert codex_events(item(context)) == []
    assert codex_events(item(prompt)) == [Prompt()]
    assert codex_events(item(call)) == [Call("c1", "exec_command", {})]
    # the arguments decoded (the call's target shows), an apply_patch's first file named
    assert codex_events(item({**call, "arguments": '{"cmd": "ls"}'}))[0].arguments == {"cmd": "ls"}
    assert codex_events(item({**call, "arguments": "not json"}))[0].arguments == "not json"
    patch = {"type": "custom_tool_call", "call_id": "p1", "name": "apply_patch"}
    text = "*** Begin Patch\n*** Update File: src/a.py\n@@\n-a\n+b\n*** End Patch\n"
    assert codex_events(item({**patch, "input": text})) == [
        Call("p1", "apply_patch", {"path": "src/a.py"})
    ]
    assert codex_events(item(out)) == [Result("c1", True, out["output"])]
    assert codex_events({"type": "event_msg", "payload": call}) == []


def test_without_nested_user_namespaces_codex_is_refused_never_run_unsandboxed() -> None:
    def problem(read: dict[str, str | None]) -> str | None:
        return nested_problem("the Codex CLI", read)

    assert problem({}) is None
    assert problem({"/proc/sys/user/max_user_namespaces": "15000\n"}) is None
    said = problem({"/proc/sys/user/max_user_namespaces": "0\n"})
    assert said is not None and "nested user namespaces" in said and "sysctl" in said
    assert problem({"/proc/sys/kernel/apparmor_restrict_unprivileged_userns": "1"}) is not None


def test_the_backend_refuses_before_launch_and_doctor_says_why() -> None:
    from fakes.filesystem import FakeFileSystem

    from concorde_workers.adapters.codex.backend import CodexBackend
    from concorde_workers.container import PROFILES
    from concorde_workers.domain.setup.doctor import nested_check

    fs = FakeFileSystem()
    assert CodexBackend(fs).check("/repo") is None
    fs.write("/proc/sys/user/max_user_namespaces", "0\n")
    refusal = CodexBackend(fs).check("/repo")
    assert refusal is not None and refusal.code == "launch_failed"
    assert "max_user_namespaces is 0" in refusal.message
    check = nested_check(PROFILES["codex"], {"/proc/sys/user/max_user_namespaces": "0"})
    assert not check.ok and "sysctl" in check.repair
    assert not PROFILES["claude"].confinement.nested and not PROFILES["pi"].confinement.nested


def test_the_registered_codex_backend_is_an_agent_backend() -> None:
    from concorde_workers.adapters.codex.backend import CodexBackend
    from concorde_workers.adapters.machine.filesystem import LocalFileSystem
    from concorde_workers.container import PROFILES
    from concorde_workers.ports.agents.agent import AgentBackend

    backend = CodexBackend(LocalFileSystem())
    assert isinstance(backend, AgentBackend) and backend.profile is PROFILES["codex"]
