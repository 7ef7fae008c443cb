"""The dry-run planner: what a worker run would do, or the refusal it would meet.

It resolves the worker through the configuration reader when the request names an Operation and
a worker, then runs the very preparation the host runs (`application.preparation`), with a run
id and runtime directory it only names. It writes no file and starts no program. The plan is a
value and one JSON document (`plan_json`); the command line prints it as text
(adapters/cli/views/plan_text.py).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from concorde_workers.application.preparation.credential_presence import missing_credentials
from concorde_workers.application.preparation.preparation import Preparer
from concorde_workers.application.preparation.prepared import Prepared, Progress
from concorde_workers.application.preparation.request_notes import notes_for_request
from concorde_workers.application.setup.config import ConfigurationReader
from concorde_workers.application.setup.signing_key import SigningKey
from concorde_workers.domain.boundary.grant import Grant
from concorde_workers.domain.configuration.config import ResolvedWorker
from concorde_workers.domain.configuration.request import RunRequest
from concorde_workers.domain.ground.codes import RUN_CODES, Code
from concorde_workers.domain.ground.errors import Reason, Refusal
from concorde_workers.domain.ground.run_id import run_id, runtime_directory_name
from concorde_workers.domain.isolation.environment import redact
from concorde_workers.ports.machine.clock import Clock
from concorde_workers.ports.machine.filesystem import Walking
from concorde_workers.ports.machine.random import Random


@dataclass(frozen=True)
class Choice:
    """One resolved value and where it came from."""

    value: Any
    source: str

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "source": self.source}


@dataclass
class Plan:
    """The planner's answer: a run that would launch, or the refusal it would meet, with
    everything settled before that point."""

    request: RunRequest
    resolution: dict[str, Choice]
    run_id: str
    runtime_directory: str
    refusal: Refusal | None = None
    """What the configuration reader or the preparation refuses (the first it meets)."""
    prepared: Prepared | None = None
    progress: Progress = field(default_factory=Progress)
    input_refusals: list[Refusal] = field(default_factory=list)
    """What the command line refuses of a request first, before it resolves the worker (a
    parent trace folder that is not there): `run` refuses it before the run exists."""
    request_refusals: list[Refusal] = field(default_factory=list)
    """What the command line refuses of a request once its worker is resolved (no
    instructions): `run` refuses it before the run exists."""
    checks_refusal: Refusal | None = None
    """A check that cannot start in any round (`ChecksPreview.refusal`): the command line
    refuses the run before it exists."""
    launch_refusals: list[Refusal] = field(default_factory=list)
    """What ends a prepared run launch_failed as round 1 starts: limits this machine cannot
    enforce, a program that is not there."""

    @property
    def reasons(self) -> tuple[Refusal, ...]:
        """Every reason a run would not launch, in the order `run` meets them: a refusal no run
        is made for (a code no run ends with: the request, the configuration reader; then what
        the command line refuses of the request), then a check that cannot start (asked before
        the run), then what the run itself ends with (its preparation, then round 1's
        launch). The first is the plan's verdict."""
        early = [r for r in (self.refusal,) if r is not None and r.code not in RUN_CODES]
        ran = [r for r in (self.refusal,) if r is not None and r.code in RUN_CODES]
        checks = [self.checks_refusal] if self.checks_refusal is not None else []
        return (
            *self.input_refusals,
            *early,
            *self.request_refusals,
            *checks,
            *ran,
            *self.launch_refusals,
        )

    @property
    def launches(self) -> bool:
        """A run would launch and every check could start: `plan`'s exit status 0."""
        return not self.reasons and self.prepared is not None

    def to_json(self) -> dict[str, Any]:
        return plan_json(self)


