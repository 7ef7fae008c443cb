"""The Claude Code hooks shipped compiled (issue 32 §3 "ship it compiled"; docs/decisions.md "The
Claude Code hooks shipped compiled").

What the settings run, `control/<hook>_hook.py`, is a launcher holding the code of
`control/<hook>_hook_source.py` compiled by the host's interpreter when the run is prepared. Run
here as Claude Code runs it (`python -I -S <hook>`, the call on stdin):

- its code is the source's, compiled, and it answers as the source answers;
- another interpreter (another cache tag or version) compiles the source instead and answers the
  same; without the source it denies;
- code that cannot be loaded, code that raises, and code that ends without the source's own exit
  each deny with exit status 2 (Claude Code's other way to deny; any other status would let the
  call through), the reason from the embedded table on stderr;
- a call loads no `typing` (a third of a call's imports before).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from compiled_hooks import launcher_code, launcher_values
from policy_world import POLICY, RT, WT

from concorde_workers.adapters.claude.guard.hooks import (
    HOOK_NAMES,
    HookName,
    compiled_hook,
    hook_files,
    hook_path,
    hook_source,
    hook_source_path,
    launcher_denial,
)
from concorde_workers.adapters.claude.guard.search_guard import hook_grant

pytestmark = [pytest.mark.integration]

UNDECIDED = "Concorde grant: the hook could not decide: "
CALLS: dict[str, list[dict[str, Any]]] = {
    "read": [
        {"tool_name": "Read", "cwd": f"{RT}/work", "tool_input": {"file_path": f"{WT}/README.md"}},
        {"tool_name": "Read", "cwd": f"{RT}/work", "tool_input": {"file_path": f"{WT}/.git/x"}},
    ],
    "write": [
        {
            "tool_name": "Write",
            "cwd": f"{RT}/work",
            "tool_input": {"file_path": f"{WT}/src/app/a.py"},
        },
        {"tool_name": "Edit", "cwd": f"{RT}/work", "tool_input": {"file_path": f"{WT}/specs/x"}},
    ],
    "search": [
        {
            "tool_name": "Grep",
            "cwd": f"{RT}/work",
            "tool_input": {"pattern": "x", "path": f"{WT}/specs"},
        },
        {"tool_name": "Glob", "cwd": f"{RT}/work", "tool_input": {"pattern": "*", "path": "/"}},
    ],
}


def run(hook: Path, call: Any, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-I", "-S", *flags, str(hook)],
        input=json.dumps(call),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
    )


def written(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def launcher(tmp_path: Path, hook: HookName, source: str, *, cache_tag: str | None = None) -> Path:
    """The launcher of `source`, both written below `tmp_path`; with `cache_tag`, as if another
    interpreter had generated it."""
    source_file = written(tmp_path, f"{hook}_hook_source.py", source)
    text = compiled_hook(hook, source, str(source_file), launcher_denial(hook_grant(POLICY)))
    if cache_tag is not None:
        mark = f"CACHE_TAG = {sys.implementation.cache_tag!r}\n"
        assert text.count(mark) == 1
        text = text.replace(mark, f"CACHE_TAG = {cache_tag!r}\n")
    return written(tmp_path, f"{hook}_hook.py", text)


def answers(hook: Path, calls: list[dict[str, Any]]) -> list[tuple[int, str]]:
    out = []
    for call in calls:
        done = run(hook, call)
        assert done.stderr == "", done.stderr
        out.append((done.returncode, done.stdout))
    return out


def test_what_the_settings_run_is_the_sources_code_compiled_by_the_hosts_interpreter() -> None:
    files = hook_files(POLICY)
    for hook in HOOK_NAMES:
        text, source_path = (
            files[hook_path(POLICY.runtime, hook)],
            hook_source_path(POLICY.runtime, hook),
        )
        assert files[source_path] == hook_source(POLICY, hook)
        values = launcher_values(text)
        assert values["CACHE_TAG"] == sys.implementation.cache_tag
        assert values["HEXVERSION"] == sys.hexversion
        assert values["SOURCE"] == source_path == f"{RT}/control/{hook}_hook_source.py"
        assert launcher_code(text) == compile(files[source_path], source_path, "exec")


@pytest.mark.parametrize("hook", HOOK_NAMES)
def test_the_compiled_hook_answers_as_its_source_and_as_another_interpreter_would(
    hook: HookName, tmp_path: Path
) -> None:
    source = hook_source(POLICY, hook)
    for folder in ("plain", "compiled", "other"):
        (tmp_path / folder).mkdir()
    plain = answers(written(tmp_path / "plain", "hook.py", source), CALLS[hook])
    compiled = answers(launcher(tmp_path / "compiled", hook, source), CALLS[hook])
    other = answers(launcher(tmp_path / "other", hook, source, cache_tag="other-99"), CALLS[hook])
    assert compiled == plain == other
    assert {status for status, _ in plain} == {0}
    assert [bool(out) for _, out in plain] == [False, True]  # one allowed, one denied


def test_another_interpreter_compiles_the_source_it_finds(tmp_path: Path) -> None:
    """The source is what another interpreter runs: a source that denies everything makes the
    launcher deny, where the compiled code would have allowed."""
    source = hook_source(POLICY, "read")
    hook = launcher(tmp_path, "read", source, cache_tag="other-99")
    (tmp_path / "read_hook_source.py").write_text(
        source.replace(
            "def decide(grant", "def decide(grant, *a):\n    return False, 'x'\ndef _(grant"
        ),
        encoding="utf-8",
    )
    done = run(hook, CALLS["read"][0])
    assert (done.returncode, done.stderr) == (0, "")
    assert json.loads(done.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"


def test_another_interpreter_without_the_source_denies(tmp_path: Path) -> None:
    hook = launcher(tmp_path, "read", hook_source(POLICY, "read"), cache_tag="other-99")
    (tmp_path / "read_hook_source.py").unlink()
    done = run(hook, CALLS["read"][0])
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(
        f"{UNDECIDED}its compiled code cannot be loaded (FileNotFoundError: "
    ), done.stderr


def test_code_that_cannot_be_loaded_denies(tmp_path: Path) -> None:
    """The interpreter is the one that compiled it, but the code is damaged: the hook does not
    guess (not the source either: what was prepared is not what runs), it denies."""
    hook = launcher(tmp_path, "read", hook_source(POLICY, "read"))
    text = hook.read_text(encoding="utf-8")
    code = launcher_values(text)["CODE"]
    assert text.count(code[:40]) == 1
    hook.write_text(text.replace(code[:40], "A" * 40), encoding="utf-8")
    done = run(hook, CALLS["read"][0])
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(f"{UNDECIDED}its compiled code cannot be loaded ("), done.stderr


@pytest.mark.parametrize(
    ("source", "error"),
    [
        ("pass\n", "it ended without an answer"),
        ("raise ImportError('no json here')\n", "ImportError: no json here"),
        ("import sys\nsys.exit(0)\n", "SystemExit: 0"),
    ],
)
def test_code_that_raises_or_ends_without_its_answer_denies(
    source: str, error: str, tmp_path: Path
) -> None:
    """Exit 0 without a denial would allow; exit 1 (an uncaught error) would too."""
    done = run(launcher(tmp_path, "write", source), CALLS["write"][0])
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"{UNDECIDED}{error}\n")


def test_a_call_loads_no_typing(tmp_path: Path) -> None:
    hook = launcher(tmp_path, "read", hook_source(POLICY, "read"))
    done = run(hook, CALLS["read"][1], "-X", "importtime")
    assert done.returncode == 0 and "deny" in done.stdout
    imported = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert "json" in imported and "typing" not in imported


def test_a_path_beyond_ascii_is_written_as_a_literal(tmp_path: Path) -> None:
    """The source's path is a Python literal in the launcher: a name beyond ASCII (or an
    undecodable byte) reaches `open` unchanged, and no name can end the launcher's line."""
    folder = tmp_path / "tâche\udcff\nx"
    folder.mkdir()
    hook = launcher(folder, "read", hook_source(POLICY, "read"), cache_tag="other-99")
    assert answers(hook, CALLS["read"]) == answers(
        launcher(tmp_path, "read", hook_source(POLICY, "read")), CALLS["read"]
    )
