"""Issue 31 §3, a setting is honoured or refused, never dropped: every combination of flags the
parser accepts that a command would not use is refused naming the flags and the repair, before
anything runs (adapters/cli/parser.py `unused_flags`); `--version --json` is honoured."""

from __future__ import annotations

import io
import json

import pytest

from concorde_workers import __version__
from concorde_workers.adapters.cli import main as cli

DROPPED = {
    "show --html with --diff": (
        ["show", "/r", "--html", "f.html", "--diff"],
        "show --diff and --html FILE: show prints the account, or the one thing",
    ),
    "show --html with --json": (
        ["show", "/r", "--html", "f.html", "--json"],
        "show --json and --html FILE",
    ),
    "show --diff with --json": (["show", "/r", "--diff", "--json"], "show --json and --diff"),
    "show --round without --diff": (
        ["show", "/r", "--round", "2"],
        "--round N chooses the round whose change --diff prints; add --diff",
    ),
    "show --round with --html": (
        ["show", "/r", "--round", "2", "--html", "f.html"],
        "--round N chooses the round whose change --diff prints",
    ),
    "--version with a command": (
        ["--version", "plan"],
        "--version takes no command and no flag but --json",
    ),
    "--json before a command": (
        ["--json", "sweep"],
        "--json before the command goes with --version; give it after the command",
    ),
    "plan --keep without --example": (
        ["plan", "--keep"],
        "--keep keeps the example repository of --example; add --example",
    ),
    "plan --example with a request file": (
        ["plan", "r.json", "--example"],
        "--example plans in a throwaway example repository of its own, and a request file",
    ),
    "plan --example with --worktree": (
        ["plan", "--example", "--worktree", "/w"],
        "and --worktree names another worktree",
    ),
    "plan --all-workers with what it does not use": (
        ["plan", "--operation", "o", "--all-workers", "--grant", "g", "--check", "make"],
        "--grant, --check would not be used; leave them out, or plan one worker with --worker",
    ),
    "plan --all-workers with a limit": (
        ["plan", "--operation", "o", "--all-workers", "--max-memory", "2g"],
        "--max-memory would not be used",
    ),
    "no command": ([], "the following arguments are required: COMMAND"),
}


@pytest.mark.parametrize(("argv", "says"), DROPPED.values(), ids=DROPPED.keys())
def test_a_flag_the_command_would_not_use_is_refused(argv: list[str], says: str) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert cli.main(argv, out, err) == 2
    assert out.getvalue() == "" or "--json" in argv
    said = err.getvalue() or out.getvalue()
    assert "refused: request_invalid" in said or '"request_invalid"' in said
    assert says in " ".join(said.split()), said


@pytest.mark.parametrize(
    ("argv", "printed"),
    [
        (["--version"], f"concorde-workers {__version__}\n"),
        (["--version", "--json"], None),
        (["--json", "--version"], None),
    ],
)
def test_the_version_alone_or_as_json(argv: list[str], printed: str | None) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert cli.main(argv, out, err) == 0 and err.getvalue() == ""
    if printed is not None:
        assert out.getvalue() == printed
    else:
        assert json.loads(out.getvalue()) == {"program": "concorde-workers", "version": __version__}
