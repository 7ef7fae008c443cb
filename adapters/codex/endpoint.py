"""A machine's own Codex configuration (issue 33 §1): the Responses-compatible endpoint Codex's
rounds reach, the host variable holding its key, and optionally the prices of a token the host
prices a round's usage with (Codex reports tokens, never a cost). Configured per machine in
`codex.json` beside the model map (or the absolute path `$CONCORDE_CODEX_CONFIG`), never in a
worktree, as Claude Code's endpoints.json:

    {"schema_version": 1,
     "base_url": "http://127.0.0.1:4000/v1", "key_env": "LOCAL_LLM_API_KEY",
     "prices": {"input": 1.25, "cached_input": 0.125, "output": 10.0}}

Without the file Codex's rounds go to https://api.openai.com/v1 with `OPENAI_API_KEY`. The file
holds no secret, only a URL and a variable's name (a URL with a user name or password is
refused: plan prints it); `key_env` must name a secret's variable (so that PATH or HOME is never
sent as a key). Prices are US dollars per million tokens; without them a budget cannot be
priced, and a run with `max_budget_usd` on codex is refused by plan and run (request_invalid,
adapters/codex/backend.py; docs/decisions.md 72).

Pure: the file's text comes in through the one reader of machine files.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from concorde_workers.domain.configuration.machine import MachineFileAnswer, MachineFileSpec
from concorde_workers.domain.ground import json_limits
from concorde_workers.domain.ground.text import control_problem

__all__ = [
    "CODEX_CONFIG_FILE",
    "CODEX_CONFIG_SPEC",
    "DEFAULT_BASE_URL",
    "DEFAULT_KEY_ENV",
    "PRICE_KEYS",
    "CodexEndpoint",
    "codex_endpoint",
    "parse_codex_config",
]

CODEX_CONFIG_FILE = "codex.json"
CODEX_CONFIG_SPEC = MachineFileSpec(
    variable="CONCORDE_CODEX_CONFIG",
    name=CODEX_CONFIG_FILE,
    max_bytes=64 * 1024,
    shape='README "A local model endpoint" shows its shape',
)
DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
PRICE_KEYS = ("input", "cached_input", "output")
SECRET_SUFFIXES = ("_TOKEN", "_KEY", "_SECRET")

_URL = re.compile(r"https?://[^\s/?#]+(/[^\s?#]*)?")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class CodexEndpoint:
    """Where Codex's rounds send their requests, the host variable with the key, the prices."""

    base_url: str = DEFAULT_BASE_URL
    key_env: str = DEFAULT_KEY_ENV
    prices: tuple[tuple[str, float], ...] = ()

    def settings(self) -> dict[str, str]:
        """As `MachineFileAnswer.settings` (and back: `of_settings`)."""
        found = {"base_url": self.base_url, "key_env": self.key_env}
        found.update({f"price_{k}": repr(v) for k, v in self.prices})
        return found

    @classmethod
    def of_settings(cls, settings: Mapping[str, str]) -> CodexEndpoint:
        prices = tuple(
            (k, float(settings[f"price_{k}"])) for k in PRICE_KEYS if f"price_{k}" in settings
        )
        return cls(
            base_url=settings.get("base_url", DEFAULT_BASE_URL),
            key_env=settings.get("key_env", DEFAULT_KEY_ENV),
            prices=prices,
        )


