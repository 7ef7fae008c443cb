"""The host's own Git against real Git 2.39 (issue 8 §1; docs/decisions.md "The host's Git"):
a repository that configures every program Git can run, a submodule path holding a planted
repository, a `.git` file pointing elsewhere; every command of the table run through the real
adapter, with bubblewrap's sandbox and without it. Nothing configured ever runs; each test shows
that an ordinary Git in the same place does run it (the check has teeth)."""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import threading
from pathlib import Path

import pytest
from timing import SLOW
from worlds.repository import git_environment

from concorde_workers.adapters.machine.filesystem import LocalFileSystem
from concorde_workers.adapters.repository.git import GitCliReader, find_bwrap
from concorde_workers.adapters.repository.git_replay import GitPatchReplay
from concorde_workers.application.rounds.worktree_state import WorktreeObserver
from concorde_workers.domain.boundary.grant import parse_grant
from concorde_workers.domain.gitview.git_commands import COMMANDS, SANDBOX_ARGS, Scope
from concorde_workers.domain.gitview.git_config import parse_config
from concorde_workers.domain.gitview.git_status import GitRepository, StatusKind
from concorde_workers.domain.run.audit import audit
from concorde_workers.ports.repository.git import GitCommandFailed

GRANT = parse_grant(
    {
        "task_type": "implement",
        "entries": [{"path": "src/app/", "level": "rw"}],
        "context_identity": "sha256:" + "1" * 64,
    },
    "implement",
)

# Every key of git-config(1) whose value Git runs as a program (hooks below, by name).
PROGRAM_KEYS = (
    "core.fsmonitor",
    "core.pager",
    "core.editor",
    "core.sshCommand",
    "core.askPass",
    "core.gitProxy",
    "core.alternateRefsCommand",
    "sequence.editor",
    "diff.external",
    "diff.trap.textconv",
    "diff.trap.command",
    "filter.trap.clean",
    "filter.trap.smudge",
    "filter.trap.process",
    "merge.trap.driver",
    "mergetool.trap.cmd",
    "difftool.trap.cmd",
    "credential.helper",
    "gpg.program",
    "gpg.ssh.program",
    "uploadpack.packObjectsHook",
    "pager.status",
    "pager.ls-files",
    "web.browser",
    "alias.st",
)
HOOKS = (
    "pre-commit",
    "post-checkout",
    "post-index-change",
    "reference-transaction",
    "fsmonitor-watchman",
    "post-merge",
    "pre-auto-gc",
    "post-rewrite",
)


def bwrap_or_fail() -> str:
    found = find_bwrap()
    if found is None:
        pytest.fail("bubblewrap is missing: run ./scripts/setup (apt-get install bubblewrap)")
    return found


