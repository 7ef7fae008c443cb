"""seed 000 and 001 "Launch": the exact environment of a worker round, and its redaction."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from concorde_workers.adapters.claude.environment import CLAUDE_VARIABLES, claude_environment
from concorde_workers.adapters.pi.environment import PI_FIXED_VARIABLES, pi_environment
from concorde_workers.domain.ground.layout import RuntimeLayout
from concorde_workers.domain.isolation.environment import (
    REDACTED,
    redact,
    worker_path,
)

RT = "/tmp/concorde-a1b2c3-x7k2"
ENVIRONMENT = {"claude": claude_environment, "pi": pi_environment}
"""Each backend's table, by the name the tests parametrize over."""
AMBIENT = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "HOME": "/home/dev",
    "USER": "dev",
    "TMPDIR": "/var/tmp",
    "SSH_AUTH_SOCK": "/run/ssh.sock",
    "GIT_DIR": "/repo/.git",
    "CLAUDE_CONFIG_DIR": "/home/dev/.claude",
    "PI_CODING_AGENT_DIR": "/home/dev/.pi/agent",
    "CLAUDE_CODE_USE_BEDROCK": "1",
    "ANTHROPIC_BASE_URL": "http://evil.example",
    "GITHUB_TOKEN": "ghp_x",
    "LD_PRELOAD": "/tmp/x.so",
    "PYTHONPATH": "/repo",
    "NODE_OPTIONS": "--require /tmp/x.js",
    "ALL_PROXY": "socks5://127.0.0.1:1",
    "LC_ALL": "C",
    "IS_SANDBOX": "1",
}


