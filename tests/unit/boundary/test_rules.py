"""The rules of reading and writing as data (issue 22 §4): the rows of the read, write and search
tables live in domain/boundary/rules.py only, and one interpreter, domain/boundary/interpreter.py,
decides by them for the domain and, embedded, for the generated Claude Code hooks (the pi
extension's port: tests/integration/test_rules_as_data.py).

Here: every row is well formed against the vocabulary and the reasons; the interpreter refuses a
row that is not; it is standard library only and pure, so the hooks can embed it; the generated
hook holds it and the rows, imports nothing else, and denies when its rows are wrong."""

from __future__ import annotations

import ast
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from policy_world import POLICY, RT, WT, policy_for

from concorde_workers.adapters.claude.guard import hook_template
from concorde_workers.adapters.claude.guard.hooks import (
    RULES_END,
    RULES_START,
    hook_source,
    interpreter_text,
    template_text,
)
from concorde_workers.adapters.claude.guard.search_guard import HOOK_TABLES, hook_grant
from concorde_workers.container import PROFILES
from concorde_workers.domain.boundary import interpreter
from concorde_workers.domain.boundary.interpreter import PREDICATES, VALUES, Judge
from concorde_workers.domain.boundary.policy import PI_TABLES, build_policy, decide_read
from concorde_workers.domain.boundary.rules import (
    READ_ROWS,
    REASONS,
    TABLES,
    Fill,
    Text,
    allow,
    deny,
    hand_over,
    reason,
    rows_json,
)
from concorde_workers.domain.configuration.profile import entries_of
from concorde_workers.domain.ground.run_id import RUNTIME_PREFIX, runtime_directory_name

RUNTIME_ENTRIES = entries_of(PROFILES)

ROOT = Path(__file__).resolve().parents[3]


def judge(rows: dict[str, Any]) -> Judge:
    return Judge(hook_grant(POLICY), rows)


def _values(fill: Fill) -> list[str | Text | Fill]:
    return [
        v
        for value in fill.values.values()
        for v in ([value, *_values(value)] if isinstance(value, Fill) else [value])
    ]


def test_every_row_speaks_the_vocabulary_and_fills_its_reason_exactly() -> None:
    judge(rows_json(TABLES, TABLES))  # the interpreter checks every row as it reads it
    for name, table in TABLES.items():
        assert table[-1].when == (), name  # the last row decides whatever the path
        for row in table:
            conditions = [c.removeprefix("not ") for c in row.when]
            assert set(conditions) <= set(PREDICATES), row
            if row.reason is not None:
                assert row.reason.key in REASONS
                sources = [v for v in _values(row.reason) if isinstance(v, str)]
                assert set(sources) <= set(VALUES), row
    assert set(PI_TABLES) | set(HOOK_TABLES) == set(TABLES)


def test_every_predicate_and_value_is_used_by_a_row() -> None:
    """The vocabulary is what the rows need, no more."""
    used = {c.removeprefix("not ") for table in TABLES.values() for row in table for c in row.when}
    sources = {
        v
        for table in TABLES.values()
        for row in table
        if row.reason is not None
        for v in _values(row.reason)
        if isinstance(v, str)
    }
    assert used == set(PREDICATES)
    assert sources == set(VALUES)


def _one(*rows: Any) -> dict[str, Any]:
    return {"read": [r.to_json() if hasattr(r, "to_json") else r for r in rows]}


@pytest.mark.parametrize(
    ("rows", "problem"),
    [
        (_one(allow("x", "in nowhere"), allow("y")), "no predicate 'in nowhere'"),
        (_one(deny("x", because=reason("names"))), r"takes \['path'\], not \[\]"),
        (_one(deny("x", because=reason("names", path="path", more="path"))), "takes"),
        (_one(deny("x", because=reason("no such reason"))), "no reason 'no such reason'"),
        (_one(deny("x", because=reason("names", path="where"))), "no value 'where'"),
        (_one(allow("x", "in worktree")), "the last row of a table must decide"),
        (_one(), "the last row of a table must decide"),
        (_one({"row": "x", "when": [], "then": "allow", "reason": {}}), "one outcome"),
        (_one({"row": "x", "when": [], "then": "maybe"}), "one outcome"),
        (_one(hand_over("x", table="write")), "hands over to 'write'"),
        (
            {
                "read": [hand_over("x", "link", table="a").to_json(), allow("y").to_json()],
                "a": [hand_over("z", table="read").to_json()],
            },
            "hands over to 'a'",
        ),
    ],
)
def test_the_interpreter_refuses_a_row_it_cannot_read(rows: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        judge(rows)


def test_the_rows_travel_as_json_that_is_a_python_literal() -> None:
    data = rows_json(TABLES, TABLES)
    text = json.dumps(data, sort_keys=True)
    assert ast.literal_eval(text) == data
    assert POLICY.to_json()["rows"] == rows_json(TABLES, PI_TABLES)


def _imports(source: str) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0 and node.module is not None
            found.add(node.module.split(".")[0])
    return found


def test_the_interpreter_is_standard_library_only_and_pure() -> None:
    source = interpreter_text()
    assert _imports(source) <= sys.stdlib_module_names
    assert _imports(source).isdisjoint({"os", "io", "subprocess", "importlib", "pathlib"})
    assert "__future__" not in _imports(source)  # it runs embedded, in the middle of a hook


def test_the_interpreters_names_are_the_domains() -> None:
    """The interpreter, standalone, spells out what the domain derives: a runtime directory's
    name, which the hooks and the domain both take for another run's."""
    assert interpreter.RUNTIME_PREFIX == RUNTIME_PREFIX
    name = runtime_directory_name("w-20261002T101500-a1b2c3", "x_9")
    assert name.startswith(RUNTIME_PREFIX) and interpreter.RUNTIME_NAME.fullmatch(name)
    assert interpreter.RUNTIME_NAME.fullmatch("concorde-notes") is None


def _top_level_names(source: str) -> dict[str, str]:
    """Each name a module's top level defines, with the statement that defines it."""
    names: dict[str, str] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            names[node.name] = ast.dump(node)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id: ast.dump(node) for t in targets if isinstance(t, ast.Name)}
    return names


