"""The reasons of every denial live in ONE table (domain/boundary/rules.py); the Claude Code hook
template and the pi extension receive it as data and hold no copy of their own.

A copy is found by words, not by characters: a reason's literal text between placeholders, as a
sequence of words, must not occur in the word stream of a source file, so a copy split across
string literals, lines or `+` is found too. The generated hook and the extension fill a reason
exactly as `domain.boundary.rules.fill` does (the parity tests compare whole reasons on generated paths:
tests/unit/claude/test_claude_hooks.py, tests/integration/test_claude_hook_parity.py,
tests/integration/test_pi_extension_parity.py); here, a table changed in the domain changes what
the template says.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from concorde_workers.adapters.claude.guard import hook_template as T
from concorde_workers.adapters.claude.guard.search_guard import decide_search, hook_grant
from concorde_workers.container import PROFILES
from concorde_workers.domain.boundary.grant import Grant, parse_grant
from concorde_workers.domain.boundary.policy import Policy, build_policy, decide_read, decide_write
from concorde_workers.domain.boundary.rules import PLACEHOLDER, REASONS, fill, placeholders
from concorde_workers.domain.configuration.profile import entries_of

RUNTIME_ENTRIES = entries_of(PROFILES)

ROOT = Path(__file__).resolve().parents[3]
WORD = re.compile(r"[A-Za-z_]+(?:'[A-Za-z]+)?")
"""A word; an identifier such as `could_not_decide` is one, never the reason it names."""
LEAST_WORDS = 2
"""A literal piece of fewer words ("the", " and ") is no reason's own text."""

TABLE_READERS = [
    "adapters/claude/guard/hook_template.py",
    "adapters/pi/extension/pi_policy.ts",
    "adapters/pi/extension/permission.ts",
    "domain/boundary/interpreter.py",
]


def words(text: str) -> list[str]:
    return [w.lower() for w in WORD.findall(text)]


def pieces() -> list[tuple[str, tuple[str, ...]]]:
    """(key, words) of every literal piece of every reason with at least LEAST_WORDS words."""
    out = []
    for key, template in REASONS.items():
        for piece in PLACEHOLDER.split(template)[::2]:
            found = tuple(words(piece))
            if len(found) >= LEAST_WORDS:
                out.append((key, found))
    return out


def copies_in(source: str) -> list[tuple[str, str]]:
    stream = words(source)
    found = []
    for key, piece in pieces():
        n = len(piece)
        if any(tuple(stream[i : i + n]) == piece for i in range(len(stream) - n + 1)):
            found.append((key, " ".join(piece)))
    return found


def test_the_word_search_finds_a_copy_split_across_literals() -> None:
    """The check bites: a reason cut into concatenated literals on two lines is still a copy."""
    source = (
        'return False, ("a search from " + path + " would reach other worker runs\' "\n'
        '              "runtime directories, which this task may not search")\n'
    )
    assert ("other runs below", "a search from") in copies_in(source)
    assert (
        "other runs below",
        "would reach other worker runs runtime directories which this task may not search",
    ) in copies_in(source)
    assert copies_in("def decide(grant): return reason(grant, 'git')\n") == []


@pytest.mark.parametrize("path", TABLE_READERS)
def test_the_template_and_the_extension_hold_no_reason_of_their_own(path: str) -> None:
    assert copies_in((ROOT / path).read_text(encoding="utf-8")) == []


def test_every_reason_fills_once_and_never_rescans_a_value() -> None:
    for key in REASONS:
        values = {name: f"{{{name}}}$&$1\\1" for name in placeholders(key)}
        filled = fill(key, **values)
        assert filled == T.PLACEHOLDER.sub(lambda m, v=values: v[m.group(1)], REASONS[key])
        for value in values.values():
            assert value in filled


def test_a_reason_takes_exactly_its_placeholders() -> None:
    assert fill("ro", path="a.py") == "a.py is read-only for this task"
    with pytest.raises(KeyError, match="'ro' takes \\['path'\\]"):
        fill("ro")
    with pytest.raises(KeyError):
        fill("ro", path="a.py", extra="x")
    assert T.PLACEHOLDER.pattern == PLACEHOLDER.pattern


# --- the embedded table is the one the template reads --------------------------------------------

WT = "/home/u/proj/.claude/worktrees/t1"
RT = "/tmp/concorde-abc123-k9"


def _policy() -> Policy:
    grant = parse_grant(
        {
            "task_type": "implement",
            "context_identity": "sha256:ctx",
            "entries": [
                {"path": "src/", "level": "rw"},
                {"path": "docs/", "level": "ro"},
                {"path": "src/secret.py", "level": "names"},
            ],
        }
    )
    assert isinstance(grant, Grant)
    return build_policy(
        grant=grant,
        worktree=WT,
        primary="/home/u/proj",
        user_home="/home/u",
        runtime_dir=RT,
        runtime_paths=(),
        git=(),
        list_dir=lambda _p: [],
        credentials=("/opt/cfg/auth.json",),
        runtime_entries=RUNTIME_ENTRIES,
    )


def _marked(grant: dict[str, Any]) -> dict[str, Any]:
    """The grant with every reason of its table changed, as a changed domain table would be."""
    return {**grant, "reasons": {k: f"<{v}>" for k, v in grant["reasons"].items()}}


def test_the_embedded_data_carries_the_table() -> None:
    policy = _policy()
    assert hook_grant(policy)["reasons"] == dict(REASONS)
    assert policy.to_json()["reasons"] == dict(REASONS)


@pytest.mark.parametrize(
    ("table", "path", "expected_key"),
    [
        ("write", f"{WT}/docs/a.md", "ro"),
        ("write", "/etc/passwd", "outside"),
        ("read", f"{WT}/src/secret.py", "names"),
        ("read", "/opt/cfg/auth.json", "credentials"),
        ("read", f"{RT}/control/x", "host"),
        ("search", "/", "search outside"),
    ],
)
def test_a_reason_changed_in_the_table_changes_in_the_template(
    table: str, path: str, expected_key: str
) -> None:
    policy = _policy()
    marked = _marked(hook_grant(policy))
    if table == "write":
        domain = decide_write(policy, path, path).reason
        template = T.decide_write(marked, path, path, False)
    elif table == "read":
        domain = decide_read(policy, path).reason
        template = T.decide_read(marked, path, None)
    else:
        domain = decide_search(policy, path).reason
        template = T.decide_search(marked, path, None, True)
    assert domain is not None and domain.startswith(REASONS[expected_key].split("{")[0])
    assert template[0] is False
    assert template[1] != domain
    assert template[1] is not None and template[1].startswith("<")
