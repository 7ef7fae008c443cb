"""`concorde-workers demo`: one real pi worker run under a grant, end to end, offline.

It creates a throwaway repository with a `.claude/worktrees/demo` worktree, starts a scripted
OpenAI-compatible model server on 127.0.0.1 and writes a pi configuration that reaches it (a
temporary PI_CODING_AGENT_DIR with models.json and auth.json, as a user's own local model proxy
would be configured; the user's own pi configuration is never read). It then runs the real pi
through `WorkerHost.run` - the same host, permission extension and sandbox as any run - with a
scripted worker that writes an allowed file, is refused on a read-only one, fails to reach the
network from bash, proposes a deletion and returns its result. The live progress line goes to
stderr; the account (rounds, audit, what the grant refused, deletions, where the trace is) to
stdout. Exit 0 when the run ended ok and every step did what the demo shows.
"""

from __future__ import annotations

import argparse
import os
import posixpath
import shutil
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TextIO

from concorde_workers.application.cancellation import Cancellation
from concorde_workers.application.display import ProgressWatcher, account, terminal_lines
from concorde_workers.domain.errors import Reason, Refusal
from concorde_workers.domain.records import RunRecord
from concorde_workers.domain.request import Limits, RunRequest
from concorde_workers.domain.text import json_document
from concorde_workers.ports.filesystem import FileSystem

if TYPE_CHECKING:
    from concorde_workers.application.container import Container

__all__ = ["DEMO_LIMITS", "DemoWorld", "add_demo_command", "checks", "folder_refusal",
           "run_demo"]

DEMO_LIMITS = Limits(timeout_seconds=120, max_turns=20, max_budget_usd=1.0, rounds=0,
                     retries=1, retry_delay_seconds=1)


class DemoWorld(Protocol):
    """What the demo needs of its world (adapters.example_repository.DemoWorld)."""

    folder: str
    worktree: str
    model: str
    grant: dict[str, Any]
    instructions: str

    @property
    def environ_additions(self) -> dict[str, str]: ...

    @property
    def requests_served(self) -> int: ...

    def tool_results(self) -> dict[str, str]: ...

    def close(self) -> None: ...


def add_demo_command(commands: Any) -> None:
    """Register `demo` on the CLI's subparsers."""
    demo = commands.add_parser(
        "demo", help="run a real pi worker offline in a throwaway repository",
        description="Create a throwaway repository, start a scripted model server on 127.0.0.1 "
                    "and run a real pi worker under a grant through the host: an allowed write, "
                    "a refused read-only write, a failed network attempt, a proposed deletion. "
                    "Exit 0 when everything went as shown.")
    demo.add_argument("--folder", metavar="DIR",
                      help="create the throwaway repository below DIR (default: the system "
                           "temporary directory)")
    demo.add_argument("--json", action="store_true", help="print the run record as JSON")


def folder_refusal(fs: FileSystem, folder: str | None, cwd: str) -> Refusal | None:
    """`--folder` must name an existing directory (the demo never creates it)."""
    if folder is None:
        return None
    path = posixpath.join(cwd, folder)
    if fs.is_dir(path):
        return None
    what = "is not a directory" if fs.lexists(path) else "does not exist"
    return Refusal(code="request_invalid", reason=Reason.INPUT, file=folder,
                   message=f"--folder {folder} {what}; give an existing directory to create the "
                           "throwaway repository in, or leave --folder out (the system "
                           "temporary directory)")


def demo_environ(host: Mapping[str, str], world: DemoWorld) -> dict[str, str]:
    """The host environment of the demo run: the caller's PATH, LANG and HOME, the demo's pi
    configuration directory and the pinned agent programs. No proxy passes (the scripted model
    is on 127.0.0.1, and a proxy elsewhere would carry the calls off this machine) and no API
    key is needed (the scripted model's key is in the demo's auth.json)."""
    keep = ("PATH", "LANG", "HOME", "CONCORDE_PI", "CONCORDE_SANDBOX_RUNTIME")
    # The caller's own CONCORDE_PI / CONCORDE_SANDBOX_RUNTIME win over the checkout's; the
    # caller's PI_CODING_AGENT_DIR is never kept.
    return {**world.environ_additions, **{k: host[k] for k in keep if host.get(k)}}


