"""The end of a run, in an order a kill cannot break (docs/decisions.md "The end of a run, in an
order a kill cannot break"): the progress file says how it ended; the transcript is kept and the
runtime directory emptied, credential copies first, all but its owner record; the final record is
written; only then do the owner record and the directory go; the statement is sealed over the
final record. Each step is tried again when an exception is raised into it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import cast

from concorde_workers.application.evidence.attestation import Attestor
from concorde_workers.application.run.host_run import HostRun
from concorde_workers.application.runtime.outcomes import cleanup_link, interrupted_link
from concorde_workers.application.runtime.runtime_directory import (
    cleanup_runtime_directory,
    release_runtime_directory,
)
from concorde_workers.domain.evidence.records import ProgressStatus, RunRecord
from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.ground.layout import RuntimeLayout
from concorde_workers.ports.machine.clock import Clock
from concorde_workers.ports.machine.filesystem import FileSystemError, RunFiles

__all__ = ["FINISH_ATTEMPTS", "RunEnd"]

FINISH_ATTEMPTS = 3
"""How often each step of the end is tried when an exception is raised into it."""


class RunEnd:
    """Ends one run after its last step, whatever ended it."""

    def __init__(self, fs: RunFiles, clock: Clock, attestor: Attestor | None) -> None:
        self._fs = fs
        self._clock = clock
        self._attestor = attestor

    def finish(self, run: HostRun) -> RunRecord:
        """End the run in an order a kill cannot break (docs/decisions.md "The end of a run, in
        an order a kill cannot break"): the progress file says how the run ended; the transcript
        is kept and the runtime directory emptied, credential copies first, all but its owner
        record; the final record is written; only then do the owner record and the directory go.
        Until the final record exists, a sweep finds the run by its owner record and finishes
        it; after, the record stands. Whatever is raised into it meanwhile (a second
        KeyboardInterrupt, the caller's signal handler again) does not stop it: the step it
        interrupted is done again (each is idempotent), the rest follow, and then the first
        such exception goes on."""
        state, tracer, links = run.state, run.tracer, run.links
        deferred: list[BaseException] = []

        def step(action: Callable[[], object]) -> None:
            for _ in range(FINISH_ATTEMPTS):
                try:
                    action()
                    return
                except BaseException as raised:  # the cleanup finishes whatever comes
                    deferred.append(raised)

        def end_unrecorded() -> None:
            if state.running:  # ended before it could say by what: still recorded
                state.end(
                    interrupted_link(
                        links, "the run ended before the host could record what ended it", state
                    )
                )

        def clean() -> None:
            self._clean(run)

        def finished() -> None:
            if state.error is not None and not state.transcript_kept:
                state.error = links.without_transcript(state.error)
            state.ended_at = self._clock.now_utc()
            _say_finished(run)  # again only when the cleanup changed the ending

        def release() -> None:
            if not isinstance(run.runtime, FileSystemError) and self._release(run, run.runtime):
                _say_finished(run)
                _write_end(run)

        said, write_end = partial(_say_finished, run), partial(_write_end, run)
        attest = partial(self._attest, run)  # over the final record, whatever rewrote it
        for action in (end_unrecorded, said, clean, finished, write_end, release, attest):
            step(action)
        if deferred:
            raise deferred[0]
        record = state.record(tracer.final_failures)
        if record.error is not None and tracer.final_failures:
            # Only the returned value can carry a failure of the final write itself.
            record = record.model_copy(
                update={"error": links.with_evidence(record.error, tracer.failure_evidence())}
            )
        return record

    def _attest(self, run: HostRun) -> None:
        """The run's statement, after its final record and only over a record that was
        written: a host that dies before this leaves no statement, never one the record does
        not back (issue 30 §4)."""
        if self._attestor is not None and not run.tracer.final_failures:
            run.attestation_failure = self._attestor.attest(run.state.layout)

    def _release(self, run: HostRun, runtime: RuntimeLayout) -> bool:
        """Remove the runtime directory's owner record and root once the final record is
        written; True when that failed and the run now ends cleanup_failed (its record is to
        be written again)."""
        released = release_runtime_directory(self._fs, runtime)
        if released.ok:
            return False
        state = run.state
        before = run.cleaned
        cause = state.error
        if cause is not None and cause.code == Code.CLEANUP_FAILED:
            cause = cause.causes[0] if cause.causes else None
        if before is not None:
            released = replace(
                released,
                transcript_kept=before.transcript_kept,
                transcript_error=before.transcript_error,
                errors=(*before.errors, *released.errors),
            )
        state.fail(cleanup_link(run.links, released, cause, state))
        return True

    def _clean(self, run: HostRun) -> None:
        """The runtime directory removed (`_cleanup`), then its writable space given back to the
        kernel with everything left in it (idempotent), once the transcript was kept from it and
        the credential copies removed."""
        if isinstance(run.runtime, FileSystemError):
            return
        try:
            self._cleanup(run, run.runtime)
        finally:
            if run.space is not None:
                run.space.close()

    def _cleanup(self, run: HostRun, runtime: RuntimeLayout) -> None:
        state = run.state
        prepared = state.prepared
        transcript = None
        lookup_failed: str | None = None
        if prepared is not None and state.session is not None:
            try:
                transcript = prepared.backend.transcript(prepared.context, state.session)
            except Exception as defect:  # it must not keep the runtime directory in place
                lookup_failed = (
                    f"session {state.session}: the host could not find its "
                    f"transcript: {type(defect).__name__}: {defect}"
                )
        if transcript is not None and not self._fs.lexists(transcript):
            # A session the agent named but never wrote (pi writes its file only after the
            # first answer): there is no transcript to keep, which is no cleanup failure.
            transcript = None
        cleaned = cleanup_runtime_directory(
            self._fs,
            runtime,
            run.credential_copies,
            transcript,
            state.layout.transcript if transcript else None,
            keep_owner=True,
        )
        if lookup_failed is not None:
            cleaned = replace(cleaned, transcript_error=lookup_failed)
        run.cleaned = cleaned
        # A cleanup done again (an exception interrupted the first) finds no transcript left to
        # keep when the first kept it and removed the directory: kept stays kept.
        state.transcript_kept = state.transcript_kept or (
            transcript is not None and cleaned.transcript_kept
        )
        if cleaned.ok:
            return
        if state.error is not None and state.error.code == Code.CLEANUP_FAILED:
            return  # told by an earlier attempt
        state.fail(cleanup_link(run.links, cleaned, state.error, state))


def _say_finished(run: HostRun) -> None:
    """The progress file says the run finished, with how it ended (again only when that
    changed since it last said so)."""
    state = run.state
    status = cast(ProgressStatus, state.outcome or state.status)
    if run.progress.phase_now != "finished" or run.progress.status_now != status:
        run.progress.phase("finished", max(1, len(state.rounds)), status=status)


def _write_end(run: HostRun) -> None:
    """The run's final record: its files with their digests, every refused trace write as
    evidence of an error."""
    state, tracer = run.state, run.tracer
    state.files = tracer.run_files(state.layout)
    if state.error is not None and tracer.failures:
        state.error = run.links.with_evidence(state.error, tracer.failure_evidence())
    state.write_node(tracer, "end")
