"""pi's models.json and auth.json as pi 0.73.1 reads them (issue 31 §1; docs/decisions.md 67):
the profile's `copies_judge`, which plan, run and doctor take through the one reader of the
files a run copies (application/setup/machine_files.py).

What pi rejects or misreads, found in its own code (node_modules/@mariozechner/pi-coding-agent
0.73.1, dist/core/model-registry.js, auth-storage.js, resolve-config-value.js, model-resolver.js;
../shared/notes/pi.md §6) — each silent at run time but for a last "Model … not found":

- models.json is JSON with `//` comments and trailing commas allowed (`stripJsonComments`), an
  object whose `providers` each meet `ProviderConfigSchema` (strings non-empty, `models` entries
  with an `id`, numbers and booleans where it says); then `validateConfig`: a provider that is
  no built-in one and defines models needs `baseUrl` and `apiKey`, and each model an `api` (the
  provider's or its own); `contextWindow` and `maxTokens` above 0. One failure and pi drops
  every provider of the file: the run's `--model local/…` then ends pi_failed with only
  "Model … not found".
- auth.json is strict JSON (no comments): not JSON, and pi takes none of its credentials; an
  entry is `{"type": "api_key", "key": …}` or an `oauth` one, any other type is ignored.
- A key (`apiKey`, an auth.json `key`) is a variable's name when the environment sets it, else
  the text itself, or `!command`. A pi round receives only the host's `*_API_KEY` variables:
  a key naming another variable the host sets would be sent as its own name. A `!command` would
  run in pi's process inside the confinement, where the user's home and tools are hidden:
  refused, with the repair.
- `--model provider/id`: a provider pi knows by no name (neither built in nor defined in
  models.json, nor the first part of a built-in model's id) ends the run at once; an id that a
  provider of models.json does not list is not refused by pi but silently replaced — by the
  first model whose id or name contains it, else sent as a "custom model id" with a warning on
  stderr. Both are refused before launch, naming the file, the entry and the repair.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from concorde_workers.adapters.pi.layout import AUTH_FILE, MODELS_FILE
from concorde_workers.domain.configuration.profile import CopiedText
from concorde_workers.domain.ground import json_limits
from concorde_workers.domain.isolation.environment import API_KEY_SUFFIX

__all__ = ["PI_BUILT_IN_PROVIDERS", "PI_MODEL_ID_PREFIXES", "judge_pi_files", "strip_comments"]

PI_BUILT_IN_PROVIDERS = frozenset(
    {
        "amazon-bedrock", "anthropic", "azure-openai-responses", "cerebras",
        "cloudflare-ai-gateway", "cloudflare-workers-ai", "deepseek", "fireworks",
        "github-copilot", "google", "google-vertex", "groq", "huggingface", "kimi-coding",
        "minimax", "minimax-cn", "mistral", "moonshotai", "moonshotai-cn", "openai",
        "openai-codex", "opencode", "opencode-go", "openrouter", "vercel-ai-gateway", "xai",
        "xiaomi", "xiaomi-token-plan-ams", "xiaomi-token-plan-cn", "xiaomi-token-plan-sgp", "zai",
    }
)  # fmt: skip
"""pi-ai 0.73.1's `getProviders()` (a test asks the pinned package)."""

PI_MODEL_ID_PREFIXES = frozenset(
    {
        "@cf", "accounts", "ai21", "alibaba", "amazon", "arcee-ai", "baidu", "bytedance",
        "bytedance-seed", "cohere", "deepseek-ai", "essentialai", "ibm-granite", "inception",
        "inclusionai", "kwaipilot", "meituan", "meta", "meta-llama", "minimaxai", "mistralai",
        "nex-agi", "nvidia", "perplexity", "poolside", "prime-intellect", "qwen", "rekaai",
        "relace", "sao10k", "stepfun", "tencent", "thedrummer", "tngtech", "upstage",
        "workers-ai", "x-ai", "xiaomimimo", "z-ai", "zai-org", "~anthropic", "~google",
        "~moonshotai", "~openai",
    }
)  # fmt: skip
"""The first parts of pi-ai 0.73.1's built-in model ids that hold a slash and begin with no
provider's name (`meta-llama/llama-3.1-8b` of openrouter): pi matches such an id whole, so a
`--model` beginning so names no unknown provider (a test asks the pinned package)."""

_STRING_IN_JSON = r'"(?:\\.|[^"\\])*"'
_COMMENT = re.compile(_STRING_IN_JSON + r"|//[^\n]*")
_TRAILING_COMMA = re.compile(_STRING_IN_JSON + r"|,(\s*[}\]])")
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PROVIDER_TEXTS = ("name", "baseUrl", "apiKey", "api")
_MODEL_TEXTS = ("name", "api", "baseUrl")
_MODEL_NUMBERS = ("contextWindow", "maxTokens")
_COSTS = ("input", "output", "cacheRead", "cacheWrite")