def checks(record: RunRecord, results: Mapping[str, str]) -> list[tuple[str, bool, str]]:
    """What the demo shows, each as (what, held, evidence)."""
    changed = record.rounds[-1].audit.changed if record.rounds and record.rounds[-1].audit else ()
    verdict = record.rounds[-1].audit.verdict if record.rounds and record.rounds[-1].audit \
        else "none"
    refused = results.get("demo_readonly", "")
    network = results.get("demo_network", "")
    return [
        ("the run ended ok", record.status == "ok",
         f"status {record.status}" + (f" ({record.error.code})" if record.error else "")),
        ("the allowed write landed in the worktree", "src/shop/discount.py" in changed,
         f"audit {verdict}, changed: {', '.join(changed) or 'nothing'}"),
        ("the read-only write was refused by the permission extension",
         "legacy.py" in refused and "src/shop/legacy.py" not in changed,
         refused.strip().splitlines()[0] if refused.strip() else "no tool result"),
        ("bash could not reach the network", "curl_exit=0" not in network and bool(network),
         " | ".join(line for line in network.strip().splitlines()[-3:]) or "no tool result"),
        ("the host performed the proposed deletion",
         record.deleted == ("src/shop/obsolete.py",),
         f"deleted: {', '.join(record.deleted) or 'nothing'}; refused: "
         f"{', '.join(record.deletions_refused) or 'nothing'}"),
        ("the worker's result was kept", record.worker_result is not None,
         str((record.worker_result or {}).get("summary", "none"))),
    ]


def run_demo(args: argparse.Namespace, out: TextIO, err: TextIO,
             given: Container | None = None,
             world_factory: Callable[[str | None], DemoWorld] | None = None,
             environ: Mapping[str, str] | None = None) -> int:
    """The `demo` command; returns the exit status (0 when every check held, 1 otherwise)."""
    from concorde_workers.application.cli import print_refusal, run_watched
    from concorde_workers.application.container import demo_world, production

    as_json = bool(getattr(args, "json", False))
    folder = getattr(args, "folder", None)
    checked = given if given is not None else production(
        dict(os.environ if environ is None else environ))
    refusal = folder_refusal(checked.filesystem(), folder, checked.cwd())
    if refusal is not None:
        print_refusal(refusal, as_json, out, err)
        return 2
    try:
        world = (world_factory or demo_world)(folder)
    except OSError as error:  # an unwritable or full folder: the demo cannot start there
        print_refusal(Refusal(
            code="request_invalid", reason=Reason.ENVIRONMENT, file=folder,
            message=f"the throwaway repository could not be created in "
                    f"{folder or 'the system temporary directory'}: {error}; give --folder a "
                    "writable directory"), as_json, out, err)
        return 2
    try:
        host_env = demo_environ(os.environ if environ is None else environ, world)
        missing = [name for name in ("CONCORDE_PI", "CONCORDE_SANDBOX_RUNTIME")
                   if name not in host_env]
        if missing:
            print_refusal(Refusal(
                code="pi_runtime_missing", reason=Reason.ENVIRONMENT,
                message=f"this checkout has no pinned pi or sandbox-runtime "
                        f"({', '.join(missing)} unset): run ./scripts/setup"), as_json, out, err)
            return 2
        container = given if given is not None else production(host_env)
        parent = f"{world.folder}/trace"
        container.filesystem().makedirs(parent, 0o755)
        request = RunRequest.model_validate({
            "backend": "pi", "worktree": world.worktree, "parent": parent,
            "task_type": world.grant["task_type"], "grant": world.grant,
            "instructions": world.instructions, "limits": DEMO_LIMITS.model_dump(),
            "local_model": world.model})
        # Under --json stdout holds one JSON document, the run record; what the demo says
        # around it goes to stderr.
        said = err if as_json else out
        said.write(terminal_lines([f"demo repository: {world.folder}",
                                  f"worktree:        {world.worktree}",
                                  f"model:           {world.model} (scripted, on 127.0.0.1)",
                                  ""]))
        said.flush()
        watcher = ProgressWatcher(
            container.filesystem(), parent, err, live=err.isatty(),
            now=container.clock().now_utc, width=shutil.get_terminal_size().columns,
            host_pid=container.host_pid(), prefix="demo: ")
        record = run_watched(container, request, Cancellation(), watcher, 0.2)
        results = world.tool_results()
    finally:
        world.close()
    if as_json:
        out.write(json_document(record.model_dump(mode="json")) + "\n")
    else:
        out.write(account(record).rstrip("\n") + "\n\n")
    held = checks(record, results)
    # The evidence quotes what the worker's tools answered: escaped like every human output.
    (err if as_json else out).write(terminal_lines([
        "What the demo shows:",
        *(f"  [{'ok' if ok else 'FAILED'}] {what}: {evidence}" for what, ok, evidence in held),
        "", f"model requests served: {world.requests_served}",
        f"trace: {record.run_directory} (transcript.jsonl, rounds/*/stderr.log)"]))
    return 0 if all(ok for _, ok, _ in held) else 1


def main() -> int:  # pragma: no cover - `python -m concorde_workers.application.demo`
    parser = argparse.ArgumentParser(prog="concorde-workers demo")
    add_demo_command(parser.add_subparsers(dest="command"))
    return run_demo(parser.parse_args(["demo", *sys.argv[1:]]), sys.stdout, sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
