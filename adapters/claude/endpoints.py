"""A machine's own model endpoint for Claude Code (issue 19 §2): an Anthropic-compatible base URL
(vLLM, LiteLLM, a company gateway, a scripted server) and the host variable holding its token,
configured per machine in `endpoints.json` beside the model map, never in a worktree.

    {"schema_version": 1,
     "claude": {"base_url": "http://127.0.0.1:4000", "token_env": "GATEWAY_TOKEN"}}

The round's environment then carries `ANTHROPIC_BASE_URL` and, with `token_env`, the value of
that host variable as `ANTHROPIC_AUTH_TOKEN` (sent as a bearer token); without it the host's
`ANTHROPIC_API_KEY` goes as seed 000 says. Sandboxed commands never see the token
(adapters/claude/settings.py `SECRET_VARIABLES`). The file holds no secret, only a URL and a
variable's name. pi needs no such file: its own `models.json` provider (`baseUrl`, `api`,
`apiKey`) is the per-machine endpoint, copied into the run like its credentials
(docs/decisions.md "A local model endpoint").

Pure: the file's text comes in; domain/configuration/machine.py says where the model map lies.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass

from concorde_workers.domain.configuration.machine import model_map_location
from concorde_workers.domain.texts import json_limits
from concorde_workers.domain.texts.text import control_problem

__all__ = [
    "ENDPOINTS_FILE",
    "MAX_ENDPOINTS_BYTES",
    "ClaudeEndpoint",
    "claude_environment_of",
    "endpoints_location",
    "parse_endpoints",
]

ENDPOINTS_FILE = "endpoints.json"
MAX_ENDPOINTS_BYTES = 64 * 1024
_URL = re.compile(r"https?://[^\s/?#]+(/[^\s?#]*)?")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class ClaudeEndpoint:
    """Where Claude Code's rounds send their requests, and the host variable with the token."""

    file: str
    base_url: str
    token_env: str | None


def endpoints_location(environ: Mapping[str, str]) -> str | None:
    """`$CONCORDE_ENDPOINTS` when absolute, else `endpoints.json` beside the model map; None
    when neither can be found (a relative variable is that case too, said by the reader)."""
    named = environ.get("CONCORDE_ENDPOINTS", "")
    if named:
        return posixpath.normpath(named) if named.startswith("/") else None
    location = model_map_location(environ, [], {})  # only its folder
    return (
        None
        if not isinstance(location, str)
        else posixpath.join(posixpath.dirname(location), ENDPOINTS_FILE)
    )


def parse_endpoints(text: str, file: str) -> ClaudeEndpoint | str | None:
    """The Claude Code endpoint the file configures, None when it configures none, or what is
    wrong with it (with the repair)."""
    try:
        data = json_limits.loads(text)
    except ValueError as error:
        return f"{file} is not JSON ({error}); repair it or remove it"
    if not isinstance(data, dict) or data.get("schema_version") != 1:
        return f'{file} must be a JSON object with "schema_version": 1'
    unknown = sorted(set(data) - {"schema_version", "claude"})
    if unknown:
        return (
            f'{file} has the unknown field {unknown[0]!r}: it holds only "claude" (pi\'s '
            "endpoint is a provider in its own models.json)"
        )
    claude = data.get("claude")
    if claude is None:
        return None
    return _claude(claude, file)


def _claude(entry: object, file: str) -> ClaudeEndpoint | str:
    if not isinstance(entry, dict) or set(entry) - {"base_url", "token_env"}:
        return f'{file}: "claude" must be an object of "base_url" and "token_env"'
    url, token = entry.get("base_url"), entry.get("token_env")
    if not isinstance(url, str) or control_problem(url) or not _URL.fullmatch(url):
        return (
            f"{file}: claude.base_url must be an http:// or https:// URL (such as "
            "http://127.0.0.1:4000)"
        )
    if token is not None and (not isinstance(token, str) or not _NAME.fullmatch(token)):
        return f"{file}: claude.token_env must name an environment variable"
    return ClaudeEndpoint(file=file, base_url=url, token_env=token)


def claude_environment_of(
    endpoint: ClaudeEndpoint | None, host_env: Mapping[str, str]
) -> dict[str, str] | str:
    """The variables the endpoint adds to a Claude Code round, or why it cannot."""
    if endpoint is None:
        return {}
    env = {"ANTHROPIC_BASE_URL": endpoint.base_url}
    if endpoint.token_env is not None:
        token = host_env.get(endpoint.token_env, "")
        if not token or control_problem(token):
            return (
                f"{endpoint.file} names the token variable {endpoint.token_env}, which the "
                "host's environment does not set (or sets to a value with a control "
                f"character): export {endpoint.token_env}, or drop claude.token_env"
            )
        env["ANTHROPIC_AUTH_TOKEN"] = token
    return env
