"""`concorde-workers doctor` (issue 12 §1): every prerequisite of a run, its state and its repair,
decided from probed facts (application/setup/doctor.py gathers them through the ports).

One `Check` per prerequisite: the agent programs (found where, their version against the floor
the host enforces), bubblewrap, socat, ripgrep, fd, node, Git, a command actually run in the
worker's Bash sandbox without network, the model map (found where, valid), the credentials of
each backend (present or not: a value is never part of a fact, so it cannot be printed), and the
worktree's workers.json when doctor runs inside a worktree. The verdict: 0 when every check
holds, 2 otherwise.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from concorde_workers.domain.configuration.machine import MachineFileAnswer
from concorde_workers.domain.configuration.machine_resources import MachineResources
from concorde_workers.domain.configuration.profile import BackendProfile, HelperTool, nested_problem
from concorde_workers.domain.configuration.program_versions import (
    INSTALL_AGENTS,
    ProgramSpec,
    ProgramVersion,
    version_problem,
)
from concorde_workers.domain.configuration.resources import Enforcement, GroupKind
from concorde_workers.domain.configuration.signing import KeyFact
from concorde_workers.domain.ground.backends import DEFAULT_BACKEND

MACHINE_TOOLS: Mapping[str, str] = {
    "bwrap": "install bubblewrap (Debian: apt-get install bubblewrap)",
    "socat": "install socat (Debian: apt-get install socat)",
    "unshare": "install util-linux (Debian: apt-get install util-linux)",
    "nsenter": "install util-linux (Debian: apt-get install util-linux)",
    "setpriv": "install util-linux (Debian: apt-get install util-linux)",
    "mount": "install util-linux (Debian: apt-get install mount)",
    "git": "install Git (Debian: apt-get install git)",
}
"""The programs every run needs whatever its backend (the confinement's and the sandboxes'
bubblewrap and socat; util-linux's unshare, nsenter, setpriv and mount, which make and enter
the run's writable spaces, issue 30 §2; the host's own Git), and how to provide them."""


@dataclass(frozen=True)
class ProgramFact:
    """An agent program as discovery and the version port found it."""

    spec: ProgramSpec
    path: str | None
    origin: str | None
    version: ProgramVersion | None
    looked_at: tuple[str, ...] = ()


@dataclass(frozen=True)
class SandboxFact:
    """A command run in the worker's Bash sandbox (sandbox-runtime, bwrap, socat): whether it
    ran, whether it reached a listener of the host on 127.0.0.1, and what it said."""

    ran: bool
    reached: bool
    detail: str


@dataclass(frozen=True)
class FileFact:
    """A configuration file: where, what said so, and its problem (None: valid)."""

    path: str | None
    origin: str
    problem: str | None


@dataclass(frozen=True)
class CredentialFact:
    """Which of a backend's credential sources are present (names only, never a value)."""

    backend: str
    present: tuple[str, ...]
    looked_at: tuple[str, ...]
    repair: str
    """How a user gives the backend its credentials."""


@dataclass(frozen=True)
class RunUses:
    """What a run of a backend takes besides the files it copies, from the sources the run
    takes it from: the configuration directory its round environment sets (relative to the
    runtime directory), its generated settings there, the key variables its machine file's
    judge names (and what names them), and the user's files hidden at their origin, never
    read."""

    directory_variable: str
    run_directory: str | None
    settings: str
    keys: tuple[str, ...] = ()
    keys_origin: str = ""
    hidden: tuple[str, ...] = ()


@dataclass(frozen=True)
class CopiesFact:
    """The files a run of a backend copies from the user's program configuration, as their one
    reader and the backend's judge found them (application/setup/machine_files.py): where, what the
    program would reject or misread in them (None: nothing), and the model map's ids judged."""

    sources: tuple[str, ...]
    problem: str | None
    ids: tuple[str, ...] = ()
    uses: RunUses | None = None
    """What the run takes instead, said when it copies nothing (the Codex CLI)."""


