"""Issue 31 §1, "What plan refuses, run refuses — and nothing is dropped silently": every
configuration file a run takes is read by one reader whose answer `plan`, `run`, `doctor` and
`init` all take (docs/decisions.md 67), with the real Git, filesystem, control groups and CLI.

- resources.json that cannot be used: plan said launch_failed, run launched with the built-in
  defaults wherever control groups are enforced (`RunResources.open` looked at the file's
  problem only without them);
- a variable naming a file or a folder that is not there (CONCORDE_RESOURCES,
  CONCORDE_ENDPOINTS, CONCORDE_SIGNING_KEY, PI_CODING_AGENT_DIR, CLAUDE_CONFIG_DIR): silently the
  defaults, no endpoint — a Claude Code run went to Anthropic's service with the user's own
  credentials instead of the gateway configured;
- endpoints.json with a password in its URL (printed by plan) or a token variable that holds no
  secret (PATH would go as the bearer token);
- pi's models.json and auth.json as the run copies them: a provider without "apiKey" (the
  README's own example), a model id its provider does not list, a provider pi does not know —
  plan said a run would launch, the run ended pi_failed with only "Model … not found";
- a model map that is a FIFO hung every command; a worktree's workers.json working copy that
  is a FIFO hung doctor; init updated a model map a run refuses.
"""

from __future__ import annotations

import io
import json
import os
from typing import Any

import pytest
from fakes.cli_launcher import program_container
from integration.test_cli_run_real import ok_round
from integration.test_plan_cli import flags, header, plan

from concorde_workers.adapters.cli.main import main
from concorde_workers.container import Container

pytestmark = pytest.mark.integration

PASSWORD = "pw-never-printed-7a1"
PI_WORKER = ("--operation", "implement", "--worker", "worker", "--declare", "implement:reviewer")
"""The fixture's default worker: pi, model m-local, the map's pi id local/m-local."""
CLAUDE_WORKER = ("--operation", "implement", "--worker", "reviewer")
"""The fixture's reviewer: claude, model m-claude, the map's claude id claude-x-1."""
WORKER = {"pi": PI_WORKER, "claude": CLAUDE_WORKER}


def run(project: Any, container: Container | None, *argv: str) -> tuple[int, dict[str, Any], str]:
    """`run` with the request file and `argv`, its record as --json prints it."""
    parent = project.root / "trace"
    parent.mkdir(exist_ok=True)
    out, err = io.StringIO(), io.StringIO()
    status = main(
        ["run", str(project.request_file), "--parent", str(parent), "--json", *argv],
        out,
        err,
        container=container,
    )
    assert "Traceback" not in out.getvalue() + err.getvalue()
    assert "internal error" not in err.getvalue(), err.getvalue()
    return status, json.loads(out.getvalue()) if out.getvalue() else {}, err.getvalue()


def doctor(*argv: str) -> tuple[int, dict[str, Any], str]:
    """`doctor --json` in process, over the project's stub programs: each check as said."""
    out, err = io.StringIO(), io.StringIO()
    status = main(["doctor", "--json", *argv], out, err)
    assert "Traceback" not in out.getvalue() + err.getvalue()
    data = json.loads(out.getvalue())
    return status, {c["name"]: c for c in data["checks"]}, out.getvalue() + err.getvalue()


def untouched(project: Any) -> bool:
    return (project.worktree / "src" / "app" / "main.py").read_text() == "print('main')\n"


# --- resources.json -------------------------------------------------------------------------------

RESOURCES_CASES = [
    pytest.param("{", {}, "resources.json is not JSON", id="not JSON"),
    pytest.param(
        '{"schema_version": 1, "defaults": {"memory_mib": -1}}',
        {},
        "has an invalid defaults.memory_mib",
        id="memory_mib -1",
    ),
    pytest.param(
        '{"schema_version": 1, "without_groups": "maybe"}',
        {},
        'has an invalid "without_groups"',
        id="without_groups maybe",
    ),
    pytest.param(
        None,
        {"CONCORDE_RESOURCES": "resources.json"},
        "CONCORDE_RESOURCES gives the relative path 'resources.json'",
        id="relative variable",
    ),
    pytest.param(
        None,
        {"CONCORDE_RESOURCES": "{root}/nowhere/resources.json"},
        "CONCORDE_RESOURCES names {root}/nowhere/resources.json, which does not exist",
        id="variable naming no file",
    ),
]