class TrapRepository:
    """A primary worktree and `.claude/worktrees/task`, where every program the repository
    can name appends its own name to `marker`."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root, self.env = root, env
        self.marker = root / "ran.txt"
        self.primary = root / "repo"
        self.worktree = self.primary / ".claude" / "worktrees" / "task"
        self.git("init", "-q", "-b", "main", str(self.primary))
        (self.primary / "src" / "app").mkdir(parents=True)
        (self.primary / ".concorde").mkdir()
        for rel in ("a.txt", "src/app/main.py", "inc.txt", ".concorde/workers.json"):
            (self.primary / rel).write_text(f"{rel}\n")
        (self.primary / ".gitattributes").write_text(
            "* filter=trap diff=trap merge=trap\ninc.txt filter=included\n"
        )
        self.git("-C", str(self.primary), "add", "-A")
        tree = self.git("-C", str(self.primary), "mktree", stdin="")
        commit = self.git("-C", str(self.primary), "commit-tree", tree, "-m", "v")
        self.git(
            "-C",
            str(self.primary),
            "update-index",
            "--add",
            "--cacheinfo",
            f"160000,{commit},src/app/vendor",
        )
        self.git("-C", str(self.primary), "commit", "-q", "-m", "initial")
        self.git("-C", str(self.primary), "worktree", "add", "-q", "-b", "task", str(self.worktree))
        self.common = self.primary / ".git"
        self.repo = GitRepository(
            worktree=str(self.worktree),
            git_dir=str(self.common / "worktrees" / "task"),
            common_dir=str(self.common),
        )

    def git(self, *args: str, stdin: str | None = None, cwd: Path | None = None) -> str:
        proc = subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            cwd=cwd,
            check=False,
        )
        assert proc.returncode == 0, (args, proc.stderr)
        return proc.stdout.strip()

    def trap(self, name: str) -> str:
        """A program that records `name` and passes its input through (a usable filter)."""
        script = self.root / "traps" / name.replace("/", "_").replace(" ", "-")
        script.parent.mkdir(exist_ok=True)
        script.write_text(f"#!/bin/sh\necho '{name}' >> {self.marker}\ncat\n")
        script.chmod(0o755)
        return str(script)

    def configure_every_program(self) -> None:
        config = self.common / "config"
        for key in PROGRAM_KEYS:
            value = self.trap(key)
            self.git(
                "config",
                "--file",
                str(config),
                key,
                f"!{value}" if key.startswith("alias.") else value,
            )
        hooks = self.root / "hooks"
        hooks.mkdir()
        for hook in HOOKS:
            shutil.copy(self.trap(f"hook {hook}"), hooks / hook)
            shutil.copy(self.trap(f"common hook {hook}"), self.common / "hooks" / hook)
        for key, value in (
            ("core.hooksPath", str(hooks)),
            ("status.submoduleSummary", "true"),
            ("submodule.recurse", "true"),
            ("diff.ignoreSubmodules", "none"),
            ("core.untrackedCache", "true"),
            ("filter.trap.required", "true"),
            ("protocol.allow", "always"),
        ):
            self.git("config", "--file", str(config), key, value)
        # An include the worker could write: the driver of inc.txt is defined in the worktree.
        included = self.worktree / "src" / "app" / "included.cfg"
        included.write_text(f'[filter "included"]\n\tclean = {self.trap("included clean")}\n')
        self.git("config", "--file", str(config), "include.path", str(included))

    def plant_in_the_submodule_path(self) -> Path:
        """What the worker's bash does in the e2e tests: a repository in the empty submodule
        path with its own filter and fsmonitor, committed, then touched."""
        vendor = self.worktree / "src" / "app" / "vendor"
        self.git("init", "-q", str(vendor))
        (vendor / ".gitattributes").write_text("* filter=x\n")
        (vendor / "f.txt").write_text("hi\n")
        self.git("add", "-A", cwd=vendor)
        self.git("commit", "-q", "-m", "planted", cwd=vendor)
        self.git("config", "filter.x.clean", self.trap("planted filter"), cwd=vendor)
        self.git("config", "core.fsmonitor", self.trap("planted fsmonitor"), cwd=vendor)
        self.touch(vendor / "f.txt")
        return vendor

    @staticmethod
    def touch(path: Path) -> None:
        st = path.stat()
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))

    def touch_every_tracked_file(self) -> None:
        for rel in (
            "a.txt",
            "src/app/main.py",
            "inc.txt",
            ".gitattributes",
            ".concorde/workers.json",
        ):
            self.touch(self.worktree / rel)

    def ran(self) -> list[str]:
        return self.marker.read_text().splitlines() if self.marker.exists() else []


@pytest.fixture
def git_env(tmp_path: Path) -> dict[str, str]:
    """The test's own git commands: HOME in the temporary directory, no system configuration,
    a committer."""
    home = tmp_path / "home"
    home.mkdir()
    return git_environment(home)


@pytest.fixture
def trap(tmp_path: Path, git_env: dict[str, str]) -> TrapRepository:
    return TrapRepository(tmp_path.resolve(), git_env)


def every_command(git: GitCliReader, repo: TrapRepository) -> None:
    """Every command of the table, through the adapter's port methods."""
    assert {c.name for c in COMMANDS.values()} == {
        "toplevel",
        "git_dir",
        "common_dir",
        "worktree_list",
        "tracked",
        "untracked",
        "content",
        "index",
        "head_commit",
        "rules_list",
        "rules_blobs",
        "config_entry",
        "config_blob",
        "changes_base",
        "changes_hash",
        "changes_links",
        "changes_index",
        "changes_tree",
        "changes_patch",
        "verify_base",
        "verify_apply",
        "verify_tree",
    }
    for where in (repo.worktree, repo.primary):
        git.toplevel(str(where))
        git.git_dirs(str(where))
        git.worktrees(str(where))
    rules = git.evidence_rules(repo.repo)  # head_commit, rules_list, rules_blobs
    assert ".gitattributes" in rules.sources
    # tracked, untracked and content (every tracked file is touched, its content unchanged)
    listed = git.status(repo.repo, rules=rules).entries
    assert [e.path for e in listed if e.kind is StatusKind.CHANGED] == []
    git.index(repo.repo)
    git.config_digest(repo.repo)
    assert git.committed_config(repo.repo) == b".concorde/workers.json\n"
    # A round's change (issue 21): hashed through every filter the repository names, diffed
    # with its diff drivers: none of them may run.
    store = str(repo.root / "change-store")
    (repo.worktree / "src" / "app" / "main.py").write_text("changed\n")
    (repo.worktree / "src" / "app" / "link").symlink_to("main.py")
    git.open_store(repo.repo, store)
    start = git.change_tree(repo.repo, store, [], base=True)
    paths = ["src/app/main.py", "a.txt", "src/app/link"]
    end = git.change_tree(repo.repo, store, paths, rules=rules)  # hash, links, index, tree
    patch = git.change_patch(repo.repo, store, start, end)
    assert b"+changed\n" in patch and b"new file mode 120000" in patch
    # verify (issue 30 §4): the same patch applied again in a store of its own, through the
    # repository's attributes and drivers: none of them may run either.
    head = (
        subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=repo.worktree, env=repo.env, capture_output=True
        )
        .stdout.decode()
        .strip()
    )
    replayed = GitPatchReplay(git).replay(repo.repo, head, [patch])
    assert (replayed.base, replayed.trees, replayed.stopped) == (start, (end,), None)


