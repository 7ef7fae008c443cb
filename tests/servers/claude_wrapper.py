"""A wrapper `claude` for tests: the real Claude Code pointed at a scripted server.

The host generates worker settings with no base URL (nothing test-only may leak into them), so a
test points the host at this wrapper through `CONCORDE_CLAUDE`. The wrapper adds exactly these to
the environment the host gave the round, logs its command line, and execs the real claude:

    ANTHROPIC_BASE_URL=http://127.0.0.1:<port>    the scripted Messages API
    CLAUDE_CODE_MAX_RETRIES=0                       a 529 ends the round at once, for the host's
                                                    own retry round

It logs each start (one JSON object: argv and the round's environment names) as a line
`[claude-wrapper-start] {...}` on its standard error, which the host keeps as the round's
stderr.log: the wrapper runs inside the run's confinement, where no file outside the worker's
own directories is writable, and where its pid is the namespace's, not the host's (a test that
needs the host's pid of the agent finds it with `tests/e2e/agent_processes.py`). `read_starts`
reads them back from a run directory, so a test can check what the host launched, e.g.
`--resume <session>` in a retry round.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

__all__ = ["REPO", "START_MARK", "find_claude", "read_starts", "write_wrapper"]

REPO = Path(__file__).resolve().parents[2]
PINNED_CLAUDE = REPO / "node_modules" / ".bin" / "claude"
START_MARK = "[claude-wrapper-start] "


def find_claude() -> Path | None:
    """The pinned claude that ./scripts/setup installs (npm ci), None when missing."""
    return PINNED_CLAUDE if os.access(PINNED_CLAUDE, os.X_OK) else None


def write_wrapper(path: Path, claude: Path, base_url: str,
                  extra_env: dict[str, str] | None = None) -> Path:
    """Write the wrapper script at `path` (mode 0755) and return it."""
    env = {"ANTHROPIC_BASE_URL": base_url, "CLAUDE_CODE_MAX_RETRIES": "0", **(extra_env or {})}
    exports = "\n".join(f"export {name}={shlex.quote(value)}" for name, value in env.items())
    python = shlex.quote(sys.executable)
    logger = (
        "import json, os, sys; "
        f"sys.stderr.write({START_MARK!r} + json.dumps({{'argv': sys.argv[1:], "
        "'env': sorted(os.environ)}) + '\\n')"
    )
    path.write_text(
        "#!/bin/sh\n"
        f"{python} -c {shlex.quote(logger)} \"$0\" \"$@\"\n"
        f"{exports}\n"
        f"exec {shlex.quote(str(claude))} \"$@\"\n"
    )
    path.chmod(0o755)
    return path


def read_starts(run_dir: Path) -> list[dict[str, Any]]:
    """Every start the wrapper logged, in round order, from the rounds' stderr.log files."""
    logs = sorted((run_dir / "rounds").glob("*/stderr.log"), key=lambda p: int(p.parent.name))
    return [json.loads(line.removeprefix(START_MARK))
            for log in logs for line in log.read_text(errors="replace").splitlines()
            if line.startswith(START_MARK)]
