"""The real Git adapter: read-only Git through the `git` program, every command line from the
one table of `domain.gitview.git_commands`.

Why subprocess and not GitPython's `Git` object as the runner (design.md, "Git through GitPython,
bytes kept"): GitPython builds the child's environment as a copy of `os.environ`, and the host's
Git must see nothing of it (docs/decisions.md "The host's Git"). So the adapter runs `git` itself
with the environment the table builds whole, keeps stdout as bytes and hands it to the domain's
parsers.

What this module adds to the table: the absolute program paths (Git from the host's PATH, resolved
once; bubblewrap only from the system's own directories, tried once before it is relied on), the
filter overrides (every filter driver the repository's configuration files and their includes
define, read as text, never by Git), the HEAD file of the worktree's own Git directory, and the
running (stdin /dev/null, stdout and stderr captured, a timeout).
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat as stat_module
import subprocess
import threading
from collections.abc import Mapping, Sequence

from concorde_workers.domain.gitview.git_commands import (
    COMMANDS,
    GitCommand,
    change_store_environment,
    git_argv,
    git_environment,
    sandboxed,
)
from concorde_workers.domain.gitview.git_config import (
    filter_driver_names,
    filter_overrides,
    include_paths,
    parse_config,
)
from concorde_workers.domain.gitview.git_status import (
    GitRepository,
    IndexState,
    WorktreeInfo,
    WorktreeStatus,
    config_files,
    config_files_digest,
    decode_path,
    encode_path,
    head_state,
    index_state,
    parse_branch_headers,
    parse_porcelain_v2,
    parse_worktree_list_z,
)
from concorde_workers.ports.git import GitCommandFailed

DEFAULT_TIMEOUT_SECONDS = 120.0
BWRAP_DIRECTORIES = ("/usr/bin", "/bin", "/usr/local/bin")
"""Where bubblewrap is looked for: system directories only, never the host's PATH, which may
name a directory a worker can write."""
MAX_CONFIG_BYTES = 1 << 20
MAX_INCLUDE_DEPTH = 16  # Git stops at 10; reading deeper can only switch off more


def read_regular(path: str, limit: int = MAX_CONFIG_BYTES) -> bytes | None:
    """The bytes of a regular file (links followed, as Git follows them), None when there is
    none. A FIFO or device is never opened for reading in a way that could block."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat_module.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)


def _read_or_state(path: str) -> bytes | None:
    """For the configuration digest: the bytes, None when absent, a state of its own when the
    host cannot read it (never equal to a readable file)."""
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except OSError as error:
        return f"unreadable: {error.strerror}".encode()


def _home_of(user: str) -> str | None:
    try:
        return pwd.getpwnam(user).pw_dir
    except (KeyError, UnicodeError):
        return None


def repository_filter_names(repo: GitRepository) -> frozenset[str]:
    """Every filter driver name the configuration files Git reads for `repo` may define: the
    common `config`, the worktree's `config.worktree`, and every file their includes name
    (whatever the condition), recursively."""
    names: set[str] = set()
    pending = [(f"{repo.common_dir}/config", 0), (f"{repo.git_dir}/config.worktree", 0)]
    seen: set[str] = set()
    while pending:
        path, depth = pending.pop()
        if path in seen or depth > MAX_INCLUDE_DEPTH:
            continue
        seen.add(path)
        data = read_regular(path)
        if data is None:
            continue
        names |= filter_driver_names(data)
        users = {name: home for name in _tilde_users(data) if (home := _home_of(name))}
        for included in include_paths(parse_config(data).entries, path, users):
            pending.append((included, depth + 1))
    return frozenset(names)


def _tilde_users(data: bytes) -> set[str]:
    """The user names of `~user/` include paths (looked up only when a file names one)."""
    users = set()
    for entry in parse_config(data).entries:
        if entry.name.endswith(".path") and entry.value and entry.value.startswith("~"):
            user = entry.value[1:].partition("/")[0]
            if user:
                users.add(user)
    return users


def find_bwrap(directories: Sequence[str] = BWRAP_DIRECTORIES) -> str | None:
    """bubblewrap's absolute path in a system directory, None when it is not installed."""
    for directory in directories:
        candidate = os.path.join(directory, "bwrap")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


