"""Preparing a run: everything the host settles before it launches round 1, as one value.

The run host and the dry-run planner share this code, so the planner shows exactly what a run
would do, or meets the very refusal the run would meet. The order is the spec's (seed 000): the
task type and the grant, the placement ("before it generates anything"), the Git administrative
paths, the pi prerequisites, the policy and its run-directory guard, then the brief, the control
files, the command line and the environment. Nothing here writes a file or starts a program, but
the program-version port (ports/processes/program_versions.py), which asks a program that lies in
no npm package its version once, and caches the answer per user.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping
from dataclasses import replace

from concorde_workers.application.preparation.beside_judge import BesideJudge, run_directories
from concorde_workers.application.preparation.confinement import plan_confinement
from concorde_workers.application.preparation.placement_reader import GitFound, PlacementReader
from concorde_workers.application.preparation.prepared import HostFacts, Prepared, Progress
from concorde_workers.application.preparation.program_identity import with_identity
from concorde_workers.application.setup.machine_files import (
    backend_machine_file,
    copies_problem,
    read_copies,
)
from concorde_workers.contracts import worker_result_schema
from concorde_workers.domain.boundary.grant import Grant, parse_grant
from concorde_workers.domain.boundary.policy import Policy, build_policy
from concorde_workers.domain.boundary.task_types import TASK_TYPES
from concorde_workers.domain.configuration.machine import MachineFileAnswer
from concorde_workers.domain.configuration.profile import Profiles, entries_of
from concorde_workers.domain.configuration.program_versions import ProgramVersion, version_refusal
from concorde_workers.domain.configuration.request import RunRequest
from concorde_workers.domain.gitview.git_status import GitRepository
from concorde_workers.domain.gitview.placement import (
    AdminPath,
    Placement,
    collect_admin_paths,
)
from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.ground.errors import Reason, Refusal
from concorde_workers.domain.ground.paths import DirEntry, is_within
from concorde_workers.domain.isolation.launch import schema_text
from concorde_workers.domain.run.brief import compose_brief
from concorde_workers.ports.agents.agent import AgentBackend, BackendContext, RoundKind
from concorde_workers.ports.machine.filesystem import DirectoryListing, FileSystemError, TreeReading
from concorde_workers.ports.processes.program_versions import ProgramVersions
from concorde_workers.ports.repository.git import GitCommandFailed, GitReader

REQUEST_INVALID = Code.REQUEST_INVALID


class Preparer:
    """Settles a run before launch over the Git and filesystem ports."""

    def __init__(
        self,
        git: GitReader,
        fs: TreeReading,
        host: HostFacts,
        backends: Mapping[str, AgentBackend],
        versions: ProgramVersions,
        profiles: Profiles,
    ) -> None:
        self._git = git
        self._credentials = [profile.credentials for profile in profiles.values()]
        self._entries = entries_of(profiles)
        self._fs = fs
        self._host = host
        self._backends = backends
        self._versions = versions
        self._placer = PlacementReader(git, fs)
        self._beside = BesideJudge(fs, host, self._credentials)

    def prepare(
        self, request: RunRequest, run_id: str, runtime_dir: str, progress: Progress | None = None
    ) -> Prepared | Refusal:
        """Everything up to round 1, or the refusal the run meets first."""
        try:
            return self._prepare(request, run_id, runtime_dir, progress or Progress())
        finally:
            self._placer.kept.close()

    def _prepare(
        self, request: RunRequest, run_id: str, runtime_dir: str, seen: Progress
    ) -> Prepared | Refusal:
        settled = self._settle(request, posixpath.dirname(runtime_dir), seen)
        if isinstance(settled, Refusal):
            return settled
        grant, placement, (repository, admin, git_entries) = settled
        backend = self._backends[request.backend]
        machine = backend.check(placement.primary) or self._machine_file(backend)
        if isinstance(machine, Refusal):
            return machine
        seen.programs = self.programs(request, placement.primary)
        too_old = version_refusal(seen.programs)  # a home of `/` was refused beside the grant
        if too_old is not None:
            return too_old
        policy = self._policy(request, grant, placement, admin, runtime_dir)
        seen.policy, seen.tools = policy, backend.profile.tool_set(grant)
        code = backend.profile.run_directory_code
        if code is Code.RUN_DIRECTORY_DENIED and policy.run_directory_refusal is not None:
            return policy.run_directory_refusal
        refused = (
            runtime_inside(runtime_dir, placement, admin, code) or policy.hidden_worktree_refusal
        )
        if refused is not None:
            return refused
        prepared = self._generate(
            request,
            run_id,
            runtime_dir,
            backend,
            grant,
            placement,
            admin,
            policy,
            (repository, git_entries),
            machine,
        )
        if isinstance(prepared, Refusal):
            return prepared
        return replace(prepared, programs=seen.programs)

    def _policy(
        self,
        request: RunRequest,
        grant: Grant,
        placement: Placement,
        admin: tuple[AdminPath, ...],
        runtime_dir: str,
    ) -> Policy:
        """The policy from the one frozen grant, hiding every origin of a credential."""
        origins, forms = self._beside.origins, self._beside.forms
        model_map = [request.model_map] if request.model_map else []
        return build_policy(
            grant=grant,
            worktree=placement.worktree,
            primary=placement.primary,
            user_home=self._fs.realpath(self._host.user_home),
            runtime_dir=runtime_dir,
            runtime_entries=self._entries,
            runtime_paths=request.runtime_paths,
            git=admin,
            list_dir=listing(self._fs),
            homes=forms(list(origins.homes)),
            config_dirs=forms(list(origins.directories)),
            credentials=forms([*origins.files, *model_map]),
            run_directories=forms(run_directories(request)),
            tmpdir=self._host.environ.get("TMPDIR"),
        )

    def _machine_file(self, backend: AgentBackend) -> MachineFileAnswer | Refusal:
        """The backend's own machine file (Claude Code's endpoints.json) through the one reader
        of machine files: what it adds to each round, or launch_failed naming it and the repair
        (never a silent fallback to another endpoint than the one configured)."""
        answer = backend_machine_file(self._fs, self._host.environ, backend.profile)
        if answer.problem is None:
            return answer
        return Refusal(
            code=Code.LAUNCH_FAILED,
            reason=Reason.ENVIRONMENT,
            message=answer.problem,
            file=answer.file,
        )

    def copies_refusal(self, backend: AgentBackend, context: BackendContext) -> Refusal | None:
        """launch_failed naming the file, the entry and the repair when a file the run copies
        cannot be read within its bound, or holds what the program would reject or misread
        (its profile's judge: pi's models.json and auth.json as pi 0.73.1 reads them); the host
        asks it again of what it copies."""
        copies = read_copies(
            self._fs,
            backend.credential_copies(context),
            backend.profile.credentials,
            self._host.environ,
        )
        problem = copies_problem(
            backend.profile, copies, context.request.local_model, self._host.environ
        )
        if problem is None:
            return None
        file, message = problem
        return Refusal(
            code=Code.LAUNCH_FAILED, reason=Reason.ENVIRONMENT, message=message, file=file
        )

    def programs(self, request: RunRequest, primary: str) -> tuple[ProgramVersion, ...]:
        """The agent programs the request's backend runs, each with its version."""
        backend = self._backends[request.backend]
        return tuple(
            with_identity(
                self._fs,
                self._versions.version_of(location).model_copy(update={"origin": location.origin}),
            )
            for location in backend.programs(self._host.environ, primary)
        )

    def refusal_before_run(self, request: RunRequest, temp_root: str) -> Refusal | None:
        """`WorkerHost.refusal_before_run`: `beside_refusal`. A program too old is not
        refused here: its run ends failed at the prerequisites with its record, as a missing
        one does (domain/configuration/program_versions.py)."""
        return self._placer.kept.judging(request, lambda: self.beside_refusal(request, temp_root))

    def placement_refusal(self, worktree: str) -> Refusal | None:
        """Why `worktree` is no worktree a run can be made in (worktree_misplaced with its
        repair, or request_invalid for a name with a control character), None when it is one:
        what `prepare` would refuse at its placement step."""
        placement = self._placer.placement(worktree)
        return placement if isinstance(placement, Refusal) else None

    def git_dir(self, request: RunRequest) -> str | None:
        """The worktree's own Git directory, as placement finds it (asked once in the request's
        window, `PlacementAnswers`): where the command line's lock lies. None when the worktree
        is none a run can be made in (the run refuses it itself)."""
        placement = self._placer.placement(request.worktree)
        if isinstance(placement, Refusal):
            return None
        try:
            git_dir, _ = self._placer.kept.ask("git_dirs", placement.worktree, self._git.git_dirs)
        except GitCommandFailed:
            return None
        return git_dir

    def beside_refusal(self, request: RunRequest, temp_root: str) -> Refusal | None:
        """The refusal of the request's own input (its runtime paths, its project interpreter,
        its worktree's name) that `prepare` would meet, or None, also when `prepare` would meet
        another refusal first. The host asks this before a run exists
        (`WorkerHost.refusal_before_run`): request_invalid is none of a run's codes.

        It costs four read-only Git calls (kept for `prepare`), not the walk of the worktree: it
        judges against the Git directories rev-parse names. The `.git` entries only the walk
        finds (a nested repository's `gitdir:` target outside the common directory) are judged
        by `prepare`, which then ends the run launch_failed."""
        grant = grant_of(request)
        if isinstance(grant, Refusal):
            return None
        placement = self._placer.placement(request.worktree)
        if isinstance(placement, Refusal):
            return placement if placement.code == REQUEST_INVALID else None
        try:
            git_dir, common_dir = self._placer.kept.ask(
                "git_dirs", placement.worktree, self._git.git_dirs
            )
        except GitCommandFailed:
            return None
        return self._beside.refusal(
            request, grant, placement, collect_admin_paths(git_dir, common_dir), temp_root
        )

    def _settle(
        self, request: RunRequest, temp_root: str, seen: Progress
    ) -> tuple[Grant, Placement, GitFound] | Refusal:
        """The grant, the placement, the Git administrative paths, then what the request lists
        beside the grant (before anything is generated)."""
        grant = grant_of(request)
        if isinstance(grant, Refusal):
            return grant
        seen.grant = grant
        placement = self._placer.placement(request.worktree)
        if isinstance(placement, Refusal):
            return placement
        seen.placement = placement
        found = self._placer.admin_paths(placement.worktree, request.runtime_paths)
        if isinstance(found, Refusal):
            return found
        _, admin, _ = found
        seen.admin_paths = admin
        refusal = self._beside.refusal(request, grant, placement, admin, temp_root)
        if refusal is not None:
            return refusal
        return grant, placement, found

    # --- the steps ---------------------------------------------------------------------------

    def _generate(
        self,
        request: RunRequest,
        run_id: str,
        runtime_dir: str,
        backend: AgentBackend,
        grant: Grant,
        placement: Placement,
        admin: tuple[AdminPath, ...],
        policy: Policy,
        git: tuple[GitRepository, tuple[str, ...]],
        machine: MachineFileAnswer,
    ) -> Prepared | Refusal:
        added = machine.adds
        context = self._context(request, run_id, backend, grant, placement, policy)
        context = context.model_copy(update={"machine": dict(machine.settings)})
        copies = self.copies_refusal(backend, context)
        if copies is not None:
            return copies
        try:
            command = backend.command(context, RoundKind.INITIAL, None)
            environment = {**backend.environment(context), **added}
        except ValueError as bad:
            return Refusal(
                code=Code.REQUEST_INVALID,
                reason=Reason.INPUT,
                message=f"the request cannot make a command line: {bad}",
            )
        confinement = plan_confinement(
            self._fs,
            backend,
            context,
            self._host.interpreter_roots,
            self._host.linux,
            self._host.control_groups,
        )
        if isinstance(confinement, Refusal):
            return confinement
        if confinement is not None:
            command = confinement.wrap(command)
        return Prepared(
            run_id=run_id,
            runtime_dir=runtime_dir,
            backend=backend,
            context=context,
            grant=grant,
            placement=placement,
            admin_paths=admin,
            generated=backend.generate(context),
            command=command,
            environment=environment,
            repository=git[0],
            git_entries=git[1],
            confinement=confinement,
            key_variables=machine.credentials,
        )

    def _context(
        self,
        request: RunRequest,
        run_id: str,
        backend: AgentBackend,
        grant: Grant,
        placement: Placement,
        policy: Policy,
    ) -> BackendContext:
        """What the backend generates from: the brief in its profile's words, the result
        schema, the policy and the host's facts."""
        brief = compose_brief(
            variant=backend.profile.brief,
            task_type=grant.task_type.value,
            worktree=placement.worktree,
            grant=grant,
            instructions=request.instructions,
            interpreter=request.project_interpreter,
        )
        return BackendContext(
            request=request,
            run_id=run_id,
            policy=policy,
            brief=brief,
            result_schema=schema_text(worker_result_schema(request.output_schema)),
            environ=self._host.environ,
            interpreter=self._host.interpreter,
            as_root=self._host.as_root,
        )


