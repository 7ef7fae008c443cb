"""The runner of the host's Git: every command line from the one table of
`domain.gitview.git_commands`, run in bubblewrap's sandbox (issue 8 §1, issue 30 §1).

Why subprocess and not GitPython's `Git` object as the runner (design.md, "Git through GitPython,
bytes kept"): GitPython builds the child's environment as a copy of `os.environ`, and the host's
Git must see nothing of it (docs/decisions.md "The host's Git"). So the runner starts `git`
itself with the environment the table builds whole, keeps stdout as bytes and hands it to the
domain's parsers.

What it adds to the table: the absolute program paths (Git from the host's PATH, resolved once;
bubblewrap only from the system's own directories, tried once before it is relied on), the
filter overrides (every filter driver the repository's configuration files and their includes
define, read as text, never by Git), the host's rules (`domain.gitview.committed_rules`, read
from what is committed and handed to Git as a memory file), and the running (stdin written and
closed, stdout and stderr captured, a timeout; several calls side by side).
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat as stat_module
import subprocess
from collections.abc import Mapping, Sequence

from concorde_workers.domain.gitview.committed_rules import (
    MAX_RULE_FILE_BYTES,
    MAX_RULE_FILES,
    EvidenceRules,
    RuleFile,
    evidence_rules,
    rule_files,
)
from concorde_workers.domain.gitview.git_commands import (
    COMMANDS,
    GitCommand,
    Scope,
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
    parse_cat_file_batch,
)
from concorde_workers.ports.repository.git import GitCommandFailed

__all__ = ["GitRunner", "find_bwrap", "read_regular", "repository_filter_names"]

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


class GitRunner:
    """The host's Git calls: the table's commands, sandboxed, with the host's rules.

    `environ` is the host environment the container read (this adapter never reads
    `os.environ`); only its PATH is used, once, to find `git`. `sandbox` is bubblewrap's path,
    "auto" to look for it in the system directories (and use it once a trial call succeeded),
    or None for none."""

    def __init__(
        self,
        environ: Mapping[str, str],
        git_program: str = "git",
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        sandbox: str | None = "auto",
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
        rules: str | None = None,
    ) -> list[str]:
        """The argv of table command `name` as this adapter runs it (sandbox included), with
        `extra` arguments after the table's; `store`: the change store it may write; `rules`:
        the path of the host's rules file it reads (`_Rules`)."""
        argv = [*git_argv(self._git, COMMANDS[name], where, store, rules), *extra]
        ids = (os.getuid(), os.getgid())
        return sandboxed(self.sandbox, argv, masked, [store] if store else [], ids)

    def environment(
        self, name: str, where: str | GitRepository, store: str | None = None
    ) -> dict[str, str]:
        """The environment of table command `name` as this adapter runs it."""
        command = COMMANDS[name]
        overrides = (
            filter_overrides(repository_filter_names(where))
            if isinstance(where, GitRepository) and command.scope is not Scope.STORE
            else ()
        )
        env = git_environment(self._git, command, where, overrides)
        if command.store and store and isinstance(where, GitRepository):
            env.update(change_store_environment(store, where.common_dir))
        return env

    def _start(
        self,
        name: str,
        where: str | GitRepository,
        masked: Sequence[str] = (),
        extra: Sequence[str] = (),
        store: str | None = None,
        rules: bytes | None = None,
    ) -> _Call:
        """Start table command `name`; `_finish` waits for it. `rules`: the bytes of the host's
        rules file a command of the table's `rules` reads (a memory file passed as a
        descriptor: nothing is written to disk, nothing is left behind)."""
        command: GitCommand = COMMANDS[name]
        if command.store and store is None:
            raise ValueError(f"{name} runs only against a change store")
        held = _Rules(rules) if command.rules is not None else None
        argv = self.command_line(
            name, where, masked, extra, store, held.path if held is not None else None
        )
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self.environment(name, where, store),
                pass_fds=(held.fd,) if held is not None else (),
            )
        except OSError as exc:
            raise GitCommandFailed(argv, str(exc), None) from None
        finally:
            if held is not None:
                held.close()  # the child holds its own copy
        return _Call(command, argv, proc)

    def _finish(self, call: _Call, stdin: bytes | None = None) -> tuple[int, bytes]:
        """(returncode, stdout bytes) of a started call. A return code outside the command's
        answers or a timeout raises `GitCommandFailed`; the call is over either way."""
        try:
            out, err = call.proc.communicate(stdin or b"", timeout=self._timeout)
        except subprocess.TimeoutExpired:
            call.proc.kill()
            call.proc.communicate()
            raise GitCommandFailed(
                call.argv, f"timed out after {self._timeout:g} s", None
            ) from None
        if call.proc.returncode not in call.command.ok:
            raise GitCommandFailed(call.argv, err.decode("utf-8", "replace"), call.proc.returncode)
        return call.proc.returncode, out

    def _run(
        self,
        name: str,
        where: str | GitRepository,
        masked: Sequence[str] = (),
        extra: Sequence[str] = (),
        stdin: bytes | None = None,
        store: str | None = None,
        rules: bytes | None = None,
    ) -> tuple[int, bytes]:
        """Run table command `name`; (returncode, stdout bytes). A return code outside the
        command's answers, a timeout or a failure to start raises `GitCommandFailed`."""
        return self._finish(self._start(name, where, masked, extra, store, rules), stdin)

    def _run_beside(
        self, calls: Sequence[tuple[str, str | GitRepository, Sequence[str], bytes | None]]
    ) -> list[tuple[int, bytes]]:
        """Several table commands (name, repository, masked, rules) run at once, each waited
        for (all of them, even when one fails); the first failure is raised."""
        started: list[_Call | GitCommandFailed] = []
        for name, repo, masked, rules in calls:
            try:
                started.append(self._start(name, repo, masked, rules=rules))
            except GitCommandFailed as failed:
                started.append(failed)
        answers: list[tuple[int, bytes] | GitCommandFailed] = []
        for call in started:
            if isinstance(call, GitCommandFailed):
                answers.append(call)
                continue
            try:
                answers.append(self._finish(call))
            except GitCommandFailed as failed:
                answers.append(failed)
        for answer in answers:
            if isinstance(answer, GitCommandFailed):
                raise answer
        return [a for a in answers if not isinstance(a, GitCommandFailed)]

    # -- the host's rules (issue 30 §1) -------------------------------------------------------

    def evidence_rules(self, repo: GitRepository) -> EvidenceRules:
        committed: list[tuple[RuleFile, bytes]] = []
        code, _ = self._run("head_commit", repo)
        if code == 0:
            _, listed = self._run("rules_list", repo)
            found = rule_files(listed)
            too_large = [f.path for f in found if f.size > MAX_RULE_FILE_BYTES]
            if len(found) > MAX_RULE_FILES or too_large:
                raise GitCommandFailed(
                    self.command_line("rules_list", repo),
                    f"the committed rule files are more than the host reads ({len(found)} "
                    f"files, at most {MAX_RULE_FILES}; larger than {MAX_RULE_FILE_BYTES} bytes: "
                    f"{', '.join(too_large[:5]) or 'none'})",
                    0,
                )
            if found:
                oids = b"".join(f.oid.encode("ascii") + b"\n" for f in found)
                _, out = self._run("rules_blobs", repo, stdin=oids)
                blobs = parse_cat_file_batch(out)
                committed = [(f, blobs[f.oid]) for f in found if f.oid in blobs]
        return evidence_rules(
            committed,
            read_regular(f"{repo.common_dir}/info/exclude"),
            self._excludes_file(repo),
            read_regular(f"{repo.common_dir}/info/attributes"),
        )

    @staticmethod
    def _excludes_file(repo: GitRepository) -> tuple[str, bytes] | None:
        """The excludes file the repository's own configuration files name (never an included
        one, which may lie in the worktree), when it is absolute, outside the worktree and a
        regular file: the user's own, as Git would read it with the host's HOME of none."""
        named: str | None = None
        for config in (f"{repo.common_dir}/config", f"{repo.git_dir}/config.worktree"):
            data = read_regular(config)
            for entry in parse_config(data).entries if data else ():
                if entry.name == "core.excludesfile" and entry.value:
                    named = entry.value
        if named is None or not named.startswith("/"):
            return None
        real, worktree = os.path.realpath(named), os.path.realpath(repo.worktree)
        if real == worktree or real.startswith(worktree.rstrip("/") + "/"):
            return None
        data = read_regular(real)
        return (named, data) if data is not None else None


class _Rules:
    """The bytes of the host's rules file as a memory file (memfd): a descriptor the Git it
    starts reads by `path` (`/proc/self/fd/<n>` in its own process), never a file on disk."""

    def __init__(self, data: bytes | None) -> None:
        self.fd = os.memfd_create("concorde-rules", os.MFD_CLOEXEC)
        try:
            os.write(self.fd, data or b"")
        except OSError:
            os.close(self.fd)
            raise

    @property
    def path(self) -> str:
        return f"/proc/self/fd/{self.fd}"

    def close(self) -> None:
        os.close(self.fd)


class _Call:
    """One started table command: what it is, its argv and its process."""

    def __init__(self, command: GitCommand, argv: list[str], proc: subprocess.Popen[bytes]):
        self.command, self.argv, self.proc = command, argv, proc


def entry_kind(path: str) -> str:
    """ "file", "link", "other" or "none" for what lies at `path` (never followed)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return "none"
    if stat_module.S_ISREG(mode):
        return "file"
    return "link" if stat_module.S_ISLNK(mode) else "other"


def link_target(path: str) -> bytes | None:
    """A symbolic link's target as bytes (Git's blob of it), None for anything else."""
    try:
        return os.readlink(os.fsencode(path))
    except OSError:
        return None
