"""What a check's sandbox runs and what its run was (issue 13, issue 19 §1): the shell text
first prints a marker line on stdout and then sends stdout to stderr, so a run without the
marker never reached the check (the layer or bwrap could not build the sandbox); how the
process ended is then judged - cancelled, at a limit, timed out, a sandbox never built, or the
check's exit (`domain.run.checks.finished`). Pure: no I/O."""

from __future__ import annotations

from dataclasses import dataclass

from concorde_workers.domain.run.checks import Check, CheckRun, CheckStatus, finished

__all__ = ["CANCELLED", "STARTED", "Ended", "check_run", "check_script"]

STARTED = "concorde-check-started"
CANCELLED = "killed: the run was cancelled"


def check_script(check: Check) -> str:
    """The shell text a check's sandbox runs: the marker, then the command, stdout to stderr."""
    return f"printf '%s\\n' {STARTED}\nexec 1>&2\n{check.command}"


@dataclass(frozen=True)
class Ended:
    """How a check's process ended: its exit, time and log, and what else was seen."""

    exit_code: int | None
    duration: float
    log: bytes
    view: str
    cancelled: bool
    reached_limits: str | None
    started: bool
    timed_out: bool


def check_run(ended: Ended, check: Check) -> CheckRun:
    """The check's run from how its process ended: cancelled, at a limit, timed out, a sandbox
    that never started it, or its exit judged (`finished`)."""
    kept = {
        "exit_code": ended.exit_code,
        "duration_seconds": ended.duration,
        "log": ended.log,
        "view": ended.view,
    }
    if ended.cancelled:
        return CheckRun(status=CheckStatus.FAILED, problem=CANCELLED, **kept)
    if ended.reached_limits:
        return CheckRun(status=CheckStatus.LIMIT_REACHED, problem=ended.reached_limits, **kept)
    if ended.timed_out:
        return CheckRun(
            status=CheckStatus.TIMED_OUT,
            **kept,
            problem=f"timed out after {check.timeout_seconds:g} s",
        )
    if not ended.started:
        said = (
            ended.log.decode("utf-8", "replace").strip()[-2000:] or f"exit status {ended.exit_code}"
        )
        return CheckRun(
            status=CheckStatus.NOT_STARTED,
            **kept,
            problem=f"the sandbox could not be built: {said}",
        )
    return finished(ended.exit_code, ended.duration, ended.log).model_copy(
        update={"view": ended.view}
    )