@dataclass(frozen=True)
class Facts:
    profiles: Sequence[BackendProfile]
    """The registered backends, in the registry's order: what each needs is judged for it."""
    programs: Mapping[str, ProgramFact]
    tools: Mapping[str, str | None]
    sandbox: SandboxFact | None
    """None when it could not be tried (sandbox-runtime, node, bwrap or socat missing)."""
    model_map: FileFact
    credentials: Sequence[CredentialFact]
    workers_json: FileFact | None = None
    """None outside a worktree."""
    backends: tuple[str, ...] = ()
    """The backends a run here will use: what is only another backend's is not needed."""
    backends_source: str = "no workers.json here and no --backend: every backend"
    resources: Enforcement | None = None
    machine_resources: MachineResources | None = None
    """What this machine gives a run's resource limits (issue 20); None: not asked."""
    signing_key: KeyFact | None = None
    """The machine's signing key (issue 30 §4); None: not asked."""
    machine_files: Mapping[str, MachineFileAnswer] = field(default_factory=dict)
    """Each backend's own machine file (Claude Code's endpoints.json) as plan and run take it."""
    copies: Mapping[str, CopiesFact] = field(default_factory=dict)
    """Each backend's files a run copies, as plan and run judge them (issue 31 §1)."""
    userns: Mapping[str, str | None] = field(default_factory=dict)
    """The kernel's switches of nested user namespaces (`USERNS_SWITCHES`), as read."""


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    state: str
    repair: str = ""
    needed: bool = True
    """False: only a backend no run here uses needs it; said, never failing the verdict."""

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "ok": self.ok,
            "state": self.state,
            "repair": self.repair or None,
            "needed": self.needed,
        }


@dataclass(frozen=True)
class Diagnosis:
    checks: tuple[Check, ...] = field(default_factory=tuple)

    backends: tuple[str, ...] = ()
    backends_source: str = ""

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks if check.needed)

    @property
    def status(self) -> int:
        """0 every prerequisite holds, 2 one does not (its repair is named)."""
        return 0 if self.ok else 2

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "backends": list(self.backends),
            "backends_source": self.backends_source,
            "checks": [check.to_json() for check in self.checks],
        }

    def lines(self) -> list[str]:
        """One line per prerequisite: `[ok] name: state`, `[FAILED] name: state; repair`, and
        `[not used]` for what only a backend no run here uses needs."""
        out = [f"backends judged: {', '.join(self.backends)} ({self.backends_source})"]
        for check in self.checks:
            mark = "ok" if check.ok else "FAILED" if check.needed else "not used"
            repair = f" -> {check.repair}" if check.repair and not check.ok else ""
            out.append(f"[{mark}] {check.name}: {check.state}{repair}")
        missing = sum(not c.ok for c in self.checks if c.needed)
        out.append(
            "all prerequisites hold"
            if self.ok
            else f"{missing} prerequisite(s) missing: see the repairs above"
        )
        return out


def tools_of(profiles: Sequence[BackendProfile]) -> dict[str, HelperTool | None]:
    """The tools doctor checks on PATH, in the order a user repairs them: bubblewrap and socat,
    what makes the run's writable spaces, each backend's helpers, Git (None: a machine tool,
    `MACHINE_TOOLS`)."""
    helpers = {h.name: h for profile in profiles for h in profile.helpers}
    space = dict.fromkeys(("unshare", "nsenter", "setpriv", "mount"))
    return {"bwrap": None, "socat": None, **space, **helpers, "git": None}


def needed_by(profiles: Sequence[BackendProfile]) -> dict[str, frozenset[str]]:
    """The backends each prerequisite serves (absent: every run needs it: bwrap, socat, Git,
    the model map, workers.json): a backend's programs, helpers, sandbox and credentials are its
    own (pi's rg, fd, node and sandbox-runtime; Claude Code brings its own search and sandbox
    helper)."""
    serves: dict[str, set[str]] = {}
    for profile in profiles:
        keys = [spec.program for spec in profile.programs]
        keys += [h.name for h in profile.helpers] + [f"credentials {profile.name}"]
        keys += ["sandbox"] if profile.sandbox_package else []
        for key in keys:
            serves.setdefault(key, set()).add(profile.name)
    return {key: frozenset(names) for key, names in serves.items()}


def backends_in_use(entries: Sequence[str | None], default_set: bool) -> tuple[str, ...]:
    """The backends a worker of a configuration can run on: each entry's backend, and the
    default worker backend unless the file's default entry sets one."""
    used = {b for b in entries if b is not None}
    if not default_set:
        used.add(DEFAULT_BACKEND)
    return tuple(sorted(used))


def _needed(check: Check, serves: frozenset[str] | None, backends: Sequence[str]) -> Check:
    if serves is None or serves & set(backends):
        return check
    return Check(check.name, check.ok, check.state, check.repair, needed=False)