@pytest.mark.req("Every round is audited")
@pytest.mark.parametrize("sandbox", ["bwrap", "none"])
def test_no_command_of_the_table_runs_anything_a_repository_configures(
    trap: TrapRepository, sandbox: str
) -> None:
    git = GitCliReader(environ=trap.env, sandbox=bwrap_or_fail() if sandbox == "bwrap" else None)
    assert (git.sandbox is not None) == (sandbox == "bwrap")
    trap.configure_every_program()
    trap.plant_in_the_submodule_path()
    trap.touch_every_tracked_file()
    every_command(git, trap)
    observer = WorktreeObserver(git, LocalFileSystem(), trap.repo, writable=["src/app/"])
    snapshot = observer.snapshot()
    trap.touch_every_tracked_file()
    observer.observe(snapshot)
    assert trap.ran() == []
    # The check has teeth: the user's own Git in the same worktree runs the repository's
    # fsmonitor; without the fsmonitor's (empty) answer, its filters (the included one too)
    # and, recursing into the submodule path, the planted filter (the trap's process filter
    # speaks no protocol: not required, or Git dies); on a commit, its hooks.
    subprocess.run(
        ["git", "status"], cwd=trap.worktree, env=trap.env, capture_output=True, check=False
    )
    assert "core.fsmonitor" in trap.ran()
    plain = ["git", "-c", "core.fsmonitor=false", "-c", "filter.trap.required=false"]
    subprocess.run(
        [*plain, "status"], cwd=trap.worktree, env=trap.env, capture_output=True, check=False
    )
    subprocess.run(
        [
            *plain,
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "--allow-empty",
            "-qm",
            "x",
        ],
        cwd=trap.worktree,
        env=trap.env,
        capture_output=True,
        check=False,
    )
    ran = set(trap.ran())
    assert {"planted filter", "filter.trap.process", "included clean", "hook pre-commit"} <= ran, (
        ran
    )