def strip_comments(text: str) -> str:
    """pi's `stripJsonComments`: `//` line comments and trailing commas out, strings kept."""
    text = _COMMENT.sub(lambda m: m.group(0) if m.group(0)[0] == '"' else "", text)
    return _TRAILING_COMMA.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(0), text)


def judge_pi_files(
    files: Mapping[str, CopiedText], model: str | None, environ: Mapping[str, str]
) -> tuple[str, str] | None:
    """The file and what pi 0.73.1 would reject or misread in it — the auth.json and
    models.json a run copies, and the round's `--model` against them; None: pi takes them."""
    auth, models = files.get(AUTH_FILE), files.get(MODELS_FILE)
    if auth is not None and auth.text is not None:
        problem = _auth_problem(auth, environ)
        if problem is not None:
            return auth.path, problem
    providers: dict[str, Any] = {}
    if models is not None and models.text is not None:
        read = _providers(models, environ)
        if isinstance(read, str):
            return models.path, read
        providers = read
    if models is None or not model or "/" not in model:
        return None  # the model is judged against the models.json a run copies
    problem = _model_problem(model, providers, models.path)
    return None if problem is None else (models.path, problem)


# --- auth.json ------------------------------------------------------------------------------------


def _auth_problem(auth: CopiedText, environ: Mapping[str, str]) -> str | None:
    try:
        data = json_limits.loads(auth.text or "")
    except ValueError as error:
        return (
            f"{auth.path} is not JSON ({error}): pi 0.73.1 would take none of the credentials "
            "in it (it reads strict JSON, without comments); repair it"
        )
    if not isinstance(data, dict):
        return f"{auth.path} must be a JSON object of providers: pi 0.73.1 takes nothing else"
    for provider, entry in data.items():
        kind = entry.get("type") if isinstance(entry, dict) else None
        if kind not in ("api_key", "oauth"):
            return (
                f'{auth.path}: the entry "{provider}" is no {{"type": "api_key", "key": …}} or '
                "oauth entry, and pi 0.73.1 would ignore it; write it as one, or remove it"
            )
        if kind == "api_key":
            key = entry.get("key")
            if not isinstance(key, str) or not key:
                return f'{auth.path}: "{provider}".key must be the key (a non-empty text)'
            problem = _key_problem(key, environ)
            if problem is not None:
                return f'{auth.path}: "{provider}".key {problem}'
    return None


def _key_problem(key: str, environ: Mapping[str, str]) -> str | None:
    """What is wrong with a key as pi resolves it inside a round (resolve-config-value.js)."""
    if key.startswith("!"):
        return (
            "is a command pi would run in its own process inside the run's confinement, where "
            "your home and tools are hidden; give the key itself in auth.json, or the name of a "
            "*_API_KEY variable the host sets"
        )
    if _VARIABLE.fullmatch(key) and environ.get(key) and not key.endswith(API_KEY_SUFFIX):
        return (
            f"names the host variable {key}, which a pi round does not receive (only the "
            f"host's *_API_KEY variables reach it): pi would send the text {key} itself as the "
            f"key; rename the variable to end in {API_KEY_SUFFIX}, or give the key in auth.json"
        )
    return None


# --- models.json ---------------------------------------------------------------------------------


def _providers(models: CopiedText, environ: Mapping[str, str]) -> dict[str, Any] | str:
    """The providers of models.json as pi takes them, or what pi would reject: then it drops
    every provider the file defines."""
    drops = (
        f"{models.path}: pi 0.73.1 would drop every provider this file defines (a run on one "
        'of them ends pi_failed with only "Model … not found")'
    )
    try:
        data = json_limits.loads(strip_comments(models.text or ""))
    except ValueError as error:
        return f"{drops}: it is not JSON ({error}); repair it"
    if not isinstance(data, dict) or not isinstance(data.get("providers"), dict):
        return f'{drops}: it must be a JSON object with "providers"'
    for name, provider in data["providers"].items():
        problem = _provider_shape(provider) or _provider_rules(name, provider, environ)
        if problem is not None:
            return f"{drops}, since providers.{name}{problem}"
    return dict(data["providers"])


def _text(value: object) -> bool:
    return isinstance(value, str) and bool(value)


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _texts_object(value: object) -> bool:
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


