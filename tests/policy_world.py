"""One grant, worktree, homes and runtime directory, the policy built from them, and the helpers
that spell deny rules: the world the policy's tests (tests/unit/boundary/test_policy.py,
test_deny_rules.py, test_sandbox_lists.py) share."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence

from concorde_workers.container import PROFILES
from concorde_workers.domain.boundary.grant import Grant, parse_grant
from concorde_workers.domain.boundary.policy import Policy, build_policy
from concorde_workers.domain.configuration.profile import entries_of
from concorde_workers.domain.gitview.placement import AdminPath
from concorde_workers.domain.ground.paths import DirEntry, EntryKind, ListDir

RUNTIME_ENTRIES = entries_of(PROFILES)

HOME = "/home/u"
PRIMARY = f"{HOME}/proj"
WT = f"{PRIMARY}/.claude/worktrees/t1"
RT = "/tmp/concorde-abc123-k9"
VENV = f"{WT}/.venv"
PYROOT = "/opt/py/3.11"

NOT_GRANTED_TAIL = (
    " is not in this task's grant; a new file outside the bound directories is created and bound "
    "to a Module by the task level before a worker fills it, and a file another Module binds "
    "needs that Module bound to the task"
)


def memory_tree(files: Iterable[str], links: Iterable[str] = ()) -> ListDir:
    """An in-memory tree: files and symbolic links by absolute path, directories implied."""
    listing: dict[str, dict[str, EntryKind]] = {}

    def add(path: str, kind: EntryKind) -> None:
        parent, name = posixpath.split(path)
        listing.setdefault(parent, {})[name] = kind
        if parent != "/":
            add(parent, EntryKind.DIRECTORY)

    for f in files:
        add(f, EntryKind.FILE)
    for link in links:
        add(link, EntryKind.SYMLINK)

    def list_dir(path: str) -> Sequence[DirEntry]:
        return [DirEntry(name=n, kind=k) for n, k in listing.get(path, {}).items()]

    return list_dir


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


GRANT = make_grant(
    {
        "src/app/": "rw",
        "src/app/secret.py": "names",
        "src/bmod/": "ro",
        "src/bmod/secret.py": "names",
        "specs/": "ro",
        "tests/test_a.py": "rw",
        "docs/": "names",
        "README.md": "ro",
    }
)

FILES = [
    f"{WT}/.git",
    f"{WT}/README.md",
    f"{WT}/checks/c1.py",
    f"{WT}/docs/readme.md",
    f"{WT}/specs/a/module.md",
    f"{WT}/src/app/mod.py",
    f"{WT}/src/app/secret.py",
    f"{WT}/src/app/util.py",
    f"{WT}/src/bmod/secret.py",
    f"{WT}/src/bmod/x.py",
    f"{WT}/tests/test_a.py",
    f"{WT}/vendor/lib/.git",
    f"{WT}/vendor/lib/v.py",
    f"{VENV}/lib/site.py",
    f"{HOME}/.bashrc",
    f"{HOME}/.claude/settings.json",
    f"{HOME}/other/x.py",
    f"{PRIMARY}/src/main.py",
    f"{PRIMARY}/.git/config",
    f"{PRIMARY}/.concorde/workers.json",
    f"{PRIMARY}/.claude/settings.json",
    f"{PRIMARY}/.claude/worktrees/t2/a.py",
]
GIT = (
    AdminPath(path=f"{PRIMARY}/.git", directory=True),
    AdminPath(path=f"{WT}/.git", directory=False),
    AdminPath(path=f"{WT}/vendor/lib/.git", directory=False),
)


def policy_for(
    grant: Grant = GRANT,
    files: Sequence[str] = FILES,
    links: Sequence[str] = (),
    runtime_dir: str = RT,
    runtime_paths: Sequence[str] = (VENV, PYROOT),
    git: Sequence[AdminPath] = GIT,
    home: str = HOME,
) -> Policy:
    return build_policy(
        grant=grant,
        worktree=WT,
        primary=PRIMARY,
        user_home=home,
        runtime_dir=runtime_dir,
        runtime_paths=runtime_paths,
        git=git,
        list_dir=memory_tree(files, links),
        runtime_entries=RUNTIME_ENTRIES,
    )


POLICY = policy_for()


def rd(path: str, directory: bool = False) -> list[str]:
    target = "/" + path + ("/**" if directory else "")
    return [f"Read({target})", f"Edit({target})"]


def ed(path: str, directory: bool = False) -> list[str]:
    return [f"Edit(/{path}{'/**' if directory else ''})"]
