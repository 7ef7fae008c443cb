"""Issue 31 §3, a grant entry `src` without the slash that names a directory, end to end with the
real programs: seed 002 reads it as the entry `src` itself, so nothing below it is in the grant,
and the confinement binds the worktree's root writable for it (a rw entry that is no existing
directory needs its folder writable: docs/decisions.md "The agent process tree in its own
namespaces"). Whatever the worker tries with every tool it has — the write tool on a new name
beside `src`, on a file below it, on `src` itself; Bash creating a name at the root and writing
below `src` — nothing outside the grant's rw is written: the writable root is no hole. And the
run goes on as the grant reads, while `plan`, the start of `run` and its account say "did you
mean `src/`?".

pi through `concorde-workers run` (so the account is the real command's); Claude Code through
`WorkerHost.run`, its tool results as the model received them.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from e2e.backends import BackendWorld, backend_world
from e2e.conftest import ClaudeWorld
from e2e.conftest_pi import MODEL, PiWorld, call, pi_world, reply, result_call
from e2e.test_claude_boundary_e2e import probe
from timing import SLOW

from concorde_workers.adapters.cli.main import main
from concorde_workers.container import production

pytestmark = pytest.mark.e2e

__all__ = ["backend_world", "pi_world"]  # the fixture, imported for pytest

NOTE = "names a directory without the slash"
MEANT = "did you mean `src/`?"


def src_grant(task_type: str = "implement") -> dict[str, Any]:
    return {
        "task_type": task_type,
        "entries": [{"path": "src", "level": "rw"}, {"path": "docs/", "level": "ro"}],
        "context_identity": "sha256:" + "2" * 64,
    }


def tree(root: Path) -> dict[str, bytes]:
    """Every file of the worktree but Git's, with its content."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


def cli(w: PiWorld, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), out, err, container=production(w.environ))
    assert "Traceback" not in out.getvalue() + err.getvalue()
    return status, out.getvalue(), err.getvalue()


def test_pi_a_rw_entry_without_its_slash_writes_nothing_beyond_the_grant_and_is_said(
    pi_world: PiWorld,
) -> None:
    w = pi_world
    before = tree(w.worktree)
    wt = w.worktree
    bash = "; ".join(
        [
            f"touch {wt}/evil-bash.txt",
            f"echo changed > {wt}/src/app/main.py",
            f"mkdir {wt}/newdir",
            f"ls -A {wt}/src",
        ]
    )
    w.server.add(
        reply(call("write", "c1", path=w.path("evil-write.txt"), content="evil\n")),
        reply(call("write", "c2", path=w.path("src/app/new.py"), content="new\n")),
        reply(call("write", "c3", path=w.path("src"), content="replaced\n")),
        reply(call("bash", "c4", command=bash)),
        reply(result_call("c5")),
    )
    request = w.root / "request.json"
    request.write_text(
        json.dumps(
            {
                "backend": "pi",
                "worktree": str(wt),
                "task_type": "implement",
                "grant": src_grant(),
                "instructions": "Do the scripted task.",
                "limits": {"timeout_seconds": SLOW, "max_turns": 10, "rounds": 0, "retries": 0},
                "local_model": MODEL,
            }
        )
    )
    shown = cli(w, "plan", str(request))
    assert shown[0] == 0, shown[1]
    assert NOTE in shown[1] and MEANT in shown[1]
    parent = w.root / "trace"
    parent.mkdir()
    status, out, err = cli(w, "run", str(request), "--parent", str(parent))
    assert status == 0, out + err  # the run goes on as the grant reads
    assert f"concorde-workers: note: grant entry 1 ('src', rw) {NOTE}" in err
    assert "\nnotes\n" in out and MEANT in out  # the account says it too
    results = w.server.tool_results()
    assert "Concorde grant: evil-write.txt is not in this task's grant" in results["c1"]
    assert "Concorde grant: src/app/new.py is not in this task's grant" in results["c2"]
    assert "EISDIR" in results["c3"]  # the entry src is a folder: nothing to write
    assert "src/app/main.py: No such file or directory" in results["c4"]  # src shows empty
    assert tree(wt) == before, "a tool wrote beyond the grant"
    assert w.porcelain() == []
    [run_dir] = (parent / "workers").iterdir()
    record = json.loads((run_dir / "trace.json").read_text())
    assert record["status"] == "ok"
    shown_again = cli(w, "show", str(run_dir))
    assert shown_again[0] == 0 and "\nnotes\n" not in shown_again[1]  # no worktree to ask


def test_claude_a_rw_entry_without_its_slash_writes_nothing_beyond_the_grant(
    claude_world: ClaudeWorld,
) -> None:
    w = claude_world
    wt = w.worktree
    before = tree(wt)
    calls = [
        ("Write", {"file_path": str(wt / "evil-write.txt"), "content": "evil\n"}),
        ("Write", {"file_path": str(wt / "src" / "app" / "new.py"), "content": "new\n"}),
        ("Write", {"file_path": str(wt / "src"), "content": "replaced\n"}),
        ("Bash", {"command": f"touch {wt}/evil-bash.txt; echo changed > {wt}/src/app/main.py"}),
    ]
    run, results = probe(w, calls, grant=src_grant())
    assert all(is_error for _, is_error in results), results
    assert "Concorde grant: evil-write.txt is not in this task's grant" in results[0][0]
    assert "src/app/main.py: No such file or directory" in results[3][0]  # src shows empty
    assert tree(wt) == before, (results, run.explain())
    assert run.record.rounds[-1].audit is not None
    assert run.record.rounds[-1].audit.verdict == "clean"


def test_a_rw_entry_without_its_slash_lets_no_shell_write_beyond_the_grant(
    backend_world: BackendWorld,
) -> None:
    """The writable root under every backend's shell (issue 33 §6): a name created at the
    root, a folder made there, a write below `src`: none reaches the worktree."""
    w = backend_world
    wt = w.worktree
    before = tree(wt)
    command = "; ".join(
        [
            f"touch {wt}/evil-bash.txt",
            f"mkdir {wt}/newdir",
            f"echo changed > {wt}/src/app/main.py",
            f"ls -A {wt}/src",
            "echo listed",
        ]
    )
    run, said = w.command(command, grant=src_grant())
    assert "listed" in said, said  # the shell ran
    assert "src/app/main.py: No such file or directory" in said, said  # src shows empty
    audit = run.data["rounds"][-1]["audit"]
    if w.backend in ROOT_WRITABLE:
        # Codex's own sandbox lets its commands write the whole working folder, and the
        # namespace binds the worktree's root writable for this entry: the name lands and only
        # the audit stops it (docs/architecture.md "One boundary, every backend").
        assert run.code == "audit_violation", run.explain()
        assert audit["violations"] == ["evil-bash.txt"], audit
        after = tree(wt)
        assert after.pop("evil-bash.txt") == b"" and after == before, after.keys()
    else:
        assert run.record.status == "ok", run.explain()
        assert tree(wt) == before, (said, run.explain())
        assert audit["verdict"] == "clean" and audit["changed"] == [], audit
    w.assert_cleaned(run)


ROOT_WRITABLE = {"codex"}
"""Backends whose shell writes a name at the root the namespace binds writable for a rw entry
without its slash (Claude Code's and pi's sandbox-runtime refuse it)."""