class Planner:
    """Plans a run over the configuration reader and the preparation the host uses."""

    def __init__(
        self,
        preparer: Preparer,
        config_reader: ConfigurationReader,
        clock: Clock,
        random: Random,
        temp_root: str,
        fs: Walking,
        signing_key: SigningKey | None = None,
    ) -> None:
        self._key = signing_key
        self._preparer = preparer
        self._fs = fs
        self._config = config_reader
        self._clock = clock
        self._random = random
        self._temp_root = temp_root

    def plan(self, request: RunRequest, declared: Mapping[str, set[str]] | None = None) -> Plan:
        """Plan `request`. With an Operation and a worker, resolve them through the worker
        configuration first; `declared` are the Operations and worker ids the caller declares
        (default: just the requested one), against which every name of the file is checked."""
        rid = run_id(self._clock.now_utc(), self._random.hex_token(6))
        runtime_dir = posixpath.join(
            self._temp_root, runtime_directory_name(rid, self._random.hex_token(8))
        )
        resolution = request_resolution(request)
        plan = Plan(
            request=request, resolution=resolution, run_id=rid, runtime_directory=runtime_dir
        )
        settled = settle_worker(
            self._config, request, declared or {}, self._preparer.placement_refusal
        )
        # A key that cannot sign refuses every run before it starts: plan says it too.
        refused = self._key_refusal()
        if isinstance(settled, Refusal) or refused is not None:
            plan.refusal = settled if isinstance(settled, Refusal) else refused
            return plan
        if settled is not None:
            plan.request = request = apply_resolution(request, settled)
            plan.resolution = worker_resolution(request, settled)
            if settled.unnamed is not None:
                plan.progress.notes.append(settled.unnamed)
        prepared = self._preparer.prepare(request, rid, runtime_dir, plan.progress)
        # What the request says that its author may not have meant: said, never changed.
        profile = None if isinstance(prepared, Refusal) else prepared.backend.profile
        plan.progress.notes.extend(notes_for_request(self._fs, request, profile))
        if isinstance(prepared, Refusal):
            plan.refusal = prepared
        else:
            plan.prepared = prepared
            missing = missing_credentials(self._fs, prepared)
            if missing is not None:
                plan.progress.notes.append(missing)
            if not prepared.program_found:
                plan.launch_refusals.append(
                    Refusal(
                        code=Code.LAUNCH_FAILED,
                        reason=Reason.ENVIRONMENT,
                        message=f"the program {prepared.program} was not found, so round 1 "
                        "cannot start: install the agent programs (concorde-workers "
                        "install-agents, or ./scripts/setup in a clone) or name the program "
                        "with its variable (concorde-workers doctor says which)",
                    )
                )
        return plan

    def _key_refusal(self) -> Refusal | None:
        return None if self._key is None else self._key.refusal()


def settle_worker(
    config: ConfigurationReader,
    request: RunRequest,
    declared: Mapping[str, set[str]],
    misplaced: Callable[[str], Refusal | None],
) -> ResolvedWorker | Refusal | None:
    """With an Operation and a worker, the worker as its configuration and the model map settle
    it, or the refusal the configuration reader gives (before any run exists); None for a
    request that names neither. Shared by `plan` and `run`, so they cannot drift apart.

    When the reader refuses, `misplaced` (`Preparer.placement_refusal`) is asked first: a
    worktree that is not one is said as itself, with its repair, never as the configuration it
    cannot hold (issue 19 §2); a resolution that succeeds costs no extra Git question."""
    if bool(request.operation) != bool(request.worker):
        return Refusal(
            code=Code.REQUEST_INVALID,
            reason=Reason.INPUT,
            message="the request names an Operation without a worker id or a worker id without "
            "an Operation; give both (--operation and --worker) to resolve the worker "
            "through its configuration, or neither",
        )
    if not (request.operation and request.worker):
        return None
    if not posixpath.isabs(request.worktree):
        return Refusal(
            code=Code.WORKTREE_MISPLACED,
            reason=Reason.ENVIRONMENT,
            message=f"the worktree {request.worktree!r} is not an absolute path; give the "
            "absolute path of a worktree in .claude/worktrees/",
        )
    names = {op: set(ids) for op, ids in declared.items()}
    names.setdefault(request.operation, set()).add(request.worker)
    resolved = config.resolve_worker(request.worktree, request.operation, request.worker, names)
    if isinstance(resolved, Refusal):
        return misplaced(request.worktree) or resolved
    if "backend" in request.model_fields_set and request.backend != resolved.backend:
        return backend_conflict(request, resolved)
    return resolved


def backend_conflict(request: RunRequest, resolved: ResolvedWorker) -> Refusal:
    return Refusal(
        code=Code.REQUEST_INVALID,
        reason=Reason.INPUT,
        file=resolved.configuration,
        message=f"the request asks for the {request.backend} backend, but the worker "
        f"configuration {resolved.configuration} chooses {resolved.backend} for worker "
        f"{resolved.worker} of Operation {resolved.operation} ({resolved.backend_source}); "
        "the worker configuration alone chooses a configured worker's backend: drop "
        "--backend, or change the configuration's entry",
    )


def request_resolution(request: RunRequest) -> dict[str, Choice]:
    """Where each value comes from when the request itself gives it."""
    given = "the request"
    return {
        "backend": Choice(request.backend, request.backend_source or given),
        "model": Choice(request.model, given),
        "local_model": Choice(request.local_model, request.model_map or given),
        "reasoning": Choice(request.reasoning, given),
        "limits": Choice(request.limits.model_dump(), given),
        "runtime_paths": Choice(list(request.runtime_paths), given),
    }


def apply_resolution(request: RunRequest, resolved: ResolvedWorker) -> RunRequest:
    """The request as the worker configuration and the model map settle it."""
    return request.model_copy(
        update={
            "backend": resolved.backend,
            "backend_source": resolved.backend_source,
            "model": resolved.model,
            "local_model": resolved.local_model,
            "model_map": resolved.model_map,
            "reasoning": resolved.reasoning,
            "limits": resolved.limits,
            "runtime_paths": tuple(dict.fromkeys((*resolved.runtime, *request.runtime_paths))),
        }
    )


