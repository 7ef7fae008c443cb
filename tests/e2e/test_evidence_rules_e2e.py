"""End-to-end: a worker cannot shape the evidence of its own change (issue 30 §1), proven with
the real program of every backend (tests/e2e/backends.py), each driven by its scripted model
server.

Grant `src/app/` rw. In one Bash call the worker plants a rule file Git reads from the working
tree — `.gitattributes` (`-diff`, `binary`, `diff=`, `text`, `filter`, `whitespace`, `ident`,
`working-tree-encoding`), `.gitignore`, `.mailmap`, `.gitmodules`, or a file the user's own
configuration names in the worktree (an include, an excludes file) — and changes
`src/app/main.py` or creates a file; the result is ok. The round's audit must list every path the
worker changed, and the round's `changes.patch` must show the change as text, byte for byte:
the rules come from what was committed and from the user's own files outside the worktree,
never from a working copy the worker wrote.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from e2e.backends import BackendWorld, backend_world
from e2e.conftest import RecordedRun
from worlds.repository import GRANT

pytestmark = pytest.mark.e2e

__all__ = ["backend_world"]  # the fixture, imported for pytest

MAIN = "src/app/main.py"
APPENDED = "print('appended by the worker')"
HIDDEN = "src/app/hidden_new.py"


@dataclass(frozen=True)
class Planted:
    """One row: what the worker's Bash writes (shell, in the worktree), what the user set up
    before the run (a line of the repository's configuration naming a worktree file), the
    paths the audit must list and the bytes the patch must hold."""

    name: str
    command: str
    changed: tuple[str, ...]
    shown: tuple[bytes, ...]
    user_config: tuple[tuple[str, str], ...] = ()
    """Settings of the repository's own configuration naming a worktree file (key, path)."""
    user_settings: tuple[tuple[str, str], ...] = ()
    """Settings of the repository's own configuration (key, value)."""
    grant: dict[str, Any] = field(default_factory=lambda: GRANT)
    before: tuple[str, ...] = ()
    """Files of the worktree the user has (empty) before the run: a grant's file entry is
    writable where the file is."""


def attributes(line: str, change: str | None = None) -> Planted:
    """`src/app/.gitattributes` holding `line`, and a line appended to main.py."""
    return Planted(
        name=f".gitattributes {line.split(' ', 1)[1]}",
        command=f"printf '%s\\n' '{line}' > src/app/.gitattributes && "
        + (change or f'printf "%s\\n" "{APPENDED}" >> {MAIN}'),
        changed=("src/app/.gitattributes", MAIN),
        shown=(f"+{APPENDED}\n".encode(),),
    )


CRLF_MAIN = f"printf 'print(\\x27main\\x27)\\r\\n' > {MAIN}"
"""main.py with its one line ending in CRLF: what a normalizing rule would hide."""

PLANTED = [
    attributes("main.py -diff"),
    attributes("main.py binary"),
    Planted(  # the user's own driver for lock files: a worker's attribute names it
        name=".gitattributes diff=<the user's binary driver>",
        command="printf '%s\\n' 'main.py diff=opaque' > src/app/.gitattributes && "
        f'printf "%s\\n" "{APPENDED}" >> {MAIN}',
        changed=("src/app/.gitattributes", MAIN),
        shown=(f"+{APPENDED}\n".encode(),),
        user_settings=(("diff.opaque.binary", "true"),),
    ),
    attributes("main.py filter=evil"),
    attributes("main.py whitespace=-trailing-space"),
    attributes(
        "main.py working-tree-encoding=UTF-16",  # the old store could not hash it: no patch
    ),
    Planted(
        name=".gitattributes text",
        command=f"printf '%s\\n' 'main.py text' > src/app/.gitattributes && {CRLF_MAIN}",
        changed=("src/app/.gitattributes", MAIN),
        shown=(b"+print('main')\r\n",),
    ),
    Planted(
        name=".gitattributes ident",
        command="printf '%s\\n' 'main.py ident' > src/app/.gitattributes && "
        f"printf '%s\\n' '# $Id: payload the reviewer must see $' >> {MAIN}",
        changed=("src/app/.gitattributes", MAIN),
        shown=(b"+# $Id: payload the reviewer must see $\n",),
    ),
    Planted(
        name=".gitignore",
        command="printf '*\\n' > src/app/.gitignore && printf 'hidden = 1\\n' > " + HIDDEN,
        changed=("src/app/.gitignore", HIDDEN),
        shown=(b"+hidden = 1\n", b"+*\n"),
    ),
    Planted(
        name=".mailmap",
        command="printf 'Evil <e@x> <t@t>\\n' > src/app/.mailmap && "
        f'printf "%s\\n" "{APPENDED}" >> {MAIN}',
        changed=("src/app/.mailmap", MAIN),
        shown=(f"+{APPENDED}\n".encode(),),
    ),
    Planted(
        name=".gitmodules",
        command="printf '[submodule \"a\"]\\n\\tpath = src/app\\n\\tignore = all\\n' > "
        f'.gitmodules && printf "%s\\n" "{APPENDED}" >> {MAIN}',
        changed=(".gitmodules", MAIN),
        shown=(f"+{APPENDED}\n".encode(),),
        grant={**GRANT, "entries": [*GRANT["entries"], {"path": ".gitmodules", "level": "rw"}]},
        before=(".gitmodules",),
    ),
    Planted(
        name="an included configuration file",
        command=f"printf '[core]\\n\\tautocrlf = input\\n' > src/app/local.gitconfig && {CRLF_MAIN}",
        changed=("src/app/local.gitconfig", MAIN),
        shown=(b"+print('main')\r\n",),
        user_config=(("include.path", "src/app/local.gitconfig"),),
    ),
    Planted(
        name="an excludes file in the worktree",
        command="printf '*.py\\n' > src/app/.myignore && printf 'hidden = 1\\n' > " + HIDDEN,
        changed=("src/app/.myignore", HIDDEN),
        shown=(b"+hidden = 1\n",),
        user_config=(("core.excludesFile", "src/app/.myignore"),),
    ),
]


def configure(worktree: Path, primary: Path, env: dict[str, str], planted: Planted) -> None:
    """The user's files and own configuration (naming a file in the worktree) before the run."""
    for rel in planted.before:
        (worktree / rel).write_text("")
    settings = [(k, str(worktree / rel)) for k, rel in planted.user_config]
    for key, value in [*settings, *planted.user_settings]:
        subprocess.run(
            ["git", "config", "--file", str(primary / ".git" / "config"), key, value],
            env=env,
            check=True,
        )


def check(run: RecordedRun, output: str, planted: Planted) -> None:
    assert "rc=0" in output, output
    assert run.code is None, (run.record.error, output)
    audit = run.data["rounds"][0]["audit"]
    assert audit["verdict"] == "clean", audit
    assert set(planted.changed) <= set(audit["changed"]), (planted.name, audit, output)
    patch = (run.run_dir / "rounds" / "1" / "changes.patch").read_bytes()
    assert b"Binary files" not in patch and b"GIT binary patch" not in patch, patch
    for shown in planted.shown:
        assert shown in patch, (planted.name, shown, patch.decode("utf-8", "replace"))


def in_worktree(worktree: Path, planted: Planted) -> str:
    return f"cd {worktree} && {planted.command}; echo rc=$?"


@pytest.mark.req("Every round is audited")
@pytest.mark.parametrize("planted", PLANTED, ids=[p.name for p in PLANTED])
def test_a_planted_rule_file_shapes_nothing_of_the_evidence(
    backend_world: BackendWorld, planted: Planted
) -> None:
    w = backend_world
    configure(w.worktree, w.primary, w.git_env, planted)
    run, output = w.command(in_worktree(w.worktree, planted), planted.grant)
    check(run, output, planted)
