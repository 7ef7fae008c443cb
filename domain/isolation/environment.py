"""The exact environment of a worker round, per backend (seed 000 "Launch", seed 001 "Launch").

The environment is cleared and then set to exactly the variables below; nothing ambient reaches
the worker. The host's environment comes in as a Mapping (the domain never reads os.environ).

Claude Code:  PATH, LANG, HOME=<rt>/home, TMPDIR=<rt>/tmp, CLAUDE_CONFIG_DIR=<rt>/config,
              CLAUDE_CODE_DISABLE_CLAUDE_MDS=1, CLAUDE_CODE_DISABLE_AUTO_MEMORY=1,
              CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1, ANTHROPIC_API_KEY (only when the host has
              one), the proxy variables.
pi:           PATH, LANG, HOME=<rt>/home, TMPDIR=<rt>/tmp, CLAUDE_CODE_TMPDIR=<rt>/tmp,
              PI_CODING_AGENT_DIR=<rt>/config, PI_OFFLINE=1, PI_SKIP_VERSION_CHECK=1,
              PI_TELEMETRY=0, every *_API_KEY the host sets, the proxy variables.

Decisions where the spec is silent:

* A host variable set to the empty string counts as not set (PATH, LANG, the API keys): an empty
  PATH would mean "the working directory", an empty API key would shadow the credential copy.
* PATH: the project interpreter's directory (`posixpath.dirname` of the path as given, symbolic
  links not resolved, so a virtual environment's bin/ comes first), then the host's PATH. When
  the host has no PATH, the interpreter's directory alone; with neither, no PATH at all (the
  agent program then uses its runtime's default search path).
* IS_SANDBOX=1 (needed by Claude Code running as root) is not a process variable: the Harness
  puts it in the worker settings' `env`, which keeps this table exact.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping

from concorde_workers.domain.evidence.layout import RuntimeLayout
from concorde_workers.domain.isolation.proxy import ALL_PROXY_NAMES, proxy_variables

REDACTED = "<redacted>"
API_KEY_SUFFIX = "_API_KEY"
SECRET_SUFFIXES: tuple[str, ...] = ("_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD")

CLAUDE_VARIABLES: tuple[str, ...] = (
    "PATH",
    "LANG",
    "HOME",
    "TMPDIR",
    "CLAUDE_CONFIG_DIR",
    "CLAUDE_CODE_DISABLE_CLAUDE_MDS",
    "CLAUDE_CODE_DISABLE_AUTO_MEMORY",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_AUTH_TOKEN",
    *ALL_PROXY_NAMES,
)
"""Every name a Claude Code round may get (some only when the host has them; the base URL and
its token only when the machine's endpoints.json configures them,
domain/configuration/endpoints.py)."""

PI_FIXED_VARIABLES: tuple[str, ...] = (
    "PATH",
    "LANG",
    "HOME",
    "TMPDIR",
    "CLAUDE_CODE_TMPDIR",
    "PI_CODING_AGENT_DIR",
    "PI_OFFLINE",
    "PI_SKIP_VERSION_CHECK",
    "PI_TELEMETRY",
    *ALL_PROXY_NAMES,
)
"""Every name a pi round may get besides the host's *_API_KEY variables."""


def _runtime(runtime: RuntimeLayout | str) -> RuntimeLayout:
    return runtime if isinstance(runtime, RuntimeLayout) else RuntimeLayout(root=runtime)


def worker_path(host_env: Mapping[str, str], project_interpreter: str | None) -> str | None:
    """PATH for a worker round: the project interpreter's directory first, then the host's PATH;
    None when there is neither."""
    host_path = host_env.get("PATH") or None
    if project_interpreter is None:
        return host_path
    if not posixpath.isabs(project_interpreter) or project_interpreter.endswith("/"):
        raise ValueError(
            f"the project interpreter must be an absolute file path, got {project_interpreter!r}"
        )
    directory = posixpath.dirname(project_interpreter)
    return directory if host_path is None else f"{directory}:{host_path}"


def _common(host_env: Mapping[str, str], project_interpreter: str | None) -> dict[str, str]:
    env: dict[str, str] = {}
    path = worker_path(host_env, project_interpreter)
    if path is not None:
        env["PATH"] = path
    if host_env.get("LANG"):
        env["LANG"] = host_env["LANG"]
    return env