@pytest.mark.req("Every round is audited")
@pytest.mark.parametrize("sandbox", ["bwrap", "none"])
def test_rule_files_a_worker_plants_shape_neither_the_audit_nor_the_patch(
    trap: TrapRepository, sandbox: str
) -> None:
    """Issue 30 §1 on the trap repository (whose committed attributes name a filter, a diff
    and a merge driver for every file): the worker's `.gitignore` ignores everything below
    rw, its `.gitattributes` makes main.py binary, ident-collapsed and normalized; the audit
    still lists every path it wrote, the patch shows every change as text, and no program of
    the repository's runs."""
    git = GitCliReader(environ=trap.env, sandbox=bwrap_or_fail() if sandbox == "bwrap" else None)
    trap.configure_every_program()
    store = str(trap.root / "store")
    git.open_store(trap.repo, store)
    observer = WorktreeObserver(
        git, LocalFileSystem(), trap.repo, writable=["src/app/"], store=store
    )
    snapshot = observer.snapshot()
    start = git.change_tree(trap.repo, store, [], base=True, rules=observer.rules)
    app = trap.worktree / "src" / "app"
    (app / ".gitignore").write_text("*\n")
    (app / ".gitattributes").write_text("main.py -diff ident text\nnew.py binary\n")
    (app / "main.py").write_text("src/app/main.py\r\n# $Id: the payload $\n")
    (app / "new.py").write_text("hidden = 1\n")
    result = audit(GRANT, snapshot, observer.observe(snapshot))
    planted = ["src/app/.gitattributes", "src/app/.gitignore", "src/app/main.py", "src/app/new.py"]
    assert set(planted) <= set(result.changed), result
    end = git.change_tree(trap.repo, store, planted, rules=observer.rules)
    patch = git.change_patch(trap.repo, store, start, end)
    assert b"Binary files" not in patch and b"GIT binary patch" not in patch, patch
    for shown in (b"+src/app/main.py\r\n", b"+# $Id: the payload $\n", b"+hidden = 1\n"):
        assert shown in patch, patch
    assert trap.ran() == []


