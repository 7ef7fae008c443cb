"""adapters/claude/endpoints.py: a machine's own Claude Code endpoint, read from endpoints.json beside the
model map (issue 19 §2); the file holds no secret and sends no other value as the token (issue
31 §1)."""

from __future__ import annotations

import json

import pytest

from concorde_workers.adapters.claude.endpoints import (
    ENDPOINTS_SPEC,
    ClaudeEndpoint,
    claude_endpoint,
    claude_environment_of,
    parse_endpoints,
)
from concorde_workers.domain.configuration.machine import machine_file_location

FILE = "/home/u/.config/concorde/endpoints.json"


@pytest.mark.parametrize(
    ("environ", "where"),
    [
        ({"HOME": "/home/u"}, FILE),
        ({"HOME": "/home/u", "XDG_CONFIG_HOME": "/x"}, "/x/concorde/endpoints.json"),
        ({"HOME": "/home/u", "CONCORDE_MODEL_MAP": "/m/map.json"}, "/m/endpoints.json"),
        ({"HOME": "/home/u", "CONCORDE_ENDPOINTS": "/e/mine.json"}, "/e/mine.json"),
        ({"HOME": "/home/u", "CONCORDE_ENDPOINTS": "rel.json"}, None),
        ({"HOME": "relative"}, None),
    ],
)
def test_the_file_lies_beside_the_model_map(environ: dict[str, str], where: str | None) -> None:
    assert machine_file_location(environ, ENDPOINTS_SPEC).file == where


def test_a_relative_variable_is_a_problem_never_the_default() -> None:
    found = machine_file_location(
        {"HOME": "/home/u", "CONCORDE_ENDPOINTS": "rel.json"}, ENDPOINTS_SPEC
    )
    assert found.named and found.problem is not None
    assert found.problem.startswith("CONCORDE_ENDPOINTS gives the relative path 'rel.json'")


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"schema_version": 1}, None),
        (
            {"schema_version": 1, "claude": {"base_url": "http://127.0.0.1:4000"}},
            ClaudeEndpoint(FILE, "http://127.0.0.1:4000", None),
        ),
        (
            {
                "schema_version": 1,
                "claude": {"base_url": "https://gw.example/anthropic", "token_env": "GW_TOKEN"},
            },
            ClaudeEndpoint(FILE, "https://gw.example/anthropic", "GW_TOKEN"),
        ),
    ],
)
def test_a_valid_file_gives_its_endpoint(data: object, expected: ClaudeEndpoint | None) -> None:
    assert parse_endpoints(json.dumps(data), FILE) == expected


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{", "is not JSON"),
        ("[" * 300 + "]" * 300, "is not JSON"),
        ('{"schema_version": 2}', 'must be a JSON object with "schema_version": 1'),
        ('{"schema_version": 1, "pi": {}}', "unknown field 'pi'"),
        ('{"schema_version": 1, "claude": {"base_url": "ftp://x"}}', "http:// or https:// URL"),
        ('{"schema_version": 1, "claude": {"base_url": "http://x\\n"}}', "http:// or https:// URL"),
        (
            '{"schema_version": 1, "claude": {"base_url": "http://x", "token": "t"}}',
            'an object of "base_url" and "token_env"',
        ),
        (
            '{"schema_version": 1, "claude": {"base_url": "http://x", "token_env": "A-B"}}',
            "must name an environment variable",
        ),
        (
            '{"schema_version": 1, "claude": {"base_url": "http://x", "token_env": "PATH"}}',
            "claude.token_env names PATH, which is no secret's variable",
        ),
        (
            '{"schema_version": 1, "claude": {"base_url": "http://x", "token_env": "HOME"}}',
            "ends in _TOKEN, _KEY, _SECRET",
        ),
        (
            '{"schema_version": 1, "claude": {"base_url": "https://me:pw@gw.example/v1"}}',
            "claude.base_url holds a user name or password",
        ),
        (
            '{"schema_version": 1, "claude": {"base_url": "http://tok3n@gw.example"}}',
            "the file holds no secret",
        ),
    ],
)
def test_a_bad_file_says_what_is_wrong_naming_it(text: str, says: str) -> None:
    problem = parse_endpoints(text, FILE)
    assert isinstance(problem, str) and FILE in problem and says in problem, problem
    assert "pw" not in problem and "tok3n" not in problem  # a secret is never repeated


@pytest.mark.parametrize(
    "name", ["GATEWAY_TOKEN", "LITELLM_API_KEY", "gw_secret", "ANTHROPIC_AUTH_TOKEN"]
)
def test_a_secret_s_variable_is_taken_as_the_token(name: str) -> None:
    text = json.dumps({"schema_version": 1, "claude": {"base_url": "http://h", "token_env": name}})
    answer = claude_endpoint(text, FILE, {name: "t0k"})
    assert answer.problem is None and answer.adds == {
        "ANTHROPIC_BASE_URL": "http://h",
        "ANTHROPIC_AUTH_TOKEN": "t0k",
    }
    assert answer.credentials == (name,) and "t0k" not in answer.said


def test_no_file_and_an_empty_one_add_nothing() -> None:
    for text in (None, '{"schema_version": 1}'):
        answer = claude_endpoint(text, FILE, {})
        assert answer.problem is None and answer.adds == {} and "Anthropic's API" in answer.said


def test_the_round_gets_the_base_url_and_the_named_token() -> None:
    endpoint = ClaudeEndpoint(FILE, "http://127.0.0.1:4000", "GW_TOKEN")
    assert claude_environment_of(endpoint, {"GW_TOKEN": "t0k"}) == {
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:4000",
        "ANTHROPIC_AUTH_TOKEN": "t0k",
    }
    assert claude_environment_of(ClaudeEndpoint(FILE, "http://h", None), {}) == {
        "ANTHROPIC_BASE_URL": "http://h"
    }
    assert claude_environment_of(None, {"GW_TOKEN": "t"}) == {}
    for unset in ({}, {"GW_TOKEN": ""}, {"GW_TOKEN": "a\nb"}):
        problem = claude_environment_of(endpoint, unset)
        assert isinstance(problem, str) and "export GW_TOKEN" in problem
