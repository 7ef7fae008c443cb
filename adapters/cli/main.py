"""The console script `concorde-workers`: parse, wire, dispatch.

The host environment is read here, once, and handed to the command through its `Wiring`
(wiring.py), which imports the composition root only when the command needs a container. A
usage error is a refusal (status 2); Ctrl-C outside a run's own handling ends with 130; an
unexpected fault prints one line naming it (and how to report it) with status 3, never a
traceback.

Start-up is kept to the interpreter's own and argparse's: this module imports only the exit
statuses, the grammar (parser.py) when `main` parses, and a command's module (and with it
pydantic, jsonschema, the adapters) when that command runs (`COMMANDS`), so `--help` and a usage
error load none of them, and not `typing` either (benchmarks/cli_startup.py;
tests/integration/test_cli_startup.py guards it).
"""

from __future__ import annotations

import importlib
import os
import sys

from concorde_workers.adapters.cli.status import ExitStatus

TYPE_CHECKING = False  # typing's own costs its import (issue 32 §2)
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence
    from typing import TextIO

    from concorde_workers.adapters.cli.parser import UsageError
    from concorde_workers.adapters.cli.wiring import Wiring
    from concorde_workers.container import Container

    Command = Callable[[argparse.Namespace, TextIO, TextIO, Wiring], ExitStatus]

COMMANDS: dict[str, tuple[str, str]] = {
    "plan": ("plan", "run_plan"),
    "run": ("commands", "run_run"),
    "show": ("commands", "run_show"),
    "sweep": ("commands", "run_sweep"),
    "verify": ("verify", "run_verify"),
    "demo": ("demo", "run_demo"),
    "doctor": ("doctor", "run_doctor"),
    "install-agents": ("doctor", "run_install_agents"),
    "init": ("init", "run_init"),
}
"""Each command: its module in concorde_workers.adapters.cli.subcommands and its function there,
imported when the command runs, so that no command pays for another's imports."""


PYDANTIC_PLUGIN_LOADER = "pydantic.plugin._loader"


def without_pydantic_plugins() -> None:
    """This process builds its models without pydantic's plugins (docs/decisions.md "No pydantic
    plugins in the command line"): pydantic looks its plugins up in every installed package's
    metadata when it builds the first model, importing importlib.metadata and email to do it, a
    cost every command paid for nothing (issue 32 §2). Its loader is given as one that finds
    none, before pydantic imports its own; the environment variable that says the same
    (PYDANTIC_DISABLE_PLUGINS) is the user's, and still imports the lookup. Not done where the
    loader was already imported: that process's plugins stay as they are."""
    if PYDANTIC_PLUGIN_LOADER in sys.modules:
        return
    loader = type(sys)(PYDANTIC_PLUGIN_LOADER)
    loader.get_plugins = tuple  # type: ignore[attr-defined]  # no plugins: an empty iterable
    sys.modules[PYDANTIC_PLUGIN_LOADER] = loader


def command_of(name: str) -> Command | None:
    """The function that runs the command `name`, its module imported now; None for no command."""
    found = COMMANDS.get(name)
    if found is None:
        return None
    module, function = found
    without_pydantic_plugins()
    command: Command = getattr(
        importlib.import_module(f"concorde_workers.adapters.cli.subcommands.{module}"), function
    )
    return command


def _usage(usage: UsageError, argv: Sequence[str] | None, out: TextIO, err: TextIO) -> int:
    from concorde_workers.adapters.cli.flags import usage_refusal
    from concorde_workers.adapters.cli.output import print_refusal

    given = sys.argv[1:] if argv is None else list(argv)
    print_refusal(usage_refusal(usage), "--json" in given, out, err)
    return int(ExitStatus.REFUSED)


def main(
    argv: Sequence[str] | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    container: Container | None = None,
) -> int:
    """The console script `concorde-workers`. `container` replaces the production wiring (the
    tests give one with fakes); `plan --example` always wires its own."""
    from concorde_workers.adapters.cli.parser import (
        UsageError,
        parser,
        unused_flags,
        version_text,
    )

    out = out or sys.stdout
    err = err or sys.stderr
    try:
        args = parser(os.environ.get("COLUMNS")).parse_args(argv)
        unused = unused_flags(args)
        if unused is not None:
            raise UsageError(
                "concorde-workers" + (f" {args.command}" if args.command else ""), unused
            )
    except UsageError as usage:
        return _usage(usage, argv, out, err)
    if args.version:
        out.write(version_text(args.version_json))
        return int(ExitStatus.OK)
    try:
        command = command_of(args.command)
        if command is None:
            return int(ExitStatus.REFUSED)
        from concorde_workers.adapters.cli.wiring import Wiring

        return int(command(args, out, err, Wiring(environ=dict(os.environ), given=container)))
    except KeyboardInterrupt:
        err.write("concorde-workers: interrupted\n")
        return int(ExitStatus.INTERRUPTED)
    except Exception as fault:  # a defect of ours: say so in one line, never a traceback
        from concorde_workers.domain.ground.text import terminal_lines

        err.write(
            terminal_lines(
                [
                    f"concorde-workers: internal error ({type(fault).__name__}: {fault}); this is "
                    "a "
                    "defect of concorde-workers: report it with the command line"
                ]
            )
        )
        return int(ExitStatus.INTERNAL)


if __name__ == "__main__":  # `python -m concorde_workers.adapters.cli.main`
    sys.exit(main())