def test_the_worktree_s_git_file_pointing_elsewhere_decides_nothing(
    trap: TrapRepository, tmp_path: Path
) -> None:
    """After placement no `.git` file is read: the audit names the Git directory placement
    found, and the changed `.git` file is itself a violation."""
    git = GitCliReader(environ=trap.env)
    observer = WorktreeObserver(
        git, LocalFileSystem(), trap.repo, writable=["src/app/"], git_entries=[".git"]
    )
    snapshot = observer.snapshot()
    evil = tmp_path / "evil"
    trap.git("init", "-q", "-b", "evil", str(evil))
    (evil / "e.txt").write_text("e\n")
    trap.git("add", "e.txt", cwd=evil)
    trap.git("commit", "-q", "-m", "evil", cwd=evil)
    trap.git(
        "config",
        "--file",
        str(evil / ".git" / "config"),
        "core.fsmonitor",
        trap.trap("evil fsmonitor"),
    )
    (trap.worktree / ".git").write_text(f"gitdir: {evil / '.git'}\n")
    seen = observer.observe(snapshot)
    assert seen.head_branch == "refs/heads/task"
    assert audit(GRANT, snapshot, seen).violation_texts == (".git",)
    assert trap.ran() == []
    proc = subprocess.run(
        ["git", "status"],
        cwd=trap.worktree,
        env=trap.env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert "evil fsmonitor" in trap.ran(), proc.stdout + proc.stderr


def test_a_repository_planted_in_a_submodule_path_is_told_and_runs_nothing(
    trap: TrapRepository,
) -> None:
    git = GitCliReader(environ=trap.env)
    observer = WorktreeObserver(git, LocalFileSystem(), trap.repo, writable=["src/app/"])
    snapshot = observer.snapshot()
    vendor = trap.plant_in_the_submodule_path()
    seen = observer.observe(snapshot)
    result = audit(GRANT, snapshot, seen)
    assert result.violation_texts == ("src/app/vendor/.git",)
    assert {"src/app/vendor/.gitattributes", "src/app/vendor/f.txt"} <= set(result.changed)
    (item,) = observer.git_metadata(snapshot, seen.files)
    assert (item.created, item.kind, item.submodule) == (True, "directory", "src/app/vendor")
    assert sorted(item.runs) == [
        f"core.fsmonitor = {trap.trap('planted fsmonitor')}",
        f"filter.x.clean = {trap.trap('planted filter')}",
    ]
    assert trap.ran() == []
    assert (vendor / ".git").is_dir()


# --- the sandbox and the environment ----------------------------------------------------------


def test_the_sandbox_can_neither_write_nor_reach_the_network(tmp_path: Path) -> None:
    bwrap = bwrap_or_fail()
    target = tmp_path / "written"
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        accepted: list[bool] = []
        server.settimeout(10)
        waiter = threading.Thread(target=lambda: _accept(server, accepted))
        waiter.start()
        script = (
            f"echo x > {target}; echo write=$?; "
            f'python3 -c \'import socket; socket.create_connection(("127.0.0.1", {port}), '
            "timeout=3)' 2>/dev/null; echo connect=$?; ls /proc | grep -c '^[0-9]'"
        )
        proc = subprocess.run(
            [bwrap, *SANDBOX_ARGS, "--", "/bin/sh", "-c", script],
            capture_output=True,
            text=True,
            env={"PATH": "/usr/bin:/bin"},
            timeout=60,
            check=False,
        )
        socket.create_connection(("127.0.0.1", port), timeout=5).close()  # ends the waiter
        waiter.join()
    lines = proc.stdout.split()
    assert lines[0] != "write=0" and lines[1] == "connect=1", proc.stdout + proc.stderr
    assert "Read-only file system" in proc.stderr
    assert int(lines[2]) < 8, "the sandbox sees the host's processes"
    assert not target.exists()
    assert accepted == [True]  # only the test's own connection reached the server


def _accept(server: socket.socket, accepted: list[bool]) -> None:
    connection, _ = server.accept()
    connection.close()
    accepted.append(True)


@pytest.mark.parametrize("sandbox", ["bwrap", "none"])
def test_git_gets_no_variable_of_the_host(
    trap: TrapRepository, tmp_path: Path, sandbox: str
) -> None:
    """A stand-in `git` that prints its environment and arguments (and fails, so the adapter
    quotes them): nothing of the host's environment arrives, the table's does."""
    spy = tmp_path / "bin" / "git"
    spy.parent.mkdir()
    spy.write_text('#!/bin/sh\nenv >&2\necho "ARGS $*" >&2\nexit 3\n')
    spy.chmod(spy.stat().st_mode | stat.S_IXUSR)
    host = {
        **trap.env,
        "ANTHROPIC_API_KEY": "sk-ant-secret",
        "GH_TOKEN": "ghp_secret",
        "GIT_DIR": "/elsewhere",
        "GIT_CONFIG_PARAMETERS": "'core.fsmonitor'='/evil'",
        "HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path),
    }
    git = GitCliReader(
        environ=host, git_program=str(spy), sandbox=bwrap_or_fail() if sandbox == "bwrap" else None
    )
    with pytest.raises(GitCommandFailed) as info:
        git.status(trap.repo)
    printed = dict(
        line.split("=", 1)
        for line in info.value.output.splitlines()
        if "=" in line and not line.startswith("ARGS ")
    )
    printed.pop("PWD", None)
    printed.pop("SHLVL", None)
    printed.pop("_", None)
    assert set(printed) == {
        "PATH",
        "LC_ALL",
        "HOME",
        "GIT_CONFIG_NOSYSTEM",
        "GIT_CONFIG_GLOBAL",
        "GIT_ATTR_NOSYSTEM",
        "GIT_OPTIONAL_LOCKS",
        "GIT_TERMINAL_PROMPT",
    }, printed
    assert printed["HOME"] == "/dev/null"
    assert "sk-ant-secret" not in info.value.output and "ghp_secret" not in info.value.output
    assert f"--git-dir={trap.repo.git_dir}" in info.value.output
    assert COMMANDS["head_commit"].scope is Scope.REPOSITORY


# --- the configuration parser against Git's own ----------------------------------------------------

CORPUS = [
    b'[core]\n\tfsmonitor = "a b"\n[filter "X y"]\n\tclean = c ; comment\n',
    b'[a "b\\"c"]\n\tk = v\\\n continued\n[A.B]\n\tK = "q#;" tail # c\n',
    b"\xef\xbb\xbf[x]\r\n\tk = v\r\n[y] z = w\n[z]\n\tbare\n",
    b'[s]\n\tk = \\"\\t\\\\\\n\n\tk2 = "  lead" trail  \n',
    b'[filter "lfs"]\n\tclean = git-lfs clean -- %f\n\trequired\n[include]\n\tpath = x\n',
]


@pytest.mark.parametrize("data", CORPUS, ids=range(len(CORPUS)))
def test_the_parser_reads_what_git_reads(
    tmp_path: Path, git_env: dict[str, str], data: bytes
) -> None:
    config = tmp_path / "config"
    config.write_bytes(data)
    proc = subprocess.run(
        ["git", "config", "--file", str(config), "--no-includes", "--list", "-z"],
        env=git_env,
        capture_output=True,
        check=True,
    )
    expected = []
    for record in proc.stdout.split(b"\0")[:-1]:
        name, newline, value = record.partition(b"\n")
        expected.append((name.decode(), value.decode() if newline else None))
    parsed = parse_config(data)
    assert parsed.error is None
    assert [(e.name, e.value) for e in parsed.entries] == expected


def test_git_never_reads_a_submodule_path_in_the_sandbox(trap: TrapRepository) -> None:
    """A `.git` planted in a submodule path whose HEAD is a FIFO blocks whoever opens it; Git
    reads a gitlink's HEAD even with submodules ignored. In the sandbox the submodule path is an
    empty directory, so the audit answers at once; the walk still finds the `.git`."""
    vendor = trap.worktree / "src" / "app" / "vendor"
    git = GitCliReader(environ=trap.env, sandbox=bwrap_or_fail(), timeout_seconds=SLOW)
    observer = WorktreeObserver(git, LocalFileSystem(), trap.repo, writable=["src/app/"])
    snapshot = observer.snapshot()
    (vendor / ".git" / "objects").mkdir(parents=True)
    (vendor / ".git" / "refs").mkdir()
    os.mkfifo(vendor / ".git" / "HEAD")
    seen = observer.observe(snapshot)
    assert audit(GRANT, snapshot, seen).violation_texts == ("src/app/vendor/.git",)
    # The check has teeth: without the mask, Git opens the FIFO and waits (here 3 s).
    blocked = GitCliReader(environ=trap.env, sandbox=None, timeout_seconds=3)
    with pytest.raises(GitCommandFailed) as info:
        blocked.status(trap.repo, ("src/app/vendor",))
    assert "timed out" in info.value.output