class GitCliReader:
    """`GitReader` over the `git` program.

    `environ` is the host environment the container read (this adapter never reads
    `os.environ`); only its PATH is used, once, to find `git`. `sandbox` is bubblewrap's path,
    "auto" to look for it in the system directories (and use it once a trial call succeeded),
    or None for none. `reuse_index=False` reads the index with Git on every call (for the
    benchmark's comparison)."""

    def __init__(
        self,
        environ: Mapping[str, str],
        git_program: str = "git",
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        sandbox: str | None = "auto",
        reuse_index: bool = True,
    ) -> None:
        found = (
            git_program
            if "/" in git_program
            else shutil.which(git_program, path=environ.get("PATH") or "/usr/bin:/bin")
        )
        self._git = os.path.abspath(found) if found else git_program
        self._timeout = timeout_seconds
        self._sandbox_choice = sandbox
        self._bwrap: str | None = None
        self._sandbox_settled = sandbox is None
        self._index_lock = threading.Lock()
        self._index_cache: dict[GitRepository, tuple[tuple[int, ...], IndexState]] = {}
        self._reuse_index = reuse_index

    # -- the sandbox ---------------------------------------------------------------------------

    @property
    def sandbox(self) -> str | None:
        """The bubblewrap program every call runs in, None when there is none (not installed,
        or it cannot make its namespaces here)."""
        if not self._sandbox_settled:
            self._bwrap = self._try_sandbox()
            self._sandbox_settled = True
        return self._bwrap

    def _try_sandbox(self) -> str | None:
        bwrap = find_bwrap() if self._sandbox_choice == "auto" else self._sandbox_choice
        if bwrap is None:
            return None
        try:
            proc = subprocess.run(
                sandboxed(bwrap, [self._git, "--version"]),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"},
                timeout=self._timeout,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return bwrap if proc.returncode == 0 else None

    # -- running -------------------------------------------------------------------------------

    def command_line(
        self,
        name: str,
        where: str | GitRepository,
        masked: Sequence[str] = (),
        extra: Sequence[str] = (),
        store: str | None = None,
    ) -> list[str]:
        """The argv of table command `name` as this adapter runs it (sandbox included), with
        `extra` arguments after the table's; `store`: the change store it may write."""
        argv = [*git_argv(self._git, COMMANDS[name], where), *extra]
        return sandboxed(self.sandbox, argv, masked, [store] if store else [])

    def environment(
        self, name: str, where: str | GitRepository, store: str | None = None
    ) -> dict[str, str]:
        """The environment of table command `name` as this adapter runs it."""
        command = COMMANDS[name]
        overrides = (
            filter_overrides(repository_filter_names(where))
            if isinstance(where, GitRepository)
            else ()
        )
        env = git_environment(self._git, command, where, overrides)
        if command.store and store and isinstance(where, GitRepository):
            env.update(change_store_environment(store, where.common_dir))
        return env

    def _run(
        self,
        name: str,
        where: str | GitRepository,
        masked: Sequence[str] = (),
        extra: Sequence[str] = (),
        stdin: bytes | None = None,
        store: str | None = None,
    ) -> tuple[int, bytes]:
        """Run table command `name`; (returncode, stdout bytes). A return code outside the
        command's answers, a timeout or a failure to start raises `GitCommandFailed`."""
        command: GitCommand = COMMANDS[name]
        if command.store and store is None:
            raise ValueError(f"{name} runs only against a change store")
        argv = self.command_line(name, where, masked, extra, store)
        try:
            proc = subprocess.run(
                argv,
                input=stdin if stdin is not None else b"",
                capture_output=True,
                env=self.environment(name, where, store),
                timeout=self._timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise GitCommandFailed(argv, f"timed out after {self._timeout:g} s", None) from None
        except OSError as exc:
            raise GitCommandFailed(argv, str(exc), None) from None
        if proc.returncode not in command.ok:
            raise GitCommandFailed(argv, proc.stderr.decode("utf-8", "replace"), proc.returncode)
        return proc.returncode, proc.stdout

    # -- GitReader: placement ------------------------------------------------------------------

    def worktrees(self, path: str) -> list[WorktreeInfo]:
        _, out = self._run("worktree_list", path)
        infos = parse_worktree_list_z(out)
        if not infos:
            raise GitCommandFailed(
                self.command_line("worktree_list", path), "git listed no worktree", 0
            )
        return [w.model_copy(update={"path": os.path.realpath(w.path)}) for w in infos]

    def toplevel(self, path: str) -> str:
        _, out = self._run("toplevel", path)
        return os.path.realpath(_one_path_line(out))

    def git_dirs(self, worktree: str) -> tuple[str, str]:
        # One question per call: a path containing a newline cannot be split from another.
        _, git_dir = self._run("git_dir", worktree)
        _, common = self._run("common_dir", worktree)
        return (
            os.path.realpath(_one_path_line(git_dir)),
            os.path.realpath(_one_path_line(common)),
        )

    # -- GitReader: the audit ------------------------------------------------------------------

    def status(self, repo: GitRepository, opaque: Sequence[str] = ()) -> WorktreeStatus:
        # Only real directories are masked (a link or file there is no mount point; Git
        # reads no `.git` through it either, with submodules ignored it only stats it).
        masked = [path for rel in opaque if _real_directory(path := f"{repo.worktree}/{rel}")]
        _, out = self._run("status", repo, masked)
        oid, head = parse_branch_headers(out)
        return WorktreeStatus(
            head=head_state(oid, head, read_regular(f"{repo.git_dir}/HEAD")),
            entries=parse_porcelain_v2(out),
        )

    def index(self, repo: GitRepository) -> IndexState:
        # Staged entries, not the index file's bytes: a stat refresh rewrites the file but not
        # these. -v adds the assume-unchanged/skip-worktree tags, which can hide a change from
        # status and so count as an index change.
        #
        # An index file whose identity is what it was when ls-files last read it is not read
        # again (docs/benchmarks.md): Git writes an index only through a lock file renamed
        # over it (a new inode and a new ctime, which no process can set back), the host's own
        # commands never write it, and so the answer cannot have changed.
        path = f"{repo.git_dir}/index"
        before = _identity(path)
        with self._index_lock:
            cached = self._index_cache.get(repo)
        if before is not None and cached is not None and cached[0] == before:
            return cached[1]
        _, out = self._run("index", repo)
        state = index_state(out)
        if self._reuse_index and before is not None and _identity(path) == before:
            with self._index_lock:
                self._index_cache[repo] = (before, state)
        return state

    def committed_config(self, repo: GitRepository) -> bytes | None:
        code, _ = self._run("head_commit", repo)
        if code != 0:
            return None
        _, listed = self._run("config_entry", repo)
        size = committed_regular_size(listed)
        if size is None:
            return None
        if size > MAX_CONFIG_BYTES:
            raise GitCommandFailed(
                self.command_line("config_entry", repo),
                f"the committed file is {size} bytes, more than {MAX_CONFIG_BYTES}",
                0,
            )
        _, data = self._run("config_blob", repo)
        if len(data) != size:  # HEAD moved between the two calls: read nothing half-known
            raise GitCommandFailed(
                self.command_line("config_blob", repo),
                "HEAD changed while the committed file was read",
                0,
            )
        return data

    # -- ChangeTrees: a round's change (issue 21 §1) ------------------------------------------

    def change_tree(
        self, repo: GitRepository, store: str, paths: Sequence[str], base: bool = False
    ) -> str:
        if base:
            self._make_store(store)
            code, _ = self._run("head_commit", repo)
            self._run(
                "changes_base", repo, extra=["HEAD"] if code == 0 else ["--empty"], store=store
            )
        if paths:
            listed = b"".join(encode_path(p) + b"\0" for p in paths)
            self._run("changes_add", repo, stdin=listed, store=store)
        _, out = self._run("changes_tree", repo, store=store)
        return out.decode("ascii", "replace").strip()

    @staticmethod
    def _make_store(store: str) -> None:
        """A new store, made here and nowhere else: one already there (or a link there) is no
        store of this run's, and the sandbox's one writable bind must not lead into it."""
        try:
            os.mkdir(store, 0o700)
            os.mkdir(os.path.join(store, "objects"), 0o700)
        except OSError as error:
            raise GitCommandFailed(
                ["mkdir", store], f"the change store cannot be made: {error.strerror}", None
            ) from None

    def change_patch(self, repo: GitRepository, store: str, old: str, new: str) -> bytes:
        _, out = self._run("changes_patch", repo, extra=[old, new], store=store)
        return out

    def config_digest(self, repo: GitRepository) -> str:
        hooks = f"{repo.common_dir}/hooks"
        try:
            names = sorted(os.listdir(hooks))
        except OSError:
            names = []
        return config_files_digest(
            config_files(repo.git_dir, repo.common_dir, names), _read_or_state
        )


def _real_directory(path: str) -> bool:
    try:
        return stat_module.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _identity(path: str) -> tuple[int, ...] | None:
    """What tells one index file from another: device, inode, size, mtime and ctime."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _one_path_line(out: bytes) -> str:
    """A path Git printed on one line: only the final newline is dropped (a path may itself end
    with other whitespace)."""
    if out.endswith(b"\n"):
        out = out[:-1]
    return decode_path(out)


__all__ = ["GitCliReader", "find_bwrap", "read_regular", "repository_filter_names"]


def committed_regular_size(listed: bytes) -> int | None:
    """The size `git ls-tree -z -l` gives for one regular file (mode 100644 or 100755), None
    for no entry or anything else (a link, a tree, a gitlink is no configuration)."""
    record = listed.split(b"\0", 1)[0]
    meta, _, _ = record.partition(b"\t")
    fields = meta.split()
    if len(fields) != 4 or fields[1] != b"blob" or fields[0] not in (b"100644", b"100755"):
        return None
    return int(fields[3]) if fields[3].isdigit() else None