def program_check(fact: ProgramFact) -> Check:
    row = fact.spec
    name = f"{row.title} ({row.package})" if row.package else row.title
    if fact.path is None or fact.version is None:
        looked = ", ".join(fact.looked_at) or "nowhere"
        return Check(name, False, f"not found (looked at {looked})", row.upgrade)
    where = f"{fact.path} (found by {fact.origin})"
    problem = version_problem(fact.version)
    if problem is not None:
        return Check(
            name,
            False,
            f"{fact.version.version or 'version unknown'} at {where}, "
            f"at least {row.minimum} needed",
            row.upgrade,
        )
    if row.minimum is None:
        return Check(name, True, f"at {where} (no version is relied on)")
    return Check(name, True, f"{fact.version.version} (at least {row.minimum}) at {where}")


def tool_check(name: str, found: str | None, helper: HelperTool | None = None) -> Check:
    if found is None:
        return Check(
            name, False, "not found on PATH", helper.provide if helper else MACHINE_TOOLS[name]
        )
    return Check(name, True, found)


def sandbox_check(fact: SandboxFact | None) -> Check:
    name = "a command in the worker's Bash sandbox, without network"
    repair = (
        "make sandbox-runtime, node, bwrap and socat available (see their lines); a "
        "worker never runs without its sandbox"
    )
    if fact is None:
        return Check(name, False, "not tried: the sandbox's programs are missing", repair)
    if not fact.ran:
        return Check(
            name,
            False,
            f"the sandbox did not run the command: {fact.detail}",
            "see the message; bubblewrap needs user namespaces (or root)",
        )
    if fact.reached:
        return Check(
            name,
            False,
            f"the command reached 127.0.0.1 from inside: {fact.detail}",
            "the sandbox has network: do not run workers on this machine until "
            "sandbox-runtime's network isolation works (bubblewrap --unshare-net)",
        )
    return Check(name, True, f"ran, and could not reach 127.0.0.1 ({fact.detail})")


def file_check(name: str, fact: FileFact, repair: str) -> Check:
    if fact.problem is not None:
        return Check(
            name, False, f"{fact.path or 'not found'} ({fact.origin}): {fact.problem}", repair
        )
    return Check(name, True, f"{fact.path} ({fact.origin}), valid")


def credential_check(fact: CredentialFact) -> Check:
    name = f"credentials of the {fact.backend} backend"
    if not fact.present:
        return Check(
            name, False, f"none found (looked at {', '.join(fact.looked_at)})", fact.repair
        )
    return Check(name, True, f"present: {', '.join(fact.present)} (never printed)")


def diagnose(facts: Facts) -> Diagnosis:
    """Every check, in the order a user repairs them."""
    used, serves = facts.backends, needed_by(facts.profiles)
    checks = [
        _needed(program_check(facts.programs[spec.program]), serves.get(spec.program), used)
        for profile in facts.profiles
        for spec in profile.programs
    ]
    checks += [
        _needed(tool_check(name, facts.tools.get(name), helper), serves.get(name), used)
        for name, helper in tools_of(facts.profiles).items()
    ]
    if any(profile.sandbox_package for profile in facts.profiles):
        checks.append(_needed(sandbox_check(facts.sandbox), serves.get("sandbox"), used))
    checks.append(
        file_check(
            "model map",
            facts.model_map,
            'write it as contract.workers.model-map (README "Run it on your own repository")',
        )
    )
    checks += [
        _needed(credential_check(fact), serves.get(f"credentials {fact.backend}"), used)
        for fact in facts.credentials
    ]
    checks += _backend_files(facts, serves, used)
    checks += [
        _needed(nested_check(p, facts.userns), frozenset({p.name}), used)
        for p in facts.profiles
        if p.confinement.nested
    ]
    if facts.workers_json is not None:
        checks.append(
            file_check(
                "workers.json of this worktree",
                facts.workers_json,
                'repair it as contract.workers.worker-configuration (README "Run it on your own '
                'repository")',
            )
        )
    if facts.resources is not None:
        checks.append(resources_check(facts.resources, facts.machine_resources))
    if facts.signing_key is not None:
        ok, state, repair = facts.signing_key.said()
        checks.append(Check("signing key", ok, state, repair))
    return Diagnosis(tuple(checks), backends=used, backends_source=facts.backends_source)


