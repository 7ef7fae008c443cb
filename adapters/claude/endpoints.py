"""A machine's own model endpoint for Claude Code (issue 19 §2): an Anthropic-compatible base URL
(vLLM, LiteLLM, a company gateway, a scripted server) and the host variable holding its token,
configured per machine in `endpoints.json` beside the model map (or the absolute path
`$CONCORDE_ENDPOINTS`), never in a worktree.

    {"schema_version": 1,
     "claude": {"base_url": "http://127.0.0.1:4000", "token_env": "GATEWAY_TOKEN"}}

The round's environment then carries `ANTHROPIC_BASE_URL` and, with `token_env`, the value of
that host variable as `ANTHROPIC_AUTH_TOKEN` (sent as a bearer token); without it the host's
`ANTHROPIC_API_KEY` goes as seed 000 says. Sandboxed commands never see the token
(adapters/claude/settings.py `SECRET_VARIABLES`). The file holds no secret, only a URL and a
variable's name: a URL with a user name or password is refused (plan prints the URL), and so is
a `token_env` that names no secret's variable (`PATH` would send the host's PATH as the token;
docs/decisions.md 67). pi needs no such file: its own `models.json` provider (`baseUrl`, `api`,
`apiKey`) is the per-machine endpoint, copied into the run like its credentials
(docs/decisions.md "A local model endpoint").

Pure: the file's text comes in through the one reader of machine files
(application/setup/machine_files.py), which the profile's `machine_file` names; plan, run and doctor
take `claude_endpoint`'s answer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from concorde_workers.domain.configuration.machine import MachineFileAnswer, MachineFileSpec
from concorde_workers.domain.ground import json_limits
from concorde_workers.domain.ground.text import control_problem

__all__ = [
    "ENDPOINTS_FILE",
    "ENDPOINTS_SPEC",
    "MAX_ENDPOINTS_BYTES",
    "SECRET_SUFFIXES",
    "ClaudeEndpoint",
    "claude_endpoint",
    "claude_environment_of",
    "parse_endpoints",
]

ENDPOINTS_FILE = "endpoints.json"
MAX_ENDPOINTS_BYTES = 64 * 1024
ENDPOINTS_SPEC = MachineFileSpec(
    variable="CONCORDE_ENDPOINTS",
    name=ENDPOINTS_FILE,
    max_bytes=MAX_ENDPOINTS_BYTES,
    shape='README "A local model endpoint" shows its shape',
)
SECRET_SUFFIXES = ("_TOKEN", "_KEY", "_SECRET")
"""How the name of a secret's variable ends (GATEWAY_TOKEN, LITELLM_API_KEY, GW_SECRET): the only
variables `token_env` may name, so that no other value of the host's environment (PATH, HOME, a
proxy's address) is ever sent to an endpoint as its bearer token."""

_URL = re.compile(r"https?://[^\s/?#]+(/[^\s?#]*)?")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class ClaudeEndpoint:
    """Where Claude Code's rounds send their requests, and the host variable with the token."""

    file: str
    base_url: str
    token_env: str | None


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
    if "@" in url.split("/")[2]:
        # Never repeated in the message: it holds the secret the file must not hold.
        return (
            f"{file}: claude.base_url holds a user name or password (user:password@host): the "
            "file holds no secret, and plan prints the URL; give the URL without them and the "
            "gateway's token in a host variable that claude.token_env names"
        )
    if token is not None and (not isinstance(token, str) or not _NAME.fullmatch(token)):
        return f"{file}: claude.token_env must name an environment variable"
    if token is not None and not token.upper().endswith(SECRET_SUFFIXES):
        return (
            f"{file}: claude.token_env names {token}, which is no secret's variable: its value "
            "would go to the endpoint as the bearer token; name the host variable that holds "
            f"the gateway's token, whose name ends in {', '.join(SECRET_SUFFIXES)} (such as "
            "GATEWAY_TOKEN)"
        )
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


def claude_endpoint(text: str | None, file: str, host_env: Mapping[str, str]) -> MachineFileAnswer:
    """The profile's judge of endpoints.json (`BackendProfile.machine_file_judge`): what it adds
    to each round, the credential it takes (the token's variable, by name), what it says, or
    what is wrong with it."""
    parsed = None if text is None else parse_endpoints(text, file)
    if isinstance(parsed, str):
        return MachineFileAnswer(problem=parsed)
    if parsed is None:
        where = "none" if text is None else "none in it"
        return MachineFileAnswer(said=f"{file}: {where}; Claude Code goes to Anthropic's API")
    added = claude_environment_of(parsed, host_env)
    if isinstance(added, str):
        return MachineFileAnswer(problem=added)
    token = (
        f"the token of ${parsed.token_env} as a bearer token"
        if parsed.token_env
        else "ANTHROPIC_API_KEY or the login as usual"
    )
    return MachineFileAnswer(
        adds=added,
        credentials=(parsed.token_env,) if parsed.token_env else (),
        said=f"{file}: Claude Code's requests go to {parsed.base_url}, with {token}",
    )
