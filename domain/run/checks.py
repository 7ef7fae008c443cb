"""The checks a caller runs as its round validation, and what their outcomes answer (seed 000
"Round validation", the paragraph on Method's round validation; issue 13; seed 004 "Gate, and
why narrowing matters").

A check is a shell command with an identity and a timeout. After a round whose worker ended ok
with a clean audit every check runs on a throwaway copy of the worktree; a check that fails is
run once more on the run's starting state (gate narrowing). Everything here is pure: the
outcomes come in as values, the answer goes out as a value the application turns into the
round validation's `ValidationOutcome`.

Answers, tried in this order:

* a check that could not start or timed out, now or on the starting state: `checks_unavailable`
  with one Check execution link per such check (the run ends failed, reason environment);
* a check that failed now and passed on the starting state: a repair naming, per such check, its
  identity, status, exit code and the last 20,000 bytes of its log; the run ends
  `checks_failed` with one link per failing check when no rounds are left;
* otherwise nothing to repair. A check that failed on the starting state too is pre-existing
  evidence, never a repair: the worker is not sent to fix what it did not break.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.ground.errors import ErrorLink, Evidence, Reason, Unhandled

CHECKS_FAILED = Code.CHECKS_FAILED
"""The code Method's round validation names for a repair that fails the run (seed 000 Errors)."""
CHECKS_UNAVAILABLE = Code.CHECKS_UNAVAILABLE
"""The code Method's round validation names when the checks cannot run (seed 000 Errors)."""

CHECK_FAILED_LINK = Code.CHECK_FAILED
CHECK_UNAVAILABLE_LINK = Code.CHECK_UNAVAILABLE
CHECK_LEVEL = "component"

REPAIR_LOG_BYTES = 20_000
"""The repair names the last 20,000 bytes of a failing check's log (seed 000)."""
DEFAULT_TIMEOUT_SECONDS = 600.0
MAX_TIMEOUT_SECONDS = 86_400.0
CHECK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
CHECK_FIELDS = ("command", "id", "timeout_seconds")


class Check(BaseModel):
    """One check: its identity (the name of its node folder), its shell command, its timeout."""

    model_config = ConfigDict(frozen=True)

    id: str
    command: str
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS


class CheckStatus(StrEnum):
    """How one run of a check ended."""

    PASSED = "passed"
    FAILED = "failed"
    TIMED_OUT = "timed out"
    NOT_STARTED = "could not start"
    LIMIT_REACHED = "reached a limit"
    """Its control group refused a fork or the kernel killed a process of it (issue 20): like a
    timeout, it could not run to its end, so it judges nothing."""


UNAVAILABLE_STATUSES = frozenset(
    {CheckStatus.TIMED_OUT, CheckStatus.NOT_STARTED, CheckStatus.LIMIT_REACHED}
)


class CheckRun(BaseModel):
    """One run of a check: how it ended, its exit code (None: none, it did not exit by itself),
    its duration and the tail of its combined output (its log)."""

    model_config = ConfigDict(frozen=True)

    status: CheckStatus
    exit_code: int | None = None
    duration_seconds: float = 0.0
    log: bytes = b""
    problem: str = ""
    """Why it could not start or what ended it (empty for a check that exited by itself)."""
    view: str = ""
    """What it ran over (domain/isolation/check_layer.py): `layer`, `copy` or, where no sandbox ran,
    ""."""


def status_of(exit_code: int | None, timed_out: bool) -> CheckStatus:
    """The status of a check that started: a timeout whatever its exit code, else passed on 0."""
    if timed_out:
        return CheckStatus.TIMED_OUT
    return CheckStatus.PASSED if exit_code == 0 else CheckStatus.FAILED


# What says that a check's command did not run at all (issue 19 §1): the shell's own statuses
# for a command it could not find (127) or execute (126), and an interpreter that could not
# start, a module or a file the command names missing, when that is all the check printed.
# Such a check is unavailable, never evidence: it failing on both states says nothing of the
# round.
_SHELL_STATUSES = {
    127: "its command was not found (exit status 127)",
    126: "its command could not be executed (exit status 126)",
}
_ALONE_SIGNS = (
    (re.compile(r"Fatal Python error: .*"), "its Python interpreter could not start"),
    (re.compile(r"\S+: No module named \S+"), "the module its command runs is not installed"),
    (
        re.compile(r"\S+: can't open file .*: \[Errno \d+\] .*"),
        "a file its command names is not there",
    ),
)
_SAID_BYTES = 2000


def command_problem(exit_code: int | None, log: bytes) -> str | None:
    """Why a check that exited by itself did not run its command, or None when it ran."""
    if exit_code in (None, 0):
        return None
    text = log[-_SAID_BYTES:].decode("utf-8", "replace").strip()
    last = text.splitlines()[-1] if text else ""
    why = _SHELL_STATUSES.get(exit_code)
    if why is None:
        first = text.splitlines()[0] if text else ""
        alone = len(text.splitlines()) <= 1
        why = next(
            (
                w
                for sign, w in _ALONE_SIGNS
                if sign.fullmatch(first) and (alone or w.startswith("its Python"))
            ),
            None,
        )
    if why is None:
        return None
    return f"{why}: {last}" if last else why


