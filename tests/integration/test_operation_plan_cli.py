"""Issue 19 §3: `plan --operation NAME --all-workers`, the configuration reader's check of a
whole Operation against the model map and the programs, from the command line. Real Git in the
project's repository (tests/integration/conftest.py), the stub programs on PATH."""

from __future__ import annotations

import copy
import io
import json
from typing import Any

import pytest

from concorde_workers.adapters.cli.main import main

pytestmark = pytest.mark.integration


def plan(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(["plan", *argv], out, err)
    assert "Traceback" not in out.getvalue() + err.getvalue()
    assert "internal error" not in err.getvalue()
    return status, out.getvalue(), err.getvalue()


def test_every_worker_the_file_names_or_the_caller_declares_is_settled_at_once(
    project: Any,
) -> None:
    status, out, err = plan(
        "--worktree",
        str(project.worktree),
        "--operation",
        "implement",
        "--all-workers",
        "--declare",
        "implement:worker",
        "--json",
    )
    assert status == 0, out + err
    doc = json.loads(out)
    assert doc["verdict"] == "settled" and doc["operation"] == "implement"
    settled = {
        w["worker"]: (w["backend"], w["model"], w["local_model"], w["reasoning"])
        for w in doc["workers"]
    }
    assert settled == {
        "reviewer": ("claude", "m-claude", "claude-x-1", "high"),
        "worker": ("pi", "m-local", "local/m-local", "medium"),
    }
    status, text, _ = plan(
        "--worktree",
        str(project.worktree),
        "--operation",
        "implement",
        "--all-workers",
        "--declare",
        "implement:worker",
    )
    assert status == 0
    assert text.startswith(
        "concorde-workers plan — Operation implement: every worker settles (2)\n"
    )
    assert "worker reviewer\n  backend:   claude (operations.implement.workers.reviewer)" in text
    assert "  model:     m-local (operations.implement.default) -> local/m-local" in text


def test_one_refusal_names_every_model_and_backend_pair_the_map_lacks(project: Any) -> None:
    models = copy.deepcopy(project.models)
    models["models"] = {"m-claude": {"pi": "anthropic/claude-x-1"}}
    project.write_json(project.model_map, models)
    status, out, _ = plan(
        str(project.request_file),
        "--operation",
        "implement",
        "--all-workers",
        "--declare",
        "implement:worker",
        "--json",
    )
    assert status == 2
    refusal = json.loads(out)["refusal"]
    assert refusal["code"] == "model_unmapped" and refusal["file"] == str(project.model_map)
    assert "worker reviewer of Operation implement: model m-claude" in refusal["message"]
    assert "worker worker of Operation implement: model m-local" in refusal["message"]


def test_the_file_s_other_names_are_still_checked_against_the_declarations(project: Any) -> None:
    config = json.loads(project.config_file.read_text())
    config["operations"]["review"] = {"default": {"model": "m-local"}}
    project.config_file.write_text(json.dumps(config))
    project.commit_configuration()
    status, out, _ = plan(
        "--worktree", str(project.worktree), "--operation", "implement", "--all-workers", "--json"
    )
    assert status == 2
    refusal = json.loads(out)["refusal"]
    assert refusal["code"] == "config_invalid"
    assert (
        "operations.review names an Operation the caller does not declare" in (refusal["message"])
    )


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--all-workers", "--worktree", "{worktree}"], "give --operation NAME, without --worker"),
        (
            [
                "--all-workers",
                "--operation",
                "implement",
                "--worker",
                "x",
                "--worktree",
                "{worktree}",
            ],
            "give --operation NAME, without --worker",
        ),
        (["--all-workers", "--operation", "implement"], "give --worktree PATH or a request file"),
        (
            ["--all-workers", "--operation", "nothing", "--worktree", "{worktree}"],
            "names no worker of Operation nothing and none is declared: give --declare nothing:",
        ),
    ],
)
def test_an_incomplete_question_is_refused_with_its_repair(
    project: Any, argv: list[str], says: str
) -> None:
    given = [a.replace("{worktree}", str(project.worktree)) for a in argv]
    status, out, _ = plan(*given, "--json")
    assert status == 2
    refusal = json.loads(out)["refusal"]
    assert refusal["code"] == "request_invalid" and says in refusal["message"], refusal


def test_a_worktree_that_is_none_is_said_as_itself(project: Any) -> None:
    gone = project.worktree.parent / "gone"
    status, out, _ = plan(
        "--worktree", str(gone), "--operation", "implement", "--all-workers", "--json"
    )
    assert status == 2
    refusal = json.loads(out)["refusal"]
    assert (
        refusal["code"] == "worktree_misplaced" and f"the worktree {gone}" in (refusal["message"])
    )
