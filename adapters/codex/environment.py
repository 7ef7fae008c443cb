"""The exact environment of a Codex round (issue 33 §1): PATH, LANG, HOME=<rt>/home (an empty
folder of the run: Codex lists `~/.agents/skills`), TMPDIR=<rt>/tmp, CODEX_HOME=<rt>/config/codex,
the proxy variables; the endpoint's key comes from the machine's Codex configuration
(adapters/codex/endpoint.py), under the one name its config.toml's `env_key` gives. Pure."""

from __future__ import annotations

from collections.abc import Mapping

from concorde_workers.adapters.codex.layout import codex_home
from concorde_workers.domain.ground.layout import RuntimeLayout
from concorde_workers.domain.isolation.environment import as_runtime, common_environment
from concorde_workers.domain.isolation.proxy import ALL_PROXY_NAMES, proxy_variables

__all__ = ["CODEX_FIXED_VARIABLES", "codex_environment"]

CODEX_FIXED_VARIABLES: tuple[str, ...] = (
    "PATH",
    "LANG",
    "HOME",
    "TMPDIR",
    "CODEX_HOME",
    *ALL_PROXY_NAMES,
)
"""Every name a Codex round may get besides the endpoint's key variable."""


def codex_environment(
    host_env: Mapping[str, str],
    runtime: RuntimeLayout | str,
    project_interpreter: str | None = None,
) -> dict[str, str]:
    """The exact environment of a Codex round, before the machine file's key."""
    rt = as_runtime(runtime)
    env = common_environment(host_env, project_interpreter)
    env["HOME"] = rt.home
    env["TMPDIR"] = rt.tmp
    env["CODEX_HOME"] = codex_home(rt)
    env.update(proxy_variables(host_env))
    return env
