"""`concorde-workers demo`: one real pi worker run under a grant, end to end, offline; with
`--backend codex` one real Codex CLI worker run.

It creates a throwaway repository with a `.claude/worktrees/demo` worktree, starts a scripted
model server on 127.0.0.1 and writes the backend's configuration that reaches it, as a user's
own local model endpoint would be configured (the user's own is never read): for pi an
OpenAI-compatible server and a temporary PI_CODING_AGENT_DIR with models.json and auth.json; for
the Codex CLI a Responses API server, a machine `codex.json` ($CONCORDE_CODEX_CONFIG: its base
URL, its key variable's name, the prices of a token) and that variable. It then runs the real,
pinned program through `WorkerHost.run` - the same host, confinement and sandbox as any run -
with a scripted worker that writes an allowed file, is refused on a read-only one, fails to
reach the network from its shell, proposes a deletion and returns its result. The live progress
line goes to stderr; the account (rounds, audit, what the grant refused, deletions, where the
trace is) to stdout. Exit 0 when the run ended ok and every step did what the demo shows.
"""

from __future__ import annotations

import argparse
import posixpath
import shutil
from collections.abc import Mapping
from typing import TYPE_CHECKING, TextIO

from concorde_workers.adapters.cli.output import print_refusal
from concorde_workers.adapters.cli.status import ExitStatus
from concorde_workers.adapters.cli.views.display import account
from concorde_workers.adapters.cli.views.progress import ProgressWatcher
from concorde_workers.adapters.cli.views.report import report_html
from concorde_workers.adapters.cli.views.watch import run_watched
from concorde_workers.adapters.cli.wiring import DemoWorld, Wiring
from concorde_workers.application.evidence.report import gather
from concorde_workers.application.runtime.cancellation import Cancellation
from concorde_workers.domain.configuration.discovery import CHECKOUT, locate, looked_at
from concorde_workers.domain.configuration.profile import Profiles
from concorde_workers.domain.configuration.program_versions import INSTALL_AGENTS, pinned
from concorde_workers.domain.configuration.request import Limits, RunRequest
from concorde_workers.domain.evidence.records import RunRecord
from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.ground.errors import Reason, Refusal
from concorde_workers.domain.ground.text import json_document, terminal_lines
from concorde_workers.ports.machine.filesystem import FileKeeping, FileSystemError, PathFacts

if TYPE_CHECKING:
    from concorde_workers.container import Container

__all__ = ["DEMO_LIMITS", "checks", "demo_environ", "folder_refusal", "run_demo"]

DEMO_LIMITS = Limits(
    timeout_seconds=120,
    max_turns=20,
    max_budget_usd=1.0,
    rounds=0,
    retries=1,
    retry_delay_seconds=1,
)


def folder_refusal(fs: PathFacts, folder: str | None, cwd: str) -> Refusal | None:
    """`--folder` must name an existing directory (the demo never creates it)."""
    if folder is None:
        return None
    path = posixpath.join(cwd, folder)
    if fs.is_dir(path):
        return None
    what = "is not a directory" if fs.lexists(path) else "does not exist"
    return Refusal(
        code=Code.REQUEST_INVALID,
        reason=Reason.INPUT,
        file=folder,
        message=f"--folder {folder} {what}; give an existing directory to create the "
        "throwaway repository in, or leave --folder out (the system "
        "temporary directory)",
    )


def demo_environ(host: Mapping[str, str], world: DemoWorld) -> dict[str, str]:
    """The host environment of the demo run: the caller's PATH, LANG, HOME and XDG_DATA_HOME
    (where `install-agents` put the programs), the variables naming the backend's programs
    (CONCORDE_PI and CONCORDE_SANDBOX_RUNTIME; CONCORDE_CODEX), and the demo's configuration of
    its backend (pi's configuration directory; the Codex CLI's codex.json and its key
    variable). The programs are found as for any run (domain/configuration/discovery.py). No
    proxy passes (the scripted model is on 127.0.0.1, and a proxy elsewhere would carry the
    calls off this machine) and no key of the user's is needed (the scripted model's is the
    demo's own)."""
    from concorde_workers.container import PROFILES

    programs = [spec.variable for spec in PROFILES[world.backend].programs]
    keep = ("PATH", "LANG", "HOME", "XDG_DATA_HOME", *programs)
    # The caller's PI_CODING_AGENT_DIR, CONCORDE_CODEX_CONFIG and keys are never kept.
    return {**world.environ_additions, **{k: host[k] for k in keep if host.get(k)}}


