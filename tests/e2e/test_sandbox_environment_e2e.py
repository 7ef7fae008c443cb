"""End-to-end: what a sandboxed command's environment holds, on every backend
(tests/e2e/backends.py), dumped with `env` from the worker's own shell (the real programs
against their scripted model servers).

The host's environment carries planted secrets of every usual shape (a token, an AWS pair, a
password, an ssh-agent socket, API keys); none may reach the sandboxed command, and every name
there must be one of a known set: what the round's cleared environment gives (seed 000 "Launch",
seed 001 "Launch"), what the agent program adds of its own, and what sandbox-runtime adds for
its proxy. A new name in a new version of either program fails the test until someone has
looked at it (docs/decisions.md "Claude Code's own variables").

The only credential left is sandbox-runtime's own proxy login (`CLOUDSDK_PROXY_USERNAME` /
`_PASSWORD`, repeated as the userinfo of every `*_proxy` URL): it opens the proxy of this
command, which denies every host (tests/e2e/test_claude_settings_e2e.py).

Claude Code 2.1.332 also puts into its own environment, which its Bash inherits, the token and
path of its cross-session inbox (`CLAUDE_CODE_MESSAGING_TOKEN`, `..._SOCKET`: a Unix socket that
takes `user` messages into the running session). It binds the inbox whenever it can verify its
socket directory's owner: on every host not running as root. The wrapper makes it bind as root
too (`messaging_inbox`); `sandbox.credentials` unsets both, and the control without it shows the
token reaching the command.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from e2e.backends import BackendWorld, backend_world
from e2e.conftest import ClaudeWorld
from e2e.test_claude_boundary_e2e import bash, probe
from servers.claude_wrapper import write_wrapper
from servers.codex_exec import KEY_ENV

pytestmark = pytest.mark.e2e
__all__ = ["backend_world"]  # the fixture, imported for pytest

PLANTED: dict[str, str] = {
    "GITHUB_TOKEN": "ghp_planted0github0token",
    "NPM_TOKEN": "npm_planted0token",
    "AWS_ACCESS_KEY_ID": "AKIAPLANTED0000000",
    "AWS_SECRET_ACCESS_KEY": "planted/aws/secret/access/key",
    "DATABASE_PASSWORD": "planted-db-password",
    "SSH_AUTH_SOCK": "/tmp/planted-ssh-agent.sock",
    "OPENAI_API_KEY": "sk-planted-openai-key",
    "MY_SERVICE_SECRET": "planted-service-secret",
}
"""Host variables of the shapes a user's shell holds; none is in a round's environment."""

CLEARED = {"PATH", "LANG", "HOME", "TMPDIR"}
"""Names the round's cleared environment gives on both backends (the proxy names are below)."""

SANDBOX_RUNTIME = {
    "SANDBOX_RUNTIME",
    "GIT_CONFIG_PARAMETERS",
    "GIT_SSH_COMMAND",
    "JAVA_TOOL_OPTIONS",
    "NO_PROXY",
    "no_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
    "FTP_PROXY",
    "ftp_proxy",
    "GRPC_PROXY",
    "grpc_proxy",
    "RSYNC_PROXY",
    "DOCKER_HTTP_PROXY",
    "DOCKER_HTTPS_PROXY",
    "CLOUDSDK_PROXY_TYPE",
    "CLOUDSDK_PROXY_ADDRESS",
    "CLOUDSDK_PROXY_PORT",
    "CLOUDSDK_PROXY_USERNAME",
    "CLOUDSDK_PROXY_PASSWORD",
    "CLAUDE_CODE_HOST_HTTP_PROXY_PORT",
    "CLAUDE_CODE_HOST_SOCKS_PROXY_PORT",
}
"""What sandbox-runtime sets for the command: its proxy, in every form tools read."""

SHELL = {"PWD", "SHLVL", "_", "SHELL", "TMPPREFIX", "NoDefaultCurrentDirectoryInExePath"}
"""The shell's own."""

CLAUDE_CODE = {
    "CLAUDE_CONFIG_DIR",
    "CLAUDE_CODE_DISABLE_CLAUDE_MDS",
    "CLAUDE_CODE_DISABLE_AUTO_MEMORY",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
    "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS",
    "IS_SANDBOX",
    "COREPACK_ENABLE_AUTO_PIN",
    "CLAUDE_CODE_CHILD_SESSION",
    "AI_AGENT",
    "CLAUDE_CODE_SESSION_ID",
    "CLAUDE_PID",
    "CLAUDE_EFFORT",
    "CLAUDECODE",
    "CLAUDE_CODE_CHILD_NOTES_DIR",
    "CLAUDE_CODE_SESSION_ATTENDED",
    "CLAUDE_TMPDIR",
    "CLAUDE_CODE_TMPDIR",
    "GIT_EDITOR",
    "CLAUDE_CODE_ENTRYPOINT",
    "CLAUDE_CODE_EXECPATH",
    # the test wrapper's (tests/servers/claude_wrapper.py)
    "ANTHROPIC_BASE_URL",
    "CLAUDE_CODE_MAX_RETRIES",
}
"""What a Claude Code round's Bash may hold besides the above: the round's own variables, the
settings' env, and what Claude Code 2.1.332 adds (its session, pid, temp folders, entry point)."""

PI = {
    "CLAUDE_CODE_TMPDIR",
    "PI_CODING_AGENT_DIR",
    "PI_OFFLINE",
    "PI_SKIP_VERSION_CHECK",
    "PI_TELEMETRY",
    "PI_CODING_AGENT",
}
"""What a pi round's bash may hold besides the above (seed 001 "Launch", and pi's marker)."""

SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW|_KEY|CREDENTIAL|AUTH|SOCK(?!S)", re.IGNORECASE)
PROXY_LOGIN = {"CLOUDSDK_PROXY_USERNAME", "CLOUDSDK_PROXY_PASSWORD"}


def parse_env(dump: str) -> dict[str, str]:
    """`env` output up to the end mark: name to value (a value may span lines)."""
    body, mark, _ = dump.partition("ENV-END")
    assert mark, dump
    env: dict[str, str] = {}
    last = None
    for line in body.splitlines():
        name, eq, value = line.partition("=")
        if eq and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            env[name], last = value, name
        elif last is not None:
            env[last] += "\n" + line
    return env


def assert_no_secret(env: dict[str, str], allowed: set[str], secrets: list[str]) -> None:
    """Every name known, no planted or agent secret anywhere, and the only login in it the
    sandbox proxy's own."""
    assert set(env) - allowed == set(), sorted(set(env) - allowed)
    whole = "\n".join(f"{k}={v}" for k, v in env.items())
    for secret in secrets:
        assert secret not in whole, secret
    assert {name for name in env if SECRET_NAME.search(name)} <= PROXY_LOGIN, sorted(env)
    # sandbox-runtime's proxy login is the only one; without its proxy (Codex) there is none.
    login = f"{env.get('CLOUDSDK_PROXY_USERNAME')}:{env.get('CLOUDSDK_PROXY_PASSWORD')}"
    for name, value in env.items():
        if "://" in value and "@" in value:
            assert set(env) >= PROXY_LOGIN, (name, value)
            parts = urlsplit(value)
            userinfo = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
            assert userinfo == login, (name, value)


CODEX = {
    "CODEX_VERSION",
    "CODEX_SESSION_ID",
    "CODEX_THREAD_ID",
    "CODEX_TOOL_CALL_ID",
    "CODEX_CI",
    "CODEX_APPLY_PATCH_PRESERVE_LINE_ENDINGS",
    "CODEX_SANDBOX_NETWORK_DISABLED",
    "COLORTERM",
    "TERM",
    "NO_COLOR",
    "PAGER",
    "GIT_PAGER",
    "GH_PAGER",
    "LC_CTYPE",
    "LC_ALL",
}
"""What a codex round's command may hold besides the cleared environment: what Codex 0.171.0
sets for every command it runs (its thread and call, its sandbox's network flag, pagers and
colours off), its key variable never (`shell_environment_policy.inherit = "core"`)."""

ALLOWED = {
    "claude": CLEARED | SANDBOX_RUNTIME | SHELL | CLAUDE_CODE,
    "pi": CLEARED | SANDBOX_RUNTIME | SHELL | PI,
    "codex": CLEARED | SHELL | CODEX,
}
"""Every name a backend's sandboxed command may hold."""
SANDBOXED = {
    "claude": ("SANDBOX_RUNTIME", "1"),
    "pi": ("SANDBOX_RUNTIME", "1"),
    "codex": ("CODEX_SANDBOX_NETWORK_DISABLED", "1"),
}
"""The variable that says the command ran in the backend's own sandbox."""
AGENT_KEYS = {"claude": ("ANTHROPIC_API_KEY",), "pi": (), "codex": (KEY_ENV,)}
"""The host variables holding the agent program's own key, which its commands never hold."""


def show_inbox(w: BackendWorld) -> None:
    """Claude Code binds its cross-session inbox as root too (the wrapper's `messaging_inbox`),
    as on every host not running as root, so that its token is there to be kept out."""
    if w.backend == "claude":
        program = w.claude_program
        assert program is not None
        write_wrapper(
            Path(w.environ["CONCORDE_CLAUDE"]), program, w.claude.server.url, messaging_inbox=True
        )


@pytest.mark.req("Nothing ambient reaches the worker")
@pytest.mark.req("Bash runs sandboxed without network")
def test_a_sandboxed_command_holds_no_secret(backend_world: BackendWorld) -> None:
    w = backend_world
    w.environ.update(PLANTED)
    show_inbox(w)
    run, said = w.command("env; echo ENV-END")
    assert run.record.status == "ok", run.explain()
    env = parse_env(said)
    name, value = SANDBOXED[w.backend]
    assert env.get(name) == value, env
    keys = [w.environ[name] for name in AGENT_KEYS[w.backend]]
    assert_no_secret(env, ALLOWED[w.backend], [*PLANTED.values(), *keys])
    w.assert_cleaned(run)


@pytest.mark.req("Nothing ambient reaches the worker")
def test_without_sandbox_credentials_claude_code_hands_its_bash_the_inbox_token(
    claude_world: ClaudeWorld, claude_program: Path
) -> None:
    """The control of the test above: the hole is real in this version."""
    w = claude_world
    w.environ.update(PLANTED)
    write_wrapper(
        Path(w.environ["CONCORDE_CLAUDE"]),
        claude_program,
        w.server.url,
        settings_drop=("sandbox.credentials",),
        messaging_inbox=True,
    )
    run, results = probe(w, [bash("env; echo ENV-END")])
    env = parse_env(results[0][0])
    assert env["SANDBOX_RUNTIME"] == "1", env
    inbox = {"CLAUDE_CODE_MESSAGING_TOKEN", "CLAUDE_CODE_MESSAGING_SOCKET"}
    assert inbox <= set(env) and "ANTHROPIC_API_KEY" in env, sorted(env)
    w.assert_cleaned(run)
