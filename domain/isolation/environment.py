"""What the exact environment of every worker round shares (seed 000 "Launch", seed 001
"Launch"); each program's own table is its adapter package's (adapters/claude/environment.py,
adapters/pi/environment.py).

The environment is cleared and then set to exactly the variables the program's table lists;
nothing ambient reaches the worker. The host's environment comes in as a Mapping (the domain
never reads os.environ). Every table starts from `common_environment` (PATH, LANG) and ends with
the proxy variables; `redact` is how `plan` shows one.

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

from concorde_workers.domain.ground.layout import RuntimeLayout

REDACTED = "<redacted>"
API_KEY_SUFFIX = "_API_KEY"
SECRET_SUFFIXES: tuple[str, ...] = ("_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD")


def as_runtime(runtime: RuntimeLayout | str) -> RuntimeLayout:
    """The layout of a runtime directory given as one or by its root."""
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


def common_environment(
    host_env: Mapping[str, str], project_interpreter: str | None
) -> dict[str, str]:
    """What every round's environment starts from: PATH and LANG (the module docstring)."""
    env: dict[str, str] = {}
    path = worker_path(host_env, project_interpreter)
    if path is not None:
        env["PATH"] = path
    if host_env.get("LANG"):
        env["LANG"] = host_env["LANG"]
    return env


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