def worker_resolution(request: RunRequest, resolved: ResolvedWorker) -> dict[str, Choice]:
    config = resolved.configuration
    return {
        "backend": Choice(resolved.backend, f"{config}: {resolved.backend_source}"),
        "model": Choice(resolved.model, f"{config}: {resolved.model_source}"),
        "local_model": Choice(resolved.local_model, resolved.model_map),
        "reasoning": Choice(
            resolved.reasoning,
            f"{config}: {resolved.reasoning_source}"
            if resolved.reasoning_source
            else "none set: the program's own default level",
        ),
        "limits": Choice(resolved.limits.model_dump(), f"{config}: limits (defaults filled)"),
        "runtime_paths": Choice(list(request.runtime_paths), f"{config}: runtime, and the request"),
        "program": Choice(resolved.program, _program_origin(resolved)),
        # A working copy that is not the committed configuration the run reads (issue 18 §4).
        **({} if resolved.notice is None else {"configuration": Choice(config, resolved.notice)}),
    }


def _program_origin(resolved: ResolvedWorker) -> str:
    """Where the worker's program came from, in words (domain/configuration/discovery.py)."""
    source = resolved.program_source
    if source == "PATH":
        return f"the {resolved.backend} program on PATH"
    if source.startswith("$"):
        return f"the {resolved.backend} program {source} names"
    return f"the {resolved.backend} program in {source}"


# --- JSON ------------------------------------------------------------------------------------


def _grant_levels(grant: Grant | None) -> list[dict[str, str]]:
    if grant is None:
        return []
    return [{"path": e.path, "level": e.level.value} for e in grant.entries]


def _refusal_json(refusal: Refusal | None) -> dict[str, Any] | None:
    if refusal is None:
        return None
    return {
        "code": refusal.code,
        "reason": refusal.reason.value,
        "message": refusal.message,
        "file": refusal.file,
    }


def _prepared_json(prepared: Prepared) -> dict[str, Any]:
    """What only a settled preparation shows: round 1's command line and environment, the
    confinement, the settings, the control files, the brief and the digests."""
    confinement = prepared.confinement
    return {
        "round1": {
            "argv": list(prepared.command.argv),
            "cwd": prepared.command.cwd,
            "stdin": "the brief",
            "environment": redact(prepared.environment),
            "adaptations": list(prepared.command.adaptations),
        },
        "confinement": None
        if confinement is None
        else {
            "mounts": [
                {"kind": m.kind.value, "path": m.path, "why": m.why} for m in confinement.mounts
            ],
            "helper": confinement.helper(),
            "control_groups": list(confinement.control_groups),
        },
        "settings": prepared.generated.shown_settings or None,
        "control_files": sorted(prepared.control_files),
        "brief": prepared.brief,
        "digests": {
            "grant_digest": prepared.grant_digest,
            "settings_digest": prepared.settings_digest,
            "brief_digest": prepared.brief_digest,
        },
    }


def plan_json(plan: Plan) -> dict[str, Any]:
    """The plan as one JSON document (the content adapters/cli/views/plan_text.py `render`
    prints)."""
    seen = plan.progress
    prepared = plan.prepared
    policy = prepared.policy if prepared else seen.policy
    placement = prepared.placement if prepared else seen.placement
    grant = prepared.grant if prepared else seen.grant
    reasons = plan.reasons
    out: dict[str, Any] = {
        "verdict": "launch" if plan.launches else "refused",
        "refusal": _refusal_json(reasons[0] if reasons else plan.refusal),
        "refusals": [_refusal_json(r) for r in reasons],
        "run_id": plan.run_id,
        "runtime_directory": plan.runtime_directory,
        "worktree": plan.request.worktree,
        "task_type": plan.request.task_type,
        "resolution": {k: v.to_json() for k, v in plan.resolution.items()},
        "placement": None
        if placement is None
        else {
            "verdict": "holds",
            "worktree": placement.worktree,
            "primary": placement.primary,
            "name": placement.name,
        },
        "git_admin_paths": [
            p.path for p in (prepared.admin_paths if prepared else seen.admin_paths)
        ],
        "grant": _grant_levels(grant),
        "deny_rules": None
        if policy is None
        else {"count": len(policy.deny_rules), "rules": list(policy.deny_rules)},
        "sandbox": None if policy is None else policy.sandbox.to_json(),
        "tools": None if policy is None else ",".join(prepared.tools if prepared else seen.tools),
        "programs": [p.to_json() for p in (prepared.programs if prepared else seen.programs)],
        "notes": list(seen.notes),
    }
    if prepared is not None:
        out.update(_prepared_json(prepared))
    return out
