"""What `concorde-workers run` and `show` print for a person at a shell once a run ended (the
live progress line while it runs is progress.py's).

* `account` — the end-of-run account of a run record: status and outcome, the rounds (prompt,
  exit, audit verdict, changed count, violations), the deletions, the error chain indented by
  depth, and where the trace is.
* `print_record` and `status_of` — the record as JSON or as its account, and the command's exit
  status from the run's outcome (`outcome_of`).

The formatting functions are pure (values in, text out). Every line they make passes
`terminal_lines`: whatever a worker or a request put in a summary, a path or an error detail
reaches the terminal with its control characters escaped (domain/ground/text.py), never as a
sequence the terminal would obey.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from concorde_workers.adapters.cli.output import print_json
from concorde_workers.adapters.cli.status import ExitStatus
from concorde_workers.adapters.cli.views.progress import elapsed_text, seconds_between
from concorde_workers.domain.configuration.program_versions import ProgramVersion
from concorde_workers.domain.evidence.records import RoundRecord, RunRecord
from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.ground.errors import ErrorLink
from concorde_workers.domain.ground.layout import TRACE_FILE
from concorde_workers.domain.ground.text import printable_lines, terminal_lines

__all__ = [
    "INTERRUPTED",
    "account",
    "error_lines",
    "outcome_of",
    "print_record",
    "round_line",
    "status_of",
]

INTERRUPTED = Code.INTERRUPTED
LISTED_PATHS = 5
"""How many violating paths a round line names before it says how many more there are."""


# --- values -------------------------------------------------------------------------------------


def outcome_of(record: RunRecord) -> str:
    """The run's outcome: its status, or interrupted when something outside ended it (the error's
    code is interrupted, or a cleanup that failed after an interruption names it as its cause)."""
    error = record.error
    if error is None:
        return record.status
    if error.code == INTERRUPTED:
        return INTERRUPTED
    if error.code == Code.CLEANUP_FAILED and any(c.code == INTERRUPTED for c in error.causes):
        return INTERRUPTED
    return record.status


# --- the account -----------------------------------------------------------------------------


def _paths(paths: Sequence[str], limit: int = LISTED_PATHS) -> str:
    shown = ", ".join(paths[:limit])
    more = len(paths) - limit
    return f"{shown} and {more} more" if more > 0 else shown


def resources_line(used: Mapping[str, Any]) -> str:
    """A round's resource profile from its resources.json (issue 20): the peaks its control
    group counted, each limit it reached, or that no limit was enforced."""
    if used.get("enforced") is not True:
        return f"resources: limits {used.get('enforcement', 'not enforced')}{_space_text(used)}"
    peak, processes, cpu = (
        used.get("memory_peak_bytes"),
        used.get("processes_peak"),
        used.get("cpu_seconds"),
    )
    parts = [
        f"memory peak {peak / 1048576:.0f} MiB" if isinstance(peak, int) else None,
        f"processes peak {processes}" if isinstance(processes, int) else None,
        f"CPU {cpu:.1f} s" if isinstance(cpu, int | float) else None,
    ]
    text = "resources: " + (", ".join(p for p in parts if p) or "no counters")
    text += _space_text(used)
    reached = used.get("limits_reached")
    if isinstance(reached, list) and reached:
        text += "; limit reached: " + "; ".join(str(r) for r in reached)
    return text


def _space_text(used: Mapping[str, Any]) -> str:
    """What the run's writable spaces held at the round's end (issue 30 §2), when it was said."""
    held, limits = used.get("space_used_bytes"), used.get("limits")
    size = limits.get("space_mib") if isinstance(limits, Mapping) else None
    if not isinstance(held, Mapping) or not isinstance(size, int):
        return ""
    parts = [
        f"{name}'s space {held[name] / 1048576:.0f} of {size} MiB"
        for name in ("agent", "worker")
        if isinstance(held.get(name), int)
    ]
    return ", " + ", ".join(parts) + " used" if parts else ""


def round_line(round_: RoundRecord, used: Mapping[str, Any] | None = None) -> list[str]:
    """A round as lines: number, prompt, exit, audit verdict, changed count, violations; then its
    round validation, transient error and resource use, when they happened."""
    exit_text = "-" if round_.exit is None else str(round_.exit)
    parts = [f"{round_.round}", f"{round_.prompt:<7}", f"exit {exit_text}"]
    audit = round_.audit
    if audit is None:
        parts.append("audit not run")
    else:
        parts.append(f"audit {audit.verdict}")
        parts.append(f"changed {len(audit.changed)}")
        violations = f"violations {len(audit.violations)}"
        if audit.violations:
            violations += f": {_paths(audit.violations)}"
        parts.append(violations)
    if round_.duration is not None:
        parts.append(elapsed_text(float(round_.duration)))
    lines = ["  " + "  ".join(parts)]
    pad = " " * (4 + len(str(round_.round)))
    if round_.validation is not None:
        first, *rest = round_.validation.splitlines() or [""]
        lines.append(f"{pad}validation: {first}{' …' if rest else ''}")
    lines += [f"{pad}{line}" for line in check_lines(round_.evidence or ())]
    if round_.transient is not None:
        t = round_.transient
        waited = (
            f"retried after {t.delay_seconds:g} s"
            if t.retried and t.delay_seconds is not None
            else "retried"
            if t.retried
            else "not retried"
        )
        lines.append(f"{pad}transient: {t.error} ({waited})")
    if used is not None:
        lines.append(pad + resources_line(used))
    return lines


def check_lines(evidence: Sequence[Mapping[str, Any]]) -> list[str]:
    """The checks a round's validation ran (application/checks/checks.py's evidence): identity, what
    it means for the round (gate narrowing), exit code, duration, its run on the starting state
    and its log."""
    lines = []
    for item in evidence:
        if not isinstance(item.get("check"), str) or "judgement" not in item:
            continue
        text = (
            f"check {item['check']}: {item['judgement']} (exit {item.get('exit_code')}, "
            f"{elapsed_text(float(item.get('duration_seconds') or 0))})"
        )
        before = item.get("before")
        if isinstance(before, Mapping):
            text += (
                f"; on the starting state: {before.get('status')} (exit {before.get('exit_code')})"
            )
        if item.get("log"):
            text += f"; log {item['log']}"
        lines.append(text)
    return lines


def error_lines(link: ErrorLink, depth: int = 0) -> list[str]:
    """The error chain: each link's code, reason and detail, its causes indented one level
    deeper; a detail's further lines are indented under its first."""
    indent = "  " * (depth + 1)
    first, *rest = printable_lines(link.detail) or [""]
    lines = [f"{indent}{link.code} ({link.unhandled.reason.value}): {first}"]
    lines += [f"{indent}  {line}" for line in rest]
    for cause in link.causes:
        lines += error_lines(cause, depth + 1)
    return lines