def finished(exit_code: int | None, duration_seconds: float, log: bytes) -> CheckRun:
    """A check that started and exited by itself: passed on 0, could not start when its command
    did not run (`command_problem`), else failed."""
    problem = command_problem(exit_code, log)
    if problem is not None:
        return CheckRun(
            status=CheckStatus.NOT_STARTED,
            exit_code=exit_code,
            duration_seconds=duration_seconds,
            log=log,
            problem=problem,
        )
    return CheckRun(
        status=status_of(exit_code, False),
        exit_code=exit_code,
        duration_seconds=duration_seconds,
        log=log,
    )


class Judgement(StrEnum):
    """What one check's outcome means for the round (gate narrowing)."""

    PASSED = "passed"
    REPAIR = "failed: a repair"
    PRE_EXISTING = "failed before the run too: pre-existing, not a repair"
    UNAVAILABLE = "unavailable"


class CheckOutcome(BaseModel):
    """One check after a round: its run on the round's state and, when that failed, its run on
    the run's starting state."""

    model_config = ConfigDict(frozen=True)

    check: Check
    now: CheckRun
    before: CheckRun | None = None
    log_path: str = ""
    before_log_path: str = ""

    def judgement(self) -> Judgement:
        if self.now.status is CheckStatus.PASSED:
            return Judgement.PASSED
        if self.now.status in UNAVAILABLE_STATUSES:
            return Judgement.UNAVAILABLE
        if self.before is None:  # not narrowed: the round is blamed
            return Judgement.REPAIR
        if self.before.status in UNAVAILABLE_STATUSES:
            return Judgement.UNAVAILABLE
        return (
            Judgement.PRE_EXISTING if self.before.status is CheckStatus.FAILED else Judgement.REPAIR
        )

    def unavailable_run(self) -> tuple[str, CheckRun]:
        """Which run made the check unavailable: ("after the round", ...) or ("on the starting
        state", ...)."""
        if self.now.status in UNAVAILABLE_STATUSES or self.before is None:
            return "after the round", self.now
        return "on the run's starting state", self.before


class ChecksAnswer(BaseModel):
    """The checks' answer for one round: a repair (with the links for checks_failed), the links
    of checks_unavailable, or neither (nothing to repair)."""

    model_config = ConfigDict(frozen=True)

    repair: str | None = None
    failure_links: tuple[ErrorLink, ...] = ()
    unavailable_detail: str = ""
    unavailable_links: tuple[ErrorLink, ...] = ()

    @property
    def unavailable(self) -> bool:
        return bool(self.unavailable_links)


def answer(outcomes: Sequence[CheckOutcome], round_number: int, actor: str) -> ChecksAnswer:
    """The round validation's answer for the checks' outcomes of round `round_number`; `actor`
    names Check execution in its links."""
    unavailable = [o for o in outcomes if o.judgement() is Judgement.UNAVAILABLE]
    if unavailable:
        said = "; ".join(_unavailable_text(o) for o in unavailable)
        return ChecksAnswer(
            unavailable_detail=f"round {round_number}: {said}",
            unavailable_links=tuple(_unavailable_link(o, actor) for o in unavailable),
        )
    failing = [o for o in outcomes if o.judgement() is Judgement.REPAIR]
    if not failing:
        return ChecksAnswer()
    return ChecksAnswer(
        repair=repair_text(failing), failure_links=tuple(_failed_link(o, actor) for o in failing)
    )


def repair_text(failing: Sequence[CheckOutcome]) -> str:
    """The repair naming, for each failing check, its identity, status, exit code and the last
    20,000 bytes of its log (seed 000, Method's round validation)."""
    parts = [
        f"{len(failing)} check{'s' if len(failing) != 1 else ''} of the project failed "
        "after your changes (each passed before them). Repair what makes "
        f"{'them' if len(failing) != 1 else 'it'} fail:"
    ]
    for o in failing:
        tail = o.now.log[-REPAIR_LOG_BYTES:].decode("utf-8", "replace")
        parts.append(
            f"\ncheck {o.check.id}: `{o.check.command}`\nstatus: {o.now.status.value}\n"
            f"exit code: {o.now.exit_code}\nthe last {REPAIR_LOG_BYTES:,} bytes of its log:\n"
            f"{tail.rstrip()}\n"
        )
    return "\n".join(parts)


def _unavailable_text(o: CheckOutcome) -> str:
    when, run = o.unavailable_run()
    what = (
        f"timed out after {format_seconds(o.check.timeout_seconds)} s"
        if run.status is CheckStatus.TIMED_OUT
        else f"reached a limit: {run.problem}"
        if run.status is CheckStatus.LIMIT_REACHED
        else f"could not start: {run.problem}"
    )
    return f"check {o.check.id} {what} ({when})"


