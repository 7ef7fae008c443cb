"""The exact environment of a pi round (seed 001 "Launch"): PATH, LANG, HOME=<rt>/home,
TMPDIR=<rt>/tmp, CLAUDE_CODE_TMPDIR=<rt>/tmp, PI_CODING_AGENT_DIR=<rt>/config, PI_OFFLINE=1,
PI_SKIP_VERSION_CHECK=1, PI_TELEMETRY=0, every *_API_KEY the host sets, the proxy variables.
Pure.
"""

from __future__ import annotations

from collections.abc import Mapping

from concorde_workers.domain.ground.layout import RuntimeLayout
from concorde_workers.domain.isolation.environment import (
    API_KEY_SUFFIX,
    as_runtime,
    common_environment,
)
from concorde_workers.domain.isolation.proxy import ALL_PROXY_NAMES, proxy_variables

__all__ = ["PI_FIXED_VARIABLES", "pi_environment"]

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


def pi_environment(
    host_env: Mapping[str, str],
    runtime: RuntimeLayout | str,
    project_interpreter: str | None = None,
) -> dict[str, str]:
    """The exact environment of a pi round (seed 001 "Launch")."""
    rt = as_runtime(runtime)
    env = common_environment(host_env, project_interpreter)
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