def _worker_result_line(record: RunRecord) -> str | None:
    result = record.worker_result
    if not isinstance(result, dict):
        return None
    status = result.get("status")
    summary = result.get("summary")
    if not isinstance(status, str):
        return None
    text = f"  worker result: {status}"
    if status != record.status:
        # A failed run's account must not open as if the run were ok (issue 19 §2): the
        # result is the worker's claim, and the run ended otherwise.
        ended = record.status + (f": {record.error.code}" if record.error is not None else "")
        text += f" (the worker's claim; the run ended {ended})"
    if isinstance(summary, str) and summary:
        first, *rest = summary.splitlines() or [""]
        text += f" — {first}{' …' if rest else ''}"
    return text


def account(
    record: RunRecord,
    programs: Sequence[ProgramVersion] = (),
    resources: Mapping[int, Mapping[str, Any]] | None = None,
    notes: Sequence[str] = (),
) -> str:
    """The end-of-run account of a run record, for a person at a shell, with the agent programs
    it was prepared with (their versions: the run directory's programs.json), each round's
    resource use (its resources.json) and what its request says that its author may not have
    meant (`notes`, application/preparation/request_notes.py)."""
    lines = _head(record, programs)
    if notes:
        lines += ["", "notes", *(f"  {note}" for note in notes)]
    lines += ["", f"rounds ({len(record.rounds)})"]
    if record.rounds:
        for round_ in record.rounds:
            lines += round_line(round_, (resources or {}).get(round_.round))
    else:
        lines.append("  none: the run ended before its first round")
    lines += _deletions(record)
    if record.error is not None:
        lines += ["", "error"]
        lines += error_lines(record.error)
    lines += _trace(record)
    return terminal_lines(lines)


