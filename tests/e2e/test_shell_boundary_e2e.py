"""End-to-end: the grant's levels and the network, as every backend's shell meets them (issue 33
§6; tests/e2e/backends.py). Each backend has its own file tools and command checks in front
(tests/e2e/test_claude_boundary_e2e.py, tests/e2e/test_pi_e2e.py); what they share is the shell
inside the grant-built namespace, which is what these tests judge: every path is written so that
a command check cannot read it as a path (`split`), and what is asserted is what happened to the
files, what the model was sent and what the audit found — not one program's wording.

Grant (tests/e2e/conftest.py GRANT): `src/app/` rw, `src/app/util.py` ro, `docs/notes.md` ro,
`README.md` names; `secrets/`, `src/other/` and the worktree's `.git` are hidden.
"""

from __future__ import annotations

import pytest
from e2e.backends import BackendWorld, backend_world
from e2e.test_hidden_e2e import split
from timing import SLOW

from concorde_workers.domain.configuration.request import Limits

pytestmark = pytest.mark.e2e
__all__ = ["backend_world"]  # the fixture, imported for pytest

LIMITS = Limits(timeout_seconds=SLOW, max_turns=6, rounds=0, retries=0, retry_delay_seconds=0)
HIDDEN_TEXT = "HIDDEN-SHELL-CONTENT-m2x7"


def rc(command: str, label: str) -> str:
    return f'{command}; echo " {label}=$?"'


@pytest.mark.req("Bash runs sandboxed without network")
@pytest.mark.req("Every round is audited")
def test_the_shell_writes_only_rw_and_reads_nothing_withheld(backend_world: BackendWorld) -> None:
    w = backend_world
    wt = w.worktree
    app = wt / "src" / "app"
    hidden = wt / "secrets" / "shell.txt"
    hidden.parent.mkdir(exist_ok=True)
    hidden.write_text(f"{HIDDEN_TEXT}\n")
    other = wt / "src" / "other" / "lib.py"
    other.parent.mkdir(parents=True, exist_ok=True)
    other.write_text(f"# {HIDDEN_TEXT}\n")
    outside = w.scratch / "outside.txt"
    git_config = w.primary / ".git" / "config"
    watched = [app / "util.py", wt / "docs" / "notes.md", wt / "README.md", other, git_config]
    before = {p: p.read_text() for p in watched}
    command = "; ".join(
        [
            rc(f"echo hacked > {split(app / 'util.py')}", "ro_file"),
            rc(f"echo hacked > {split(wt / 'docs' / 'notes.md')}", "ro_entry"),
            rc(f"echo hacked > {split(wt / 'README.md')}", "names"),
            rc(f"echo hacked > {split(other)}", "hidden_dir"),
            rc(f"echo hacked >> {split(git_config)}", "git_config"),
            rc(f"echo hacked > {split(outside)}", "outside"),
            rc(
                f"ln -s ../other/lib.py {split(app / 'link.py')} && echo hacked > {app}/link.py",
                "link",
            ),
            rc(f"cat {split(hidden)}", "read_hidden"),
            rc(f"cat {split(wt / 'README.md')}", "read_names"),
            rc(f"cat {split(wt / '.git')}", "read_git"),
            rc(f"echo 'X = 2' > {split(app / 'main.py')}", "rw"),
        ]
    )
    run, said = w.command(command, limits=LIMITS)
    assert run.record.status == "ok", run.explain()
    assert " rw=0" in said, said  # the control: the shell ran, and rw is writable
    for label in ("ro_file", "ro_entry", "hidden_dir", "git_config", "outside", "link"):
        assert f" {label}=0" not in said, (label, said)
    # A names entry is an empty read-only stand-in in the namespace; sandbox-runtime (Claude
    # Code, pi) lets the shell write its own throwaway over it (" names=0"), which never
    # reaches the worktree: the file's content below is what judges it.
    assert HIDDEN_TEXT not in said and "gitdir:" not in said, said
    assert {p: p.read_text() for p in watched} == before
    assert not outside.exists()
    assert (app / "main.py").read_text() == "X = 2\n"
    audit = run.data["rounds"][0]["audit"]
    assert audit["verdict"] == "clean", audit
    assert "src/app/main.py" in audit["changed"], audit
    assert not any(not path.startswith("src/app/") for path in audit["changed"]), audit
    w.assert_cleaned(run)


@pytest.mark.req("Bash runs sandboxed without network")
def test_the_shell_reaches_no_network_not_even_the_model_s_server(
    backend_world: BackendWorld,
) -> None:
    w = backend_world
    port = w.model_port
    probe = (
        "python3 -c 'import socket\n"
        f's=socket.create_connection(("127.0.0.1",{port}),timeout=5)\n'
        's.sendall(b"GET /from-the-sandbox HTTP/1.0\\r\\n\\r\\n")\n'
        'print("CONNECTED", s.recv(100))\'; '
        'echo " python=$?"; '
        f"curl -sS -m 5 http://127.0.0.1:{port}/from-the-sandbox-curl; "
        'echo " curl=$?"'
    )
    run, said = w.command(probe, limits=LIMITS)
    assert run.record.status == "ok", run.explain()
    assert " python=" in said and " curl=" in said, said  # the shell ran both
    assert "CONNECTED" not in said and " python=0" not in said, said
    assert " curl=0" not in said, said
    assert not any("from-the-sandbox" in path for path in w.served_paths()), w.served_paths()
    w.assert_cleaned(run)
