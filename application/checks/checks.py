"""The checks as a round validation (issue 13; seed 000 "Round validation", Method's round
validation): the caller's judgement of a round, for the command line and for Python callers.

    validation = ChecksValidation(checks, runner, fs, CheckPlace(worktree=...))
    with validation:                       # the run's starting state kept before round 1
        record = host.run(request, validation=validation)

After every round whose worker ended ok with a clean audit the host calls it; it runs every
check over the worktree as the round left it, each through a throwaway view of its own (the
CheckRunner port: the run's mount plan over a copy-on-write layer; a copy of what the grant
shows for an unconfined round), runs each failing check once more over the copy of the
starting state (gate narrowing, seed 004),
writes each check's node `rounds/<n>/checks/<check-id>/` (check.json, output.log; a narrowed
check's run on the starting state in `before/`), discards the copies, and answers what the pure
`domain.run.checks.answer` decides: nothing to repair, a repair failing the run with checks_failed
when no rounds are left, or checks_unavailable.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType

from concorde_workers.application.runtime.cancellation import Cancellation
from concorde_workers.application.runtime.validation import (
    LinkAnswer,
    ValidationInput,
    ValidationOutcome,
)
from concorde_workers.domain.boundary.grant import Grant, parse_grant
from concorde_workers.domain.configuration.request import RunRequest
from concorde_workers.domain.configuration.resources import DEFAULT_LIMITS
from concorde_workers.domain.ground.errors import Code, ErrorLink, Reason, Refusal, Unhandled
from concorde_workers.domain.isolation.check_sandbox import CheckPlace, ProgramInView, primary_of
from concorde_workers.domain.run.checks import (
    CHECKS_FAILED,
    CHECKS_UNAVAILABLE,
    Check,
    CheckOutcome,
    CheckRun,
    CheckStatus,
    Judgement,
    answer,
    evidence,
    node_json,
)
from concorde_workers.ports.machine.filesystem import FileSystemError, FileWriting
from concorde_workers.ports.sandboxes.checks import CheckCopyFailed, CheckRunner, OnCancel

ACTOR = "Check execution"
_NOTHING = Grant(task_type="implement", entries=(), context_identity="none")
CHECKS_FOLDER = "checks"
LOG_NAME = "output.log"
NODE_NAME = "check.json"
BEFORE_FOLDER = "before"


def place_for(request: RunRequest) -> CheckPlace:
    """Where a request's checks run: its worktree, runtime paths and project interpreter, and
    its primary worktree hidden."""
    primary = primary_of(request.worktree)
    grant = parse_grant(request.grant, request.task_type)
    # A grant that does not parse fails the run before any round: no check ever runs then, and
    # an empty grant keeps nothing in a copy.
    return CheckPlace(
        worktree=request.worktree,
        hidden=(primary,) if primary else (),
        runtime_paths=request.runtime_paths,
        project_interpreter=request.project_interpreter,
        grant=grant if isinstance(grant, Grant) else _NOTHING,
        resources=request.resources or DEFAULT_LIMITS,
    )


@dataclass(frozen=True)
class ChecksPreview:
    """What a run's checks would be, with nothing run: each one's program in its sandbox
    (`programs`, in the checks' order) and what they run over on this machine (`view`), as
    `plan` says them; `refusal` is why a run would be refused before round 1."""

    checks: tuple[Check, ...]
    programs: tuple[ProgramInView, ...]
    view: str

    def refusal(self) -> Refusal | None:
        """checks_unavailable for the first check that cannot start in any round (no sandbox
        on this machine, a program no round can make): a run would spend a model round only
        to end so after it (decisions.md "A check that cannot start"); None when every check
        could start."""
        for check, program in zip(self.checks, self.programs, strict=True):
            if program.unavailable is not None:
                return Refusal(
                    code=CHECKS_UNAVAILABLE,
                    reason=Reason.ENVIRONMENT,
                    message=f"the check {check.id} ({check.command}) cannot start in any "
                    f"round: {program.unavailable}",
                )
        return None

    def to_json(self) -> dict[str, object]:
        """`plan --json`'s "checks" and "check_view"."""
        return {
            "checks": [
                {**c.model_dump(), "program": p.said, "unavailable": p.unavailable}
                for c, p in zip(self.checks, self.programs, strict=True)
            ],
            "check_view": self.view,
        }


class ChecksValidation:
    """A round validation that runs `checks` (see the module docstring). Use it as a context
    manager around `WorkerHost.run` (or call `start` before and `close` after): the starting
    state must be copied before round 1."""

    def __init__(
        self,
        checks: Sequence[Check],
        runner: CheckRunner,
        fs: FileWriting,
        place: CheckPlace,
        cancel: Cancellation | None = None,
    ) -> None:
        self.checks = tuple(checks)
        # The run's cancellation (the CLI's SIGINT and SIGTERM): a running check is killed at
        # once and no further check runs; the host then ends the run interrupted.
        self._cancel = cancel
        self._runner = runner
        self._fs = fs
        self._place = place
        self._start: str | None = None
        self._start_problem: str | None = None
        self._completed = False
        self._before: dict[str, CheckRun] = {}
        self.leftover: str | None = None

    def preview(self, *, view: bool = True) -> ChecksPreview:
        """What the checks would run and over what, with nothing run (`plan`); `view=False`
        leaves out what they run over (the runner may try a layer to say it)."""
        return ChecksPreview(
            checks=self.checks,
            programs=tuple(self._runner.program(c, self._place) for c in self.checks),
            view=self._runner.view() if self.checks and view else "",
        )

    def refusal_before_run(self) -> Refusal | None:
        """checks_unavailable when a check cannot start in any round, else None: ask it before
        `WorkerHost.run`, as `WorkerHost.refusal_before_run` is asked; no model round is spent
        on a run whose checks could never judge it (`plan` says the same)."""
        return self.preview(view=False).refusal()

    def __enter__(self) -> ChecksValidation:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def start(self) -> None:
        """Keep the run's starting state (the worktree before round 1) for gate narrowing; a
        copy that cannot be made makes a failing check unavailable, never blamed. Only what
        the rounds can change (the rw files) is copied now; the ro and names files, which no
        round can write, are recorded and copied when a check first fails (`_complete`), so a
        run whose checks pass pays nothing for them (issue 32 §3)."""
        if self._start is not None or not self.checks:
            return
        try:
            rules = self._place.rules()
            self._start = self._runner.copy(self._place.worktree, rules.keep, rules.later)
        except CheckCopyFailed as failed:
            self._start_problem = (
                f"the run's starting state could not be copied: {failed.os_error_text}"
            )

    def close(self) -> None:
        """Discard the starting state's copy; what could not be removed is said in
        `leftover` (the run has ended by then: nothing of it is lost)."""
        start, self._start = self._start, None
        if start is None:
            return
        try:
            self._runner.discard(start)
        except CheckCopyFailed as failed:
            self.leftover = (
                f"the copy of the run's starting state {failed.path} could not be "
                f"removed: {failed.os_error_text}; remove it by hand"
            )

    def __call__(self, given: ValidationInput) -> ValidationOutcome:
        place = self._round_place(given)
        # A confined round's checks run over the worktree itself, seen through the run's own
        # mount plan (issue 19 §1); an unconfined one's (a test backend) over a copy of what
        # the grant shows. Either way a check's writes go to a throwaway view of its own.
        tree = given.worktree
        if given.view is None:
            try:
                tree = self._runner.copy(given.worktree, self._place.rules().keep)
            except CheckCopyFailed as failed:
                return _copy_unavailable(given.round, failed)
        outcomes: list[CheckOutcome] = []
        try:
            for check in self.checks:
                outcome = self._outcome(check, tree, place, given.round_dir)
                if self._cancelled():
                    return ValidationOutcome()  # ended from outside: nothing to judge
                outcomes.append(outcome)
        finally:
            if tree != given.worktree:
                self._runner.discard(tree)
        return _outcome(outcomes, given.round)

    def _cancelled(self) -> bool:
        return self._cancel is not None and self._cancel.is_set()

    def _on_cancel(self) -> OnCancel | None:
        return self._cancel.on_cancel if self._cancel is not None else None

    def _round_place(self, given: ValidationInput) -> CheckPlace:
        # The run records (<parent>/workers/, above rounds/<n>/ of this run) are hidden too.
        workers = posixpath.dirname(
            posixpath.dirname(posixpath.dirname(posixpath.normpath(given.round_dir)))
        )
        return self._place.model_copy(
            update={"hidden": (*self._place.hidden, workers), "view": given.view}
        )

    def _outcome(self, check: Check, tree: str, place: CheckPlace, round_dir: str) -> CheckOutcome:
        folder = posixpath.join(round_dir, CHECKS_FOLDER, check.id)
        now = self._runner.run(check, tree, place, self._on_cancel())
        log = self._write_node(folder, check, now, "after the round")
        if now.status is not CheckStatus.FAILED or self._cancelled():
            return CheckOutcome(check=check, now=now, log_path=log)
        before = self._run_before(check, place.model_copy(update={"view": None}))
        before_log = self._write_node(
            posixpath.join(folder, BEFORE_FOLDER), check, before, "the run's starting state"
        )
        return CheckOutcome(
            check=check, now=now, before=before, log_path=log, before_log_path=before_log
        )

    def _run_before(self, check: Check, place: CheckPlace) -> CheckRun:
        """The check's run on the starting state, once per run: that state does not change."""
        if check.id in self._before:
            return self._before[check.id]
        if self._start is None or not self._complete():
            return CheckRun(
                status=CheckStatus.NOT_STARTED,
                problem=self._start_problem
                or "the run's starting state was not "
                "copied before round 1 (ChecksValidation.start was not called)",
            )
        # The copy of the starting state is what the grant shows already: seen whole, through
        # a view of the check's own, so that its writes never reach the copy.
        run = self._runner.run(check, self._start, place, self._on_cancel())
        if not self._cancelled():  # a killed run says nothing of the starting state
            self._before[check.id] = run
        return run

    def _complete(self) -> bool:
        """The starting state's copy made whole (once): whether it is."""
        if self._completed or self._start is None:
            return self._completed
        try:
            self._runner.complete(self._start)
        except CheckCopyFailed as failed:
            self._start_problem = (
                f"the run's starting state could not be copied: {failed.path}: "
                f"{failed.os_error_text}"
            )
            self.close()  # what was copied of it is of no use now
            return False
        self._completed = True
        return True

    def _write_node(self, folder: str, check: Check, run: CheckRun, state: str) -> str:
        """The check's node: check.json and output.log; the log's path."""
        log = posixpath.join(folder, LOG_NAME)
        try:
            self._fs.makedirs(folder)
            self._fs.write_atomic(log, run.log)
            self._fs.write_atomic(
                posixpath.join(folder, NODE_NAME),
                json.dumps(node_json(check, run, state), indent=2) + "\n",
            )
        except FileSystemError:
            return ""  # the evidence then names no log; the answer stands
        return log


def _outcome(outcomes: Sequence[CheckOutcome], round_number: int) -> ValidationOutcome:
    decided = answer(outcomes, round_number, ACTOR)
    kept = [evidence(o) for o in outcomes]
    if decided.unavailable:
        return ValidationOutcome(
            evidence=kept,
            unavailable=LinkAnswer(
                code=CHECKS_UNAVAILABLE,
                causes=decided.unavailable_links,
                detail=decided.unavailable_detail,
            ),
        )
    if decided.repair is not None:
        failing = ", ".join(e["check"] for e in kept if e["judgement"] == Judgement.REPAIR.value)
        return ValidationOutcome(
            evidence=kept,
            repair=decided.repair,
            failure=LinkAnswer(
                code=CHECKS_FAILED,
                causes=decided.failure_links,
                detail=f"failing checks: {failing}",
            ),
        )
    return ValidationOutcome(evidence=kept)


def _copy_unavailable(round_number: int, failed: CheckCopyFailed) -> ValidationOutcome:
    detail = f"round {round_number}: the worktree could not be copied for the checks: {failed}"
    link = ErrorLink(
        level="component",
        actor=ACTOR,
        code=Code.CHECK_UNAVAILABLE,
        detail=detail,
        unhandled=Unhandled(
            reason=Reason.ENVIRONMENT, explanation="No check could run without the copy"
        ),
    )
    return ValidationOutcome(
        unavailable=LinkAnswer(code=CHECKS_UNAVAILABLE, causes=(link,), detail=detail)
    )