def _head(record: RunRecord, programs: Sequence[ProgramVersion]) -> list[str]:
    """The status line, the worker and its model, the programs, the worktree, the times and the
    worker result."""
    outcome = outcome_of(record)
    headline = record.status if outcome == record.status else f"{record.status} ({outcome})"
    if record.error is not None:
        headline += f": {record.error.code}"
    lines = [f"run {record.run_id}: {headline}", _worker_line(record)]
    lines += [f"  program {program.line()}" for program in programs]
    lines.append(f"  worktree {record.worktree}")
    lines.append(_timing_line(record))
    result_line = _worker_result_line(record)
    if result_line:
        lines.append(result_line)
    return lines


def _worker_line(record: RunRecord) -> str:
    worker = f"{record.task_type} worker"
    if record.operation and record.worker:
        worker += f" {record.worker} of Operation {record.operation}"
    model = ""
    if record.model:
        model = f", model {record.model}"
        if record.local_model:
            model += f" ({record.local_model})"
    elif record.local_model:  # a request that named only the program's id (issue 19 §2)
        model = f", local model {record.local_model} (no project model named)"
    if record.reasoning:
        model += f", reasoning {record.reasoning}"
    return f"  {worker} on {record.backend}{model}"


def _timing_line(record: RunRecord) -> str:
    timing = f"  started {record.started_at}"
    if record.ended_at:
        took = seconds_between(record.started_at, record.ended_at)
        timing += f", ended {record.ended_at}"
        if took is not None:
            timing += f" ({elapsed_text(took)})"
    return timing


def _deletions(record: RunRecord) -> list[str]:
    """The deletions section, when the run proposed any."""
    deletions = [
        ("deleted", record.deleted),
        ("refused", record.deletions_refused),
        ("absent", record.deletions_absent),
        ("failed", record.deletions_failed),
    ]
    if not any(paths for _, paths in deletions):
        return []
    return [
        "",
        "deletions",
        *(f"  {label:<8}{', '.join(paths)}" for label, paths in deletions if paths),
    ]


def _trace(record: RunRecord) -> list[str]:
    """Where the trace is, and every trace write that was refused."""
    lines = [
        "",
        "trace",
        f"  run directory {record.run_directory}",
        f"  record        {posixpath.join(record.run_directory, TRACE_FILE)}",
    ]
    if record.transcript:
        lines.append(f"  transcript    {record.transcript}")
    lines += [f"  trace write refused: {failure}" for failure in record.trace_failures]
    return lines


def print_record(
    record: RunRecord,
    as_json: bool,
    out: TextIO,
    programs: Sequence[ProgramVersion] = (),
    resources: Mapping[int, Mapping[str, Any]] | None = None,
    notes: Sequence[str] = (),
) -> None:
    """The record as JSON (exactly the contract's record), or its account with the agent
    programs the run was prepared with (its programs.json), each round's resource use and the
    grant's notes."""
    if as_json:
        print_json(record.to_json(), out)
    else:
        out.write(account(record, programs, resources, notes))


def status_of(record: RunRecord) -> ExitStatus:
    """0 ok, 130 interrupted, 1 blocked or failed."""
    outcome = outcome_of(record)
    if outcome == "ok":
        return ExitStatus.OK
    if outcome == INTERRUPTED:
        return ExitStatus.INTERRUPTED
    return ExitStatus.FAILED
