"""Issue 19 §2: `concorde-workers init` in a user's own repository (real Git): the starter
workers.json committed on a new task branch in `.claude/worktrees/<task>`, a grant beside the
model map, the model map's entry, `.claude/worktrees/` excluded; every file it writes passes
`plan`; nothing that exists is overwritten without --force."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from integration.test_program_versions_cli import cli

pytestmark = pytest.mark.integration


@pytest.fixture
def mine(project: Any, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's own small project, two commits, no Concorde file; its identity in ~/.gitconfig
    as a user has it."""
    repo = project.root / "mine"
    (repo / "src" / "calc").mkdir(parents=True)
    (repo / "tests").mkdir()
    (repo / "src" / "calc" / "__init__.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "tests" / "test_calc.py").write_text("def test_add():\n    assert 1 + 1 == 2\n")
    (repo / "README.md").write_text("# calc\n")
    env = project.git_env

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, capture_output=True)

    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], env=env, check=True)
    git("config", "--global", "user.name", "Ada")
    git("config", "--global", "user.email", "ada@example.invalid")
    git("add", "-A")
    git("commit", "-qm", "calc")
    monkeypatch.setenv("CONCORDE_MODEL_MAP", str(project.home / "maps" / "models.json"))
    monkeypatch.chdir(repo)
    return repo


def test_init_with_a_task_writes_files_that_plan_accepts(project: Any, mine: Path) -> None:
    status, out, err = cli("init", "--task", "t1", "--json")
    assert status == 0, out + err
    done = json.loads(out)
    worktree = mine / ".claude" / "worktrees" / "t1"
    assert done["worktree"] == str(worktree)
    grant = Path(done["grant"])
    assert grant == project.home / "maps" / "grants" / "mine" / "t1.json"
    assert json.loads(grant.read_text())["entries"] == [
        {"path": "README.md", "level": "ro"},
        {"path": "src/", "level": "rw"},
        {"path": "tests/", "level": "ro"},
    ]
    # committed on the task branch, where a run reads it
    shown = subprocess.run(
        ["git", "-C", str(worktree), "show", "HEAD:.concorde/workers.json"],
        env=project.git_env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(shown.stdout)["default"] == {"backend": "claude", "model": "default"}
    models = json.loads((project.home / "maps" / "models.json").read_text())
    assert models == {"schema_version": 1, "models": {"default": {"claude": "claude-opus-4-8"}}}
    assert ".claude/worktrees/\n" in (mine / ".git" / "info" / "exclude").read_text()
    status_line = subprocess.run(
        ["git", "-C", str(mine), "status", "--porcelain"],
        env=project.git_env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert status_line.stdout == ""  # the worktrees are excluded from the user's own status
    # the next command it prints is a plan that would launch
    assert done["next"].startswith(f"concorde-workers plan --worktree {worktree} --grant {grant}")
    status, out, err = cli(
        "plan",
        "--worktree",
        str(worktree),
        "--grant",
        str(grant),
        "--instructions",
        "Add sub.",
        "--operation",
        "implement",
        "--worker",
        "worker",
        "--json",
    )
    assert status == 0, out + err
    assert json.loads(out)["resolution"]["local_model"]["value"] == "claude-opus-4-8"


def test_init_takes_pi_when_its_settings_name_a_default_model(
    project: Any, mine: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = project.home / "pi-agent"
    agent.mkdir()
    (agent / "settings.json").write_text(
        json.dumps({"defaultProvider": "local", "defaultModel": "qwen-coder"})
    )
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    status, out, err = cli("init", "--task", "t2", "--json")
    assert status == 0, out + err
    models = json.loads((project.home / "maps" / "models.json").read_text())
    assert models["models"]["default"] == {"claude": "claude-opus-4-8", "pi": "local/qwen-coder"}
    worktree = mine / ".claude" / "worktrees" / "t2"
    config = json.loads((worktree / ".concorde" / "workers.json").read_text())
    assert config["default"]["backend"] == "pi"
    # pi's models.json defines no provider local: the plan init prints would be refused, and
    # init says so with the words plan and run would use (issue 31 §1)
    said = [line for line in json.loads(out)["done"] if line.startswith("the plan below")]
    assert said and "names the provider local, which" in said[0], out
    (agent / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "local": {
                        "baseUrl": "http://127.0.0.1:8000/v1",
                        "api": "openai-completions",
                        "apiKey": "none",
                        "models": [{"id": "qwen-coder"}],
                    }
                }
            }
        )
    )
    status, out, err = cli("init", "--task", "t3", "--json")
    assert status == 0 and not any(
        line.startswith("the plan below") for line in json.loads(out)["done"]
    ), out


def test_init_never_overwrites_and_force_replaces(project: Any, mine: Path) -> None:
    maps = project.home / "maps"
    maps.mkdir()
    mapped = {
        "schema_version": 1,
        "models": {"default": {"claude": "claude-mine"}, "other": {"pi": "x/y"}},
    }
    (maps / "models.json").write_text(json.dumps(mapped))
    (mine / ".git" / "info" / "exclude").write_text("*.log\n/.claude/worktrees/\n")
    status, out, _ = cli("init")
    assert status == 0
    config = mine / ".concorde" / "workers.json"
    assert config.is_file() and "commit it on the branch your worktrees are made from" in out
    assert json.loads((maps / "models.json").read_text()) == mapped  # kept
    assert (mine / ".git" / "info" / "exclude").read_text() == "*.log\n/.claude/worktrees/\n"
    config.write_text('{"mine": true}\n')
    status, out, _ = cli("init")
    assert status == 0 and f"worker configuration {config}: kept, it exists" in out
    assert config.read_text() == '{"mine": true}\n'
    status, out, _ = cli("init", "--force")
    assert status == 0 and json.loads(config.read_text())["schema_version"] == 2
    replaced = json.loads((maps / "models.json").read_text())["models"]
    assert replaced == {"default": {"claude": "claude-opus-4-8"}, "other": {"pi": "x/y"}}


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["init", "--task", "../x"], "--task '../x' is no worktree name"),
        (["init", "--repo", "/"], "is not in a Git repository"),
    ],
)
def test_init_refuses_what_it_cannot_do_and_writes_nothing(
    project: Any, mine: Path, argv: list[str], says: str
) -> None:
    status, out, _ = cli(*argv, "--json")
    assert status == 2
    refusal = json.loads(out)["refusal"]
    assert refusal["code"] == "request_invalid" and says in refusal["message"], refusal
    assert not (project.home / "maps").exists()


def test_init_in_a_linked_worktree_is_refused_naming_the_primary(project: Any, mine: Path) -> None:
    assert cli("init", "--task", "t3")[0] == 0
    status, out, _ = cli("init", "--repo", str(mine / ".claude" / "worktrees" / "t3"), "--json")
    assert status == 2
    assert f"(the primary: {mine})" in json.loads(out)["refusal"]["message"]


def test_init_never_replaces_an_exclude_file_that_is_a_link(project: Any, mine: Path) -> None:
    """The user's own arrangement (a link to a shared exclude file) is said, not replaced."""
    shared = project.root / "shared-exclude"
    shared.write_text("*.log\n")
    exclude = mine / ".git" / "info" / "exclude"
    exclude.unlink()
    exclude.symlink_to(shared)
    status, out, _ = cli("init")
    assert status == 0
    assert exclude.is_symlink() and shared.read_text() == "*.log\n"
    assert f"{exclude}: kept, it is no regular file" in " ".join(out.split())