def parse_codex_config(text: str, file: str) -> CodexEndpoint | str:
    """The endpoint the file configures, or what is wrong with it (with the repair)."""
    try:
        data = json_limits.loads(text)
    except ValueError as error:
        return f"{file} is not JSON ({error}); repair it or remove it"
    if not isinstance(data, dict) or data.get("schema_version") != 1:
        return f'{file} must be a JSON object with "schema_version": 1'
    unknown = sorted(set(data) - {"schema_version", "base_url", "key_env", "prices"})
    if unknown:
        return (
            f"{file} has the unknown field {unknown[0]!r}: it holds only base_url, key_env "
            "and prices"
        )
    url = data.get("base_url", DEFAULT_BASE_URL)
    if not isinstance(url, str) or control_problem(url) or not _URL.fullmatch(url):
        return (
            f"{file}: base_url must be an http:// or https:// URL of a Responses API (such as "
            "http://127.0.0.1:4000/v1)"
        )
    if "@" in url.split("/")[2]:
        return (
            f"{file}: base_url holds a user name or password (user:password@host): the file "
            "holds no secret, and plan prints the URL; give the URL without them and the key "
            "in a host variable that key_env names"
        )
    key = data.get("key_env", DEFAULT_KEY_ENV)
    if not isinstance(key, str) or not _NAME.fullmatch(key):
        return f"{file}: key_env must name an environment variable"
    if not key.upper().endswith(SECRET_SUFFIXES):
        return (
            f"{file}: key_env names {key}, which is no secret's variable: its value would go to "
            "the endpoint as the key; name the host variable that holds the key, whose name ends "
            f"in {', '.join(SECRET_SUFFIXES)} (such as LOCAL_LLM_API_KEY)"
        )
    prices = _prices(data.get("prices"), file)
    if isinstance(prices, str):
        return prices
    return CodexEndpoint(base_url=url, key_env=key, prices=prices)


def _prices(value: object, file: str) -> tuple[tuple[str, float], ...] | str:
    if value is None:
        return ()
    wrong = (
        f"{file}: prices must be an object of input, cached_input and output, each US dollars "
        "per million tokens (a number of at least 0)"
    )
    if not isinstance(value, dict) or set(value) - set(PRICE_KEYS):
        return wrong
    found: list[tuple[str, float]] = []
    for key in PRICE_KEYS:
        if key not in value:
            continue
        price = value[key]
        if isinstance(price, bool) or not isinstance(price, int | float):
            return wrong
        if not math.isfinite(price) or price < 0:
            return wrong
        found.append((key, float(price)))
    if "input" not in value or "output" not in value:
        return f"{file}: prices must give at least input and output"
    return tuple(found)


def codex_endpoint(text: str | None, file: str, host_env: Mapping[str, str]) -> MachineFileAnswer:
    """The profile's judge of codex.json (`BackendProfile.machine_file_judge`): the key it
    adds to each round (under its own name, which the generated config.toml's `env_key`
    names), the credential it takes (by name: key_env, else OPENAI_API_KEY without the file),
    the settings it gives the config.toml, what it says, or what is wrong with it."""
    parsed = CodexEndpoint() if text is None else parse_codex_config(text, file)
    if isinstance(parsed, str):
        return MachineFileAnswer(problem=parsed)
    key = host_env.get(parsed.key_env, "")
    if key and control_problem(key):
        return MachineFileAnswer(
            problem=f"${parsed.key_env} holds a control character: export the key alone"
        )
    if text is not None and parsed.key_env != DEFAULT_KEY_ENV and not key:
        return MachineFileAnswer(
            problem=f"{file} names the key variable {parsed.key_env}, which the host's "
            f"environment does not set: export {parsed.key_env}, or drop key_env"
        )
    where = "none" if text is None else file
    priced = (
        "prices " + ", ".join(f"{k} ${v:g}/M" for k, v in parsed.prices)
        if parsed.prices
        else "no prices (a budget cannot be priced)"
    )
    return MachineFileAnswer(
        adds={parsed.key_env: key} if key else {},
        # The one variable a run takes the key from (the config.toml's env_key), with or
        # without the file: doctor's credentials line says it, as plan and run take it.
        credentials=(parsed.key_env,),
        credentials_origin=f"the key variable {file} names"
        if text is not None
        else f"the key variable without a {CODEX_CONFIG_FILE}",
        said=f"{where}: Codex's requests go to {parsed.base_url}, with ${parsed.key_env}; {priced}",
        settings=parsed.settings(),
    )
