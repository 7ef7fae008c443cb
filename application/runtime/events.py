"""A run's events as it goes (issue 21 §5): what the host tells a `RunEvents` watcher, each event
built by domain/evidence/events.py and told once. A watcher that fails (its pipe closed) is told
nothing
more; the run goes on, its record and trace whole."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from concorde_workers.application.runtime.run_state import RoundState
from concorde_workers.application.tracing.calls import CallTracker, ToolCall
from concorde_workers.domain.attestation.statement import RESOURCE_KEYS
from concorde_workers.domain.configuration.profile import BackendProfile
from concorde_workers.domain.configuration.request import RunRequest
from concorde_workers.domain.evidence.events import LISTED, EventKind, bounded, event
from concorde_workers.domain.evidence.records import RunRecord
from concorde_workers.domain.ground.record_fields import utc_text
from concorde_workers.ports.agents.events import RunEvents
from concorde_workers.ports.machine.clock import Clock

__all__ = ["EventEmitter"]


class EventEmitter:
    """The events of one run, to `sink` (None: nothing is told)."""

    def __init__(
        self,
        sink: RunEvents | None,
        clock: Clock | None,
        run_id: str = "",
        profile: BackendProfile | None = None,
    ) -> None:
        self._sink, self._clock, self.run_id = sink, clock, run_id
        self._told: set[tuple[int, str]] = set()
        self._tracker = None if profile is None else CallTracker(profile)

    @classmethod
    def none(cls) -> EventEmitter:
        return cls(None, None)

    def _tell(self, kind: EventKind, **fields: Any) -> None:
        if self._sink is None or self._clock is None:
            return
        try:
            self._sink.emit(event(kind, self.run_id, utc_text(self._clock.now_utc()), **fields))
        except (OSError, ValueError):  # the watcher went away: the run goes on without it
            self._sink = None

    def run_started(self, request: RunRequest, run_directory: str) -> None:
        self._tell(
            EventKind.RUN_STARTED,
            backend=request.backend,
            task_type=bounded(request.task_type),
            worktree=bounded(request.worktree),
            run_directory=bounded(run_directory),
            limits=None if request.resources is None else request.resources.model_dump(),
        )

    def resources(self, round_number: int, used: Mapping[str, Any] | None) -> None:
        """The round's limits in force and their peaks, as its resources.json says them (nothing
        for a host wired without groups, which keeps none)."""
        if used is None or (round_number, "resources") in self._told:
            return
        self._told.add((round_number, "resources"))
        said = {key: used[key] for key in RESOURCE_KEYS if key in used}
        reached = [bounded(limit) for limit in said.get("limits_reached", [])][:LISTED]
        self._tell(
            EventKind.RESOURCES,
            round=round_number,
            **{**said, "enforced": bool(used.get("enforced")), "limits_reached": reached},
        )

    def round_started(self, round_state: RoundState) -> None:
        self._tell(EventKind.ROUND_STARTED, round=round_state.number, prompt=round_state.kind.value)

    def output_line(self, round_number: int, line: str) -> None:
        """One line of text in the session's dialect: each tool call it completes is told."""
        if self._sink is None or self._tracker is None:
            return
        for call in self._tracker.feed_line(line):
            self._call(round_number, call)

    def output_object(self, round_number: int, line: Mapping[str, Any]) -> None:
        """One line of the agent's output as its backend's reader parsed it (`StreamReader.
        watch`): each tool call it completes is told, from that one parse (issue 34 §5)."""
        if self._sink is None or self._tracker is None:
            return
        for call in self._tracker.feed(line):
            self._call(round_number, call)

    @property
    def watching(self) -> bool:
        """Whether anyone is told the calls (a watcher, and a backend's dialect to read)."""
        return self._sink is not None and self._tracker is not None

    def transcript_lines(self, round_number: int, lines: Iterable[str]) -> None:
        """The session's transcript once the round's program ended, for a program whose output
        does not carry its calls (`TranscriptDialect.in_output`): each call not told yet is
        told (a call is told once, by its id)."""
        for line in lines:
            self.output_line(round_number, line)

    def _call(self, round_number: int, call: ToolCall) -> None:
        self._tell(
            EventKind.TOOL_CALL,
            round=round_number,
            tool=bounded(call.tool),
            target=bounded(call.target),
            decision=call.decision,
            reason=bounded(call.reason),
        )

    def round_ended(self, round_state: RoundState) -> None:
        """The round's audit, checks and retry, each once however often its node is written."""
        n = round_state.number
        if round_state.audit is not None and (n, "audit") not in self._told:
            self._told.add((n, "audit"))
            changed = round_state.audit.changed
            self._tell(
                EventKind.AUDIT,
                round=n,
                verdict=round_state.audit.verdict.value,
                changed=[bounded(p) for p in changed[:LISTED]],
                changed_count=len(changed),
                violations=[bounded(v) for v in round_state.audit.violation_texts[:LISTED]],
            )
        if round_state.evidence_node and (n, "checks") not in self._told:
            self._told.add((n, "checks"))
            for item in round_state.evidence_node:
                self._check(n, item)
        transient = round_state.transient
        if transient is not None and transient.retried and (n, "retry") not in self._told:
            self._told.add((n, "retry"))
            self._tell(
                EventKind.RETRY,
                round=n,
                error=bounded(transient.error),
                retried=True,
                delay_seconds=transient.delay_seconds,
            )

    def _check(self, n: int, item: Mapping[str, Any]) -> None:
        if isinstance(item.get("check"), str):
            code = item.get("exit_code")
            self._tell(
                EventKind.CHECK,
                round=n,
                check=bounded(item["check"]),
                judgement=None if item.get("judgement") is None else bounded(item["judgement"]),
                exit_code=code if isinstance(code, int) else None,
            )

    def run_ended(self, record: RunRecord) -> None:
        for outcome, paths in (
            ("deleted", record.deleted),
            ("refused", record.deletions_refused),
            ("absent", record.deletions_absent),
            ("failed", record.deletions_failed),
        ):
            for path in paths:
                self._tell(EventKind.DELETION, path=bounded(path), outcome=outcome)
        error = record.error
        self._tell(
            EventKind.RUN_ENDED,
            status=record.status,
            code=None if error is None else str(error.code),
            detail=None if error is None else bounded(error.detail),
            rounds=len(record.rounds),
        )
