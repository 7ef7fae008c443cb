"""GitPython is the `demo` extra (docs/decisions.md "GitPython: the demo's extra"): only the
demo's world (adapters/demo/) imports it, when `plan --example` or `demo` asks for it. Where it is
not installed, both commands are refused with the repair, never a traceback, and nothing is made;
every other command never needs it."""

from __future__ import annotations

import io
import json
import sys

import pytest
from fakes.world import PlanWorld

from concorde_workers.adapters.cli import main as cli

DEMO_WORLD = "concorde_workers.adapters.demo.example_repository"


@pytest.fixture
def without_gitpython(monkeypatch: pytest.MonkeyPatch) -> None:
    """`import git` fails as it does where GitPython is not installed; the demo's world is
    imported afresh."""
    monkeypatch.setitem(sys.modules, "git", None)
    if DEMO_WORLD in sys.modules:
        monkeypatch.delitem(sys.modules, DEMO_WORLD)


@pytest.mark.usefixtures("without_gitpython")
@pytest.mark.parametrize("argv", [["plan", "--example"], ["demo"]])
def test_without_gitpython_the_demo_commands_are_refused_with_the_repair(argv: list[str]) -> None:
    world = PlanWorld()
    world.forget_calls()
    out, err = io.StringIO(), io.StringIO()
    status = cli.main(argv, out, err, container=world.container())
    assert status == 2
    assert out.getvalue() == ""
    assert err.getvalue().startswith("concorde-workers: refused: demo_extra_missing (environment)")
    assert "pip install 'concorde-workers[demo]'" in err.getvalue()
    assert "Traceback" not in err.getvalue()
    assert world.fs_writes() == []


@pytest.mark.usefixtures("without_gitpython")
@pytest.mark.parametrize("argv", [["plan", "--example", "--json"], ["demo", "--json"]])
def test_without_gitpython_the_refusal_is_one_json_document(argv: list[str]) -> None:
    out, err = io.StringIO(), io.StringIO()
    status = cli.main(argv, out, err, container=PlanWorld().container())
    assert status == 2
    refusal = json.loads(out.getvalue())["refusal"]
    assert refusal["code"] == "demo_extra_missing"
    assert refusal["reason"] == "environment"
    assert "concorde-workers[demo]" in refusal["message"]


@pytest.mark.usefixtures("without_gitpython")
def test_without_gitpython_plan_still_plans() -> None:
    out, err = io.StringIO(), io.StringIO()
    status = cli.main(
        [
            "plan",
            "--worktree",
            "/work/repo/.claude/worktrees/task",
            "--task-type",
            "implement",
            "--instructions",
            "x",
            "--json",
        ],
        out,
        err,
        container=PlanWorld().container(),
    )
    assert status in (0, 2), err.getvalue()
    assert "verdict" in json.loads(out.getvalue())
    assert DEMO_WORLD not in sys.modules