def claude_environment(
    host_env: Mapping[str, str],
    runtime: RuntimeLayout | str,
    project_interpreter: str | None = None,
) -> dict[str, str]:
    """The exact environment of a Claude Code round (seed 000 "Launch")."""
    rt = _runtime(runtime)
    env = _common(host_env, project_interpreter)
    env["HOME"] = rt.home
    env["TMPDIR"] = rt.tmp
    env["CLAUDE_CONFIG_DIR"] = rt.config
    env["CLAUDE_CODE_DISABLE_CLAUDE_MDS"] = "1"
    env["CLAUDE_CODE_DISABLE_AUTO_MEMORY"] = "1"
    env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] = "1"
    if host_env.get("ANTHROPIC_API_KEY"):
        env["ANTHROPIC_API_KEY"] = host_env["ANTHROPIC_API_KEY"]
    env.update(proxy_variables(host_env))
    return env


def pi_environment(
    host_env: Mapping[str, str],
    runtime: RuntimeLayout | str,
    project_interpreter: str | None = None,
) -> dict[str, str]:
    """The exact environment of a pi round (seed 001 "Launch")."""
    rt = _runtime(runtime)
    env = _common(host_env, project_interpreter)
    env["HOME"] = rt.home
    env["TMPDIR"] = rt.tmp
    env["CLAUDE_CODE_TMPDIR"] = rt.tmp
    env["PI_CODING_AGENT_DIR"] = rt.config
    env["PI_OFFLINE"] = "1"
    env["PI_SKIP_VERSION_CHECK"] = "1"
    env["PI_TELEMETRY"] = "0"
    for name in sorted(host_env):
        if name.endswith(API_KEY_SUFFIX) and host_env[name]:
            env[name] = host_env[name]
    env.update(proxy_variables(host_env))
    return env


def worker_environment(
    backend: str,
    host_env: Mapping[str, str],
    runtime: RuntimeLayout | str,
    project_interpreter: str | None = None,
) -> dict[str, str]:
    """The environment of a round of `backend` ("claude" or "pi")."""
    if backend == "claude":
        return claude_environment(host_env, runtime, project_interpreter)
    if backend == "pi":
        return pi_environment(host_env, runtime, project_interpreter)
    raise ValueError(f"unknown backend {backend!r}: expected claude or pi")


def _redact_userinfo(value: str) -> str:
    """A proxy URL with its userinfo password (or a user-only userinfo, which may be a token)
    replaced by <redacted>."""
    scheme_end = value.find("://")
    head, rest = (
        ("", value) if scheme_end < 0 else (value[: scheme_end + 3], value[scheme_end + 3 :])
    )
    authority_end = len(rest)
    for stop in "/?#":
        cut = rest.find(stop)
        if 0 <= cut < authority_end:
            authority_end = cut
    authority = rest[:authority_end]
    if "@" in authority:
        userinfo, _, hostport = authority.rpartition("@")
        tail = rest[authority_end:]
    elif "@" in rest:
        # An unencoded '/', '?' or '#' in the password: redact up to the last '@'.
        userinfo, _, remainder = rest.rpartition("@")
        user = userinfo.partition(":")[0] if ":" in userinfo.partition("/")[0] else ""
        shown = f"{user}:{REDACTED}" if user else REDACTED
        return f"{head}{shown}@{remainder}"
    else:
        return value
    user, colon, _password = userinfo.partition(":")
    shown = f"{user}:{REDACTED}" if colon else REDACTED
    return f"{head}{shown}@{hostport}{tail}"


def redact(env: Mapping[str, str]) -> dict[str, str]:
    """The environment for display: the values of *_API_KEY, *_TOKEN, *_SECRET and *_PASSWORD
    variables and the userinfo passwords of proxy variables replaced by <redacted>."""
    shown: dict[str, str] = {}
    for name, value in env.items():
        upper = name.upper()
        if upper.endswith(SECRET_SUFFIXES):
            shown[name] = REDACTED
        elif upper.endswith("_PROXY") and upper != "NO_PROXY":
            shown[name] = _redact_userinfo(value)
        else:
            shown[name] = value
    return shown