def programs_refusal(
    container: Container, environ: Mapping[str, str], backend: str
) -> Refusal | None:
    """The demo's backend's runtime_missing code (pi_runtime_missing; the Codex CLI's
    launch_failed) when one of its programs (pi, sandbox-runtime; codex) is found nowhere,
    naming where it looked and the repair this installation has: install-agents, or
    ./scripts/setup in a checkout."""
    profile = container.profiles()[backend]
    facts, fs = container.host(), container.filesystem()
    missing = [
        spec for spec in profile.programs if locate(spec, environ, facts.installations, fs) is None
    ]
    if not missing:
        return None
    looked = "; ".join(
        f"{spec.program}: {', '.join(looked_at(spec, environ, facts.installations))}"
        for spec in missing
    )
    checkout = any(i.kind == CHECKOUT for i in facts.installations)
    repair = (
        f"run ./scripts/setup in this checkout (or {INSTALL_AGENTS})"
        if checkout
        else f"run {INSTALL_AGENTS}"
    )
    pins = ", ".join(pinned(spec) for spec in missing)
    names = " and ".join(spec.program for spec in profile.programs)
    return Refusal(
        code=profile.runtime_missing_code,
        reason=Reason.ENVIRONMENT,
        message=f"the demo runs the pinned {names}, and "
        f"{' and '.join(s.program for s in missing)} "
        f"{'is' if len(missing) == 1 else 'are'} "
        f"found nowhere (looked at {looked}): "
        f"{repair}, which installs {pins}",
    )


def checks(
    record: RunRecord,
    results: Mapping[str, str],
    refused_by: str = "the permission extension",
    shell: str = "bash",
) -> list[tuple[str, bool, str]]:
    """What the demo shows, each as (what, held, evidence); `refused_by` and `shell` are the
    demo world's words for its backend (what refuses a read-only write, its shell tool)."""
    changed = record.rounds[-1].audit.changed if record.rounds and record.rounds[-1].audit else ()
    verdict = (
        record.rounds[-1].audit.verdict if record.rounds and record.rounds[-1].audit else "none"
    )
    refused = results.get("demo_readonly", "")
    network = results.get("demo_network", "")
    return [
        (
            "the run ended ok",
            record.status == "ok",
            f"status {record.status}" + (f" ({record.error.code})" if record.error else ""),
        ),
        (
            "the allowed write landed in the worktree",
            "src/shop/discount.py" in changed,
            f"audit {verdict}, changed: {', '.join(changed) or 'nothing'}",
        ),
        (
            f"the read-only write was refused by {refused_by}",
            "legacy.py" in refused and "src/shop/legacy.py" not in changed,
            _naming(refused, "legacy.py"),
        ),
        (
            f"{shell} could not reach the network",
            "curl_exit=0" not in network and bool(network),
            " | ".join(line for line in network.strip().splitlines()[-3:]) or "no tool result",
        ),
        (
            "the host performed the proposed deletion",
            record.deleted == ("src/shop/obsolete.py",),
            f"deleted: {', '.join(record.deleted) or 'nothing'}; refused: "
            f"{', '.join(record.deletions_refused) or 'nothing'}",
        ),
        (
            "the worker's result was kept",
            record.worker_result is not None,
            str((record.worker_result or {}).get("summary", "none")),
        ),
    ]


def _naming(text: str, name: str) -> str:
    """The first line of a tool's answer that names `name` (pi's refusal says it first; the
    Codex CLI's after its exit code), else its first line."""
    lines = text.strip().splitlines()
    return next((line for line in lines if name in line), lines[0] if lines else "no tool result")


def run_demo(args: argparse.Namespace, out: TextIO, err: TextIO, wiring: Wiring) -> ExitStatus:
    """The `demo` command: 0 when every check held, 1 otherwise, 2 when it cannot start."""
    as_json = bool(args.json)
    folder: str | None = args.folder
    checked = wiring.container()
    refusal = folder_refusal(checked.filesystem(), folder, checked.cwd())
    if refusal is not None:
        print_refusal(refusal, as_json, out, err)
        return ExitStatus.REFUSED
    try:
        world = wiring.demo_world(folder, args.backend)
    except OSError as error:  # an unwritable or full folder: the demo cannot start there
        world = Refusal(
            code=Code.REQUEST_INVALID,
            reason=Reason.ENVIRONMENT,
            file=folder,
            message=f"the throwaway repository could not be created in "
            f"{folder or 'the system temporary directory'}: {error}; give --folder a "
            "writable directory",
        )
    if isinstance(world, Refusal):
        print_refusal(world, as_json, out, err)
        return ExitStatus.REFUSED
    said = err if as_json else out
    try:
        host_env = demo_environ(wiring.environ, world)
        container = wiring.container(host_env)
        refusal = programs_refusal(container, host_env, world.backend)
        if refusal is not None:
            print_refusal(refusal, as_json, out, err)
            return ExitStatus.REFUSED
        record, results = _run(world, container, said, err)
    finally:
        world.close()
        _discard(world, bool(args.keep), said)
    report = _write_report(container.filesystem(), record, container.profiles())
    return _report(record, results, world, as_json, out, err, report)