@pytest.mark.req("Nothing ambient reaches the worker")
def test_claude_environment_is_exactly_the_launch_table() -> None:
    env = claude_environment(AMBIENT, RT)
    assert env == {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": f"{RT}/home",
        "TMPDIR": f"{RT}/tmp",
        "CLAUDE_CONFIG_DIR": f"{RT}/config",
        "CLAUDE_CODE_DISABLE_CLAUDE_MDS": "1",
        "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }


@pytest.mark.req("Nothing ambient reaches the worker")
def test_pi_environment_is_exactly_the_launch_table() -> None:
    env = pi_environment(AMBIENT, RuntimeLayout(root=RT))
    assert env == {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "HOME": f"{RT}/home",
        "TMPDIR": f"{RT}/tmp",
        "CLAUDE_CODE_TMPDIR": f"{RT}/tmp",
        "PI_CODING_AGENT_DIR": f"{RT}/config",
        "PI_OFFLINE": "1",
        "PI_SKIP_VERSION_CHECK": "1",
        "PI_TELEMETRY": "0",
    }


@pytest.mark.req("Nothing ambient reaches the worker")
def test_claude_passes_only_the_anthropic_api_key() -> None:
    host = {**AMBIENT, "ANTHROPIC_API_KEY": "sk-ant", "OPENAI_API_KEY": "sk-oa"}
    env = claude_environment(host, RT)
    assert env["ANTHROPIC_API_KEY"] == "sk-ant"
    assert "OPENAI_API_KEY" not in env
    assert "ANTHROPIC_API_KEY" not in claude_environment({**AMBIENT, "ANTHROPIC_API_KEY": ""}, RT)


@pytest.mark.req("Nothing ambient reaches the worker")
def test_pi_passes_every_api_key_the_host_sets() -> None:
    host = {
        **AMBIENT,
        "ANTHROPIC_API_KEY": "a",
        "OPENAI_API_KEY": "b",
        "FAKE_API_KEY": "c",
        "EMPTY_API_KEY": "",
        "API_KEY": "no underscore prefix",
        "OPENAI_API_KEY_FILE": "/x",
        "openai_api_key": "lower case",
    }
    env = pi_environment(host, RT)
    keys = {k: v for k, v in env.items() if k.endswith("_API_KEY")}
    assert keys == {"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "b", "FAKE_API_KEY": "c"}


@pytest.mark.req("A worker's model calls use the host's proxy")
@pytest.mark.parametrize("build", [claude_environment, pi_environment])
def test_both_backends_pass_the_proxy_variables(build: object) -> None:
    host = {
        **AMBIENT,
        "HTTPS_PROXY": "http://127.0.0.1:3128",
        "NO_PROXY": "localhost,example.com",
    }
    env = build(host, RT)  # type: ignore[operator]
    assert env["HTTPS_PROXY"] == "http://127.0.0.1:3128"
    assert env["NO_PROXY"] == "example.com"
    assert "ALL_PROXY" not in env


@pytest.mark.req("The project's interpreter comes first on the worker's PATH")
@pytest.mark.parametrize("backend", ["claude", "pi"])
@pytest.mark.parametrize(
    ("host_path", "interpreter", "expected"),
    [
        ("/usr/bin:/bin", "/repo/.venv/bin/python", "/repo/.venv/bin:/usr/bin:/bin"),
        ("/usr/bin", "/opt/py 3/bin/python3", "/opt/py 3/bin:/usr/bin"),
        # The directory of the path as given: a venv's python symlink is not resolved.
        ("/bin", "/repo/.venv/bin/python3.11", "/repo/.venv/bin:/bin"),
        # Even when the directory is already on the host's PATH, it comes first.
        (
            "/usr/bin:/repo/.venv/bin",
            "/repo/.venv/bin/python",
            "/repo/.venv/bin:/usr/bin:/repo/.venv/bin",
        ),
        (None, "/repo/.venv/bin/python", "/repo/.venv/bin"),
        ("", "/repo/.venv/bin/python", "/repo/.venv/bin"),
        ("/usr/bin:/bin", None, "/usr/bin:/bin"),
    ],
)
def test_interpreter_directory_first(
    backend: str, host_path: str | None, interpreter: str | None, expected: str
) -> None:
    host = {"LANG": "C"} if host_path is None else {"PATH": host_path, "LANG": "C"}
    env = ENVIRONMENT[backend](host, RT, interpreter)
    assert env["PATH"] == expected


@pytest.mark.parametrize("backend", ["claude", "pi"])
def test_without_host_path_or_interpreter_no_path(backend: str) -> None:
    assert "PATH" not in ENVIRONMENT[backend]({}, RT)
    assert "PATH" not in ENVIRONMENT[backend]({"PATH": ""}, RT)
    assert "LANG" not in ENVIRONMENT[backend]({"LANG": ""}, RT)


def test_the_host_environment_is_never_changed() -> None:
    host = dict(AMBIENT)
    claude_environment(host, RT, "/repo/.venv/bin/python")
    pi_environment(host, RT, "/repo/.venv/bin/python")
    assert host == AMBIENT


@pytest.mark.parametrize("bad", ["python", ".venv/bin/python", "/repo/.venv/bin/"])
def test_a_relative_interpreter_is_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        worker_path({"PATH": "/bin"}, bad)


def test_runtime_must_be_absolute() -> None:
    with pytest.raises(ValueError):
        claude_environment(AMBIENT, "tmp/concorde-x")


_host = st.dictionaries(
    st.text(
        alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=20
    ),
    st.text(max_size=20),
    max_size=12,
)


@pytest.mark.req("Nothing ambient reaches the worker")
@given(_host)
def test_claude_names_stay_within_the_table(host: dict[str, str]) -> None:
    assert set(claude_environment(host, RT)) <= set(CLAUDE_VARIABLES)


@pytest.mark.req("Nothing ambient reaches the worker")
@given(_host)
def test_pi_names_stay_within_the_table(host: dict[str, str]) -> None:
    env = pi_environment(host, RT)
    assert {k for k in env if not k.endswith("_API_KEY")} <= set(PI_FIXED_VARIABLES)
    for name in env:
        if name.endswith("_API_KEY"):
            assert env[name] == host[name]


@pytest.mark.parametrize(
    ("env", "shown"),
    [
        ({"ANTHROPIC_API_KEY": "sk-ant-x"}, {"ANTHROPIC_API_KEY": REDACTED}),
        ({"OPENAI_API_KEY": "sk"}, {"OPENAI_API_KEY": REDACTED}),
        ({"GITHUB_TOKEN": "ghp"}, {"GITHUB_TOKEN": REDACTED}),
        ({"CLAUDE_CODE_OAUTH_TOKEN": "t"}, {"CLAUDE_CODE_OAUTH_TOKEN": REDACTED}),
        ({"PATH": "/bin", "HOME": "/h"}, {"PATH": "/bin", "HOME": "/h"}),
        (
            {"HTTPS_PROXY": "http://user:secret@proxy:8080/"},
            {"HTTPS_PROXY": f"http://user:{REDACTED}@proxy:8080/"},
        ),
        ({"http_proxy": "user:secret@proxy:1"}, {"http_proxy": f"user:{REDACTED}@proxy:1"}),
        ({"HTTP_PROXY": "http://tok@proxy:1"}, {"HTTP_PROXY": f"http://{REDACTED}@proxy:1"}),
        ({"https_proxy": "http://u:p@ss@proxy:1"}, {"https_proxy": f"http://u:{REDACTED}@proxy:1"}),
        (
            {"https_proxy": "http://u:pa/ss@proxy:1"},
            {"https_proxy": f"http://u:{REDACTED}@proxy:1"},
        ),
        ({"HTTPS_PROXY": "http://127.0.0.1:3128"}, {"HTTPS_PROXY": "http://127.0.0.1:3128"}),
        ({"NO_PROXY": "a@b,c"}, {"NO_PROXY": "a@b,c"}),
    ],
)
def test_redact(env: dict[str, str], shown: dict[str, str]) -> None:
    assert redact(env) == shown


@given(
    st.text(max_size=12),
    st.text(min_size=1, max_size=12).filter(lambda s: "@" not in s and s != REDACTED),
)
def test_redact_never_shows_a_proxy_password(user: str, password: str) -> None:
    # A password that is the marker itself would show as the marker: nothing to tell apart
    # (the thorough profile found it).
    user = user.replace(":", "").replace("@", "").replace("/", "")
    value = f"http://{user}:{password}@proxy.example:8080"
    shown = redact({"HTTPS_PROXY": value})["HTTPS_PROXY"]
    assert REDACTED in shown
    assert f":{password}@" not in shown