def _backend_files(
    facts: Facts, serves: Mapping[str, frozenset[str]], used: Sequence[str]
) -> list[Check]:
    """Each backend's own machine file and the files its runs copy, judged by the readers plan
    and run take (issue 31 §1), needed by that backend alone."""
    checks: list[Check] = []
    for profile in facts.profiles:
        serves_it = frozenset({profile.name})
        answer = facts.machine_files.get(profile.name)
        if profile.machine_file is not None and answer is not None:
            name = f"{profile.title}'s {profile.machine_file.name}"
            check = (
                Check(name, False, answer.problem, "repair it as the message says, or remove it")
                if answer.problem is not None
                else Check(name, True, answer.said)
            )
            checks.append(_needed(check, serves_it, used))
        copies = facts.copies.get(profile.name)
        if copies is not None:
            checks.append(_needed(copies_check(profile, copies), serves_it, used))
    return checks


def nested_check(profile: BackendProfile, userns: Mapping[str, str | None]) -> Check:
    """Whether the program's own sandbox can nest in the confinement here (issue 33 §2)."""
    name = f"nested user namespaces ({profile.title}'s own sandbox)"
    problem = nested_problem(profile.title, userns)
    if problem is None:
        return Check(name, True, "allowed")
    return Check(name, False, problem, "allow unprivileged, nested user namespaces (sysctl)")


def copies_check(profile: BackendProfile, fact: CopiesFact) -> Check:
    """The files a run copies, as the program reads them (pi: models.json and auth.json); for a
    backend whose runs copy none (the Codex CLI), what they take instead."""
    if not profile.credentials.files:
        return uses_check(profile, fact)
    name = f"{profile.title}'s {' and '.join(profile.credentials.files)} as a run copies them"
    if fact.problem is not None:
        return Check(name, False, fact.problem, "repair it as the message says")
    where = ", ".join(fact.sources) or "no configuration directory (no HOME)"
    ids = f"; the model map's ids {', '.join(fact.ids)} judged against them" if fact.ids else ""
    if profile.copies_judge is None:
        return Check(name, True, f"{where}: readable")
    return Check(name, True, f"{where}: taken as {profile.program.title} reads them{ids}")


def uses_check(profile: BackendProfile, fact: CopiesFact) -> Check:
    """What a run of a backend that copies no file takes (issue 33: the Codex CLI's line said
    it copied the auth.json no run reads): its own configuration directory with only the
    generated settings, the key by its variable, the user's login hidden."""
    name = f"{profile.title}'s configuration as a run makes it"
    uses = fact.uses
    if uses is None:
        return Check(name, True, "copies no file")
    home = uses.run_directory or posixpath.dirname(uses.settings)
    keys = ", ".join(f"${k}" for k in uses.keys)
    key = (
        f"the key reaches each round as {keys} ({uses.keys_origin})"
        if keys
        else "no key variable is named"
    )
    hidden = f"; {', '.join(uses.hidden)} hidden from every run, never read" if uses.hidden else ""
    return Check(
        name,
        True,
        f"copies no file; {uses.directory_variable} is the run's own {home}/ holding only the "
        f"generated {posixpath.basename(uses.settings)}; {key}{hidden}",
    )


def resources_check(enforcement: Enforcement, machine: MachineResources | None = None) -> Check:
    """Said, never failing unless the machine's resources.json cannot be used (every run is
    then refused): a machine without groups runs without limits (and refuses a run that asks
    for them, or every run, as its setting says), as plan and each round's resources.json say
    too."""
    machine = machine or MachineResources()
    if machine.problem is not None:
        return Check(
            "resource limits",
            False,
            machine.problem,
            "repair it as domain/configuration/machine_resources.py shows, or remove it",
        )
    said = f"{enforcement.text()}; defaults {machine.defaults.text()}"
    if enforcement.kind is GroupKind.NONE:
        refusal = machine.refusal(True, enforcement.problem or "no control groups")
        unasked = machine.refusal(False, enforcement.problem or "no control groups")
        runs = (
            "every run is refused"
            if unasked
            else "runs go without them, and a request that asks for limits is refused"
            if refusal
            else "every run goes without them"
        )
        return Check("resource limits", True, f"{said}; {runs}", needed=False)
    return Check("resource limits", True, said)


__all__ = [
    "INSTALL_AGENTS",
    "MACHINE_TOOLS",
    "Check",
    "CopiesFact",
    "CredentialFact",
    "Diagnosis",
    "Facts",
    "FileFact",
    "ProgramFact",
    "RunUses",
    "SandboxFact",
    "backends_in_use",
    "copies_check",
    "diagnose",
    "needed_by",
    "resources_check",
    "tools_of",
    "uses_check",
]
