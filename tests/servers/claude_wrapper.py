"""A wrapper `claude` for tests: the real Claude Code pointed at a scripted server.

The host generates worker settings with no base URL (nothing test-only may leak into them), so a
test points the host at this wrapper through `CONCORDE_CLAUDE`. The wrapper adds exactly these to
the environment the host gave the round, logs its command line, and execs the real claude:

    ANTHROPIC_BASE_URL=http://127.0.0.1:<port>    the scripted Messages API
    CLAUDE_CODE_MAX_RETRIES=0                       a 529 ends the round at once, for the host's
                                                    own retry round

With `settings_drop` (dotted keys such as `sandbox.network.strictAllowlist`), it runs claude with
a copy of the generated settings without those keys, written into the round's TMPDIR: the
end-to-end proofs that each generated key is what holds (tests/e2e/test_claude_settings_e2e.py)
run the real program once with the settings as generated and once without the key.

It logs each start (one JSON object: argv and the round's environment names) as a line
`[claude-wrapper-start] {...}` on its standard error, which the host keeps as the round's
stderr.log: the wrapper runs inside the run's confinement, where no file outside the worker's
own directories is writable, and where its pid is the namespace's, not the host's (a test that
needs the host's pid of the agent finds it with `tests/e2e/agent_processes.py`). `read_starts`
reads them back from a run directory, so a test can check what the host launched, e.g.
`--resume <session>` in a retry round.

With `messaging_inbox`, it adds `--messaging-socket-path <TMPDIR>/inbox/s.sock` (a private
directory it makes): Claude Code then binds its cross-session inbox and puts
`CLAUDE_CODE_MESSAGING_TOKEN` and `..._SOCKET` into its own environment, as it does by itself
on any host not running as root. As root the confinement's user namespace has no uid mapping,
and Claude Code refuses to bind its default socket directory ("reads as the kernel overflow
uid"), so the tests run as root would never see the variables without it.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

__all__ = [
    "REPO",
    "START_MARK",
    "find_claude",
    "read_starts",
    "visible_copy",
    "wrapper_path",
    "write_wrapper",
]

REPO = Path(__file__).resolve().parents[2]
PINNED_CLAUDE = REPO / "node_modules" / ".bin" / "claude"
START_MARK = "[claude-wrapper-start] "


def visible_copy(claude: Path, root: Path) -> Path:
    """The program under test as `<root>/node_modules/claude`: a hard link to its file (a copy
    where the file lies on another filesystem). The host runs the whole agent confined and keeps
    visible only what its program runs from — for a program in a `node_modules`, that whole
    folder — so the wrappers written beside it (`wrapper_path`) can run it wherever the real
    one lies: a checkout under /tmp or a home, a Claude Code installed in ~/.local, all of which
    the confinement hides."""
    target = root / "node_modules" / "claude"
    target.parent.mkdir(parents=True, exist_ok=True)
    real = claude.resolve()
    try:
        os.link(real, target)
    except OSError:
        shutil.copy2(real, target)
    return target


def wrapper_path(visible: Path, name: str) -> Path:
    """Where a test's wrapper goes: beside the visible copy, in the same `node_modules`."""
    folder = visible.parent / "wrappers" / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder / "claude"


def find_claude() -> Path | None:
    """The claude under test: `$CONCORDE_CLAUDE` of the test process when set (an absolute
    path: run the end-to-end tests against any installed Claude Code, README "Development"),
    else the pinned one ./scripts/setup installs (npm ci); None when it is missing."""
    given = os.environ.get("CONCORDE_CLAUDE")
    claude = Path(given) if given else PINNED_CLAUDE
    return claude if claude.is_absolute() and os.access(claude, os.X_OK) else None


SETTINGS_EDITOR = """\
import json, os, sys
drops, argv = json.loads(sys.argv[1]), sys.argv[2:]
if "--settings" not in argv:  # the host asking `--version`
    os.execv(argv[0], argv)
at = argv.index("--settings") + 1
with open(argv[at], encoding="utf-8") as given:
    settings = json.load(given)
for dotted in drops:
    *parents, last = dotted.split(".")
    node = settings
    for key in parents:
        node = node[key]
    del node[last]
argv[at] = os.path.join(os.environ["TMPDIR"], "settings-without-" + "-".join(drops) + ".json")
with open(argv[at], "w", encoding="utf-8") as variant:
    json.dump(settings, variant)
os.execv(argv[0], argv)
"""
"""Runs claude (argv[2]) with the settings file's copy without the dotted keys given as JSON."""


def write_wrapper(
    path: Path,
    claude: Path,
    base_url: str | None,
    extra_env: dict[str, str] | None = None,
    settings_drop: tuple[str, ...] = (),
    messaging_inbox: bool = False,
) -> Path:
    """Write the wrapper script at `path` (mode 0755) and return it. `base_url` None: the
    wrapper sets none, so the round's environment alone says where requests go."""
    env = {
        **({"ANTHROPIC_BASE_URL": base_url} if base_url is not None else {}),
        "CLAUDE_CODE_MAX_RETRIES": "0",
        **(extra_env or {}),
    }
    exports = "\n".join(f"export {name}={shlex.quote(value)}" for name, value in env.items())
    python = shlex.quote(sys.executable)
    logger = (
        "import json, os, sys; "
        f"sys.stderr.write({START_MARK!r} + json.dumps({{'argv': sys.argv[1:], "
        "'env': sorted(os.environ)}) + '\\n')"
    )
    program = shlex.quote(str(claude))
    args = '"$@"'
    if messaging_inbox:  # a round (not the host asking `--version`): its TMPDIR is the run's
        exports += (
            '\ncase " $* " in *" --settings "*)\n'
            '  mkdir -m 700 -p "$TMPDIR/inbox"\n'
            '  set -- "$@" --messaging-socket-path "$TMPDIR/inbox/s.sock";;\nesac'
        )
    run = (
        f"exec {program} {args}"
        if not settings_drop
        else f"exec {python} -c {shlex.quote(SETTINGS_EDITOR)} "
        f"{shlex.quote(json.dumps(list(settings_drop)))} {program} {args}"
    )
    path.write_text(f'#!/bin/sh\n{python} -c {shlex.quote(logger)} "$0" "$@"\n{exports}\n{run}\n')
    path.chmod(0o755)
    return path


def read_starts(run_dir: Path) -> list[dict[str, Any]]:
    """Every start the wrapper logged, in round order, from the rounds' stderr.log files."""
    logs = sorted((run_dir / "rounds").glob("*/stderr.log"), key=lambda p: int(p.parent.name))
    return [
        json.loads(line.removeprefix(START_MARK))
        for log in logs
        for line in log.read_text(errors="replace").splitlines()
        if line.startswith(START_MARK)
    ]
