"""The real Git adapter: read-only Git through the `git` program.

Why subprocess and not GitPython's `Git` object as the runner (design.md, "Git through GitPython,
bytes kept"): GitPython's `Git.execute` builds the child's environment as a copy of `os.environ`
updated with what it is given, so it cannot *remove* the inherited `GIT_DIR`, `GIT_INDEX_FILE`,
`GIT_CONFIG_*`, ... variables, and one of those would point every question at another repository or
inject configuration. Mutating `os.environ` to work around it would change the host's own
environment and race other threads. So the adapter runs `git` itself with `subprocess`, with an
environment it builds whole, and keeps stdout as bytes; the parsing is `domain.git_status`.

Read-only, and no code from the repository runs:
- every call passes `-c core.fsmonitor=false -c core.hooksPath=/dev/null --no-optional-locks` and
  `GIT_OPTIONAL_LOCKS=0`, so `git status` never takes the index lock to write a stat refresh and
  no fsmonitor hook or other hook runs;
- inherited `GIT_*` variables are stripped; `LC_ALL=C` keeps Git's messages stable for evidence;
- stdin is /dev/null, so nothing ever waits on a prompt (`GIT_TERMINAL_PROMPT=0` as well).
Commands used: `worktree list`, `rev-parse`, `symbolic-ref`, `ls-files`, `status`, `ls-tree`,
`cat-file` — none writes the repository (tests/contract/test_git_contract.py proves it).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Mapping, Sequence

from concorde_workers.domain.git_status import (
    HeadState,
    StatusEntry,
    WorktreeInfo,
    config_files,
    config_files_digest,
    decode_path,
    parse_porcelain_v2,
    parse_worktree_list_z,
)
from concorde_workers.ports.git import GitCommandFailed, HeadBlob


def _read_or_none(path: str) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except OSError as error:
        # Unreadable is a state of its own: never equal to a readable file.
        return f"unreadable: {error.strerror}".encode()


SAFETY_OPTIONS: tuple[str, ...] = (
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.hooksPath=/dev/null",
    "--no-optional-locks",
    # Paths we pass are file names, never patterns: `*` or `:(glob)` in a name stays literal.
    "--literal-pathspecs",
)

DEFAULT_TIMEOUT_SECONDS = 120.0


def clean_git_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` without any `GIT_*` variable, plus the variables that keep Git read-only and
    quiet. Pure, so it is tested on its own."""
    env = {k: v for k, v in environ.items() if not k.startswith("GIT_")}
    env["GIT_OPTIONAL_LOCKS"] = "0"
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["LC_ALL"] = "C"
    env["LANGUAGE"] = "C"
    return env


def _one_path_line(out: bytes) -> str:
    """A path Git printed on one line: only the final newline is dropped (a path may itself end
    with other whitespace)."""
    if out.endswith(b"\n"):
        out = out[:-1]
    return decode_path(out)


