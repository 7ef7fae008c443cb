"""Issue 19 §2: a local or self-hosted model endpoint, through exactly the configuration a user
writes, with the real programs against the scripted servers on 127.0.0.1.

- Claude Code: `endpoints.json` beside the model map names the base URL and the host variable
  with the token; the wrapper around the claude under test sets no ANTHROPIC_BASE_URL here, so
  only the round's environment (adapters/claude/endpoints.py) can send the requests to the server. The
  token reaches the server as a bearer token and never the worker's Bash.
- pi: its own `models.json` provider (`baseUrl`, `api`, `apiKey`) in the user's pi directory,
  as tests/e2e/conftest_pi.py writes it for every pi test: one run here says so explicitly.
- Codex (issue 33 §1): the machine's `codex.json` (a base URL and the key variable's name), as
  tests/e2e/conftest_codex.py writes it for every codex test: one run here says so, and a broken
  one ends the run before launch naming it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from e2e.conftest import ClaudeWorld
from e2e.conftest_codex import CodexWorld, codex_world, exec_call, result_turn
from e2e.conftest_pi import PiWorld, call, pi_world, reply, result_call
from e2e.one_command import claude_command
from servers.claude_wrapper import write_wrapper
from servers.codex_exec import KEY, KEY_ENV

pytestmark = pytest.mark.e2e

__all__ = ["codex_world", "pi_world"]  # the fixtures, imported for pytest

TOKEN = "gw-token-e2e-5f1c"


def test_claude_code_reaches_the_machine_s_endpoint_with_its_token(
    claude_world: ClaudeWorld, claude_program: Path
) -> None:
    w = claude_world
    write_wrapper(Path(w.environ["CONCORDE_CLAUDE"]), claude_program, None)
    folder = Path(w.environ["HOME"]) / ".config" / "concorde"
    folder.mkdir(parents=True)
    (folder / "endpoints.json").write_text(
        json.dumps(
            {
                "schema_version": 1,
                "claude": {"base_url": w.server.url, "token_env": "GATEWAY_TOKEN"},
            }
        )
    )
    w.environ["GATEWAY_TOKEN"] = TOKEN
    del w.environ["ANTHROPIC_API_KEY"]
    run, seen = claude_command(w, "env; echo ENV-END")
    assert run.record.status == "ok", run.data
    assert TOKEN not in seen and "ANTHROPIC_AUTH_TOKEN" not in seen, seen
    messages = [r for r in w.server.log if r["path"].startswith("/v1/messages")]
    assert messages, w.server.log
    assert {r["headers"].get("authorization") for r in messages} == {f"Bearer {TOKEN}"}
    w.assert_cleaned(run)


def test_a_broken_endpoints_file_ends_the_run_before_launch_naming_it(
    claude_world: ClaudeWorld, claude_program: Path
) -> None:
    w = claude_world
    folder = Path(w.environ["HOME"]) / ".config" / "concorde"
    folder.mkdir(parents=True)
    (folder / "endpoints.json").write_text('{"schema_version": 1, "claude": {"base_url": 3}}')
    run = w.run()
    assert run.record.status == "failed" and run.code == "launch_failed", run.data
    assert f"{folder}/endpoints.json: claude.base_url must be an http://" in (
        run.record.error.detail if run.record.error else ""
    )
    assert w.server.log == [] and run.data["rounds"] == []
    w.assert_cleaned(run)


def test_pi_reaches_the_provider_of_its_own_models_json(pi_world: PiWorld) -> None:
    w = pi_world
    models = json.loads((w.pi_dir / "models.json").read_text())
    key = json.loads((w.pi_dir / "auth.json").read_text())
    [(provider, entry)] = models["providers"].items()
    assert entry["baseUrl"].startswith("http://127.0.0.1:"), entry
    run = w.run(
        reply(call("bash", "call_env", command="env; echo ENV-END")), reply(result_call("call_r"))
    )
    assert run.record.status == "ok", run.explain()
    sent = [
        {k.lower(): v for k, v in r["headers"].items()}.get("authorization")
        for r in w.server.requests
    ]
    assert sent and set(sent) == {f"Bearer {key[provider]['key']}"}, sent
    assert key[provider]["key"] not in run.tool_result("call_env")


def test_codex_reaches_the_machine_s_endpoint_through_codex_json_with_its_key(
    codex_world: CodexWorld,
) -> None:
    """Codex's endpoint is the machine's codex.json (a base URL and the name of the key's
    variable, `$CONCORDE_CODEX_CONFIG`), as Claude Code's is endpoints.json: every request
    reaches the server it names with the key of the variable it names, which no command of the
    worker sees."""
    w = codex_world
    machine = json.loads(Path(w.environ["CONCORDE_CODEX_CONFIG"]).read_text())
    assert machine["base_url"] == w.server.base_url and machine["key_env"] == KEY_ENV
    assert "OPENAI_API_KEY" not in w.environ  # only the named variable holds a key
    run = w.run(exec_call("env; echo ENV-END", "call_env"), result_turn())
    assert run.record.status == "ok", run.explain()
    sent = [
        {k.lower(): v for k, v in r["headers"].items()}.get("authorization")
        for r in w.server.requests
    ]
    assert sent and set(sent) == {f"Bearer {KEY}"}, sent
    seen = run.tool_result("call_env")
    assert "ENV-END" in seen and KEY not in seen and KEY_ENV not in seen, seen


def test_a_broken_codex_json_ends_the_run_before_launch_naming_it(codex_world: CodexWorld) -> None:
    w = codex_world
    config = Path(w.environ["CONCORDE_CODEX_CONFIG"])
    config.write_text('{"schema_version": 1, "base_url": 3, "key_env": "SCRIPTED_API_KEY"}')
    run = w.run()
    assert run.record.status == "failed" and run.code == "launch_failed", run.explain()
    detail = run.record.error.detail if run.record.error else ""
    assert f"{config}: " in detail and "base_url" in detail, detail
    assert w.server.requests == [] and run.data["rounds"] == []