# --- the pure steps ------------------------------------------------------------------------------


def grant_of(request: RunRequest) -> Grant | Refusal:
    """The request's grant as parsed for its task type, or grant_unavailable."""
    if request.task_type not in TASK_TYPES:
        return Refusal(
            code=Code.GRANT_UNAVAILABLE,
            reason=Reason.INPUT,
            message=f"the request's task type {request.task_type!r} is not a known task "
            f"type; a known task type is one of {', '.join(TASK_TYPES)}",
        )
    return parse_grant(request.grant, request.task_type)


def runtime_inside(
    runtime_dir: str, placement: Placement, admin: tuple[AdminPath, ...], code: Code
) -> Refusal | None:
    """A runtime directory inside the worktree or a Git administrative path would be a
    file the host creates in the worktree (or Git metadata the worker may write): refused.
    `code` is the backend profile's: Claude Code names it run_directory_denied; pi has no
    such code (seed 001 "Errors"), so there it is launch_failed."""
    where = next(
        (p for p in (placement.worktree, *(a.path for a in admin)) if is_within(runtime_dir, p)),
        None,
    )
    if where is None:
        return None
    return Refusal(
        code=code,
        reason=Reason.ENVIRONMENT,
        message=f"the runtime directory {runtime_dir} would lie inside {where}, "
        "which the worker may not have as its own; set TMPDIR to a directory "
        "outside the repository (the host uses /tmp when it is writable)",
    )


def listing(fs: DirectoryListing) -> Callable[[str], list[DirEntry]]:
    """A folder's entries for the policy's walk, none where it cannot be listed."""

    def entries(path: str) -> list[DirEntry]:
        try:
            return fs.listdir(path)
        except FileSystemError:
            return []

    return entries