def _write_report(fs: FileKeeping, record: RunRecord, profiles: Profiles) -> str:
    """The run's HTML report beside its trace (issue 21): where it is, or why there is none."""
    page = posixpath.join(posixpath.dirname(posixpath.dirname(record.run_directory)), "report.html")
    try:
        fs.write_atomic(page, report_html(gather(fs, record.run_directory, profiles)))
    except FileSystemError as error:
        return f"none ({error.os_error_text})"
    return page


def _discard(world: DemoWorld, keep: bool, said: TextIO) -> None:
    """The throwaway repository goes unless --keep (docs/decisions.md "The throwaway
    repositories"); the trace lies beside it and stays."""
    if keep:
        said.write(terminal_lines([f"kept (--keep): {world.folder}"]))
        return
    try:
        world.discard()
        said.write(
            terminal_lines(
                [f"removed the demo repository {world.folder} (--keep keeps it); the trace stays"]
            )
        )
    except OSError as error:
        said.write(
            terminal_lines(
                [
                    f"the demo repository {world.folder} could not be removed "
                    f"({error}); remove it by hand"
                ]
            )
        )


def _run(
    world: DemoWorld, container: Container, said: TextIO, err: TextIO
) -> tuple[RunRecord, dict[str, str]]:
    """The scripted worker's run through the host, its progress on `err`; what each tool call
    answered. Under --json stdout holds one JSON document, the run record: what the demo says
    around it (`said`) goes to stderr."""
    parent = world.trace_parent
    request = RunRequest.model_validate(
        {
            "backend": world.backend,
            "worktree": world.worktree,
            "parent": parent,
            "task_type": world.grant["task_type"],
            "grant": world.grant,
            "instructions": world.instructions,
            "limits": DEMO_LIMITS.model_dump(),
            "local_model": world.model,
        }
    )
    said.write(
        terminal_lines(
            [
                f"demo repository: {world.folder}",
                f"worktree:        {world.worktree}",
                f"backend:         {world.backend} (the real program, found as for any run)",
                f"model:           {world.model} (scripted, on 127.0.0.1)",
                "",
            ]
        )
    )
    said.flush()
    watcher = ProgressWatcher(
        container.filesystem(),
        parent,
        err,
        live=err.isatty(),
        now=container.clock().now_utc,
        width=shutil.get_terminal_size().columns,
        host_pid=container.host_pid(),
        prefix="demo: ",
    )
    record = run_watched(container.worker_host(), request, Cancellation(), watcher, 0.2)
    return record, world.tool_results()


def _report(
    record: RunRecord,
    results: Mapping[str, str],
    world: DemoWorld,
    as_json: bool,
    out: TextIO,
    err: TextIO,
    report: str,
) -> ExitStatus:
    """The record (its account, or its JSON), then what the demo shows, check by check."""
    if as_json:
        out.write(json_document(record.model_dump(mode="json")) + "\n")
    else:
        out.write(account(record).rstrip("\n") + "\n\n")
    held = checks(record, results, world.refused_by, world.shell)
    # The evidence quotes what the worker's tools answered: escaped like every human output.
    (err if as_json else out).write(
        terminal_lines(
            [
                "What the demo shows:",
                *(
                    f"  [{'ok' if ok else 'FAILED'}] {what}: {evidence}"
                    for what, ok, evidence in held
                ),
                "",
                f"model requests served: {world.requests_served}",
                f"trace: {record.run_directory} (transcript.jsonl, rounds/*/stderr.log; kept: "
                f"concorde-workers show {record.run_directory})",
                f"report: {report} (open it in a browser; concorde-workers show RUN_DIR --html "
                "FILE "
                "writes one, --diff prints each round's change)",
            ]
        )
    )
    return ExitStatus.OK if all(ok for _, ok, _ in held) else ExitStatus.FAILED