class GitCliReader:
    """`GitReader` over the `git` program. `environ` is the host environment the container
    read (this adapter never reads `os.environ` itself); `git_program` the program to run."""

    def __init__(
        self,
        environ: Mapping[str, str],
        git_program: str = "git",
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    ) -> None:
        self._env = clean_git_environment(environ)
        self._git = git_program
        self._timeout = timeout_seconds

    # -- running ---------------------------------------------------------------------------

    def _argv(self, cwd: str, args: Sequence[str]) -> list[str]:
        # `-C`, not the child's cwd: Git itself then reports a missing or unreadable directory
        # (exit 128, "cannot change to ..."), which is the evidence a caller shows.
        return [self._git, *SAFETY_OPTIONS, "-C", cwd, *args]

    def _run(self, cwd: str, args: Sequence[str], ok: tuple[int, ...] = (0,)) -> tuple[int, bytes]:
        """Run git in `cwd`; (returncode, stdout bytes). A return code outside `ok`, a timeout
        or a failure to start raises `GitCommandFailed`."""
        argv = self._argv(cwd, args)
        try:
            proc = subprocess.run(
                argv,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                env=self._env,
                timeout=self._timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise GitCommandFailed(argv, f"timed out after {self._timeout:g} s", None) from None
        except OSError as exc:
            raise GitCommandFailed(argv, str(exc), None) from None
        if proc.returncode not in ok:
            raise GitCommandFailed(argv, proc.stderr.decode("utf-8", "replace"), proc.returncode)
        return proc.returncode, proc.stdout

    # -- GitReader -------------------------------------------------------------------------

    def worktrees(self, path: str) -> list[WorktreeInfo]:
        _, out = self._run(path, ["worktree", "list", "--porcelain", "-z"])
        infos = parse_worktree_list_z(out)
        if not infos:
            argv = self._argv(path, ["worktree", "list", "--porcelain", "-z"])
            raise GitCommandFailed(argv, "git listed no worktree", 0)
        return [w.model_copy(update={"path": os.path.realpath(w.path)}) for w in infos]

    def worktree_list(self, path: str) -> list[str]:
        return [w.path for w in self.worktrees(path)]

    def toplevel(self, path: str) -> str:
        _, out = self._run(path, ["rev-parse", "--show-toplevel"])
        return os.path.realpath(_one_path_line(out))

    def git_dirs(self, worktree: str) -> tuple[str, str]:
        # One question per call: a path containing a newline cannot be split from another.
        _, git_dir = self._run(worktree, ["rev-parse", "--path-format=absolute", "--git-dir"])
        _, common = self._run(worktree, ["rev-parse", "--path-format=absolute", "--git-common-dir"])
        return (
            os.path.realpath(_one_path_line(git_dir)),
            os.path.realpath(_one_path_line(common)),
        )

    def head(self, worktree: str) -> HeadState:
        # symbolic-ref answers 1 when HEAD is detached; rev-parse --verify -q answers 1 when
        # the branch is unborn. Anything else is a failure.
        code, ref = self._run(worktree, ["symbolic-ref", "-q", "HEAD"], ok=(0, 1))
        branch = _one_path_line(ref) if code == 0 else None
        code, oid = self._run(worktree, ["rev-parse", "-q", "--verify", "HEAD"], ok=(0, 1))
        commit = oid.decode("ascii").strip() if code == 0 else None
        return HeadState(branch=branch, commit=commit)

    def index_digest(self, worktree: str) -> str:
        # Staged entries, not the index file's bytes: a stat refresh rewrites the file but not
        # these. -v adds the assume-unchanged/skip-worktree tags, which can hide a change from
        # status and so count as an index change.
        _, out = self._run(worktree, ["ls-files", "--stage", "-v", "-z"])
        return "sha256:" + hashlib.sha256(out).hexdigest()

    def status(self, worktree: str) -> tuple[StatusEntry, ...]:
        _, out = self._run(
            worktree,
            [
                "status",
                "--porcelain=v2",
                "-z",
                "--untracked-files=all",
                "--no-renames",
                "--ignored=no",
            ],
        )
        return parse_porcelain_v2(out)

    def head_blob(self, worktree: str, rel: str) -> HeadBlob | None:
        code, _ = self._run(worktree, ["rev-parse", "-q", "--verify", "HEAD"], ok=(0, 1))
        if code == 1:
            return None  # unborn branch: HEAD has no file at all
        _, out = self._run(worktree, ["ls-tree", "-z", "--full-tree", "HEAD", "--", rel])
        entry = self._matching_tree_entry(out, rel)
        if entry is None:
            return None
        mode, kind, oid = entry
        if kind != "blob":
            # A directory at `rel` is no file; a submodule's commit has no blob to digest.
            return HeadBlob(mode=mode, oid=oid, digest=None) if kind == "commit" else None
        _, content = self._run(worktree, ["cat-file", "blob", oid])
        return HeadBlob(mode=mode, oid=oid, digest="sha256:" + hashlib.sha256(content).hexdigest())

    def config_digest(self, worktree: str) -> str:
        git_dir, common = self.git_dirs(worktree)
        return config_files_digest(config_files(git_dir, common), _read_or_none)

    def head_blob_digest(self, worktree: str, rel: str) -> str | None:
        blob = self.head_blob(worktree, rel)
        return None if blob is None else blob.digest

    @staticmethod
    def _matching_tree_entry(out: bytes, rel: str) -> tuple[str, str, str] | None:
        """The `ls-tree -z` record naming exactly `rel`: (mode, type, oid)."""
        for record in out.split(b"\0"):
            if not record:
                continue
            meta, _, name = record.partition(b"\t")
            if decode_path(name) != rel:
                continue
            mode, kind, oid = meta.decode("ascii").split(" ")
            return mode, kind, oid
        return None