def _provider_shape(provider: object) -> str | None:
    """pi's ProviderConfigSchema, as ` .field what` (unknown fields are taken and ignored)."""
    if not isinstance(provider, dict):
        return " must be an object"
    for field in _PROVIDER_TEXTS:
        if field in provider and not _text(provider[field]):
            return f".{field} must be a non-empty text"
    checks = (
        ("headers", _texts_object, "an object of texts"),
        ("compat", lambda v: isinstance(v, dict), "an object"),
        ("authHeader", lambda v: isinstance(v, bool), "true or false"),
        ("modelOverrides", lambda v: isinstance(v, dict), "an object"),
        ("models", lambda v: isinstance(v, list), "a list"),
    )
    for field, holds, what in checks:
        if field in provider and not holds(provider[field]):
            return f".{field} must be {what}"
    for index, entry in enumerate(provider.get("models", [])):
        problem = _model_shape(entry)
        if problem is not None:
            return f".models[{index}]{problem}"
    return None


def _model_shape(entry: object) -> str | None:
    """pi's ModelDefinitionSchema."""
    if not isinstance(entry, dict):
        return " must be an object"
    if not _text(entry.get("id")):
        return '.id must be the model\'s id (a non-empty text): pi requires "id"'
    for field in _MODEL_TEXTS:
        if field in entry and not _text(entry[field]):
            return f".{field} must be a non-empty text"
    for field in _MODEL_NUMBERS:
        if field in entry and not _number(entry[field]):
            return f".{field} must be a number"
    if "reasoning" in entry and not isinstance(entry["reasoning"], bool):
        return ".reasoning must be true or false"
    if "input" in entry and not (
        isinstance(entry["input"], list) and all(i in ("text", "image") for i in entry["input"])
    ):
        return '.input must be a list of "text" and "image"'
    cost = entry.get("cost")
    if "cost" in entry and not (
        isinstance(cost, dict) and all(_number(cost.get(k)) for k in _COSTS)
    ):
        return f".cost must be an object of the numbers {', '.join(_COSTS)}"
    return None


def _provider_rules(name: str, provider: dict[str, Any], environ: Mapping[str, str]) -> str | None:
    """pi's validateConfig, and its reading of the provider's key inside a round."""
    models = provider.get("models") or []
    built_in = name in PI_BUILT_IN_PROVIDERS
    overrides = ("baseUrl", "headers", "compat", "modelOverrides")
    if not models and not any(provider.get(field) for field in overrides):
        return ' defines nothing: give "models", or "baseUrl", "headers" or "compat"'
    if models and not built_in:
        for field, what in (("baseUrl", "the server's URL"), ("apiKey", "its key")):
            if not provider.get(field):
                repair = _API_KEY_REPAIR if field == "apiKey" else _BASE_URL_REPAIR
                return (
                    f' has no "{field}" ({what}), which pi requires of a provider that defines '
                    f'models; add "{field}"{repair}'
                )
    for index, entry in enumerate(models):
        if not built_in and not (entry.get("api") or provider.get("api")):
            return f'.models[{index}] has no "api" of its own or of its provider; add "api"'
        for field in _MODEL_NUMBERS:
            if field in entry and entry[field] <= 0:
                return f".models[{index}].{field} must be above 0"
    key = provider.get("apiKey")
    problem = _key_problem(key, environ) if isinstance(key, str) else None
    return None if problem is None else f".apiKey {problem}"


_BASE_URL_REPAIR = " (such as http://127.0.0.1:8000/v1)"
_API_KEY_REPAIR = (
    ": the name of a *_API_KEY variable the host sets, or any text for a server that takes "
    "no key (a key in auth.json under the provider's name wins over it)"
)


# --- the round's model ---------------------------------------------------------------------------


def _model_problem(model: str, providers: Mapping[str, Any], path: str) -> str | None:
    """The round's `--model provider/id` against the providers pi would know."""
    prefix, wanted = model.split("/", 1)
    whole = model.lower()
    entries = [(name, e["id"]) for name, p in providers.items() for e in p.get("models") or []]
    if any(f"{name}/{id_}".lower() == whole or id_.lower() == whole for name, id_ in entries):
        return None
    name = next((n for n, _ in entries if n.lower() == prefix.lower()), None)
    if name is not None and name not in PI_BUILT_IN_PROVIDERS:
        ids = ", ".join(id_ for n, id_ in entries if n == name)
        return (
            f"the pi id {model} names the model {wanted}, which providers.{name} of {path} does "
            f"not list (it lists {ids}): pi 0.73.1 would not refuse it but run another model "
            "in its place (the first whose id or name holds it) or send the id unlisted; add "
            f'{{"id": "{wanted}"}} to providers.{name}.models, or correct the model map\'s pi id'
        )
    known = prefix.lower() in PI_BUILT_IN_PROVIDERS or prefix.lower() in PI_MODEL_ID_PREFIXES
    if name is not None or known:
        return None
    return (
        f"the pi id {model} names the provider {prefix}, which {path} does not define and pi "
        f'0.73.1 does not know: the run would end pi_failed at once ("Model {model} not '
        f'found"); define providers.{prefix} in {path} (with "baseUrl", "api", "apiKey" and '
        '"models"), or correct the model map\'s pi id'
    )
