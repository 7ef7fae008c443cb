"""adapters/pi/agent_files.py: pi's models.json and auth.json as pi 0.73.1 reads them, and the
round's `--model` against them (issue 31 §1; docs/decisions.md 67). Each row is something pi
would reject or misread, found in its own code and refused before launch naming the file, the
entry and the repair — or something it takes, which must pass."""

from __future__ import annotations

import json
from typing import Any

import pytest

from concorde_workers.adapters.pi.agent_files import judge_pi_files
from concorde_workers.domain.configuration.profile import CopiedText

AGENT = "/home/u/.pi/agent"
MODELS = f"{AGENT}/models.json"
AUTH = f"{AGENT}/auth.json"
LOCAL = {
    "baseUrl": "http://127.0.0.1:8000/v1",
    "api": "openai-completions",
    "apiKey": "none",
    "models": [{"id": "qwen-coder"}, {"id": "org/model-x"}],
}
ENV = {"HOME": "/home/u", "LOCAL_API_KEY": "k", "GATEWAY_TOKEN": "t"}


def files(models: Any = None, auth: Any = None, copied: bool = True) -> dict[str, CopiedText]:
    text = lambda v: v if v is None or isinstance(v, str) else json.dumps(v)  # noqa: E731
    found = {"auth.json": CopiedText(AUTH, text(auth))}
    if copied:
        found["models.json"] = CopiedText(MODELS, text(models))
    return found


def local(**changes: Any) -> dict[str, Any]:
    provider = {k: v for k, v in {**LOCAL, **changes}.items() if v is not None}
    return {"providers": {"local": provider}}


@pytest.mark.parametrize(
    ("given", "model"),
    [
        pytest.param(files(local()), "local/qwen-coder", id="a listed id"),
        pytest.param(files(local()), "LOCAL/QWEN-CODER", id="names as pi matches them"),
        pytest.param(files(local()), "org/model-x", id="a listed id that holds a slash"),
        pytest.param(files(local(apiKey="LOCAL_API_KEY")), "local/qwen-coder", id="a key variable"),
        pytest.param(
            files('{\n // mine\n "providers": {"local": ' + json.dumps(LOCAL) + ",},}"),
            "local/qwen-coder",
            id="comments and trailing commas",
        ),
        pytest.param(files(None), "anthropic/claude-sonnet-4-5", id="a built-in provider"),
        pytest.param(files(None), "meta-llama/llama-3.1-8b-instruct", id="a built-in slash id"),
        pytest.param(
            files(local(), {"local": {"type": "api_key", "key": "sk-1"}}),
            "local/qwen-coder",
            id="auth.json",
        ),
        pytest.param(files(None, copied=False), "local/anything", id="no models.json copied"),
        pytest.param(files(local()), None, id="no model: the files alone"),
        pytest.param(
            files({"providers": {"openai": {"baseUrl": "http://gw/v1"}}}),
            "openai/gpt-5",
            id="an override of a built-in provider",
        ),
    ],
)
def test_what_pi_takes_passes(given: dict[str, CopiedText], model: str | None) -> None:
    assert judge_pi_files(given, model, ENV) is None


@pytest.mark.parametrize(
    ("given", "model", "file", "says"),
    [
        pytest.param(
            files(local(apiKey=None)),
            "local/qwen-coder",
            MODELS,
            'providers.local has no "apiKey" (its key), which pi requires',
            id="no apiKey: the README's old example",
        ),
        pytest.param(files(local(baseUrl=None)), None, MODELS, 'has no "baseUrl"', id="no baseUrl"),
        pytest.param(files(local(api=None)), None, MODELS, '.models[0] has no "api"', id="no api"),
        pytest.param(
            files(local(models=[{"id": "m", "contextWindow": 0}])),
            None,
            MODELS,
            ".models[0].contextWindow must be above 0",
            id="a context window of 0",
        ),
        pytest.param(
            files(local(models=[{"name": "m"}])), None, MODELS, ".models[0].id must be", id="no id"
        ),
        pytest.param(
            files(local(models=[{"id": "m", "input": ["audio"]}])),
            None,
            MODELS,
            '.input must be a list of "text" and "image"',
            id="an input pi knows not",
        ),
        pytest.param(
            files(local(apiKey="")),
            None,
            MODELS,
            ".apiKey must be a non-empty text",
            id="an empty key",
        ),
        pytest.param(
            files({"providers": []}),
            None,
            MODELS,
            'must be a JSON object with "providers"',
            id="providers a list",
        ),
        pytest.param(files("{"), None, MODELS, "it is not JSON", id="models.json not JSON"),
        pytest.param(
            files(local(apiKey="!pass show local")),
            None,
            MODELS,
            "is a command pi would run",
            id="a command key",
        ),
        pytest.param(
            files(local(apiKey="GATEWAY_TOKEN")),
            None,
            MODELS,
            "names the host variable GATEWAY_TOKEN, which a pi round does not receive",
            id="a key variable a round does not get",
        ),
        pytest.param(
            files(None, "{not json"),
            None,
            AUTH,
            "would take none of the credentials",
            id="auth.json not JSON",
        ),
        pytest.param(
            files(None, {"local": {"type": "token"}}),
            None,
            AUTH,
            'the entry "local" is no',
            id="an auth entry of no type pi takes",
        ),
        pytest.param(
            files(None, {"local": {"type": "api_key"}}),
            None,
            AUTH,
            '"local".key must be the key',
            id="an api_key entry without key",
        ),
        pytest.param(
            files(local()),
            "local/qwen",
            MODELS,
            "names the model qwen, which providers.local of",
            id="an id pi would replace by another",
        ),
        pytest.param(
            files(local()),
            "local/qwen-coder-2",
            MODELS,
            'add {"id": "qwen-coder-2"} to providers.local.models',
            id="an unlisted id",
        ),
        pytest.param(
            files({"providers": {"other": LOCAL}}),
            "local/qwen-coder",
            MODELS,
            "names the provider local, which /home/u/.pi/agent/models.json does not define",
            id="a provider pi does not know",
        ),
        pytest.param(
            files(None), "local/qwen-coder", MODELS, "pi_failed at once", id="no models.json at all"
        ),
    ],
)
def test_what_pi_would_reject_or_misread_is_said_naming_the_file_and_the_entry(
    given: dict[str, CopiedText], model: str | None, file: str, says: str
) -> None:
    problem = judge_pi_files(given, model, ENV)
    assert problem is not None and problem[0] == file, problem
    assert says in problem[1] and file in problem[1], problem[1]
