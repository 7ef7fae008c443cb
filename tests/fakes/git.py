"""FakeGit: an in-memory repository model answering the `GitReader` port like real Git.

The worktree files live in a `FakeFileSystem`, so a test (or a fake agent) changes files there
and the fake derives the audit's listing from them exactly as the real adapter does for the
cases the host meets: tracked files whose content, executable bit or kind differ from the index,
or gone; untracked files (every file); files ignored by the committed rules left out (the
committed top-level `.gitignore` and `ignored`, never the working copy's: issue 30 §1);
unmerged entries; nested repositories reported as `dir/`; submodules ignored (neither a gitlink
nor anything in its path is listed). The
audit's questions find the worktree by the Git directory the `GitRepository` names, never by a
`.git` file, as the real adapter's `--git-dir` does. Blob object ids are real Git blob ids and the index
digest hashes the same bytes `git ls-files --stage -v -z` prints, so values match real Git for
the same content. tests/contract/test_git_contract.py runs the same tests against both.
"""

from __future__ import annotations

import fnmatch
import hashlib
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field

from concorde_workers.domain.gitview.committed_rules import EvidenceRules, RuleFile, evidence_rules
from concorde_workers.domain.gitview.git_status import (
    GITLINK_MODE,
    NULL_MODE,
    NULL_OID,
    GitRepository,
    HeadState,
    IndexState,
    StatusEntry,
    StatusKind,
    WorktreeInfo,
    WorktreeStatus,
    config_files,
    config_files_digest,
    encode_path,
    index_state,
)
from concorde_workers.domain.ground.paths import EntryKind
from concorde_workers.ports.repository.git import GitCommandFailed
from fakes.filesystem import FakeFileSystem, Node

PORT_METHODS = (
    "worktrees",
    "toplevel",
    "git_dirs",
    "status",
    "evidence_rules",
    "index",
    "config_digest",
)
MODE_FILE = "100644"
MODE_EXEC = "100755"
MODE_LINK = "120000"


