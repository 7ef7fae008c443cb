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

Issue 33 §6, the class of a rw entry that is no existing folder, on every backend's shell: no
name is ever made beside a rw file, at any depth. Codex has no per-path layer of its own, so its
namespace binds a rw file itself, never its folder, and `plan` and `run` refuse a rw entry that
only a writable folder could serve (docs/decisions.md 73).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from e2e.backends import BackendWorld, backend_world
from e2e.conftest import ClaudeWorld
from e2e.conftest_codex import CodexWorld, codex_world, exec_call, result_turn
from e2e.conftest_pi import MODEL, PiWorld, call, pi_world, reply, result_call
from e2e.test_claude_boundary_e2e import probe
from servers.codex_exec import MODEL as CODEX_MODEL
from servers.responses_server import Patch, Turn
from timing import SLOW

from concorde_workers.adapters.cli.main import main
from concorde_workers.container import production

pytestmark = pytest.mark.e2e

__all__ = ["backend_world", "codex_world", "pi_world"]  # the fixtures, imported for pytest

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


def cli(w: PiWorld | CodexWorld, *argv: str) -> tuple[int, str, str]:
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
    # Codex too (issue 33 §6): its own sandbox writes its whole working folder, but the
    # namespace binds nothing writable for this entry on codex, which names a folder nothing
    # writes (docs/decisions.md 73), where it bound the worktree's root for it before.
    assert run.record.status == "ok", run.explain()
    assert tree(wt) == before, (said, run.explain())
    assert audit["verdict"] == "clean" and audit["changed"] == [], audit
    w.assert_cleaned(run)


def file_grant(*rw_files: str) -> dict[str, Any]:
    """rw file entries (no folder of theirs is rw), the docs readable."""
    return {
        "task_type": "implement",
        "entries": [
            *({"path": f, "level": "rw"} for f in rw_files),
            {"path": "docs/", "level": "ro"},
        ],
        "context_identity": "sha256:" + "3" * 64,
    }


def test_a_rw_file_entry_lets_no_shell_create_a_name_beside_it(
    backend_world: BackendWorld,
) -> None:
    """Issue 33 §6, the class of a rw file entry at any depth (a root file, a file below a
    folder that is not rw): the shell edits the granted files in place, and a name created
    beside either, at the root or below `src/app`, never reaches the worktree - on every
    backend, codex included, whose own sandbox writes its whole working folder (the namespace
    binds the file itself for codex, never its folder)."""
    w = backend_world
    wt = w.worktree
    before = tree(wt)
    command = "; ".join(
        [
            f"echo edited >> {wt}/README.md",
            f"echo edited >> {wt}/src/app/main.py",
            f"touch {wt}/evil-root.txt",
            f"touch {wt}/src/app/evil.py",
            f"mkdir {wt}/newdir",
            "echo listed",
        ]
    )
    run, said = w.command(command, grant=file_grant("README.md", "src/app/main.py"))
    assert "listed" in said, said  # the shell ran
    assert run.record.status == "ok", run.explain()
    after = tree(wt)
    assert after.pop("README.md") == before.pop("README.md") + b"edited\n", said
    assert after.pop("src/app/main.py") == before.pop("src/app/main.py") + b"edited\n", said
    assert after == before, (said, run.explain())  # no name beside them
    assert not (wt / "newdir").exists(), said
    audit = run.data["rounds"][-1]["audit"]
    assert audit["verdict"] == "clean", audit
    assert sorted(audit["changed"]) == ["README.md", "src/app/main.py"], audit
    w.assert_cleaned(run)


def patch(*lines: str) -> str:
    return "\n".join(["*** Begin Patch", *lines, "*** End Patch", ""])


