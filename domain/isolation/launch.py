"""What every round's command line shares, whatever the backend (seed 000 "Launch", seed 001
"Launch"); each program's own command line is its adapter package's (adapters/claude/launch.py,
adapters/pi/launch.py).

Every round runs with the runtime directory's work/ as working directory (never the worktree) and
its prompt on standard input: the brief, the round validation's repair text, or the retry prompt.
The placeholders here (`NAMESPACE_REPORT_FD`, `EXIT_STATUS_FD`, `LIFELINE_FD`) are replaced by
the process runner; `GUARD_SCRIPT` is the first program of one that asks for a lifeline,
`LIFELINE_SCRIPT` the first program inside a namespace.

Numbers are formatted stably: integers as integers, other numbers in plain decimal notation
without trailing zeros (0.5 -> "0.5", 2.0 -> "2", 1e-05 -> "0.00001").
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.ground.layout import RuntimeLayout

NAMESPACE_REPORT_FD = "{namespace-report-fd}"
"""An argument the process runner replaces with the number of a pipe's write end it passes to
the program, on which the program reports, as bubblewrap's `--info-fd` does (JSON with
`child-pid` and `pid-namespace`), the process whose exit ends its PID namespace: the round ends
only once that process has exited (ports/processes/process.py "How a round ends")."""

EXIT_STATUS_FD = "{exit-status-fd}"
"""An argument the process runner replaces with the number of a pipe's write end on which the
program reports the exact wait status of the process it runs for it (one decimal line, as
waitpid(2) gives it): `wait()` then returns that status rather than the program's own, which
bubblewrap collapses (a death by signal n becomes the exit status 128 + n)."""


LIFELINE_FD = "{lifeline-fd}"
"""An argument the process runner replaces with the number of one end of a socket pair it
passes to the program, whose other end only the host holds (close-on-exec, never inherited):
the passed end reaches end of file when the host is gone, however it died. A socket, not a pipe:
a pipe's read end opened again through /proc/self/fd for writing is a write end, which a worker
could keep, and the end of file would never come; a socket cannot be opened that way, and
whoever holds the passed end holds nothing of the host's. A program that asks for a lifeline runs
behind the guard (`GUARD_SCRIPT`); inside its namespace it may watch the lifeline too
(`LIFELINE_SCRIPT`)."""

GUARD_SCRIPT = (
    'fd=$1; shift; case $fd in ""|*[!0-9]*) exit 125;; esac; '
    "( trap '' HUP INT QUIT TERM; exec </dev/null >/dev/null 2>&1; "
    'read -r _ <&"$fd"; kill -s KILL 0 ) & '
    'exec /usr/bin/env -u SHLVL "$@"'
)
"""The first program of every program that asks for a lifeline, put in front of it by the process
runner (`guarded`): a watcher in the background, in the program's process group but outside every
namespace the program makes, reads the lifeline, and at its end of file sends SIGKILL to that
group (its own: the group exists while the watcher is in it, so the id is never another's); the
foreground becomes the program. The group holds the whole exec chain (a cgroup's join, a check's
layer, bwrap's launcher) and bwrap's first process, which is the namespace's init: killing the
init ends the namespace, whatever bwrap did so far. bwrap's launcher dies writing its
`--info-fd` report to a host that is gone (SIGPIPE), before it has released the namespace's first
process, which then waits for it for good, before anything inside runs (no lifeline inside can
help it); and bwrap sets its death signals late (`LIFELINE_SCRIPT`). The guard matters when the
host dies before bwrap's death signals are all in place, that is before the worker runs; even
then the worker cannot reach it by pid (it is in no PID namespace of the worker's), and a
check's command runs in a session of its own (domain/isolation/check_sandbox.py). A round's
agent stays in the group (a timeout's SIGTERM reaches it there), so it could signal the whole
group, the guard with it; by then bwrap's death signals end the namespace with the host. SIGTERM
is the program's: the watcher ignores it."""

LIFELINE_SCRIPT = (
    'fd=$1; shift; case $fd in ""|*[!0-9]*) exit 125;; esac; '
    '( exec </dev/null >/dev/null 2>&1; read -r _ <&"$fd"; kill -s KILL -- -1 ) & '
    'exec /usr/bin/env -u SHLVL "$@"'
)
"""The first program inside a PID namespace of bubblewrap's (a check's, a round's): a watcher
in the background reads the lifeline, and at its end of file kills every process of the
namespace but its init, which then exits with no child left, ending the namespace; the
foreground becomes the command (which keeps the passed end: an end of file is all the socket
will ever carry). Both scripts run in bash (`LIFELINE_SHELL`). bwrap's `--die-with-parent`
alone loses a race: its init sets its parent-death signal only after it forked the command, so a
host killed in between (measured under load: 1 run in 9 of tests/integration/
test_check_host_killed.py) leaves an init with no such signal and the namespace alive for good.
A lifeline read after the host's end closed ends at once: there is no window. The worker can
kill this watcher (it runs as the worker's uid in the worker's namespace): the guard outside
(`GUARD_SCRIPT`) is what it cannot reach; this one ends a namespace whose init left the
program's process group (bwrap's `--new-session`)."""

DEFAULT_SHELL = "/bin/sh"

LIFELINE_SHELL = "/bin/bash"
"""The shell of the lifeline's watchers (`GUARD_SCRIPT`, `LIFELINE_SCRIPT`): bash, since the
descriptor the runner passes is 10 or more in any host with a few files open, and dash
(`/bin/sh` on Debian) cannot redirect from a descriptor above 9 by number (`<&"$fd"` is then a
syntax error, and the watcher is gone before it watched). bash exports SHLVL, even after an
unset (its `exec` sets it again), so each script execs the program through `env -u SHLVL`: the
program's environment stays exactly what the host built."""


def lifeline(shell: str = LIFELINE_SHELL) -> list[str]:
    """The command line in front of a namespace's command: `shell` by absolute path."""
    return [shell, "-c", LIFELINE_SCRIPT, "concorde-lifeline", LIFELINE_FD]


def guarded(argv: Sequence[str]) -> tuple[str, ...]:
    """`argv` behind the guard (`GUARD_SCRIPT`), run by the shell of the lifeline in `argv` (the
    one the plan resolved), else by `LIFELINE_SHELL`."""
    shell = LIFELINE_SHELL
    for i, arg in enumerate(argv):
        if arg == LIFELINE_FD and i >= 4 and list(argv[i - 4 : i + 1]) == lifeline(argv[i - 4]):
            shell = argv[i - 4]
            break
    return (shell, "-c", GUARD_SCRIPT, "concorde-guard", LIFELINE_FD, *argv)


HELPER_SCRIPT = 'shift; exec /usr/bin/env -u SHLVL "$@"'
"""The shell line in front of a host helper that reads no lifeline itself (`host_lifeline`): it
drops the lifeline's number and becomes the helper, which keeps the passed end (it carries
nothing but its end of file)."""


def host_lifeline() -> tuple[str, ...]:
    """The prefix (the process runner's `prefix`, which execs the command after it) of a program
    the host starts outside every namespace that writes into the runtime directory (the compiled
    cache): it asks for a lifeline, so the program runs behind the guard (`GUARD_SCRIPT`), which
    kills its process group once the host is gone, however it died; nothing the host started
    writes on after a sweep began."""
    return (LIFELINE_SHELL, "-c", HELPER_SCRIPT, "concorde-helper", LIFELINE_FD)


class LaunchCommand(BaseModel):
    """One round's command: its argv (program first), working directory, the tool set --tools
    names (one name each, in order), and the ways the command departs from the spec's text for
    the installed program (empty when it follows the spec literally)."""

    model_config = ConfigDict(frozen=True)

    argv: tuple[str, ...]
    cwd: str
    tools: tuple[str, ...]
    adaptations: tuple[str, ...] = ()


def option_value(flag: str, value: str) -> str:
    """A value that cannot be mistaken for an option or be empty."""
    if not value or value.startswith("-") or value != value.strip() or "\x00" in value:
        raise ValueError(f"invalid value for {flag}: {value!r}")
    return value


def tool_set(tools: Sequence[str]) -> tuple[str, ...]:
    """The tool set as a tuple of names, each one --tools can carry."""
    if isinstance(tools, str):
        raise ValueError(f"a tool set is a sequence of names, not one string: {tools!r}")
    names = tuple(tools)
    if not names or any(not n or n != n.strip() or "," in n or n.startswith("-") for n in names):
        raise ValueError(f"invalid tool set: {tools!r}")
    return names


def tools_argument(tools: Sequence[str]) -> str:
    """The comma-separated tool set as passed to --tools (and as the run record names it)."""
    return ",".join(tool_set(tools))


def schema_text(schema: object) -> str:
    """The worker result schema as compact JSON text, for --json-schema and result.schema.json."""
    if not isinstance(schema, dict):
        raise ValueError("the worker result schema must be a JSON object")
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False)


def as_runtime(runtime: RuntimeLayout | str) -> RuntimeLayout:
    """The layout of a runtime directory given as one or by its root."""
    return runtime if isinstance(runtime, RuntimeLayout) else RuntimeLayout(root=runtime)