@pytest.mark.parametrize(("text", "environ", "says"), RESOURCES_CASES)
def test_a_resources_file_plan_refuses_is_refused_by_run_and_doctor_alike(
    project: Any,
    monkeypatch: pytest.MonkeyPatch,
    text: str | None,
    environ: dict[str, str],
    says: str,
) -> None:
    if text is not None:
        (project.model_map.parent / "resources.json").write_text(text)
    for name, value in environ.items():
        monkeypatch.setenv(name, value.format(root=project.root))
    says = says.format(root=project.root)
    planned = plan(*flags(project))
    assert planned.status == 2 and "the run would end launch_failed: " in planned.out
    assert says in planned.out, planned.out
    status, record, _ = run(project, program_container([ok_round()]))
    assert status == 1 and record["error"]["code"] == "launch_failed", record
    assert says in record["error"]["detail"], record["error"]
    assert untouched(project)  # the worker never ran, on a machine with control groups
    status, checks, _ = doctor()
    assert status == 2 and not checks["resource limits"]["ok"]
    assert says in checks["resource limits"]["state"]


# --- a variable that names a file or a folder is honoured or refused -------------------------------


@pytest.mark.parametrize(
    ("variable", "backend", "says"),
    [
        ("CONCORDE_ENDPOINTS", "claude", "CONCORDE_ENDPOINTS names {path}, which does not exist"),
        ("CLAUDE_CONFIG_DIR", "claude", "CLAUDE_CONFIG_DIR names {path}, which is no directory"),
        ("PI_CODING_AGENT_DIR", "pi", "PI_CODING_AGENT_DIR names {path}, which is no directory"),
        ("CONCORDE_SIGNING_KEY", "pi", "CONCORDE_SIGNING_KEY names {path}, which does not exist"),
    ],
)
def test_a_variable_naming_nothing_is_refused_by_plan_run_and_doctor(
    project: Any, monkeypatch: pytest.MonkeyPatch, variable: str, backend: str, says: str
) -> None:
    path = project.root / "nowhere" / "it"
    monkeypatch.setenv(variable, str(path))
    says = says.format(path=path)
    planned = plan(*flags(project, *WORKER[backend]))
    assert planned.status == 2 and says in planned.both, planned.both
    container = None if variable != "CONCORDE_ENDPOINTS" else program_container([], backend)
    status, record, err = run(project, container, *WORKER[backend])
    told = (record.get("error") or {}).get("detail") or record.get("refusal", {}).get("message")
    assert status in (1, 2) and says in f"{told}{err}", (record, err)
    assert untouched(project)
    _, checks, said = doctor("--backend", backend)
    failed = [c for c in checks.values() if not c["ok"] and says in c["state"]]
    assert failed, said


# --- endpoints.json holds no secret and sends none but the one named --------------------------


def endpoints(project: Any, claude: dict[str, Any]) -> None:
    (project.model_map.parent / "endpoints.json").write_text(
        json.dumps({"schema_version": 1, "claude": claude})
    )


@pytest.mark.parametrize(
    ("claude", "says"),
    [
        (
            {"base_url": f"http://gw:{PASSWORD}@127.0.0.1:4000"},
            "claude.base_url holds a user name or password",
        ),
        (
            {"base_url": "http://127.0.0.1:4000", "token_env": "PATH"},
            "claude.token_env names PATH, which is no secret's variable",
        ),
    ],
)
def test_an_endpoint_that_would_leak_a_secret_or_send_another_value_is_refused_everywhere(
    project: Any, claude: dict[str, Any], says: str
) -> None:
    endpoints(project, claude)
    planned = plan(*flags(project, *CLAUDE_WORKER))
    assert planned.status == 2 and "launch_failed" in planned.both and says in planned.both
    status, record, err = run(project, program_container([], "claude"), *CLAUDE_WORKER)
    assert status == 1 and says in record["error"]["detail"], record
    _, checks, said = doctor("--backend", "claude")
    assert not checks["Claude Code's endpoints.json"]["ok"]
    for text in (planned.both, json.dumps(record), err, said):
        assert PASSWORD not in text