def _unavailable_link(o: CheckOutcome, actor: str) -> ErrorLink:
    _, run = o.unavailable_run()
    log = o.log_path if run is o.now else o.before_log_path
    return ErrorLink(
        level=CHECK_LEVEL,
        actor=f"{actor} (check {o.check.id})",
        code=CHECK_UNAVAILABLE_LINK,
        detail=_unavailable_text(o),
        evidence=_log_evidence(log),
        unhandled=Unhandled(
            reason=Reason.ENVIRONMENT,
            explanation="The check could not run to its end, so the round could not be judged",
        ),
    )


def _failed_link(o: CheckOutcome, actor: str) -> ErrorLink:
    return ErrorLink(
        level=CHECK_LEVEL,
        actor=f"{actor} (check {o.check.id})",
        code=CHECK_FAILED_LINK,
        detail=(
            f"check {o.check.id} (`{o.check.command}`) {o.now.status.value} with exit "
            f"code {o.now.exit_code}; it passed on the run's starting state"
        ),
        evidence=_log_evidence(o.log_path),
        unhandled=Unhandled(
            reason=Reason.EXHAUSTED, explanation="The check still fails after the last repair round"
        ),
    )


def _log_evidence(path: str) -> tuple[Evidence, ...]:
    return (Evidence(kind="check log", ref=path),) if path else ()


def evidence(o: CheckOutcome) -> dict[str, Any]:
    """The evidence one check leaves in its round's record: its identity, command, status, exit
    code, duration, log (an artifact path) and, when it was narrowed, its run on the starting
    state."""
    item: dict[str, Any] = {
        "check": o.check.id,
        "command": o.check.command,
        "judgement": o.judgement().value,
        "status": o.now.status.value,
        "exit_code": o.now.exit_code,
        "duration_seconds": round(o.now.duration_seconds, 3),
        "log": o.log_path,
    }
    if o.before is not None:
        item["before"] = {
            "status": o.before.status.value,
            "exit_code": o.before.exit_code,
            "duration_seconds": round(o.before.duration_seconds, 3),
        }
        item["before_log"] = o.before_log_path
    return item


def node_json(check: Check, run: CheckRun, state: str) -> dict[str, Any]:
    """A check node's check.json: which check ran on which state, how it ended."""
    return {
        "check": check.id,
        "command": check.command,
        "state": state,
        "timeout_seconds": check.timeout_seconds,
        "status": run.status.value,
        "exit_code": run.exit_code,
        "duration_seconds": round(run.duration_seconds, 3),
        "problem": run.problem or None,
        "view": run.view or None,
    }


def format_seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


# --- the checks a caller gives ------------------------------------------------------------------


def parse_checks(entries: object, commands: Sequence[str], where: str) -> tuple[Check, ...] | str:
    """The checks of a request file's `checks` (a list of objects with `command` and optional
    `id` and `timeout_seconds`, or of command texts) followed by the `--check` commands; the
    first problem, naming its entry and the repair, otherwise. Identities not given are
    `check-<n>` by position."""
    given: list[object] = []
    if entries is not None:
        if not isinstance(entries, list):
            return (
                f'{where} "checks" is a {type(entries).__name__}; give a list of checks, '
                'each a command text or an object with "command" and optional "id" and '
                '"timeout_seconds"'
            )
        given.extend(entries)
    given.extend(commands)
    checks: list[Check] = []
    for n, entry in enumerate(given):
        name = (
            f"{where} checks[{n}]"
            if n < len(entries or [])
            else f"--check {commands[n - len(entries or [])]!r}"
        )
        parsed = _parse_entry(entry, n + 1, name)
        if isinstance(parsed, str):
            return parsed
        if any(c.id == parsed.id for c in checks):
            return f"{name} repeats the check id {parsed.id!r}; give every check its own id"
        checks.append(parsed)
    return tuple(checks)


def _parse_entry(entry: object, position: int, name: str) -> Check | str:
    if isinstance(entry, str):
        entry = {"command": entry}
    if not isinstance(entry, Mapping):
        return (
            f"{name} is a {type(entry).__name__}; give a command text or an object with "
            '"command" and optional "id" and "timeout_seconds"'
        )
    unknown = sorted(set(entry) - set(CHECK_FIELDS))
    if unknown:
        return (
            f"{name} has the unknown field {unknown[0]!r}; a check has only "
            f"{', '.join(CHECK_FIELDS)}"
        )
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip() or "\x00" in command:
        return (
            f'{name} gives no command ("command" {command!r}); give the shell command '
            'to run, such as "python -m pytest -q"'
        )
    check_id = entry.get("id", f"check-{position}")
    if not isinstance(check_id, str) or not CHECK_ID.match(check_id) or check_id in {".", ".."}:
        return (
            f"{name} gives the id {check_id!r}; an id is 1 to 64 letters, digits, '.', '_' "
            "or '-', starting with a letter or digit (it names the check's node folder)"
        )
    timeout = entry.get("timeout_seconds", DEFAULT_TIMEOUT_SECONDS)
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not (0 < timeout <= MAX_TIMEOUT_SECONDS)
    ):
        return (
            f"{name} gives timeout_seconds {timeout!r}; give a number of seconds above 0 "
            f"and at most {MAX_TIMEOUT_SECONDS:.0f}"
        )
    return Check(id=check_id, command=command, timeout_seconds=float(timeout))
