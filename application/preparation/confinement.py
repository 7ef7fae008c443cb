"""The confinement of a run, settled before launch and checked before every round.

The mount plan is the domain's (`domain/isolation/confinement.py`), from the policy (which names
what is
hidden: the homes, the primary worktree, the credential origins, the run directories, the temp
root); this module gathers the rest through the filesystem port: where bwrap and the helper's
programs are, what the agent program and the host interpreter run from, and each path's kind and
real path.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterable, Sequence

from concorde_workers.domain.configuration.profile import FILES_ALONE
from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.ground.errors import Reason, Refusal
from concorde_workers.domain.ground.paths import DirEntry, EntryKind, is_within
from concorde_workers.domain.isolation.confinement import (
    CONFINED_UID,
    Confinement,
    ConfinementTools,
)
from concorde_workers.domain.isolation.mount_plan import (
    PathFacts,
    PlanInputs,
    confinement_plan,
    installation,
    launch_problem,
    unbound_rw_entry,
)
from concorde_workers.ports.agents.agent import AgentBackend, BackendContext
from concorde_workers.ports.machine import filesystem as files
from concorde_workers.ports.machine.filesystem import FileSystemError, Walking

# The programs a confined agent's own sandbox starts by name (Claude Code's and pi's
# sandbox-runtime: bwrap, socat; Grep and pi's search tools: rg, fd): kept visible wherever
# they are installed.
SANDBOX_PROGRAMS = ("bwrap", "socat", "rg", "fd", "fdfind")

HOW_TO_PROVIDE = {
    "bwrap": "install bubblewrap (Debian: apt-get install bubblewrap)",
    "env": "install coreutils 8.31 or later (Debian: apt-get install coreutils)",
    "mkdir": "install coreutils (Debian: apt-get install coreutils)",
    "mount": "install util-linux (Debian: apt-get install mount)",
    "nsenter": "install util-linux (Debian: apt-get install util-linux)",
    "setpriv": "install util-linux (Debian: apt-get install util-linux)",
    "sleep": "install coreutils (Debian: apt-get install coreutils)",
    "umount": "install util-linux (Debian: apt-get install util-linux)",
    "unshare": "install util-linux (Debian: apt-get install util-linux)",
}


class ConfinementFacts:
    """`PathFacts` over the filesystem port."""

    def __init__(self, fs: Walking) -> None:
        self._fs = fs

    def kind(self, path: str) -> EntryKind | None:
        try:
            return self._fs.stat(path).kind
        except FileSystemError:
            return None

    def list_dir(self, path: str) -> list[DirEntry]:
        try:
            return self._fs.listdir(path)
        except FileSystemError:
            return []

    def facts(self) -> PathFacts:
        return PathFacts(kind=self.kind, realpath=self._fs.realpath, list_dir=self.list_dir)


def plan_confinement(
    fs: Walking,
    backend: AgentBackend,
    context: BackendContext,
    interpreter_roots: Sequence[str],
    linux: bool = True,
    control_groups: Sequence[str] = (),
) -> Confinement | Refusal | None:
    """The confinement of the run, None for a backend whose rounds run unconfined (a test
    backend; any backend off Linux, where there are no bubblewrap namespaces), or the refusal
    when it cannot be built (a program missing, what the agent needs hidden). `control_groups`:
    the host's control group mounts, each replaced inside by the round's own group."""
    needs = backend.confinement_needs(context)
    if needs is None or not linux:
        return None
    policy = context.policy
    search = _trusted_path(context.environ.get("PATH", ""), policy.worktree, policy.runtime.root)
    tools = _tools(fs, search, context.as_root, context.interpreter)
    if isinstance(tools, list):
        return _missing(backend.profile.runtime_missing_code, tools)
    facts = ConfinementFacts(fs).facts()
    programs = [fs.which(name, search) for name in SANDBOX_PROGRAMS]
    keep = _installations(fs, [*needs, *interpreter_roots, *(p for p in programs if p)])
    # The agent's uid inside: "nobody" behind the root helper, else the host's own (bwrap maps it).
    uid = CONFINED_UID if context.as_root else os.getuid()
    asks = backend.profile.confinement
    unbound = unbound_rw_entry(policy, facts) if asks.files_alone else None
    if unbound is not None:
        return Refusal(
            code=Code.REQUEST_INVALID,
            reason=Reason.INPUT,
            message=f"{backend.profile.title} {FILES_ALONE}: {unbound}",
        )
    inputs = PlanInputs(
        keep=tuple(keep),
        placeholders=asks.placeholders,
        private=asks.resolved(uid),
        hidden=asks.hidden,
        files_alone=asks.files_alone,
    )
    plan = confinement_plan(policy, inputs, facts, tools, as_root=context.as_root)
    if isinstance(plan, str):
        return Refusal(
            code=backend.profile.runtime_missing_code, reason=Reason.ENVIRONMENT, message=plan
        )
    return plan.model_copy(update={"control_groups": tuple(control_groups)})


def confinement_launch_problem(fs: Walking, confinement: Confinement) -> str | None:
    """Why a round cannot start confined now (a mount would land elsewhere), or None."""
    return launch_problem(confinement, ConfinementFacts(fs).facts())


def _trusted_path(search: str, *worker_writable: str) -> str:
    """The host's PATH without the directories a worker may write (its worktree, its runtime
    directory): bwrap runs on the host, outside every sandbox, and must not be one a worker
    planted."""
    kept = [
        d
        for d in search.split(os.pathsep)
        if d
        and posixpath.isabs(d)
        and not any(is_within(posixpath.normpath(d), w) for w in worker_writable)
    ]
    return os.pathsep.join(kept)


def _tools(
    fs: files.PathFacts, search: str, as_root: bool, interpreter: str
) -> ConfinementTools | list[str]:
    # unshare, nsenter, mount and mkdir make and enter the run's writable space
    # (domain/isolation/runtime_space.py); as root, umount and unshare run the helper too.
    wanted = [
        "bwrap",
        "env",
        "unshare",
        "nsenter",
        "mount",
        "mkdir",
        "setpriv",
        "sleep",
        *(("umount",) if as_root else ()),
    ]
    found = {name: fs.which(name, search) for name in wanted}
    missing = [name for name, where in found.items() if where is None]
    if missing:
        return missing
    # The host's own interpreter runs the waiter that reports the agent's exact exit status
    # (domain/isolation/confinement.py WAITER); it is kept visible inside, as the hooks need it too.
    return ConfinementTools(
        bwrap=fs.realpath(str(found["bwrap"])),
        env=str(found["env"]),
        umount=found.get("umount"),
        unshare=found.get("unshare"),
        python=interpreter,
        nsenter=found.get("nsenter"),
        mount=found.get("mount"),
        mkdir=found.get("mkdir"),
        setpriv=found.get("setpriv"),
        sleep=found.get("sleep"),
    )


def _installations(fs: files.PathFacts, paths: Iterable[str]) -> list[str]:
    """Each absolute path as given (a program may be named through a link) and the
    installation it really lies in."""
    out: list[str] = []
    for path in paths:
        if not posixpath.isabs(path) or not fs.lexists(path):
            continue
        path = posixpath.normpath(path)
        out += [path, installation(fs.realpath(path))]
    return list(dict.fromkeys(out))


def _missing(code: Code, names: Sequence[str]) -> Refusal:
    parts = "; ".join(f"{name}: {HOW_TO_PROVIDE[name]}" for name in names)
    return Refusal(
        code=code,
        reason=Reason.ENVIRONMENT,
        message="the agent program runs confined (bubblewrap, a mount and PID namespace built "
        f"from the grant) and never without it; this machine lacks {parts}",
    )


__all__ = ["SANDBOX_PROGRAMS", "ConfinementFacts", "confinement_launch_problem", "plan_confinement"]
