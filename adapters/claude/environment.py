"""The exact environment of a Claude Code round (seed 000 "Launch"): PATH, LANG, HOME=<rt>/home,
TMPDIR=<rt>/tmp, CLAUDE_CONFIG_DIR=<rt>/config, CLAUDE_CODE_DISABLE_CLAUDE_MDS=1,
CLAUDE_CODE_DISABLE_AUTO_MEMORY=1, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1, ANTHROPIC_API_KEY
(only when the host has one), the proxy variables. IS_SANDBOX=1 (needed by Claude Code running
as root) is not a process variable: the settings' `env` holds it, which keeps this table exact.
Pure.
"""

from __future__ import annotations

from collections.abc import Mapping

from concorde_workers.domain.ground.layout import RuntimeLayout
from concorde_workers.domain.isolation.environment import as_runtime, common_environment
from concorde_workers.domain.isolation.proxy import ALL_PROXY_NAMES, proxy_variables

__all__ = ["CLAUDE_VARIABLES", "claude_environment"]

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


def claude_environment(
    host_env: Mapping[str, str],
    runtime: RuntimeLayout | str,
    project_interpreter: str | None = None,
) -> dict[str, str]:
    """The exact environment of a Claude Code round (seed 000 "Launch")."""
    rt = as_runtime(runtime)
    env = common_environment(host_env, project_interpreter)
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
