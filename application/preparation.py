"""Preparing a run: everything the host settles before it launches round 1, as one value.

The run host and the dry-run planner share this code, so the planner shows exactly what a run
would do, or meets the very refusal the run would meet. The order is the spec's (seed 000): the
task type and the grant, the placement ("before it generates anything"), the Git administrative
paths, the pi prerequisites, the policy and its run-directory guard, then the brief, the control
files, the command line and the environment. Nothing here writes a file or starts a program.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field

from concorde_workers.contracts import worker_result_schema
from concorde_workers.domain.brief import compose_brief
from concorde_workers.domain.claude_settings import claude_settings, digest_text, settings_text
from concorde_workers.domain.environment import worker_environment
from concorde_workers.domain.errors import Reason, Refusal
from concorde_workers.domain.grant import Grant, parse_grant
from concorde_workers.domain.launch import LaunchCommand, claude_command, pi_command, schema_text
from concorde_workers.domain.paths import DirEntry
from concorde_workers.domain.placement import (
    AdminPath,
    Placement,
    check_placement,
    collect_admin_paths,
    find_git_entries,
    parse_commondir_file,
    parse_gitdir_file,
)
from concorde_workers.domain.policy import Policy, build_policy
from concorde_workers.domain.prerequisites import (
    SANDBOX_RUNTIME_ENTRY,
    SANDBOX_RUNTIME_RELATIVE,
    PiPrerequisites,
    pi_runtime_refusal,
)
from concorde_workers.domain.request import RunRequest
from concorde_workers.domain.task_types import TASK_TYPES
from concorde_workers.ports.filesystem import FileSystem, FileSystemError
from concorde_workers.ports.git import GitCommandFailed, GitReader


@dataclass(frozen=True)
class HostFacts:
    """What the host knows of itself: its environment, its own interpreter (which runs the write
    hook), whether it runs as root, and the operating system."""

    environ: Mapping[str, str]
    interpreter: str
    user_home: str
    as_root: bool
    linux: bool = True


@dataclass(frozen=True)
class Prepared:
    """A run ready to launch: the frozen grant and everything generated from it."""

    run_id: str
    runtime_dir: str
    grant: Grant
    placement: Placement
    admin_paths: tuple[AdminPath, ...]
    policy: Policy
    brief: str
    result_schema: str
    control_files: dict[str, str]
    settings_digest: str | None
    command: LaunchCommand
    environment: dict[str, str]
    program: str
    program_found: bool
    prerequisites: PiPrerequisites | None = None

    @property
    def grant_digest(self) -> str:
        return self.grant.digest()

    @property
    def brief_digest(self) -> str:
        return digest_text(self.brief)


@dataclass
class Progress:
    """What the preparation settled before it stopped: shown beside a refusal."""

    grant: Grant | None = None
    placement: Placement | None = None
    admin_paths: tuple[AdminPath, ...] = ()
    policy: Policy | None = None
    prerequisites: PiPrerequisites | None = None
    notes: list[str] = field(default_factory=list)


class Preparer:
    """Settles a run before launch over the Git and filesystem ports."""

    def __init__(self, git: GitReader, fs: FileSystem, host: HostFacts) -> None:
        self._git = git
        self._fs = fs
        self._host = host

    def prepare(self, request: RunRequest, run_id: str, runtime_dir: str,
                progress: Progress | None = None) -> Prepared | Refusal:
        """Everything up to round 1, or the refusal the run meets first."""
        seen = progress if progress is not None else Progress()
        grant = self._grant(request)
        if isinstance(grant, Refusal):
            return grant
        seen.grant = grant
        placement = self._placement(request.worktree)
        if isinstance(placement, Refusal):
            return placement
        seen.placement = placement
        admin = self._admin_paths(placement.worktree, request.runtime_paths)
        if isinstance(admin, Refusal):
            return admin
        seen.admin_paths = admin
        prerequisites = None
        if request.backend == "pi":
            prerequisites = self._pi_prerequisites(placement.primary)
            seen.prerequisites = prerequisites
            missing = pi_runtime_refusal(prerequisites)
            if missing is not None:
                return missing
        policy = build_policy(
            grant=grant, worktree=placement.worktree, primary=placement.primary,
            user_home=self._user_home(), runtime_dir=runtime_dir,
            runtime_paths=request.runtime_paths, git=admin, list_dir=self._list_dir,
        )
        seen.policy = policy
        if request.backend == "claude" and policy.run_directory_refusal is not None:
            return policy.run_directory_refusal
        return self._generate(request, run_id, runtime_dir, grant, placement, admin, policy,
                              prerequisites)

    # --- the steps ---------------------------------------------------------------------------

    @staticmethod
    def _grant(request: RunRequest) -> Grant | Refusal:
        if request.task_type not in TASK_TYPES:
            return Refusal(
                code="grant_unavailable", reason=Reason.INPUT,
                message=f"the request's task type {request.task_type!r} is not a known task "
                f"type; a known task type is one of {', '.join(TASK_TYPES)}",
            )
        return parse_grant(request.grant, request.task_type)

    def _placement(self, worktree: str) -> Placement | Refusal:
        if not posixpath.isabs(worktree):
            return _misplaced(f"the worktree {worktree!r} is not an absolute path; give the "
                              "absolute path of a worktree in .claude/worktrees/")
        if not self._fs.is_dir(worktree):
            return _misplaced(f"the worktree {worktree} does not exist or is no directory; "
                              "create it with git worktree add under .claude/worktrees/ of the "
                              "primary worktree")
        real = self._fs.realpath(worktree)
        try:
            toplevel = self._git.toplevel(real)
            worktrees = self._git.worktrees(real)
        except GitCommandFailed as failed:
            return check_placement(real, None, failed.output or str(failed))
        if toplevel != real:
            return _misplaced(f"the worktree {real} is not the top level of a Git worktree "
                              f"(Git's top level is {toplevel}); give the worktree's own "
                              "directory in .claude/worktrees/")
        primary = worktrees[0] if worktrees and not worktrees[0].bare else None
        said = "the repository is bare" if worktrees and worktrees[0].bare else ""
        return check_placement(real, primary.path if primary else None, said)

    def _admin_paths(self, worktree: str, runtime_paths: tuple[str, ...]
                     ) -> tuple[AdminPath, ...] | Refusal:
        try:
            git_dir, common_dir = self._git.git_dirs(worktree)
        except GitCommandFailed as failed:
            return _misplaced(f"Git could not name the Git directories of {worktree}: "
                              f"{failed.output.strip() or failed}")
        entries: list[AdminPath] = []
        targets: list[str] = []
        for found in find_git_entries(worktree, self._list_dir, runtime_paths):
            directory = self._fs.is_dir(found.path) and not self._fs.is_symlink(found.path)
            real = self._fs.realpath(found.path)
            entries += [AdminPath(path=found.path, directory=directory),
                        AdminPath(path=real, directory=self._fs.is_dir(real))]
            if not directory:
                targets += self._gitdir_targets(found.path)
        return collect_admin_paths(git_dir, common_dir, entries, targets)

    def _gitdir_targets(self, git_file: str) -> list[str]:
        """The Git directory a `.git` file names, and that directory's commondir target."""
        text = self._read(git_file)
        target = parse_gitdir_file(text, posixpath.dirname(git_file)) if text else None
        if target is None:
            return []
        target = self._fs.realpath(target)
        common_text = self._read(posixpath.join(target, "commondir"))
        common = parse_commondir_file(common_text, target) if common_text else None
        return [target] + ([self._fs.realpath(common)] if common else [])

    def _pi_prerequisites(self, primary: str) -> PiPrerequisites:
        env = self._host.environ
        path = env.get("PATH", "")
        package = env.get("CONCORDE_SANDBOX_RUNTIME") or posixpath.join(
            primary, SANDBOX_RUNTIME_RELATIVE)
        entry = posixpath.join(package, SANDBOX_RUNTIME_ENTRY)
        return PiPrerequisites(
            pi=self._program("pi", env.get("CONCORDE_PI")),
            rg=self._fs.which("rg", path),
            fd=self._fs.which("fd", path) or self._fs.which("fdfind", path),
            sandbox_runtime=package if self._fs.is_file(entry) else None,
            sandbox_runtime_looked_at=package,
            bwrap=self._fs.which("bwrap", path), socat=self._fs.which("socat", path),
            linux=self._host.linux,
        )

    def _generate(self, request: RunRequest, run_id: str, runtime_dir: str, grant: Grant,
                  placement: Placement, admin: tuple[AdminPath, ...], policy: Policy,
                  prerequisites: PiPrerequisites | None) -> Prepared | Refusal:
        backend = request.backend
        brief = compose_brief(backend=backend, task_type=grant.task_type.value,
                              worktree=placement.worktree, grant=grant,
                              instructions=request.instructions,
                              interpreter=request.project_interpreter)
        result_schema = schema_text(worker_result_schema(request.output_schema))
        rt = policy.runtime
        control = {rt.result_schema: result_schema}
        settings_digest: str | None = None
        if backend == "claude":
            found = self._program("claude", self._host.environ.get("CONCORDE_CLAUDE"))
            text = settings_text(claude_settings(policy, self._host.interpreter,
                                                 as_root=self._host.as_root))
            control[rt.settings] = text
            settings_digest = digest_text(text)
        else:
            found = prerequisites.pi if prerequisites else None
        program = found or self._host.environ.get(f"CONCORDE_{backend.upper()}") or backend
        try:
            command = self._command(request, run_id, policy, result_schema, program)
        except ValueError as bad:
            return Refusal(code="request_invalid", reason=Reason.INPUT,
                           message=f"the request cannot make a command line: {bad}")
        environment = worker_environment(backend, self._host.environ, rt,
                                         request.project_interpreter)
        return Prepared(
            run_id=run_id, runtime_dir=runtime_dir, grant=grant, placement=placement,
            admin_paths=admin, policy=policy, brief=brief, result_schema=result_schema,
            control_files=control, settings_digest=settings_digest, command=command,
            environment=environment, program=program, program_found=found is not None,
            prerequisites=prerequisites,
        )

    @staticmethod
    def _command(request: RunRequest, run_id: str, policy: Policy, result_schema: str,
                 program: str) -> LaunchCommand:
        if request.backend == "claude":
            return claude_command(
                runtime=policy.runtime, tools=policy.tools_for("claude"),
                result_schema=result_schema, max_turns=request.limits.max_turns,
                max_budget_usd=request.limits.max_budget_usd, model=request.local_model,
                effort=request.reasoning, program=program,
            )
        return pi_command(runtime=policy.runtime, tools=policy.tools_for("pi"), run_id=run_id,
                          model=request.local_model, thinking=request.reasoning, program=program)

    # --- small I/O helpers --------------------------------------------------------------------

    def _list_dir(self, path: str) -> list[DirEntry]:
        try:
            return self._fs.listdir(path)
        except FileSystemError:
            return []

    def _read(self, path: str) -> str | None:
        try:
            return self._fs.read_text(path)
        except FileSystemError:
            return None

    def _program(self, name: str, override: str | None) -> str | None:
        """`$CONCORDE_<NAME>` when set (a path, or a name looked up on PATH), else `name`."""
        wanted = override or name
        if "/" in wanted:
            return wanted if self._fs.is_file(wanted) else None
        return self._fs.which(wanted, self._host.environ.get("PATH", ""))

    def _user_home(self) -> str:
        return self._fs.realpath(self._host.user_home)


def _misplaced(message: str) -> Refusal:
    return Refusal(code="worktree_misplaced", reason=Reason.ENVIRONMENT, message=message)
