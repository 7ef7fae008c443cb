"""The real Git adapter: read-only Git through the `git` program (`GitReader` and, through
`GitChangeStore`, `ChangeTrees`), every command line from the one table of
`domain.gitview.git_commands`, run by `adapters.repository.git_runner`.

The audit's listing (docs/decisions.md "The audit's listing"): `git diff-files` names every
tracked path whose file is not as the index recorded it, by stat data alone; `git ls-files
--others` every untracked file the host's exclude list (the committed `.gitignore` files, the
user's own excludes) does not ignore; a listed file whose content, hashed under the committed
attributes, is the index's is left out. No rule file of the working tree is read.
"""

from __future__ import annotations

import os
import shutil
import stat as stat_module
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

from concorde_workers.adapters.repository.git_runner import (
    DEFAULT_TIMEOUT_SECONDS,
    MAX_CONFIG_BYTES,
    entry_kind,
    find_bwrap,
    link_target,
    read_regular,
    repository_filter_names,
)
from concorde_workers.adapters.repository.git_store import GitChangeStore
from concorde_workers.domain.gitview.committed_rules import EvidenceRules
from concorde_workers.domain.gitview.git_status import (
    GitRepository,
    IndexState,
    StatusEntry,
    WorktreeInfo,
    WorktreeStatus,
    blob_id,
    c_quote_path,
    config_files,
    config_files_digest,
    decode_path,
    head_state,
    index_state,
    parse_diff_files,
    parse_object_ids,
    parse_others,
    parse_worktree_list_z,
)
from concorde_workers.ports.repository.git import GitCommandFailed

__all__ = ["GitCliReader", "find_bwrap", "read_regular", "repository_filter_names"]


class GitCliReader(GitChangeStore):
    """`GitReader` (and `ChangeTrees`) over the `git` program. `reuse_index=False` reads the
    index with Git on every call (for the benchmark's comparison); the other arguments are
    `GitRunner`'s."""

    def __init__(
        self,
        environ: Mapping[str, str],
        git_program: str = "git",
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        sandbox: str | None = "auto",
        reuse_index: bool = True,
    ) -> None:
        super().__init__(environ, git_program, timeout_seconds, sandbox)
        self._index_lock = threading.Lock()
        self._index_cache: dict[GitRepository, tuple[tuple[int, ...], IndexState]] = {}
        self._reuse_index = reuse_index

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
        # One question per call: a path containing a newline cannot be split from another. The
        # two are independent, so both run at once (started in this order, the first failure
        # raised): a plan and a run wait for one sandboxed Git process here, not two.
        (_, git_dir), (_, common) = self._run_beside(
            [("git_dir", worktree, (), None), ("common_dir", worktree, (), None)]
        )
        return (
            os.path.realpath(_one_path_line(git_dir)),
            os.path.realpath(_one_path_line(common)),
        )

    # -- GitReader: the audit ------------------------------------------------------------------

    def status(
        self,
        repo: GitRepository,
        opaque: Sequence[str] = (),
        rules: EvidenceRules | None = None,
        store: str | None = None,
    ) -> WorktreeStatus:
        # Only real directories are masked (a link or file there is no mount point; Git
        # reads no `.git` through it either, with submodules ignored it only stats it).
        masked = [path for rel in opaque if _real_directory(path := f"{repo.worktree}/{rel}")]
        if rules is None:
            rules = self.evidence_rules(repo)
        (code, commit), (_, tracked), (_, others) = self._run_beside(
            [
                ("head_commit", repo, (), None),
                ("tracked", repo, masked, None),
                ("untracked", repo, masked, rules.excludes),
            ]
        )
        listed = self._changed(repo, parse_diff_files(tracked), rules, store)
        return WorktreeStatus(
            head=head_state(
                read_regular(f"{repo.git_dir}/HEAD"),
                commit.decode("ascii").strip() if code == 0 else None,
            ),
            entries=(*listed, *parse_others(others)),
        )

    def _changed(
        self,
        repo: GitRepository,
        entries: Sequence[StatusEntry],
        rules: EvidenceRules,
        store: str | None,
    ) -> list[StatusEntry]:
        """The entries whose content is not the index's under the committed rules: a file Git
        lists only for its stat data (touched, rewritten as it was) is left out, as `git
        status` leaves it out, but compared by the host's rules, never the working tree's
        (in the run's store, or a store made for this call and removed: a bare repository,
        which reads no attribute file of the worktree or the index)."""
        unchanged: set[str] = set()
        files: list[StatusEntry] = []
        for entry in entries:
            if entry.status != "M" or entry.mode_index != entry.mode_worktree:
                continue
            kind = entry_kind(f"{repo.worktree}/{entry.path}")
            if kind == "link" and entry.mode_index == "120000":
                target = link_target(f"{repo.worktree}/{entry.path}")
                oid = entry.oid_index or ""
                if target is not None and oid == blob_id(target, len(oid)):
                    unchanged.add(entry.path)
            elif kind == "file" and entry.mode_index in ("100644", "100755"):
                files.append(entry)
        if files:
            listed = b"".join(c_quote_path(e.path) + b"\n" for e in files)
            with self._store_for(repo, store) as where:
                _, out = self._run(
                    "content", repo, stdin=listed, store=where, rules=rules.attributes
                )
            ids = parse_object_ids(out, len(files))
            unchanged.update(
                e.path for e, oid in zip(files, ids, strict=True) if oid == e.oid_index
            )
        return [e for e in entries if e.path not in unchanged]

    @contextmanager
    def _store_for(self, repo: GitRepository, store: str | None) -> Iterator[str]:
        """The run's store, or a store made for one call and removed after it."""
        if store is not None:
            yield store
            return
        scratch = tempfile.mkdtemp(prefix="concorde-store-")
        try:
            self.open_store(repo, os.path.join(scratch, "store"))
            yield os.path.join(scratch, "store")
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

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

    def config_digest(self, repo: GitRepository) -> str:
        hooks = f"{repo.common_dir}/hooks"
        try:
            names = sorted(os.listdir(hooks))
        except OSError:
            names = []
        return config_files_digest(
            config_files(repo.git_dir, repo.common_dir, names), _read_or_state
        )


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


def committed_regular_size(listed: bytes) -> int | None:
    """The size `git ls-tree -z -l` gives for one regular file (mode 100644 or 100755), None
    for no entry or anything else (a link, a tree, a gitlink is no configuration)."""
    record = listed.split(b"\0", 1)[0]
    meta, _, _ = record.partition(b"\t")
    fields = meta.split()
    if len(fields) != 4 or fields[1] != b"blob" or fields[0] not in (b"100644", b"100755"):
        return None
    return int(fields[3]) if fields[3].isdigit() else None
