"""One round's agent process (seed 000 "Rounds"): what the worker could have planted for the
program's own process cleared, the confinement's mounts checked, the process started in the
round's control group and followed to the end of its output (each tool use updates the progress
file), its whole process group killed and its leader reaped whatever ends the round, the stderr
tail (its last 80,000 bytes) and the group's resources kept in the round's node, and the
backend's report of the round with the limits the group reached and the note of the output
lines the reader could not use (`agent.stdout`, domain.run.stdout).
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from typing import Any

from concorde_workers.application.evidence.report import MAX_TRANSCRIPT_BYTES
from concorde_workers.application.preparation.confinement import confinement_launch_problem
from concorde_workers.application.preparation.program_identity import program_changed
from concorde_workers.application.rounds.activity import ActivityFlusher, follow
from concorde_workers.application.rounds.round_context import RoundContext
from concorde_workers.application.runtime.run_state import RoundState
from concorde_workers.domain.ground.layout import STDERR_TAIL_BYTES
from concorde_workers.domain.isolation.launch import LaunchCommand
from concorde_workers.domain.run.agent_report import RoundReport
from concorde_workers.domain.run.rounds import RoundEnding
from concorde_workers.domain.run.stdout import STDOUT_NOTE_KEY, stdout_note
from concorde_workers.ports.agents.agent import RoundKind, StreamReader
from concorde_workers.ports.machine.filesystem import EntryKind, FileSystemError
from concorde_workers.ports.processes.process import ProcessHandle, ProcessStartFailed
from concorde_workers.ports.processes.resources import ResourceGroup

__all__ = ["EXIT_GRACE_SECONDS", "AgentProcess"]

# After stdout ends, how long the host waits for the leader to exit before it kills the group.
EXIT_GRACE_SECONDS = 10.0


class AgentProcess:
    """Runs one round's agent process for the rounds of one run."""

    def __init__(self, context: RoundContext) -> None:
        self.context = context

    def run(
        self, round_state: RoundState, kind: RoundKind, prompt: str, continues: bool
    ) -> RoundReport:
        context = self.context
        prepared = context.prepared
        session = context.state.session if continues else None
        reader = prepared.backend.reader(prepared.context)
        stale = (
            self._clear_scratch()
            or self._seed_cache(round_state.number)
            or self._unconfinable()
            or program_changed(context.fs, prepared.programs)
        )
        group = None
        if stale is None:  # each round in a control group of its own (issue 20)
            group, stale = context.resources.open(round_state.number)
        if stale is not None:
            round_state.failure = stale
            return RoundReport(ending=RoundEnding.NOT_STARTED, failure=stale)
        # The confinement shows the round its own group alone (issue 30 §2): built once the
        # group is made.
        command = prepared.round_command(
            kind,
            session,
            group.folders() if group else (),
            context.space.join() if context.space else (),
        )
        handle = _start(context, command, prompt, group)
        if isinstance(handle, str):
            round_state.failure = handle
            return RoundReport(ending=RoundEnding.NOT_STARTED, failure=handle)
        unregister = context.cancel.on_cancel(handle.kill_group)
        flusher = ActivityFlusher(context.progress)
        read_to_the_end = False
        try:
            follow(handle, reader, flusher, group, context.events, round_state.number)
            handle.wait(EXIT_GRACE_SECONDS)  # the leader's own exit, before the group is killed
            read_to_the_end = True
        finally:
            # No worker process outlives its round (seed 000): kill the whole group, always,
            # and wait until the group was killed and its leader reaped, also when an exception
            # ends the round and the run goes on to remove the runtime directory.
            handle.kill_group()
            unregister()
            flusher.stop()
            exit_status = handle.wait(None)  # confined: the waiter's exact report
            stderr = handle.stderr_tail(STDERR_TAIL_BYTES)
            space_used = context.space.used() if context.space else None
            used, reached = context.resources.close(group, stderr, space_used)
            context.tracer.write_stderr(context.state.layout, round_state.number, stderr)
            context.tracer.write_resources(context.state.layout, round_state.number, used)
            context.events.resources(round_state.number, used)
            round_state.files = context.tracer.round_files(context.state.layout, round_state.number)
            round_state.stderr_tail = stderr.decode("utf-8", "replace")
            if not read_to_the_end:
                # An exception ends the round: what the output said so far still names the
                # session whose transcript the run keeps (seed 000 "Run directory").
                self._keep_what_was_said(round_state, reader, exit_status, handle.timed_out)
        report = reader.finish(exit_status, handle.timed_out, round_state.stderr_tail)
        return _as_reported(report, reached, stdout_note(reader.ignored, handle.overlong))

    def _keep_what_was_said(
        self,
        round_state: RoundState,
        reader: StreamReader,
        exit_status: int | None,
        timed_out: bool,
    ) -> None:
        try:
            report = reader.finish(exit_status, timed_out, round_state.stderr_tail)
        except Exception:  # the exception that ends the round is the one to go on
            return
        round_state.report, round_state.exit = report, report.exit
        if report.session:
            round_state.session = self.context.state.session = report.session

    def tell_calls_of_transcript(self, number: int, session: str | None) -> None:
        """A program whose output does not carry its calls (Codex): the events tell them from
        the session's transcript, read bounded, once the round's program has ended; nothing
        when no one watches."""
        context, prepared = self.context, self.context.prepared
        if not context.events.watching or prepared.backend.profile.transcript.in_output:
            return
        path = prepared.backend.transcript(prepared.context, session) if session else None
        if path is None:
            return
        try:
            data = context.fs.read_regular(path, MAX_TRANSCRIPT_BYTES)
        except FileSystemError:
            return
        context.events.transcript_lines(number, data.decode("utf-8", "replace").splitlines())

    def _clear_scratch(self) -> str | None:
        """Remove what a worker could have planted for the agent program's own process before
        the round starts (notes/pi.md §9); a link is removed, never followed. The round does not
        start when that fails."""
        fs = self.context.fs
        prepared = self.context.prepared
        for path in prepared.backend.round_scratch(prepared.context):
            try:
                if not fs.lexists(path):
                    continue
                if fs.is_dir(path) and not fs.is_symlink(path):
                    fs.rmtree(path)
                else:
                    fs.remove(path)
            except FileSystemError as error:
                return f"the host could not clear {path} before the round: {error.os_error_text}"
        return None

    def start_compilation(self) -> None:
        """Once round 1's program has ended: the compilation overlaps the audit, the checks and
        the validation, not the program's own start (issue 32 §4); later calls do nothing."""
        compilation = self.context.compilation
        if compilation is not None and compilation.compiled is not None:
            compilation.start(posixpath.dirname(compilation.compiled.folder))

    def _seed_cache(self, number: int) -> str | None:
        """The cache the host compiles once a run (`CacheCompilation`), copied into the
        program's cache the scratch just cleared: the regular files of the host's folder only,
        written anew (issue 32 §4). Round 1 compiles for itself (the compilation starts when
        its program ends); a later round waits for the compilation's end. A compilation that
        failed: nothing, the program compiles for itself."""
        fs = self.context.fs
        compilation = self.context.compilation
        if compilation is None or compilation.compiled is None or number == 1:
            return None
        compiled = compilation.compiled
        if not compilation.done(wait=True):
            return None
        if not fs.is_dir(compiled.folder) or fs.is_symlink(compiled.folder):
            return None
        try:
            files = [e.name for e in fs.listdir(compiled.folder) if e.kind is EntryKind.FILE]
            if files:
                fs.makedirs(compiled.cache, 0o700)
            for name in files:
                data = fs.read_bytes(posixpath.join(compiled.folder, name))
                fs.write_atomic(posixpath.join(compiled.cache, name), data, 0o600)
        except FileSystemError as error:
            return (
                f"the host could not fill {compiled.cache} before the round: {error.os_error_text}"
            )
        return None

    def _unconfinable(self) -> str | None:
        """A confined round starts only when every mount still lands where it was planned, and
        only when its program exists: inside the confinement a missing program would be bwrap's
        error after the launch, not the launch failure it is."""
        prepared = self.context.prepared
        if prepared.confinement is None:
            return None
        if not prepared.program_found:
            return f"the command {prepared.program} could not be started: the program was not found"
        return confinement_launch_problem(self.context.fs, prepared.confinement)


def _start(
    context: RoundContext, command: LaunchCommand, prompt: str, group: ResourceGroup | None
) -> ProcessHandle | str:
    """The round's process, started in its group; why it could not be started (its group
    closed) when the system refused it."""
    try:
        return context.processes.start(
            command.argv,
            context.prepared.environment,
            command.cwd,
            prompt,
            timeout_seconds=context.state.request.limits.timeout_seconds,
            prefix=group.prefix() if group else (),
        )
    except ProcessStartFailed as failed:
        context.resources.close(group)
        return f"the command {command.argv[0]} could not be started: {failed.os_error_text}"


def _as_reported(
    report: RoundReport, reached: Sequence[str], note: dict[str, Any] | None
) -> RoundReport:
    """The reader's report with the limits the round's group reached and the note of the
    output lines the reader could not use."""
    if reached:
        report = report.model_copy(
            update={
                "ending": RoundEnding.LIMIT_REACHED,
                "limit": "; ".join(reached),
                "host_limits": tuple(reached),
            }
        )
    if note is None:
        return report
    return report.model_copy(update={"agent": {**report.agent, STDOUT_NOTE_KEY: note}})
