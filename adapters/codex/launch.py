"""The exact command line of a Codex round (issue 33 §1, §3; ../shared/notes/codex.md §2). Pure.

    <codex> exec --json --strict-config --skip-git-repo-check -s <mode> -C <worktree>
        --output-schema <rt>/control/codex-output.schema.json -o <rt>/config/codex-last.json -
    ... the same, then `resume <thread id> -` for a repair or retry round

The prompt goes on standard input, which the host closes (left open, `exec` waits for it);
`--output-schema` is given again every round (Codex forgets it on resume). `-s read-only` for a
tool set without Codex's change tool (a task type that writes nothing, or a grant without rw),
else `workspace-write`; never `danger-full-access`, never `--trust`: Codex's own sandbox stays
on inside the confinement."""

from __future__ import annotations

import re
from collections.abc import Sequence

from concorde_workers.adapters.codex import layout
from concorde_workers.domain.ground.layout import RuntimeLayout
from concorde_workers.domain.isolation.launch import LaunchCommand, as_runtime, tool_set

__all__ = ["CHANGE_TOOL", "codex_command", "sandbox_mode"]

CHANGE_TOOL = "apply_patch"
_THREAD = re.compile(r"[0-9A-Za-z][0-9A-Za-z-]{7,63}")


def sandbox_mode(tools: Sequence[str]) -> str:
    """Codex's own sandbox for a tool set: writable worktree only with its change tool."""
    return "workspace-write" if CHANGE_TOOL in tools else "read-only"


def codex_command(
    *,
    runtime: RuntimeLayout | str,
    worktree: str,
    tools: Sequence[str],
    program: str,
    thread: str | None = None,
) -> LaunchCommand:
    """A round's command: a new thread with the brief, or `resume <thread>` with the round's
    prompt (a thread id as Codex prints it, never an option)."""
    rt = as_runtime(runtime)
    names = tool_set(tools)
    if not program:
        raise ValueError("the codex program is empty")
    argv = [
        program,
        "exec",
        "--json",
        "--strict-config",
        "--skip-git-repo-check",
        "-s",
        sandbox_mode(names),
        "-C",
        worktree,
        "--output-schema",
        layout.wire_schema(rt),
        "-o",
        layout.last_message(rt),
    ]
    if thread is not None:
        if not _THREAD.fullmatch(thread):
            raise ValueError(f"not a Codex thread id: {thread!r}")
        argv += ["resume", thread]
    argv.append("-")
    return LaunchCommand(argv=tuple(argv), cwd=rt.work, tools=names)
