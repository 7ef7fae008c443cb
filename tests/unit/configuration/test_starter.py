"""domain/configuration/starter.py: what `init` writes, decided from what it found (issue 19 §2)."""

from __future__ import annotations

import json

import pytest

from concorde_workers.container import PROFILES
from concorde_workers.domain.configuration import starter
from concorde_workers.domain.configuration.profile import placeholders_of

ORDER = list(placeholders_of(PROFILES))
"""The registered backends, the default backend first: the order init tries them in."""


@pytest.mark.parametrize(
    ("found", "pi_settings", "backend"),
    [
        (["pi", "claude"], '{"defaultProvider": "p", "defaultModel": "m"}', "pi"),
        (["pi", "claude"], None, "claude"),
        (["pi"], None, "pi"),
        (["claude"], '{"defaultProvider": "p", "defaultModel": "m"}', "claude"),
        ([], None, "pi"),
    ],
)
def test_the_backend_is_one_found_whose_model_id_init_knows(
    found: list[str], pi_settings: str | None, backend: str
) -> None:
    ids = starter.model_ids({b: PROFILES[b].default_model for b in found}, {"pi": pi_settings})
    assert starter.backend_for(found, ids, ORDER) == backend


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"defaultProvider": "local", "defaultModel": "q"}', "local/q"),
        ('{"defaultProvider": "local"}', None),
        ('{"defaultProvider": "", "defaultModel": "q"}', None),
        ("[1]", None),
        ("not json", None),
        ("[" * 200 + "]" * 200, None),
        (None, None),
    ],
)
def test_pi_s_default_model_is_read_from_its_settings(
    text: str | None, expected: str | None
) -> None:
    assert starter.default_id(PROFILES["pi"].default_model, text) == expected


def test_the_model_map_keeps_every_entry_and_adds_only_what_is_missing() -> None:
    existing = json.dumps({"schema_version": 1, "models": {"default": {"claude": "mine"}}})
    update = starter.model_map_update("/m.json", existing, {"claude": "c", "pi": "p/q"}, False)
    assert update.text is not None
    assert json.loads(update.text)["models"]["default"] == {"claude": "mine", "pi": "p/q"}
    kept = starter.model_map_update("/m.json", existing, {"claude": "c"}, False)
    assert kept.text is None and "kept" in kept.said
    forced = starter.model_map_update("/m.json", existing, {"claude": "c"}, True)
    assert forced.text is not None
    assert json.loads(forced.text)["models"]["default"] == {"claude": "c"}
    for broken in ("{", "[]", '{"models": 3}'):
        assert starter.model_map_update("/m.json", broken, {"claude": "c"}, True).text is None
    assert starter.model_map_update("/m.json", None, {}, False).text is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ".claude/worktrees/\n"),
        ("*.log", "*.log\n.claude/worktrees/\n"),
        ("*.log\n", "*.log\n.claude/worktrees/\n"),
        ("/.claude/worktrees/\n", None),
        ("  .claude/worktrees/  \n", None),
    ],
)
def test_the_exclude_file_gets_the_worktrees_once(text: str, expected: str | None) -> None:
    assert starter.excluded(text) == expected


def test_the_grant_writes_src_and_reads_the_rest_but_git_the_worktrees_and_concorde() -> None:
    top = [
        ("src", True),
        ("tests", True),
        ("README.md", False),
        (".git", True),
        (".claude", True),
        (".concorde", True),
        ("src", False),
    ]
    data = json.loads(starter.grant_text(top, "t1"))
    assert data["task_type"] == "implement"
    assert data["entries"] == [
        {"path": "README.md", "level": "ro"},
        {"path": "src", "level": "ro"},
        {"path": "src/", "level": "rw"},
        {"path": "tests/", "level": "ro"},
    ]
    assert data["context_identity"].startswith("sha256:") and len(data["context_identity"]) == 71
