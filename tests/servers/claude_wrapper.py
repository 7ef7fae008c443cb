"""A wrapper `claude` for tests: the real Claude Code pointed at a scripted server.

The host generates worker settings with no base URL (nothing test-only may leak into them), so a
test points the host at this wrapper through `CONCORDE_CLAUDE`. The wrapper adds exactly these to
the environment the host gave the round, logs its command line, and execs the real claude:

    ANTHROPIC_BASE_URL=http://127.0.0.1:<port>    the scripted Messages API
    CLAUDE_CODE_MAX_RETRIES=0                       a 529 ends the round at once, for the host's
                                                    own retry round

Its log (one JSON object per start: argv, pid, and the round's environment names) lets a test
check what the host launched, e.g. `--resume <session>` in a retry round.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

__all__ = ["REPO", "find_claude", "read_starts", "write_wrapper"]

REPO = Path(__file__).resolve().parents[2]
PINNED_CLAUDE = REPO / "node_modules" / ".bin" / "claude"


def find_claude() -> Path | None:
    """The pinned claude that ./scripts/setup installs (npm ci), None when missing."""
    return PINNED_CLAUDE if os.access(PINNED_CLAUDE, os.X_OK) else None


def write_wrapper(path: Path, claude: Path, base_url: str, log: Path,
                  extra_env: dict[str, str] | None = None) -> Path:
    """Write the wrapper script at `path` (mode 0755) and return it."""
    env = {"ANTHROPIC_BASE_URL": base_url, "CLAUDE_CODE_MAX_RETRIES": "0", **(extra_env or {})}
    exports = "\n".join(f"export {name}={shlex.quote(value)}" for name, value in env.items())
    python = shlex.quote(sys.executable)
    logger = (
        "import json, os, sys; "
        "open(sys.argv[1], 'a').write(json.dumps({'pid': os.getppid(), 'argv': sys.argv[2:], "
        "'env': sorted(os.environ)}) + '\\n')"
    )
    path.write_text(
        "#!/bin/sh\n"
        f"{python} -c {shlex.quote(logger)} {shlex.quote(str(log))} \"$0\" \"$@\"\n"
        f"{exports}\n"
        f"exec {shlex.quote(str(claude))} \"$@\"\n"
    )
    path.chmod(0o755)
    return path


def read_starts(log: Path) -> list[dict[str, Any]]:
    """Every start the wrapper logged, in order."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