def blob_oid(data: bytes) -> str:
    """Git's object id of a blob with these bytes."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass(frozen=True)
class Entry:
    """A tree or index entry: Git mode and blob id."""

    mode: str
    oid: str


@dataclass
class IndexEntry:
    mode: str
    oid: str
    assume_unchanged: bool = False


@dataclass
class Commit:
    oid: str
    tree: dict[str, Entry]
    parent: str | None
    message: str


@dataclass
class FakeWorktree:
    path: str
    git_dir: str
    branch: str | None  # full ref; None when detached
    detached_at: str | None = None
    index: dict[str, IndexEntry] = field(default_factory=dict)
    # path -> (base, ours, theirs), each Entry or None: an unmerged path has no stage-0 entry.
    unmerged: dict[str, tuple[Entry | None, Entry | None, Entry | None]] = field(
        default_factory=dict
    )


@dataclass
class FakeRepository:
    common_dir: str
    bare: bool
    worktrees: list[FakeWorktree]  # primary first
    refs: dict[str, str] = field(default_factory=dict)
    commits: dict[str, Commit] = field(default_factory=dict)
    blobs: dict[str, bytes] = field(default_factory=dict)
    ignored: list[str] = field(default_factory=list)  # extra patterns, like .git/info/exclude


def _not_a_repository(argv: list[str]) -> GitCommandFailed:
    return GitCommandFailed(
        argv, "fatal: not a git repository (or any of the parent directories): .git\n", 128
    )


def _sort_key(path: str) -> bytes:
    return encode_path(path)


def _kind(mode: str) -> str:
    """The object type a mode names, to tell a type change (T) from a modification (M)."""
    return {MODE_FILE: "file", MODE_EXEC: "file", MODE_LINK: "link"}.get(mode, mode)


class FakeGit:
    """`GitReader` over in-memory repositories whose worktree files are in `fs`.

    Setup (not part of the port): `init`, `worktree_add`, `add`, `add_all`, `commit`, `switch`,
    `detach`, `set_unmerged`, `assume_unchanged`, `fail`. `calls` records every port call as
    (method, *args).
    """

    def __init__(self, fs: FakeFileSystem) -> None:
        self.fs = fs
        self.repositories: list[FakeRepository] = []
        self.calls: list[tuple[str, ...]] = []
        self._failures: dict[str, GitCommandFailed] = {}
        self._commit_counter = 0

    # -- setup ------------------------------------------------------------------------------

    def init(
        self, primary: str, branch: str = "main", bare: bool = False, ignored: tuple[str, ...] = ()
    ) -> FakeRepository:
        """`git init -b <branch> <primary>` (bare: `primary` is the Git directory itself)."""
        primary = self.fs.resolved(primary)
        common = primary if bare else posixpath.join(primary, ".git")
        self.fs.mkdir(posixpath.join(common, "objects"))
        self.fs.mkdir(posixpath.join(common, "refs", "heads"))
        self.fs.write(posixpath.join(common, "HEAD"), f"ref: refs/heads/{branch}\n")
        worktree = FakeWorktree(path=primary, git_dir=common, branch=f"refs/heads/{branch}")
        repo = FakeRepository(
            common_dir=common, bare=bare, worktrees=[worktree], ignored=list(ignored)
        )
        self.repositories.append(repo)
        return repo

    def worktree_add(
        self, primary: str, path: str, new_branch: str | None = None, start: str | None = None
    ) -> FakeWorktree:
        """`git worktree add [-b <new_branch>] <path> [<start>]`: checks HEAD's files out into
        the filesystem and writes the `.git` file and the administrative directory."""
        repo, main = self._find(primary, "worktree")
        commit = start or self._head_commit(repo, main)
        if commit is None:
            raise ValueError("worktree_add needs a commit")
        path = self.fs.resolved(path)
        name = posixpath.basename(path)
        git_dir = posixpath.join(repo.common_dir, "worktrees", name)
        if new_branch is not None:
            repo.refs[f"refs/heads/{new_branch}"] = commit
        wt = FakeWorktree(
            path=path,
            git_dir=git_dir,
            branch=f"refs/heads/{new_branch}" if new_branch else None,
            detached_at=None if new_branch else commit,
        )
        self.fs.write(
            posixpath.join(git_dir, "HEAD"), f"ref: {wt.branch}\n" if wt.branch else f"{commit}\n"
        )
        self.fs.write(posixpath.join(git_dir, "commondir"), "../..\n")
        self.fs.write(posixpath.join(git_dir, "gitdir"), posixpath.join(path, ".git") + "\n")
        self.fs.write(posixpath.join(path, ".git"), f"gitdir: {git_dir}\n")
        self._checkout(repo, wt, commit)
        repo.worktrees.append(wt)
        return wt

    def add(self, worktree: str, *rels: str) -> None:
        """`git add -- <rels>`: stage each file as it is (a missing file is unstaged)."""
        repo, wt = self._find(worktree, "add")
        work = self._work_files(repo, wt, include_ignored=True)
        for rel in rels:
            wt.unmerged.pop(rel, None)
            below = [p for p in work if p.startswith(rel.rstrip("/") + "/")]
            for p in [rel] if rel in work or not below else below:
                if p in work:
                    entry, data = work[p]
                    repo.blobs[entry.oid] = data
                    wt.index[p] = IndexEntry(entry.mode, entry.oid)
                else:
                    wt.index.pop(p, None)

    def add_all(self, worktree: str) -> None:
        """`git add -A`: stage every change and untracked, not ignored, file."""
        repo, wt = self._find(worktree, "add")
        work = self._work_files(repo, wt, include_ignored=False)
        self.add(worktree, *sorted(set(work) | set(wt.index)))

    def commit(self, worktree: str, message: str = "commit") -> str:
        """`git commit`: HEAD's branch (or detached HEAD) moves to a commit of the index."""
        repo, wt = self._find(worktree, "commit")
        if wt.unmerged:
            raise ValueError("cannot commit with unmerged paths")
        self._commit_counter += 1
        tree = {p: Entry(e.mode, e.oid) for p, e in wt.index.items()}
        parent = self._head_commit(repo, wt)
        oid = hashlib.sha1(f"commit {self._commit_counter} {message}".encode()).hexdigest()
        repo.commits[oid] = Commit(oid, tree, parent, message)
        if wt.branch is not None:
            repo.refs[wt.branch] = oid
        else:
            wt.detached_at = oid
        return oid

    def switch(self, worktree: str, branch: str, create: bool = False) -> None:
        """`git switch [-c] <branch>` (with a clean worktree)."""
        repo, wt = self._find(worktree, "switch")
        ref = f"refs/heads/{branch}"
        if create:
            head = self._head_commit(repo, wt)
            if head is not None:
                repo.refs[ref] = head
        wt.branch, wt.detached_at = ref, None
        target = repo.refs.get(ref)
        if target is not None:
            self._checkout(repo, wt, target)

    def detach(self, worktree: str, commit: str | None = None) -> None:
        """`git switch --detach [<commit>]`."""
        repo, wt = self._find(worktree, "switch")
        target = commit or self._head_commit(repo, wt)
        wt.branch, wt.detached_at = None, target
        if target is not None:
            self._checkout(repo, wt, target)

    def set_unmerged(
        self,
        worktree: str,
        rel: str,
        base: tuple[str, bytes] | None,
        ours: tuple[str, bytes] | None,
        theirs: tuple[str, bytes] | None,
    ) -> None:
        """Put `rel` in conflict: each stage (mode, content) or None for an absent side."""
        repo, wt = self._find(worktree, "merge")
        stages: list[Entry | None] = []
        for stage in (base, ours, theirs):
            if stage is None:
                stages.append(None)
            else:
                oid = blob_oid(stage[1])
                repo.blobs[oid] = stage[1]
                stages.append(Entry(stage[0], oid))
        wt.index.pop(rel, None)
        wt.unmerged[rel] = (stages[0], stages[1], stages[2])

    def add_gitlink(self, worktree: str, rel: str, commit: str) -> None:
        """`git update-index --add --cacheinfo 160000,<commit>,<rel>` and the empty directory
        `git worktree add` leaves for an uninitialised submodule."""
        _, wt = self._find(worktree, "update-index")
        wt.index[rel] = IndexEntry(GITLINK_MODE, commit)
        self.fs.mkdir(posixpath.join(wt.path, rel))

    def assume_unchanged(self, worktree: str, rel: str, value: bool = True) -> None:
        """`git update-index --[no-]assume-unchanged <rel>`."""
        _, wt = self._find(worktree, "update-index")
        wt.index[rel].assume_unchanged = value

    def fail(self, method: str, error: GitCommandFailed | None = None) -> None:
        """Make port method `method` raise `error` (a generic failure when None) from now on."""
        if method not in PORT_METHODS:
            raise ValueError(f"{method!r} is no GitReader method ({', '.join(PORT_METHODS)})")
        self._failures[method] = error or GitCommandFailed(
            ["git", method], "fatal: injected failure\n", 128
        )

    # -- model ------------------------------------------------------------------------------

    def _find(self, path: str, command: str) -> tuple[FakeRepository, FakeWorktree]:
        """The repository and worktree containing `path` (deepest worktree wins)."""
        real = self.fs.resolved(path)
        node = self.fs.node_at(real, follow=True)
        if node is None or node.kind is not EntryKind.DIRECTORY:
            # As `git -C <path>`: Git cannot even start where there is no directory.
            raise GitCommandFailed(
                ["git", "-C", path, command],
                f"fatal: cannot change to '{path}': No such file or directory\n",
                128,
            )
        best: tuple[FakeRepository, FakeWorktree] | None = None
        for repo in self.repositories:
            for wt in repo.worktrees:
                if (real == wt.path or real.startswith(wt.path.rstrip("/") + "/")) and (
                    best is None or len(wt.path) > len(best[1].path)
                ):
                    best = (repo, wt)
        if best is None:
            raise _not_a_repository(["git", "-C", path, command])
        return best

    @staticmethod
    def _head_commit(repo: FakeRepository, wt: FakeWorktree) -> str | None:
        if wt.branch is None:
            return wt.detached_at
        return repo.refs.get(wt.branch)

    def _head_tree(self, repo: FakeRepository, wt: FakeWorktree) -> dict[str, Entry]:
        commit = self._head_commit(repo, wt)
        return {} if commit is None else repo.commits[commit].tree

    def _checkout(self, repo: FakeRepository, wt: FakeWorktree, commit: str) -> None:
        tree = repo.commits[commit].tree
        for rel in list(wt.index):
            if rel not in tree:
                node = self.fs.node_at(posixpath.join(wt.path, rel))
                if node is not None:
                    del self.fs.nodes[self.fs.resolved(posixpath.join(wt.path, rel))]
        for rel, entry in tree.items():
            target = posixpath.join(wt.path, rel)
            if entry.mode == GITLINK_MODE:
                self.fs.mkdir(target)  # an uninitialised submodule: an empty directory
                continue
            data = repo.blobs[entry.oid]
            if entry.mode == MODE_LINK:
                self.fs.symlink(data.decode("utf-8", "surrogateescape"), target)
            else:
                self.fs.write(target, data, 0o755 if entry.mode == MODE_EXEC else 0o644)
        wt.index = {p: IndexEntry(e.mode, e.oid) for p, e in tree.items()}

    def _ignore_patterns(
        self, repo: FakeRepository, wt: FakeWorktree, committed: bool = False
    ) -> list[str]:
        """`ignored` and the top-level `.gitignore`: the working copy's (as `git add -A`
        reads it), or the one committed at HEAD (as the host's rules take it)."""
        patterns = list(repo.ignored)
        data: bytes | None = None
        if committed:
            entry = self._head_tree(repo, wt).get(".gitignore")
            data = repo.blobs[entry.oid] if entry is not None and entry.mode == MODE_FILE else None
        else:
            node = self.fs.node_at(posixpath.join(wt.path, ".gitignore"), follow=True)
            data = node.data if node is not None and node.kind is EntryKind.FILE else None
        if data is not None:
            for line in data.decode("utf-8", "surrogateescape").splitlines():
                line = line.strip()
                if line and not line.startswith("#"):
                    patterns.append(line)
        return patterns

    @staticmethod
    def _is_ignored(rel: str, is_dir: bool, patterns: list[str]) -> bool:
        """A subset of gitignore (the root .gitignore and `ignored` patterns only): `name`
        matches any component, `a/b` is anchored, a trailing
        `/` matches directories only (negation is not modelled)."""
        for raw in patterns:
            dir_only = raw.endswith("/")
            pattern = raw.rstrip("/")
            anchored = "/" in pattern
            pattern = pattern.lstrip("/")
            if dir_only and not is_dir:
                continue
            if anchored:
                if fnmatch.fnmatchcase(rel, pattern):
                    return True
            elif fnmatch.fnmatchcase(posixpath.basename(rel), pattern):
                return True
        return False

    def _work_files(
        self,
        repo: FakeRepository,
        wt: FakeWorktree,
        include_ignored: bool,
        root: str | None = None,
    ) -> dict[str, tuple[Entry, bytes]]:
        """The worktree's files as Git sees them: rel -> (mode and blob id, content). A nested
        repository (a directory holding `.git`) appears as one entry `dir/`."""
        patterns = self._ignore_patterns(repo, wt)
        found: dict[str, tuple[Entry, bytes]] = {}
        gitlinks = {p for p, e in wt.index.items() if e.mode == GITLINK_MODE}

        def walk(directory: str, prefix: str) -> None:
            for name, node in sorted(self.fs.children(directory).items()):
                rel = prefix + name
                if name == ".git" or rel in gitlinks:
                    continue
                is_dir = node.kind is EntryKind.DIRECTORY
                if not include_ignored and self._is_ignored(rel, is_dir, patterns):
                    continue
                if is_dir:
                    path = posixpath.join(directory, name)
                    if ".git" in self.fs.children(path):
                        found[rel + "/"] = (Entry("160000", NULL_OID), b"")
                    else:
                        walk(path, rel + "/")
                else:
                    found[rel] = self._entry_of(node)

        if not repo.bare:
            walk(root or wt.path, "")
        return found

    @staticmethod
    def _entry_of(node: Node) -> tuple[Entry, bytes]:
        if node.kind is EntryKind.SYMLINK:
            data = node.target.encode("utf-8", "surrogateescape")
            return Entry(MODE_LINK, blob_oid(data)), data
        mode = MODE_EXEC if node.mode & 0o100 else MODE_FILE
        return Entry(mode, blob_oid(node.data)), node.data

    def _record(self, method: str, *args: str) -> None:
        self.calls.append((method, *args))
        if method in self._failures:
            raise self._failures[method]

    # -- GitReader ---------------------------------------------------------------------------

    def worktrees(self, path: str) -> list[WorktreeInfo]:
        self._record("worktrees", path)
        repo, _ = self._find(path, "worktree")
        infos = []
        for wt in repo.worktrees:
            head = self._head_commit(repo, wt)
            if repo.bare and wt is repo.worktrees[0]:
                infos.append(WorktreeInfo(path=wt.path, bare=True))
            else:
                infos.append(
                    WorktreeInfo(
                        path=wt.path,
                        head=head or NULL_OID,
                        branch=wt.branch,
                        detached=wt.branch is None,
                    )
                )
        return infos

    def toplevel(self, path: str) -> str:
        self._record("toplevel", path)
        repo, wt = self._find(path, "rev-parse")
        if repo.bare:
            raise GitCommandFailed(
                ["git", "-C", path, "rev-parse", "--show-toplevel"],
                "fatal: this operation must be run in a work tree\n",
                128,
            )
        return wt.path

    def git_dirs(self, worktree: str) -> tuple[str, str]:
        self._record("git_dirs", worktree)
        repo, wt = self._find(worktree, "rev-parse")
        if self.fs.resolved(worktree) != wt.path:
            # As GIT_CEILING_DIRECTORIES at the directory's parent: no repository is found
            # above the directory itself.
            raise _not_a_repository(["git", "-C", worktree, "rev-parse", "--git-dir"])
        return wt.git_dir, repo.common_dir

    def _named(self, repo: GitRepository, command: str) -> tuple[FakeRepository, FakeWorktree]:
        """The worktree whose Git directory `repo` names, as `--git-dir`/`--work-tree` find
        it: no `.git` file is read."""
        node = self.fs.node_at(repo.worktree, follow=True)
        if node is None or node.kind is not EntryKind.DIRECTORY:
            raise GitCommandFailed(
                ["git", f"--git-dir={repo.git_dir}", "-C", repo.worktree, command],
                f"fatal: cannot change to '{repo.worktree}': No such file or directory\n",
                128,
            )
        for fake in self.repositories:
            for wt in fake.worktrees:
                if wt.git_dir == repo.git_dir:
                    return fake, wt
        raise GitCommandFailed(
            ["git", f"--git-dir={repo.git_dir}", command],
            f"fatal: not a git repository: '{repo.git_dir}'\n",
            128,
        )

    def committed_config(self, repo: GitRepository) -> bytes | None:
        self._record("committed_config", repo.worktree)
        self._named(repo, "rev-parse")
        fake_repo, wt = self._find(repo.worktree, "rev-parse")
        entry = self._head_tree(fake_repo, wt).get(".concorde/workers.json")
        if entry is None or entry.mode not in ("100644", "100755"):
            return None
        return fake_repo.blobs[entry.oid]

    def config_digest(self, repo: GitRepository) -> str:
        self._record("config_digest", repo.worktree)
        self._named(repo, "rev-parse")

        def read(path: str) -> bytes | None:
            node = self.fs.nodes.get(path)
            if node is None:
                return None
            if node.kind is not EntryKind.FILE:
                return b"unreadable: Is a directory"
            return node.data

        hooks = (
            sorted(self.fs.children(f"{repo.common_dir}/hooks"))
            if self.fs.node_at(f"{repo.common_dir}/hooks") is not None
            else []
        )
        return config_files_digest(config_files(repo.git_dir, repo.common_dir, hooks), read)

    def index(self, repo: GitRepository) -> IndexState:
        self._record("index", repo.worktree)
        _, wt = self._named(repo, "ls-files")
        lines: list[tuple[bytes, bytes]] = []
        for rel, e in wt.index.items():
            tag = "h" if e.assume_unchanged else "H"
            lines.append((encode_path(rel), f"{tag} {e.mode} {e.oid} 0\t".encode()))
        for rel, stages in wt.unmerged.items():
            for number, stage in enumerate(stages, start=1):
                if stage is not None:
                    # ls-files -v tags unmerged entries M ("unmerged") in Git 2.39.
                    lines.append(
                        (encode_path(rel), f"M {stage.mode} {stage.oid} {number}\t".encode())
                    )
        out = b"".join(meta + path + b"\0" for path, meta in sorted(lines))
        return index_state(out)

    def status(
        self,
        repo: GitRepository,
        opaque: Sequence[str] = (),
        rules: EvidenceRules | None = None,
        store: str | None = None,
    ) -> WorktreeStatus:
        # `opaque` changes nothing: nothing of a submodule path is listed anyway. `rules` are
        # the committed ones, which the fake reads itself (its subset of gitignore); it
        # compares content itself, with no store.
        self._record("status", repo.worktree)
        fake, wt = self._named(repo, "status")
        work = self._work_files(fake, wt, include_ignored=True, root=repo.worktree)
        tracked: list[StatusEntry] = []
        for rel in sorted(set(wt.index) | set(wt.unmerged), key=_sort_key):
            if rel in wt.unmerged:
                w = work.get(rel)
                tracked.append(
                    StatusEntry(
                        kind=StatusKind.UNMERGED,
                        path=rel,
                        status="U",
                        mode_worktree=w[0].mode if w else NULL_MODE,
                    )
                )
                continue
            entry = self._tracked_entry(rel, wt.index[rel], work.get(rel))
            if entry is not None:
                tracked.append(entry)
        patterns = self._ignore_patterns(fake, wt, committed=True)
        untracked = [
            StatusEntry(kind=StatusKind.UNTRACKED, path=rel)
            for rel in sorted(work, key=_sort_key)
            if rel not in wt.index
            and rel not in wt.unmerged
            and not self._ignored_path(rel, patterns)
        ]
        return WorktreeStatus(
            head=HeadState(branch=wt.branch, commit=self._head_commit(fake, wt)),
            entries=(*tracked, *untracked),
        )

    def evidence_rules(self, repo: GitRepository) -> EvidenceRules:
        self._record("evidence_rules", repo.worktree)
        fake, wt = self._named(repo, "ls-tree")
        committed = [
            (RuleFile(path=rel, oid=e.oid, size=len(fake.blobs[e.oid])), fake.blobs[e.oid])
            for rel, e in self._head_tree(fake, wt).items()
            if posixpath.basename(rel) in (".gitignore", ".gitattributes") and e.mode == MODE_FILE
        ]
        exclude = "".join(f"{p}\n" for p in fake.ignored).encode() if fake.ignored else None
        return evidence_rules(committed, exclude)

    def _ignored_path(self, rel: str, patterns: list[str]) -> bool:
        """Ignored itself or below an ignored directory."""
        parts = rel.rstrip("/").split("/")
        for i in range(1, len(parts) + 1):
            is_dir = i < len(parts) or rel.endswith("/")
            if self._is_ignored("/".join(parts[:i]), is_dir, patterns):
                return True
        return False

    @staticmethod
    def _tracked_entry(
        rel: str, i: IndexEntry, w: tuple[Entry, bytes] | None
    ) -> StatusEntry | None:
        """The index entry against the worktree, as `git diff-files` compares them (an entry
        assumed unchanged is skipped; a gitlink ignored), content compared as the host's
        rules read it (the fake converts nothing)."""
        if i.assume_unchanged or i.mode == GITLINK_MODE:
            return None
        wentry = w[0] if w is not None else None
        if wentry is None:
            letter, mode_w = "D", NULL_MODE
        elif _kind(wentry.mode) != _kind(i.mode):
            letter, mode_w = "T", wentry.mode
        elif (wentry.mode, wentry.oid) != (i.mode, i.oid):
            letter, mode_w = "M", wentry.mode
        else:
            return None
        return StatusEntry(
            kind=StatusKind.CHANGED,
            path=rel,
            status=letter,
            mode_index=i.mode,
            mode_worktree=mode_w,
            oid_index=i.oid,
        )
