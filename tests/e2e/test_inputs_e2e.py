"""Issue 8 §5 and §6 end to end, through `concorde-workers run` and `show` with the real pi 0.73.1
and sandbox-runtime against the scripted model server on 127.0.0.1.

§5: a runtime path that would uncover what the Harness hides is refused before anything starts.
The review's case: `--runtime-path ''` given from the primary worktree was completed against the
current directory, so the whole primary worktree became a runtime path and the worker read
`<primary>/secrets/token.txt` with pi's read tool.

§6: a worker's result whose summary and proposed deletions carry OSC and CSI sequences (window
title, clear screen, cursor up) reaches `run`'s account and `show` escaped, and `--json` exactly.
"""

from __future__ import annotations

import io
import json
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from e2e.conftest_codex import CodexWorld, codex_world, result_turn
from e2e.conftest_pi import MODEL, PiWorld, call, pi_world, reply, result_call
from servers.codex_exec import MODEL as CODEX_MODEL
from timing import SLOW
from worlds.repository import GRANT

from concorde_workers.adapters.cli.main import main
from concorde_workers.container import production

pytestmark = pytest.mark.e2e

__all__ = ["codex_world", "pi_world"]  # the fixtures, imported for pytest

LIMITS = {
    "timeout_seconds": SLOW,
    "max_turns": 30,
    "rounds": 0,
    "retries": 0,
    "retry_delay_seconds": 0,
}
OSC = "\x1b]0;pwned by the worker\x07"
CLEAR = "\x1b[2J\x1b[H"
UP = "\x1b[1A\x1b[2K"
UNSAFE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def request_file(w: PiWorld | CodexWorld, backend: str = "pi", model: str = MODEL) -> Path:
    path = w.root / "request.json"
    path.write_text(
        json.dumps(
            {
                "backend": backend,
                "worktree": str(w.worktree),
                "task_type": "implement",
                "grant": GRANT,
                "instructions": "Do the scripted task.",
                "limits": LIMITS,
                "local_model": model,
            }
        )
    )
    return path


def cli(w: PiWorld | CodexWorld, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = main(list(argv), out, err, container=production(w.environ))
    assert "Traceback" not in out.getvalue() + err.getvalue()
    assert "internal error" not in err.getvalue(), err.getvalue()
    return status, out.getvalue(), err.getvalue()


def terminal_safe(text: str) -> bool:
    return not any(c != "\n" and unicodedata.category(c) in UNSAFE for c in text)


@pytest.mark.req("A worker reads beside its grant only what its caller lists")
@pytest.mark.parametrize("given", ["", "primary"])
def test_a_runtime_path_that_would_uncover_the_primary_worktree_is_refused_before_pi_starts(
    pi_world: PiWorld, monkeypatch: pytest.MonkeyPatch, given: str
) -> None:
    w = pi_world
    secret = str(w.primary / "secrets" / "token.txt")
    w.server.add(reply(call("read", "call_secret", path=secret)), reply(result_call("call_r")))
    monkeypatch.chdir(w.primary)  # where the user stands, as in the review
    parent = w.root / "trace"
    parent.mkdir()
    path = str(w.primary) if given == "primary" else ""
    status, out, err = cli(
        w, "run", str(request_file(w)), "--parent", str(parent), "--runtime-path", path
    )
    secrets = json.dumps(w.server.tool_results())
    assert "not for workers" not in secrets, "the worker read the primary worktree's secret"
    assert status == 2, out + err
    assert err.startswith("concorde-workers: refused: request_invalid (input)\n")
    said = " ".join(err.split())
    assert f"the runtime path '{path}'" in said and (
        "is empty" in said or f"is the primary worktree {w.primary}" in said
    ), err
    assert "--runtime-path" in said and ".concorde/workers.json" in said  # the repair
    assert w.server.requests == []  # pi never started
    assert list(parent.iterdir()) == []  # no run directory


@pytest.mark.req("Proposed deletions follow every clean last round")
def test_a_worker_s_escape_sequences_reach_the_terminal_escaped_and_json_verbatim(
    pi_world: PiWorld,
) -> None:
    w = pi_world
    w.server.add(reply(result_call("call_r", *DELETIONS, summary=SUMMARY)))
    escapes_are_shown_escaped(w, request_file(w))


@pytest.mark.req("Proposed deletions follow every clean last round")
def test_a_codex_worker_s_escape_sequences_reach_the_terminal_escaped_and_json_verbatim(
    codex_world: CodexWorld,
) -> None:
    """The same on codex (issue 33 §5): its final message's summary and deletions."""
    w = codex_world
    w.server.add(result_turn(*DELETIONS, summary=SUMMARY))
    escapes_are_shown_escaped(w, request_file(w, "codex", CODEX_MODEL))


SUMMARY = f"all done{OSC}{CLEAR}{UP}\x9b2J\u202e"
DELETIONS = ["src/app/old.py", f"src/app/{OSC}gone.py", f"src/app/{CLEAR}x\ny.py"]


def escapes_are_shown_escaped(w: PiWorld | CodexWorld, request: Path) -> None:
    """The run of `request`, whose worker answers SUMMARY and DELETIONS: the account and `show`
    print every control character escaped, `show --json` keeps the worker's text verbatim."""
    summary, deletions = SUMMARY, DELETIONS
    parent = w.root / "trace"
    parent.mkdir()
    status, out, err = cli(w, "run", str(request), "--parent", str(parent))
    assert status == 0, out + err
    assert not (w.worktree / "src/app/old.py").exists()  # the host performed the deletion
    for text in (out, err):
        assert terminal_safe(text), text
    escaped_summary = (
        "all done\\x1b]0;pwned by the worker\\x07\\x1b[2J\\x1b[H\\x1b[1A\\x1b[2K\\x9b2J\\u202e"
    )
    assert f"  worker result: ok — {escaped_summary}\n" in out
    assert "  deleted src/app/old.py\n" in out
    assert (
        "  absent  src/app/\\x1b]0;pwned by the worker\\x07gone.py, "
        "src/app/\\x1b[2J\\x1b[Hx\\ny.py\n"
    ) in out

    run_dir = next((parent / "workers").iterdir())
    shown_status, shown, shown_err = cli(w, "show", str(run_dir))
    assert shown_status == 0, shown_err
    assert terminal_safe(shown)
    assert shown == out

    json_status, document, _ = cli(w, "show", str(run_dir), "--json")
    assert json_status == 0 and terminal_safe(document)
    record: dict[str, Any] = json.loads(document)
    assert record["worker_result"]["summary"] == summary
    assert record["worker_result"]["proposed_deletions"] == deletions
    assert record["deleted"] == ["src/app/old.py"]
    assert record["deletions_absent"] == deletions[1:]
