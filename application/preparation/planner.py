"""The dry-run planner: what a worker run would do, or the refusal it would meet.

It resolves the worker through the configuration reader when the request names an Operation and
a worker, then runs the very preparation the host runs (`application.preparation`), with a run
id and runtime directory it only names. It writes no file and starts no program.
"""

from __future__ import annotations

import json
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
from concorde_workers.domain.ground.text import terminal_lines
from concorde_workers.domain.isolation.environment import redact
from concorde_workers.ports.machine.clock import Clock
from concorde_workers.ports.machine.filesystem import FileSystem
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
        fs: FileSystem,
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
    """The plan as one JSON document (the same content `render` prints)."""
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


# --- text ------------------------------------------------------------------------------------


def render(plan: Plan) -> str:
    """The plan as text for a person at a shell, every line with its control characters escaped
    (a grant path, an instruction or a runtime path the request gave cannot steer the
    terminal)."""
    data = plan_json(plan)
    lines: list[str] = []
    add: Callable[..., None] = lines.append
    add(f"concorde-workers plan — {verdict_line(plan)}")
    add(f"  run id {plan.run_id}, runtime directory {plan.runtime_directory} (not created)")
    for reason in plan.reasons:
        add("")
        add(f"REFUSED {reason.code} (reason {reason.reason.value})")
        lines.extend(f"  {line}" for line in reason.message.splitlines())
    _section(
        lines,
        "Resolution",
        [f"{k}: {_short(v['value'])}  ← {v['source']}" for k, v in data["resolution"].items()],
    )
    if data["placement"]:
        p = data["placement"]
        _section(
            lines,
            "Placement",
            [f"holds: {p['worktree']} lies directly in {p['primary']}/.claude/worktrees/"],
        )
    _section(lines, "Git administrative paths (hidden from every tool)", data["git_admin_paths"])
    _section(lines, "Grant", [f"{e['level']:<5} {e['path']}" for e in data["grant"]])
    if data["deny_rules"] is not None:
        _section(lines, f"Deny rules ({data['deny_rules']['count']})", data["deny_rules"]["rules"])
        for key, paths in data["sandbox"].items():
            _section(lines, f"Sandbox {key}", paths)
        _section(lines, "Tool set", [data["tools"]])
    _section(
        lines,
        "Programs (version, the least the policy relies on, where, what said it, how it was found)",
        [_program_line(p) for p in data["programs"]],
    )
    if data.get("settings"):
        _section(
            lines,
            "Worker settings beside those lists (control/settings.json)",
            [
                f"{key}: {json.dumps(value, sort_keys=True)}"
                for key, value in _flat(data["settings"]).items()
            ],
        )
    if "round1" in data:
        _round1_lines(lines, data)
    _section(lines, "Notes", data["notes"])
    return terminal_lines(lines)


def verdict_line(plan: Plan) -> str:
    """The plan's first line after its name (issue 31 §2): that a run would launch, or that it
    would be refused, with the first reason and its repair."""
    reasons = plan.reasons
    if plan.launches:
        return "a run would launch"
    if not reasons:  # no preparation and no reason: cannot happen, said rather than hidden
        return "a run would be refused"
    first = reasons[0]
    message = first.message.splitlines()[0] if first.message else ""
    more = f" (and {len(reasons) - 1} more below)" if len(reasons) > 1 else ""
    return f"a run would be refused: {first.code}: {message}{more}"


def _round1_lines(lines: list[str], data: dict[str, Any]) -> None:
    """Round 1's command, adaptations, confinement, environment, digests and brief."""
    r1 = data["round1"]
    _section(
        lines,
        "Round 1 command (cwd " + r1["cwd"] + ", the brief on stdin)",
        [" ".join(_quote(a) for a in r1["argv"])],
    )
    if r1["adaptations"]:
        _section(lines, "Adapted to the installed program", r1["adaptations"])
    if data["confinement"] is not None:
        mounts = data["confinement"]["mounts"]
        _section(
            lines,
            f"Confinement: the whole agent in a mount and PID namespace "
            f"({len(mounts)} mounts over a read-only /)",
            [f"{m['kind']:<15} {m['path']}  ({m['why']})" for m in mounts]
            + [
                f"{'own group':<15} {path}  (the round's own control group, read-only, or "
                "nothing: no other run's is named)"
                for path in data["confinement"]["control_groups"]
            ],
        )
    _section(
        lines,
        "Round 1 environment (cleared, then exactly)",
        [f"{k}={v}" for k, v in r1["environment"].items()],
    )
    _section(
        lines,
        "Digests the run record would carry",
        [f"{k}: {v}" for k, v in data["digests"].items()],
    )
    _section(lines, "Brief", data["brief"].rstrip("\n").splitlines())


def _program_line(program: dict[str, Any]) -> str:
    version = program["version"] or "version unknown"
    said = program["problem"] or program["source"]
    found = f"; found by {program['origin']}" if program.get("origin") else ""
    least = f" (at least {program['minimum']})" if program["minimum"] else ""
    return f"{program['program']} {version}{least} {program['path']}  ← {said}{found}"


def _flat(settings: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested settings as dotted keys down to the values that are no object."""
    flat: dict[str, Any] = {}
    for key, value in settings.items():
        if isinstance(value, dict) and value:
            flat.update(_flat(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _section(lines: list[str], title: str, items: list[str]) -> None:
    if not items:
        return
    lines.append("")
    lines.append(title)
    lines.extend(f"  {item}" for item in items)


def _short(value: Any) -> str:
    text = _shown(value)
    return text if len(text) <= 160 else text[:157] + "..."


def _shown(value: Any) -> str:
    """A resolved value as a person reads it (issue 19 §2: plan printed Python's reprs):
    `timeout_seconds 900, max_budget_usd none`, a list comma-separated, nothing as `none`."""
    if value is None:
        return "none"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dict):
        return ", ".join(f"{k} {_shown(v)}" for k, v in value.items()) or "none"
    if isinstance(value, list | tuple):
        return ", ".join(_shown(v) for v in value) or "none"
    return str(value)


def _quote(arg: str) -> str:
    if len(arg) > 200:
        return f"'<{len(arg)} characters of JSON>'"
    return arg if arg and all(c.isalnum() or c in "-_./:,=@" for c in arg) else repr(arg)