def test_codex_edits_a_rw_file_bound_alone_in_place_and_nothing_beside_it(
    codex_world: CodexWorld,
) -> None:
    """What binding a rw file itself means for codex's own tools (docs/decisions.md 73):
    apply_patch updates the file in place; a shell redirect and an append write it; what
    writes a new file beside it - apply_patch's Add File, `sed -i`'s temporary file, `mv`
    onto it, `rm` - is refused by the read-only folder (EROFS), and the file is never
    replaced. `plan` shows the file's own bind."""
    w = codex_world
    wt = w.worktree
    before = tree(wt)
    grant = file_grant("README.md", "src/app/main.py")
    update = patch("*** Update File: src/app/main.py", "@@", "-print('main')", "+print('patched')")
    add = patch("*** Add File: src/app/evil.py", "+evil")
    shell = "; ".join(
        [
            "sed -i s/patched/SED/ src/app/main.py; echo sed=$?",
            "printf '# rewritten\\n' > README.md; echo redirect=$?",
            "mv README.md README2.md; echo mv=$?",
            "rm src/app/main.py; echo rm=$?",
        ]
    )
    run = w.run(
        Turn(calls=[Patch(update, "p_update")]),
        Turn(calls=[Patch(add, "p_add")]),
        exec_call(shell, "c_shell"),
        result_turn(summary="edited"),
        grant=grant,
    )
    assert "M src/app/main.py" in run.tool_result("p_update")
    assert "Failed to write file" in run.tool_result("p_add")
    said = run.tool_result("c_shell")
    assert "sed: couldn't open temporary file" in said and "Read-only file system" in said, said
    assert "redirect=0" in said and "mv=1" in said and "rm=1" in said, said
    assert run.record.status == "ok", run.explain()
    after = tree(wt)
    assert after.pop("README.md") == b"# rewritten\n"
    assert after.pop("src/app/main.py") == b"print('patched')\n"
    del before["README.md"], before["src/app/main.py"]
    assert after == before, after.keys()
    audit = run.data["rounds"][-1]["audit"]
    assert audit["verdict"] == "clean", audit
    request = w.root / "request.json"
    request.write_text(json.dumps(codex_request(w, grant)))
    status, shown, _ = cli(w, "plan", str(request))
    assert status == 0, shown
    for rel in ("README.md", "src/app/main.py"):
        line = f"writable        {wt / rel}  (rw in the grant ({rel}), the file itself"
        assert line in shown, shown
    assert f"writable        {wt}  " not in shown and f"{wt / 'src/app'}  (" not in shown


def codex_request(w: CodexWorld, grant: dict[str, Any]) -> dict[str, Any]:
    return {
        "backend": "codex",
        "worktree": str(w.worktree),
        "task_type": "implement",
        "grant": grant,
        "instructions": "Do the scripted task.",
        "limits": {"timeout_seconds": SLOW, "max_turns": 10, "rounds": 0, "retries": 0},
        "local_model": CODEX_MODEL,
    }


REFUSED = (
    "the Codex CLI binds each rw file of the grant itself, never its folder, as its commands "
    "write whatever the confinement leaves writable: "
)


@pytest.mark.parametrize(
    ("entry", "repair"),
    [
        ("notes.md", "create it first, empty if need be (the host creates nothing for the worker)"),
        ("src/app/new.py", "the worker), or grant its folder `src/app/` rw"),
    ],
)
def test_codex_refuses_a_rw_file_entry_not_there_yet_before_launch(
    codex_world: CodexWorld, entry: str, repair: str
) -> None:
    """A rw file not there yet would need its folder writable, where codex's commands would
    make any other name too: `plan` and `run` refuse it before launch, naming the entry and the
    repair; no model request is made and nothing is written."""
    w = codex_world
    before = tree(w.worktree)
    request = w.root / "request.json"
    request.write_text(json.dumps(codex_request(w, file_grant(entry))))
    said = f"{REFUSED}grant entry 1 ({entry!r}, rw) names nothing in the worktree yet: "
    status, shown, _ = cli(w, "plan", str(request))
    assert status == 2, shown
    assert shown.splitlines()[0].startswith(  # plan's first line is its verdict
        f"concorde-workers plan — a run would be refused: request_invalid: {said}"
    ), shown
    assert said in shown and repair in shown, shown
    parent = w.root / "trace"
    parent.mkdir()
    status, out, err = cli(w, "run", str(request), "--parent", str(parent))
    assert status != 0, out + err
    [run_dir] = (parent / "workers").iterdir()
    record = json.loads((run_dir / "trace.json").read_text())
    # request_invalid is none of a run's codes: the run records the launch it could not make
    assert record["status"] == "failed" and record["content"]["rounds"] == 0, record
    assert record["error"]["code"] == "launch_failed", record
    detail = record["error"]["detail"]
    assert f"(request_invalid): {said}" in detail and repair in detail, record
    assert w.server.requests == []
    assert tree(w.worktree) == before