def test_a_gateway_s_token_is_the_claude_credential_doctor_finds(
    project: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoints(project, {"base_url": "http://127.0.0.1:4000", "token_env": "GATEWAY_TOKEN"})
    monkeypatch.setenv("GATEWAY_TOKEN", "gw-token-never-printed")
    _, checks, said = doctor("--backend", "claude")
    assert checks["credentials of the claude backend"]["ok"], said
    assert "$GATEWAY_TOKEN (the token" in checks["credentials of the claude backend"]["state"]
    endpoint = checks["Claude Code's endpoints.json"]
    assert endpoint["ok"] and "requests go to http://127.0.0.1:4000" in endpoint["state"]
    assert "gw-token-never-printed" not in said
    planned = plan(*flags(project, *CLAUDE_WORKER))
    assert planned.status == 0 and "ANTHROPIC_BASE_URL=http://127.0.0.1:4000" in planned.out


# --- pi's models.json and auth.json as the run copies them -----------------------------------------

README_PROVIDER = {
    "baseUrl": "http://127.0.0.1:8000/v1",
    "api": "openai-completions",
    "models": [{"id": "m-local"}],
}
"""The provider of the README's pi example as it stood: no "apiKey"."""


@pytest.mark.parametrize(
    ("models", "auth", "says"),
    [
        pytest.param(
            {"providers": {"local": README_PROVIDER}},
            None,
            'providers.local has no "apiKey"',
            id="no apiKey",
        ),
        pytest.param(
            {
                "providers": {
                    "local": {**README_PROVIDER, "apiKey": "none", "models": [{"id": "x"}]}
                }
            },
            None,
            "names the model m-local, which providers.local of",
            id="an unlisted id",
        ),
        pytest.param(
            {"providers": {"other": {**README_PROVIDER, "apiKey": "none"}}},
            None,
            "names the provider local, which",
            id="an unknown provider",
        ),
        pytest.param(
            None,
            "{not json",
            "would take none of the credentials in it",
            id="auth.json not JSON",
        ),
    ],
)
def test_what_pi_would_reject_in_its_files_is_refused_before_launch(
    project: Any, models: dict[str, Any] | None, auth: str | None, says: str
) -> None:
    agent = project.home / ".pi" / "agent"
    if models is not None:
        (agent / "models.json").write_text(json.dumps(models))
    if auth is not None:
        (agent / "auth.json").write_text(auth)
    planned = plan(*flags(project, *PI_WORKER))
    assert planned.status == 2 and "launch_failed" in planned.both and says in planned.both
    status, record, _ = run(project, None, *PI_WORKER)
    assert status == 1 and record["error"]["code"] == "launch_failed", record
    assert says in record["error"]["detail"]
    assert untouched(project)
    _, checks, said = doctor("--backend", "pi")
    copies = checks["pi's auth.json and models.json as a run copies them"]
    assert not copies["ok"] and says in copies["state"], said


# --- readers that never hang, and init taking the run's answer ---------------------------------------


def test_a_model_map_that_is_a_fifo_is_refused_not_waited_on(
    project: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    fifo = project.root / "models.fifo"
    os.mkfifo(fifo)  # read, it would wait for a writer for ever
    monkeypatch.setenv("CONCORDE_MODEL_MAP", str(fifo))
    planned = plan(*flags(project, *CLAUDE_WORKER))
    assert planned.status == 2 and "model_map_invalid" in planned.both
    assert "it is no regular file" in planned.both
    _, checks, _ = doctor()
    assert not checks["model map"]["ok"]


def test_doctor_reads_workers_json_as_committed_and_never_waits_on_its_working_copy(
    project: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = project.worktree / ".concorde" / "workers.json"
    config.unlink()
    os.mkfifo(config)  # what a worker with rw on .concorde/ could leave
    monkeypatch.chdir(project.worktree)
    _, checks, _ = doctor()
    line = checks["workers.json of this worktree"]
    assert (not line["ok"] and "differs from" in line["state"]) or "not opened" in line["state"]


def test_init_keeps_a_model_map_a_run_refuses_and_says_why(
    project: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = {"schema_version": 1, "models": {"Not A Name": {"pi": "local/m-local"}}}
    project.model_map.write_text(json.dumps(bad))
    monkeypatch.chdir(project.primary)
    out, err = io.StringIO(), io.StringIO()
    status = main(["init", "--task", "t9", "--json"], out, err)
    assert status == 0, out.getvalue() + err.getvalue()
    done = json.loads(out.getvalue())["done"]
    said = [line for line in done if line.startswith(f"model map {project.model_map}: kept")]
    assert said and "is not a project model name" in said[0], done
    assert json.loads(project.model_map.read_text()) == bad


def test_a_file_a_run_copies_that_is_a_fifo_is_refused_not_waited_on(project: Any) -> None:
    """The host read a credential file to copy it without a bound: a FIFO there would hang the
    run once launched; the one reader refuses it before, in plan and run alike."""
    auth = project.home / ".pi" / "agent" / "auth.json"
    os.mkfifo(auth)
    planned = plan(*flags(project, *PI_WORKER))
    assert (
        planned.status == 2
        and f"{auth} cannot be copied into the run: it is no regular file" in planned.both
    )
    status, record, _ = run(project, None, *PI_WORKER)
    assert status == 1 and record["error"]["code"] == "launch_failed", record


# --- what a Codex CLI run takes (issue 33) -----------------------------------------------------


def test_codex_s_key_and_configuration_are_what_plan_and_doctor_both_say(
    project: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One truth of what a codex run takes: its key by the one variable codex.json names (a
    `_TOKEN` plan took for no credential at all), CODEX_HOME its own config/codex with only
    the generated config.toml, no copy of the user's auth.json (doctor said it copied it),
    OPENAI_API_KEY beside it reaching no round."""
    (project.model_map.parent / "codex.json").write_text(
        json.dumps(
            {
                "schema_version": 1,
                "base_url": "http://127.0.0.1:4000/v1",
                "key_env": "CODEX_GATEWAY_TOKEN",
            }
        )
    )
    monkeypatch.setenv("CODEX_GATEWAY_TOKEN", "codex-token-never-printed")
    monkeypatch.setenv("OPENAI_API_KEY", "openai-key-never-printed")
    (project.home / ".codex").mkdir()
    (project.home / ".codex" / "auth.json").write_text('{"OPENAI_API_KEY": "login-never-read"}')
    _, checks, said = doctor("--backend", "codex")
    credentials = checks["credentials of the codex backend"]
    assert credentials["ok"], said
    assert credentials["state"].startswith("present: $CODEX_GATEWAY_TOKEN (the key variable ")
    assert "OPENAI_API_KEY" not in credentials["state"] and "auth.json" not in credentials["state"]
    made = checks["the Codex CLI's configuration as a run makes it"]
    assert made["ok"] and made["state"].startswith(
        "copies no file; CODEX_HOME is the run's own config/codex/ holding only the generated "
        "config.toml; the key reaches each round as $CODEX_GATEWAY_TOKEN"
    )
    assert made["state"].endswith(
        f"{project.home}/.codex/auth.json hidden from every run, never read"
    )
    planned = plan(*flags(project, "--backend", "codex"))
    rt = header(planned.out)[1]
    assert "CODEX_GATEWAY_TOKEN=" in planned.out and "OPENAI_API_KEY" not in planned.out
    assert 'env_key = \\"CODEX_GATEWAY_TOKEN\\"' in planned.out  # the config.toml, as JSON text
    assert f"CODEX_HOME={rt}/config/codex" in planned.out
    assert "no credentials of the codex backend" not in planned.out
    assert f"Read(/{project.home}/.codex/auth.json)" in planned.out  # hidden, as doctor says
    for secret in ("codex-token-never-printed", "openai-key-never-printed", "login-never-read"):
        assert secret not in said + planned.both