def test_the_template_redefines_no_name_of_the_interpreter() -> None:
    """The hook holds the interpreter's source before its own code: a name defined again there
    would change what the interpreter calls. Only the same statement may stand in both
    (`TYPE_CHECKING = False`, which keeps `typing` out of each call's imports, issue 32 §3)."""
    template = template_text()
    own = _top_level_names(
        template[: template.index(RULES_START)] + template[template.index(RULES_END) :]
    )
    theirs = _top_level_names(interpreter_text())
    assert {name: own[name] for name in own.keys() & theirs.keys()} == {
        name: theirs[name] for name in own.keys() & theirs.keys()
    }
    assert own.keys() & theirs.keys() <= {"TYPE_CHECKING"}


def _hook(policy: Any = POLICY, hook: str = "read") -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "generated_hook"}
    exec(compile(hook_source(policy, hook), f"{hook}_hook.py", "exec"), namespace)
    return namespace


def test_the_generated_hook_holds_the_rows_and_their_interpreter_and_nothing_else() -> None:
    source = hook_source(POLICY, "read")
    assert _imports(source) <= sys.stdlib_module_names
    assert "importlib" not in source and "concorde_workers" not in source
    assert interpreter_text().rstrip() in source
    namespace = _hook()
    assert namespace["ROWS"] == rows_json(TABLES, HOOK_TABLES)
    assert namespace["GRANT"] == hook_grant(POLICY)
    assert namespace["Judge"].__module__ == "generated_hook"


def _run(namespace: dict[str, Any], call: dict[str, Any], hook: str = "read") -> str:
    out = io.StringIO()
    assert (
        namespace["main"](
            namespace["text"](namespace["GRANT"]), hook, io.StringIO(json.dumps(call)), out
        )
        == 0
    )
    return out.getvalue()


def test_a_generated_hook_whose_rows_are_wrong_denies() -> None:
    """Any error denies (the hook never fails open): here, a row the interpreter cannot read."""
    broken = {**TABLES, "read": (allow("everything", "in nowhere"), *READ_ROWS)}
    policy = policy_for().model_copy(update={"tables": broken})
    call = {"tool_name": "Read", "cwd": f"{RT}/work", "tool_input": {"file_path": f"{WT}/x"}}
    denial = json.loads(_run(_hook(policy), call))["hookSpecificOutput"]
    assert denial["permissionDecision"] == "deny"
    assert denial["permissionDecisionReason"] == (
        "Concorde grant: the hook could not decide: ValueError: no predicate 'in nowhere'"
    )
    with pytest.raises(ValueError, match="no predicate"):
        decide_read(policy, f"{WT}/x")


def test_a_policy_carries_its_rows_and_a_copy_judges_by_its_own() -> None:
    policy = build_policy(
        grant=POLICY.grant,
        worktree=WT,
        primary=POLICY.primary,
        user_home=POLICY.user_home,
        runtime_dir=RT,
        runtime_paths=(),
        git=(),
        list_dir=lambda _p: [],
        runtime_entries=RUNTIME_ENTRIES,
    )
    assert policy.tables == TABLES
    assert decide_read(policy, "/etc/hosts").allowed
    closed = policy.model_copy(
        update={
            "tables": {**TABLES, "read": (deny("closed", because=reason("host", path="path")),)}
        }
    )
    assert decide_read(closed, "/etc/hosts").row == "closed"
    assert decide_read(policy, "/etc/hosts").allowed
    assert closed != policy and policy.model_copy() == policy


def test_the_template_imported_takes_the_domains_rows_and_interpreter() -> None:
    """What the tests import as the template decides by the same rows and code as the domain."""
    assert rows_json(TABLES, TABLES) == hook_template.ROWS
    assert hook_template.Judge is Judge
    assert hook_template.PLACEHOLDER is interpreter.PLACEHOLDER
