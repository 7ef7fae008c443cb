"""The confinement's mount plan: which mounts one run's namespace gets, from its policy (issue 8
§7, issue 9 §1; what they make of each path and the bwrap command line:
domain/isolation/confinement.py).

- what must be absent (the temporary root, every run's runtime directory, the homes, the primary
  worktree, the run records, the credential origins) is an empty read-only tmpfs or file;
- the worktree is an empty tmpfs built from what is visible (issue 18 §3): an Edit rule alone
  is a read-only bind into it, the rw entries are bound writable (a rw file's directory, with
  every other entry there bound back read-only, masked or built the same way; for a program
  with no per-path layer of its own, `files_alone`, the file itself), a names-only
  entry is made empty; every other literal path the deny rules hide is masked (the SAME cover
  as the rules), and left out where it is absent already, so no mount point names it;
- the runtime paths and what the agent program runs from read-only, the runtime directory
  read-only but for its writable spaces (config/; home/, tmp/, work/: a tmpfs each of the run's
  own, domain/isolation/runtime_space.py);
- at one path the most restrictive mount stays, and what changes nothing or has nothing to stand
  on (a missing path, a link on the way) is dropped (`_settle`).

`launch_problem` checks before every round that each mount still lands where it was planned.
Everything here is pure: the filesystem facts come in as callables (`PathFacts`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from concorde_workers.domain.boundary.deny_rules import PROCESSES
from concorde_workers.domain.boundary.grant import Level, directory_level
from concorde_workers.domain.boundary.policy import Policy
from concorde_workers.domain.ground.paths import (
    EntryKind,
    is_within,
    within_any,
)
from concorde_workers.domain.isolation.confinement import (
    EMPTY_FILE,
    WAITER_FILE,
    Confinement,
    ConfinementTools,
    Mount,
    MountKind,
)
from concorde_workers.domain.isolation.runtime_space import SPACE_DIRS
from concorde_workers.domain.isolation.writable import (
    FILE_WHY,
    PathFacts,
    unbound_rw_entry,
    writable_mounts,
)

__all__ = [
    "FILE_WHY",
    "PLACEHOLDER_WHY",
    "PRIVATE_WHY",
    "SOURCE_WHY",
    "PathFacts",
    "PlanInputs",
    "confinement_plan",
    "installation",
    "launch_problem",
    "parse_rule",
    "unbound_rw_entry",
    "visible",
]


@dataclass(frozen=True)
class PlanInputs:
    """What the agent program itself runs from, besides what the policy names: its program, the
    installations it loads and the host interpreter's (absolute; see `installation`); and what
    its own sandbox asks of the namespace (`ConfinementAsks`, resolved for this run)."""

    keep: tuple[str, ...] = ()
    placeholders: tuple[str, ...] = ()
    """Names made empty read-only folders in the worktree's root where the grant shows nothing
    (Codex's sandbox mounts over `.git`, `.codex`, `.agents`, `.aws` and cannot make them)."""
    private: tuple[str, ...] = ()
    """Absolute paths in an absent place made small writable folders of the agent's own
    (Codex's `/tmp/codex-daemon-<uid>`): `MountKind.PRIVATE`."""
    hidden: tuple[str, ...] = ()
    """Configuration sources the program reads whatever its settings say (Codex's
    `/etc/codex`): masked, like what the deny rules hide."""
    files_alone: bool = False
    """A rw file is bound itself, never its folder (`ConfinementAsks.files_alone`): no folder
    that is not rw in the grant is ever writable (`unbound_rw_entry` refuses the rest)."""


# At one path only the most restrictive mount stays: a mask beats a read-only bind beats a
# writable one (a runtime path is never writable; a hidden child of a writable scope stays
# hidden).
_STRENGTH = {
    MountKind.WRITABLE: 0,
    MountKind.READ_ONLY: 1,
    MountKind.EMPTY_DIR: 2,
    MountKind.EMPTY_FILE: 2,
    MountKind.PRIVATE: 2,
}
_MASKS = frozenset({MountKind.EMPTY_DIR, MountKind.EMPTY_FILE})
_NOT_HOSTS = _MASKS | {MountKind.PRIVATE}


def parse_rule(rule: str) -> tuple[str, str, bool] | None:
    """`Read(//abs/path/**)` -> ("Read", "/abs/path", True); a rule that names no literal
    absolute path (a glob) -> None."""
    if "(" not in rule or not rule.endswith(")"):
        return None
    kind, target = rule[: rule.index("(")], rule[rule.index("(") + 1 : -1]
    if not target.startswith("//"):
        return None
    target = target[1:]
    directory = target.endswith("/**")
    if directory:
        target = target[:-3] or "/"
    if any(c in target for c in "*?[{"):
        return None
    return kind, posixpath.normpath(target), directory


def _rule_masks(policy: Policy) -> Iterable[Mount]:
    """Every literal path the deny rules cover, as a mask (a Read rule: hidden) or a read-only
    bind (an Edit rule alone, inside the worktree). /proc is fresh already; the runtime directory
    is the agent's own (its control/ and config/ are hidden from its tools, not from it)."""
    rules: dict[str, tuple[set[str], bool]] = {}
    for rule in policy.deny_rules:
        parsed = parse_rule(rule)
        if parsed is None:
            continue
        kind, path, directory = parsed
        kinds, was_directory = rules.get(path, (set(), False))
        kinds.add(kind)
        rules[path] = (kinds, was_directory or directory)
    for path, (kinds, directory) in rules.items():
        if is_within(path, PROCESSES) or is_within(path, policy.runtime.root):
            continue
        if "Read" in kinds:
            kind = MountKind.EMPTY_DIR if directory else MountKind.EMPTY_FILE
            why = _hidden_why(policy, path)
            yield Mount(kind=kind, path=path, why=why, named=why == _NAMES_ONLY)
        elif policy.in_worktree(path):
            yield Mount(kind=MountKind.READ_ONLY, path=path, why="read-only in the grant")


def _boundary_why(policy: Policy, path: str) -> str:
    if path == policy.primary:
        return "the primary worktree"
    if path == policy.user_home:
        return "a home directory"
    return "a home or a credentials directory"


SPACE_WHY = "the run's writable space, a tmpfs of its own, entered before bwrap starts"
_NAMES_ONLY = "names only"


def _hidden_why(policy: Policy, path: str) -> str:
    if policy.in_git(path):
        return "Git metadata"
    if not policy.in_worktree(path):
        return "hidden by the deny rules"
    if (
        policy.level_of(path) is Level.NAMES
        or directory_level(policy.grant, policy.rel(path)) is Level.NAMES
    ):
        return _NAMES_ONLY
    return "not in the grant"


def _segments(path: str) -> tuple[str, ...]:
    return tuple(s for s in path.split("/") if s)


def confinement_plan(
    policy: Policy, inputs: PlanInputs, facts: PathFacts, tools: ConfinementTools, *, as_root: bool
) -> Confinement | str:
    """The mount plan of one run, from its policy (see the module docstring); or, as a value,
    why no plan can confine this run (what the agent needs would not be there)."""
    rt = policy.runtime
    writable = list(writable_mounts(policy, facts, inputs.files_alone))
    worktree_scope = any(m.path == policy.worktree for m in writable)
    wanted = _absent(policy)
    runs_from = [p for p in inputs.keep if not policy.in_worktree(p) and not is_within(p, rt.root)]
    # A deny rule keeps the file tools from what the agent program runs from, never the program
    # itself: a runtime path in the home has the home's other entries denied one by one, the
    # host interpreter's installation among them, which a mask there would take from the hooks
    # (issue 19 §1). The boundaries above stay absent, and the credential masks stay below.
    kept = within_any(runs_from)
    wanted += [m for m in _rule_masks(policy) if not kept(m.path)]
    wanted += _masked_and_kept(policy, runs_from)
    wanted += [Mount(kind=MountKind.EMPTY_DIR, path=p, why=SOURCE_WHY) for p in inputs.hidden]
    if not worktree_scope:
        # Built from what is visible: an empty tmpfs with the readable entries bound in and the
        # names-only ones made empty, so a hidden entry has no mount point to name it.
        wanted.append(
            Mount(
                kind=MountKind.EMPTY_DIR,
                path=policy.worktree,
                named=True,
                why="the task worktree, built from the grant",
            )
        )
    inside = _asked(policy, inputs, wanted, worktree_scope)
    wanted = [m for m in wanted if m.named or m.path not in {i.path for i in inside}] + inside
    space = [rt.at(d) for d in SPACE_DIRS]
    wanted += [
        Mount(kind=MountKind.READ_ONLY, path=rt.root, why="the worker's runtime directory"),
        Mount(kind=MountKind.READ_ONLY, path=rt.control, why="the host's control files"),
        *(Mount(kind=MountKind.WRITABLE, path=p, why=SPACE_WHY) for p in space),
    ]
    wanted += writable
    keep = frozenset(inputs.keep)
    # The host makes the runtime directory right before it launches (the planner only names
    # it): planned without looking, checked before every round like every other mount.
    made = frozenset({rt.root, rt.control, *space, *(m.path for m in inside)})
    mounts = _settle(wanted, facts, keep, made)
    needed = [policy.worktree, rt.root, rt.control, *runs_from]
    missing = next((path for path in needed if not _there(mounts, path)), None)
    if missing is not None:
        return (
            f"the confinement would not show {missing}, which the agent program needs: it "
            "lies in a hidden place or has a link on its way"
        )
    return Confinement(
        mounts=mounts,
        empty_file=posixpath.join(rt.control, EMPTY_FILE),
        tools=tools,
        as_root=as_root,
        waiter_file=posixpath.join(rt.control, WAITER_FILE),
    )


PLACEHOLDER_WHY = "a placeholder the agent program's own sandbox mounts over"
PRIVATE_WHY = "the agent program's own private folder, small and writable, gone with the round"


def _asked(
    policy: Policy, inputs: PlanInputs, wanted: Sequence[Mount], worktree_scope: bool
) -> list[Mount]:
    """What the backend's own sandbox asks (`PlanInputs.placeholders`, `private`), as mounts
    made inside the namespace. A placeholder stands only in a worktree built from the grant (in
    a writable worktree root the program makes its own) and only where the grant shows nothing:
    an entry the grant shows stays as it is, a mask of a hidden one gives way to it (an empty
    folder shown in every codex run names nothing the grant hides)."""
    shown = {m.path for m in wanted if m.kind not in _MASKS or m.named}
    asked: list[Mount] = []
    if not worktree_scope:
        for name in inputs.placeholders:
            path = posixpath.join(policy.worktree, name)
            if not any(is_within(s, path) for s in shown):
                asked.append(
                    Mount(
                        kind=MountKind.EMPTY_DIR,
                        path=path,
                        why=PLACEHOLDER_WHY,
                        named=True,
                        inside=True,
                    )
                )
    asked += [
        Mount(kind=MountKind.PRIVATE, path=posixpath.normpath(p), why=PRIVATE_WHY, inside=True)
        for p in inputs.private
    ]
    return asked


SOURCE_WHY = "a configuration source the agent program reads whatever its settings say"


def _masked_and_kept(policy: Policy, runs_from: Sequence[str]) -> list[Mount]:
    """The credentials at their origins made empty files; what the agent program runs from and
    the runtime paths kept read-only."""
    return [
        *(
            Mount(kind=MountKind.EMPTY_FILE, path=p, why="a credential at its origin")
            for p in policy.always_hidden.credentials
        ),
        *(
            Mount(kind=MountKind.READ_ONLY, path=p, why="what the agent program runs from")
            for p in runs_from
        ),
        *(
            Mount(kind=MountKind.READ_ONLY, path=posixpath.normpath(p), why="a runtime path")
            for p in policy.runtime_paths
        ),
    ]


def _absent(policy: Policy) -> list[Mount]:
    """What the agent never sees, not even by name: the temporary roots other hosts make their
    runs in, every run's runtime directory, the boundaries (the homes, the primary worktree, the
    configuration directories; never /) and the run directories."""
    hidden = policy.always_hidden
    absent = [
        *(
            (t, "temporary files, where other hosts make their runs")
            for t in hidden.temporary_roots
        ),
        (hidden.runtime_root, "every run's runtime directory"),
        *(
            (b, _boundary_why(policy, b))
            for b in (policy.user_home, policy.primary, *policy.boundaries)
            if b != "/"
        ),
        *((r, "the run directories") for r in hidden.run_directories),
    ]
    return [Mount(kind=MountKind.EMPTY_DIR, path=p, why=why) for p, why in absent]


def visible(mounts: Sequence[Mount], path: str) -> bool:
    """Whether `path` shows its host content inside the namespace the mounts build."""
    last = next((m for m in reversed(mounts) if is_within(path, m.path)), None)
    if last is None:
        return True
    return last.kind not in _NOT_HOSTS


def _there(mounts: Sequence[Mount], path: str) -> bool:
    """Whether `path` is there inside the namespace: with its host content, or made by a mount
    of its own (the worktree's skeleton)."""
    last = next((m for m in reversed(mounts) if is_within(path, m.path)), None)
    return visible(mounts, path) or (last is not None and last.path == path and last.named)


def _strongest(mounts: Iterable[Mount]) -> list[Mount]:
    """One mount per path, the most restrictive; parents before children."""
    by_path: dict[str, Mount] = {}
    for mount in mounts:
        path = posixpath.normpath(mount.path)
        mount = mount.model_copy(update={"path": path})
        held = by_path.get(path)
        if held is None or _STRENGTH[mount.kind] > _STRENGTH[held.kind]:
            by_path[path] = mount
    return sorted(by_path.values(), key=lambda m: _segments(m.path))


def _settle(
    wanted: Sequence[Mount], facts: PathFacts, keep: frozenset[str], made: frozenset[str]
) -> tuple[Mount, ...]:
    """Drop what changes nothing (a mask inside what is absent already, a bind of a path as it
    is visible anyway) and what no mount can stand on (a missing path, a link); mark what lies
    on the host's own filesystem."""
    settled: list[Mount] = []
    settled_at: dict[str, Mount] = {}
    for mount in _strongest(wanted):
        above = _nearest_above(settled_at, mount.path)
        state = above.kind if above is not None else MountKind.READ_ONLY
        fresh = state is MountKind.EMPTY_DIR
        if fresh and mount.kind in _MASKS and not mount.named:
            continue
        if state is mount.kind and mount.kind in (MountKind.READ_ONLY, MountKind.WRITABLE):
            continue
        kept = fresh and mount.path in keep
        if mount.path not in made and not _standable(mount, facts, kept):
            continue
        settled.append(mount.model_copy(update={"exact": not kept}))
        settled_at[mount.path] = settled[-1]
    return tuple(settled)


def _nearest_above(settled_at: dict[str, Mount], path: str) -> Mount | None:
    """The settled mount on the nearest folder strictly above `path` (normalised), looked up
    folder by folder rather than by scanning every settled mount: a 10-entry grant on a large
    worktree settles a thousand mounts (docs/benchmarks.md). Mounts settle parents first, so
    this is the last settled mount `path` lies within."""
    parent = posixpath.dirname(path)
    while parent != path:
        if parent in settled_at:
            return settled_at[parent]
        path, parent = parent, posixpath.dirname(parent)
    return None


def _standable(mount: Mount, facts: PathFacts, kept: bool) -> bool:
    """A mount lands on the path itself: it must exist with no link on the way (bwrap would
    follow one, or create a missing file in the worktree). A program or installation the agent
    runs from may be reached through a link when it is bound into a fresh tmpfs: bwrap resolves
    the source on the host and makes the destination anew."""
    if kept:
        return facts.kind(mount.path) is not None and facts.kind(
            facts.realpath(mount.path)
        ) not in (None, EntryKind.SYMLINK)
    if mount.kind is MountKind.EMPTY_DIR:
        return facts.is_real(mount.path, EntryKind.DIRECTORY)
    if mount.kind is MountKind.EMPTY_FILE:
        return facts.is_real(mount.path, EntryKind.FILE)
    return facts.is_real(mount.path)


def installation(realpath: str) -> str:
    """What to keep visible for a program whose real path is `realpath`: the whole outermost
    node_modules for a program inside one (node resolves its modules there), else the real file
    itself (a native program, node). An interpreter's own installation (its prefix, its standard
    library) is given as a directory (sys.base_prefix) and kept as it is; nothing is guessed
    beside a program, so a program in ~/.local/bin keeps ~/.local/share hidden."""
    segments = realpath.split("/")
    if "node_modules" in segments:
        return "/".join(segments[: segments.index("node_modules") + 1])
    return realpath


def launch_problem(confinement: Confinement, facts: PathFacts) -> str | None:
    """Before every round: each mount must still land where it was planned. Between rounds no
    process of the worker runs (its namespace died), but its last round may have swapped a
    directory on the way for a link, which bwrap would follow; the round is not started then."""
    for mount in confinement.mounts:
        if mount.inside:
            continue
        if mount.exact:
            kind = {
                MountKind.EMPTY_DIR: EntryKind.DIRECTORY,
                MountKind.EMPTY_FILE: EntryKind.FILE,
            }.get(mount.kind, EntryKind.FILE if mount.file else None)
            if not facts.is_real(mount.path, kind):
                what = "file" if mount.file else mount.kind.value if kind else "path"
                return (
                    f"the confinement cannot be set up: {mount.path} ({mount.why}) is no "
                    f"longer the {what} it was when the run was prepared (a link or a missing "
                    "entry on the way)"
                )
        elif facts.kind(mount.path) is None:
            return f"the confinement cannot be set up: {mount.path} ({mount.why}) no longer exists"
    return None
