"""Generated grants and paths for the parity of the three copies of the file tables.

The domain's read, write and search-root tables (`domain.boundary.policy`) are re-implemented twice: by
the Claude Code hook template (Python, standard library only) and by the pi extension's
`pi_policy.ts`. The parity tests draw a policy from `policies()` — a grant of overlapping file
and directory entries at any level, runtime paths inside and outside the worktree, nested Git
admin paths, and what is hidden always (the homes, the configuration directories, the credential
files, run directories inside and outside the worktree, other runs' runtime directories) — and
the queries of `queries()` over paths that reach every row, with the real path a link would give
and whether the given path is a link. Paths are joined, not normalised: `..`, `.` and a doubled
slash reach each copy as a worker could write them.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from concorde_workers.container import PROFILES
from concorde_workers.domain.boundary.grant import Grant, parse_grant
from concorde_workers.domain.boundary.policy import (
    Decision,
    Policy,
    build_policy,
    decide_read,
    decide_search_root,
    decide_write,
)
from concorde_workers.domain.configuration.profile import entries_of
from concorde_workers.domain.gitview.placement import AdminPath
from concorde_workers.domain.ground.paths import DirEntry, EntryKind

RUNTIME_ENTRIES = entries_of(PROFILES)

HOME = "/home/u"
PRIMARY = f"{HOME}/proj"
WT = f"{PRIMARY}/.claude/worktrees/t1"
TEMP_ROOT = "/tmp"
RT = f"{TEMP_ROOT}/concorde-abc123-k9"
OTHER_RUN = f"{TEMP_ROOT}/concorde-def456-z1"
LATER_RUN = f"{TEMP_ROOT}/concorde-0a0a0a-late"
ENV_HOME = "/srv/home/u"
CONFIG_DIRS = ("/opt/cfg/claude", "/opt/cfg/pi")
CREDENTIALS = (
    "/opt/cfg/claude/.credentials.json",
    "/opt/cfg/pi/auth.json",
    "/opt/maps/models.json",
)
WORKERS = "/srv/trace/op-1/workers"
IN_TREE_WORKERS = f"{WT}/lib/trace/workers"
PYROOT = "/opt/py/3.11"

ENTRY_PATHS = [
    "a",
    "a/",
    "a/b",
    "a/b/",
    "a/b/c",
    "ab",
    "ab/",
    "b/",
    "b/a",
    "a/bc/",
    "src/app/",
    "src/app/secret.py",
    "src/",
    "docs/",
    "lib/",
    "lib/inner/",
    "vendor/",
    "README.md",
    ".venv/",
]
LEVELS = ["names", "ro", "rw"]
RUNTIME_PATHS = [f"{WT}/.venv", f"{WT}/lib/node_modules", f"{WT}/a/b", PYROOT, "/opt/cfg"]
NESTED_GIT = [
    AdminPath(path=f"{WT}/vendor/lib/.git", directory=False),
    AdminPath(path=f"{WT}/a/.git", directory=True),
]

SEGMENTS = [
    "a",
    "b",
    "c",
    "ab",
    "bc",
    "src",
    "app",
    "secret.py",
    "docs",
    "lib",
    "inner",
    "vendor",
    "README.md",
    ".venv",
    "node_modules",
    "x.py",
    ".git",
    "config",
    "..",
    ".",
    "",
    "control",
    "tmp",
    "jiti",
    "work",
    "home",
    "auth.json",
    ".credentials.json",
    "models.json",
    "trace",
    "workers",
    "concorde-aa11bb-x",
    "self",
    "environ",
]
WORKTREE_BASES = [
    WT,
    f"{WT}/src/app",
    f"{WT}/a",
    f"{WT}/a/b",
    f"{WT}/lib",
    f"{WT}/vendor/lib",
    IN_TREE_WORKERS,
]
OTHER_BASES = [
    PRIMARY,
    f"{PRIMARY}/.git",
    HOME,
    ENV_HOME,
    RT,
    f"{RT}/tmp",
    f"{RT}/work",
    f"{RT}/control",
    f"{RT}/config",
    f"{RT}/tmp/jiti",
    f"{RT}/home",
    TEMP_ROOT,
    OTHER_RUN,
    LATER_RUN,
    WORKERS,
    "/srv/trace",
    "/opt/cfg",
    *CONFIG_DIRS,
    "/opt/maps",
    PYROOT,
    "/",
    "/proc",
    "/etc",
]


@dataclass(frozen=True)
class Case:
    """One drawn policy and what it was drawn from (a failure's report shows these)."""

    entries: dict[str, str]
    runtime_paths: list[str]
    nested_git: list[str]
    hiding: bool
    run_directories: tuple[str, ...]
    policy: Policy = field(repr=False)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """Hypothesis prints a failing example by what it was drawn from, not the policy."""
        printer.text(repr(self))


def make_grant(entries: dict[str, str], task_type: str = "implement") -> Grant:
    parsed = parse_grant(
        {
            "task_type": task_type,
            "context_identity": "sha256:ctx",
            "entries": [{"path": p, "level": lv} for p, lv in entries.items()],
        }
    )
    assert isinstance(parsed, Grant), parsed
    return parsed


def _temp_root(path: str) -> list[DirEntry]:
    """The temp root holds this run and the other run (the later one starts after the rules)."""
    if path == TEMP_ROOT:
        return [
            DirEntry(name=posixpath.basename(r), kind=EntryKind.DIRECTORY) for r in (RT, OTHER_RUN)
        ]
    return []


@st.composite
def policies(draw: st.DrawFn) -> Case:
    entries = draw(
        st.dictionaries(
            st.sampled_from(ENTRY_PATHS), st.sampled_from(LEVELS), min_size=1, max_size=8
        )
    )
    runtime = draw(st.lists(st.sampled_from(RUNTIME_PATHS), unique=True, max_size=3))
    nested = draw(st.lists(st.sampled_from(NESTED_GIT), unique_by=lambda a: a.path, max_size=2))
    hiding = draw(st.booleans())
    run_directories = draw(st.sampled_from([(), (WORKERS,), (WORKERS, IN_TREE_WORKERS)]))
    git = (
        AdminPath(path=f"{PRIMARY}/.git", directory=True),
        AdminPath(path=f"{WT}/.git", directory=False),
        *nested,
    )
    policy = build_policy(
        grant=make_grant(entries),
        worktree=WT,
        primary=PRIMARY,
        user_home=HOME,
        runtime_dir=RT,
        runtime_paths=runtime,
        git=git,
        list_dir=_temp_root,
        homes=(HOME, ENV_HOME) if hiding else (),
        config_dirs=CONFIG_DIRS if hiding else (),
        credentials=CREDENTIALS if hiding else (),
        run_directories=run_directories,
        runtime_entries=RUNTIME_ENTRIES,
    )
    return Case(
        entries=entries,
        runtime_paths=runtime,
        nested_git=[a.path for a in nested],
        hiding=hiding,
        run_directories=run_directories,
        policy=policy,
    )


WORKTREE_SEGMENTS = [
    "a",
    "b",
    "c",
    "ab",
    "bc",
    "src",
    "app",
    "secret.py",
    "lib",
    "inner",
    "x.py",
    ".git",
    "..",
    ".",
    ".venv",
    "vendor",
    "trace",
    "workers",
]
"""Names that collide: `ab` beside the entry `a/`, `a/bc` beside `a/b/` (a prefix is no parent)."""


def _joined(slash: str, base: str, segments: list[str]) -> str:
    return slash + posixpath.join(base, *segments)


SLASHES = st.sampled_from(["", "", "", "/"])
paths = st.one_of(
    st.builds(
        _joined,
        SLASHES,
        st.sampled_from(WORKTREE_BASES),
        st.lists(st.sampled_from(WORKTREE_SEGMENTS), max_size=4),
    ),
    st.builds(
        _joined,
        SLASHES,
        st.sampled_from(OTHER_BASES),
        st.lists(st.sampled_from(SEGMENTS), max_size=5),
    ),
)
"""Absolute paths over every row, half of them in the worktree, joined as written (`..`, `.`,
`//` kept)."""

TWEAKS = ["", "/", "b", "c/x.py", "/x.py", "/b", "/b/c", "/..", "/.git", "/../ab", "/./x"]
"""What follows an anchor in `near_anchors`: the anchor itself, below it, and a name it is only a
prefix of (`a` + `b` = `ab`, which the entry `a/` does not cover)."""


def anchors(case: Case) -> list[str]:
    """Where the rows of the case's policy change: its grant entries, runtime paths, Git admin
    paths, run directories and credential files, and the directory above each."""
    found = [posixpath.join(WT, e.rstrip("/")) for e in case.entries]
    found += [*case.runtime_paths, *case.nested_git, *case.run_directories]
    found += list(CREDENTIALS) if case.hiding else []
    return sorted({*found, *(posixpath.dirname(a) for a in found)})


def near_anchors(case: Case) -> st.SearchStrategy[str]:
    """Paths at, below and beside the case's anchors."""
    return st.builds(
        lambda slash, anchor, tweak: f"{slash}{anchor}{tweak}",
        SLASHES,
        st.sampled_from(anchors(case)),
        st.sampled_from(TWEAKS),
    )


@dataclass(frozen=True)
class Query:
    """One decision: `kind` read, write or search; for a write, `real` is the resolved target
    (the path itself when None) and `link` whether the given path is a link; for a read or a
    search, `real` is the real path (None: not known) and `is_directory` what the root is."""

    kind: str
    path: str
    real: str | None
    link: bool
    is_directory: bool

    def domain(self, policy: Policy) -> Decision:
        if self.kind == "read":
            return decide_read(policy, self.path, self.real)
        if self.kind == "write":
            return decide_write(policy, self.path, self.real or self.path, self.link)
        return decide_search_root(policy, self.path, self.real, self.is_directory)

    def to_driver(self) -> dict[str, Any]:
        """The query as tests/fakes/pi_extension_driver.mjs takes it (its pure decisions)."""
        if self.kind == "write":
            return {
                "kind": "pure-write",
                "given": self.path,
                "resolved": self.real or self.path,
                "link": self.link,
            }
        if self.kind == "read":
            return {"kind": "pure-read", "path": self.path, "real": self.real}
        return {
            "kind": "pure-search",
            "path": self.path,
            "real": self.real,
            "isDirectory": self.is_directory,
        }


def queries(case: Case) -> st.SearchStrategy[Query]:
    """Read, write and search queries over `paths` and the paths near the case's anchors."""
    either = st.one_of(near_anchors(case), paths)
    return st.builds(
        Query,
        kind=st.sampled_from(["read", "write", "search"]),
        path=either,
        real=st.one_of(st.none(), either),
        link=st.booleans(),
        is_directory=st.booleans(),
    )


BATCH = 32
"""At most this many queries are drawn with each policy: one batch for the pi driver."""
BATCH_SHARE = 0.3
"""A batch property's share of the profile's examples (tests/profiles.py `examples`): each of
its examples is up to BATCH decisions, so the thorough profile's 300 batches decide about
5,000 cases a table."""


@st.composite
def batches(draw: st.DrawFn) -> tuple[Case, list[Query]]:
    """A drawn policy and the queries drawn for it."""
    case = draw(policies())
    return case, draw(st.lists(queries(case), min_size=BATCH // 4, max_size=BATCH))


def as_answer(decision: Decision) -> dict[str, Any]:
    """A decision as pi_policy.ts returns it."""
    return {"allowed": decision.allowed, "reason": decision.reason, "row": decision.row}


def mismatches(
    expected: Sequence[Any], got: Sequence[Any], queries_: Sequence[Any]
) -> list[tuple[Any, Any, Any]]:
    return [(q, e, g) for q, e, g in zip(queries_, expected, got, strict=True) if e != g]
