"""What a sweep found and did (application/sweep/sweep.py): each stale runtime directory, what was
left and why, the check copies and resource groups, as values and as the account a person reads
(every path shown with its control characters escaped)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from concorde_workers.application.sweep.copy_sweep import CopyFound

__all__ = ["LeftDirectory", "RecordFinish", "StaleDirectory", "SweepReport", "sweep_account"]

RecordOutcome = Literal["finished", "already_ended", "not_found", "failed"]


@dataclass(frozen=True)
class RecordFinish:
    """What became of the record of a stale directory's run.

    finished: it now says interrupted; already_ended: its host had written its end (nothing
    written); not_found: the run directory is missing or is not that run's node (nothing
    written); failed: a write the operating system refused (`detail` names it)."""

    run_id: str
    run_directory: str
    outcome: RecordOutcome
    detail: str
    transcript_kept: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "run_directory": self.run_directory,
            "outcome": self.outcome,
            "detail": self.detail,
            "transcript_kept": self.transcript_kept,
        }


@dataclass(frozen=True)
class StaleDirectory:
    """A stale runtime directory: why, whether it is gone, and its run's record."""

    runtime_directory: str
    reason: str
    run_id: str | None
    host_pid: int | None
    removed: bool
    remains: tuple[str, ...] = ()
    transcript_error: str | None = None
    record: RecordFinish | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "runtime_directory": self.runtime_directory,
            "reason": self.reason,
            "run_id": self.run_id,
            "host_pid": self.host_pid,
            "removed": self.removed,
            "remains": list(self.remains),
            "transcript_error": self.transcript_error,
            "record": None if self.record is None else self.record.to_json(),
        }


@dataclass(frozen=True)
class LeftDirectory:
    """A directory named like a runtime directory that the sweep left as it is, and why."""

    runtime_directory: str
    verdict: Literal["live", "left"]
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {
            "runtime_directory": self.runtime_directory,
            "verdict": self.verdict,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class SweepReport:
    """Everything one sweep found and did. `problem` is set when the runtime parent could not
    be listed (then nothing was done)."""

    runtime_parent: str
    problem: str | None = None
    stale: tuple[StaleDirectory, ...] = ()
    left: tuple[LeftDirectory, ...] = ()
    copies: tuple[CopyFound, ...] = ()
    """The checks' copies (application/sweep/copy_sweep.py), each with its verdict."""
    groups: tuple[str, ...] = ()
    groups_failed: tuple[str, ...] = ()
    """The idle resource groups removed, and those that stayed (application/setup/resources.py)."""

    @property
    def failures(self) -> list[str]:
        """What the sweep could not do: each stale directory not gone (with what remains and
        the OS error), each transcript it found but could not keep, and each record whose write
        was refused."""
        found: list[str] = []
        for stale in self.stale:
            if not stale.removed:
                found.append(
                    f"{stale.runtime_directory} was not removed: " + "; ".join(stale.remains)
                )
            if stale.transcript_error is not None:
                found.append(f"the transcript could not be kept: {stale.transcript_error}")
            if stale.record is not None and stale.record.outcome == "failed":
                found.append(
                    f"the record of run {stale.record.run_id} in "
                    f"{stale.record.run_directory} was not finished: "
                    f"{stale.record.detail}"
                )
        found += [
            f"{c.path} was not removed: " + "; ".join(c.remains)
            for c in self.copies
            if c.verdict == "stale" and not c.removed
        ]
        return found + list(self.groups_failed)

    def to_json(self) -> dict[str, Any]:
        return {
            "runtime_parent": self.runtime_parent,
            "problem": self.problem,
            "stale": [s.to_json() for s in self.stale],
            "left": [entry.to_json() for entry in self.left],
            "copies": [c.to_json() for c in self.copies],
            "groups": list(self.groups),
            "failures": self.failures,
        }


# --- the account for a person at a shell ----------------------------------------------------------


def _shown(text: str) -> str:
    """`text` with every control character escaped, so that no path can rewrite the terminal."""
    return "".join(
        c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text
    )


def sweep_account(report: SweepReport, *, quiet: bool = False) -> str:
    """What a sweep found and did, one line per directory. `quiet` (before a run) says nothing
    when nothing was stale and nothing failed."""
    if report.problem is not None:
        return f"sweep: {_shown(report.problem)}\n"
    removed = [c for c in report.copies if c.verdict == "stale"]
    if quiet and not report.stale and not removed and not report.groups:
        return ""
    count = len(report.stale)
    lines = [
        f"sweep of {_shown(report.runtime_parent)}: "
        + (
            f"{count} stale runtime director{'y' if count == 1 else 'ies'}"
            if count
            else "no stale runtime directory"
        )
    ]
    for stale in report.stale:
        lines += _stale_lines(stale)
    lines += [
        f"  {'removed' if c.removed else 'NOT removed'} check copy {_shown(c.path)}: "
        f"{_shown(c.reason)}"
        for c in removed
    ]
    lines += [f"  removed idle resource group {_shown(name)}" for name in report.groups]
    if not quiet:
        lines += [
            f"  left {_shown(entry.runtime_directory)}: {_shown(entry.reason)}"
            for entry in report.left
        ]
        lines += [
            f"  left check copy {_shown(c.path)}: {_shown(c.reason)}"
            for c in report.copies
            if c.verdict != "stale"
        ]
    return "\n".join(lines) + "\n"


_RECORD_SAID = {
    "finished": "record finished interrupted",
    "already_ended": "record kept",
    "not_found": "record not written",
    "failed": "record NOT finished",
}


def _stale_lines(stale: StaleDirectory) -> list[str]:
    """One stale runtime directory's lines of the sweep's account: what was removed, what
    remains, and what became of its run's transcript and record."""
    run = f" (run {stale.run_id})" if stale.run_id else ""
    verb = "removed" if stale.removed else "NOT removed"
    lines = [f"  {verb} {_shown(stale.runtime_directory)}{run}: {_shown(stale.reason)}"]
    lines += [f"    remains {_shown(remain)}" for remain in stale.remains]
    if stale.transcript_error is not None:
        lines.append(f"    transcript NOT kept: {_shown(stale.transcript_error)}")
    record = stale.record
    if record is not None:
        kept = ", transcript kept" if record.transcript_kept else ""
        why = "" if record.outcome == "finished" else f": {_shown(record.detail)}"
        said = _RECORD_SAID[record.outcome]
        lines.append(f"    {said}: {_shown(record.run_directory)}{kept}{why}")
    return lines
