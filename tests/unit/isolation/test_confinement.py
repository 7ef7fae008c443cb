"""The confinement's mount plan (domain/isolation/confinement.py), judged by what the namespace it builds
shows: a small model of bubblewrap's mounts over an in-memory tree (`view`) says, for every path,
whether its host content is there, masked or absent, and whether it is writable; the tests check
that against the policy's own read and write tables, for grants of every shape."""

from __future__ import annotations

import itertools
import posixpath
from dataclasses import dataclass

import pytest
from fakes.filesystem import FakeFileSystem

from concorde_workers.container import PROFILES
from concorde_workers.domain.boundary.grant import Grant, Level, directory_level, parse_grant
from concorde_workers.domain.boundary.policy import Policy, build_policy, decide_read, decide_write
from concorde_workers.domain.configuration.profile import entries_of
from concorde_workers.domain.gitview.placement import AdminPath
from concorde_workers.domain.ground.paths import EntryKind, is_within
from concorde_workers.domain.isolation.confinement import (
    CONFINED_UID,
    WAITER,
    Confinement,
    ConfinementTools,
    Mount,
    MountKind,
)
from concorde_workers.domain.isolation.launch import EXIT_STATUS_FD, NAMESPACE_REPORT_FD, lifeline
from concorde_workers.domain.isolation.mount_plan import (
    PathFacts,
    PlanInputs,
    confinement_plan,
    installation,
    launch_problem,
    parse_rule,
    unbound_rw_entry,
)
from concorde_workers.ports.machine.filesystem import FileSystemError

RUNTIME_ENTRIES = entries_of(PROFILES)

HOME = "/home/u"
RT = "/tmp/concorde-abc123-00000001"
TOOLS = ConfinementTools(
    bwrap="/usr/bin/bwrap",
    python="/usr/bin/python3",
    umount="/usr/bin/umount",
    unshare="/usr/bin/unshare",
)
INTERPRETER = f"{HOME}/.pyenv/versions/3.11.7"
FILES = (
    "README.md",
    "src/app/main.py",
    "src/app/util.py",
    "src/app/secret.py",
    "src/app/deep/x.py",
    "src/other/lib.py",
    "docs/notes.md",
    "docs/draft.md",
    "secrets/token.txt",
    "vendor/pkg/mod.py",
    "tools/bin/tool",
)


def make_grant(entries: dict[str, str]) -> Grant:
    parsed = parse_grant(
        {
            "task_type": "implement",
            "context_identity": "sha256:ctx",
            "entries": [{"path": p, "level": lv} for p, lv in entries.items()],
        }
    )
    assert isinstance(parsed, Grant), parsed
    return parsed


BASE_GRANT = {
    "src/app/": "rw",
    "src/app/util.py": "ro",
    "src/app/secret.py": "names",
    "docs/notes.md": "ro",
    "README.md": "names",
}


@dataclass
class World:
    fs: FakeFileSystem
    primary: str
    worktree: str

    @property
    def facts(self) -> PathFacts:
        def kind(path: str) -> EntryKind | None:
            try:
                return self.fs.stat(path).kind
            except FileSystemError:
                return None

        def list_dir(path: str) -> list:  # type: ignore[type-arg]
            try:
                return self.fs.listdir(path)
            except FileSystemError:
                return []

        return PathFacts(kind=kind, realpath=self.fs.realpath, list_dir=list_dir)

    def policy(
        self,
        grant: dict[str, str],
        runtime_paths: tuple[str, ...] = (),
        credentials: tuple[str, ...] = (),
        homes: tuple[str, ...] = (),
    ) -> Policy:
        git = (
            AdminPath(path=f"{self.primary}/.git", directory=True),
            AdminPath(path=f"{self.worktree}/.git", directory=False),
        )
        return build_policy(
            grant=make_grant(grant),
            worktree=self.worktree,
            primary=self.primary,
            user_home=HOME,
            runtime_dir=RT,
            runtime_paths=runtime_paths,
            git=git,
            list_dir=self.facts.list_dir,
            homes=homes,
            credentials=credentials,
            run_directories=("/srv/trace/workers",),
            runtime_entries=RUNTIME_ENTRIES,
        )

    def plan(
        self, policy: Policy, *, keep: tuple[str, ...] = (INTERPRETER,), as_root: bool = True
    ) -> Confinement:
        plan = confinement_plan(policy, PlanInputs(keep=keep), self.facts, TOOLS, as_root=as_root)
        assert isinstance(plan, Confinement), plan
        return plan


def world(primary: str = f"{HOME}/proj") -> World:
    fs = FakeFileSystem()
    wt = f"{primary}/.claude/worktrees/t1"
    for rel in FILES:
        fs.write(f"{primary}/{rel}", f"primary {rel}")
        fs.write(f"{wt}/{rel}", f"content of {rel}")
    fs.write(f"{primary}/.git/config", "[core]")
    fs.write(f"{wt}/.git", "gitdir: ../../../.git/worktrees/t1")
    for sub in ("control", "config", "home", "tmp", "work"):
        fs.mkdir(f"{RT}/{sub}")
    fs.write(f"{RT}/config/.credentials.json", "{}")
    fs.write(f"{INTERPRETER}/bin/python3.11", "ELF")
    fs.write(f"{HOME}/.ssh/id_rsa", "KEY")
    fs.write("/tmp/concorde-other-00000002/config/auth.json", "OTHER RUN")
    fs.write("/srv/trace/workers/run-1/grant.json", "{}")
    fs.write("/etc/concorde/credentials.json", "CREDENTIAL")
    fs.write("/usr/bin/node", "ELF")
    return World(fs=fs, primary=primary, worktree=wt)


# --- a model of the namespace ------------------------------------------------------------------


@dataclass(frozen=True)
class Seen:
    """A path inside the namespace: its host content ("host"), an empty mask ("empty"), or not
    there ("absent"); and whether a write to it reaches the host."""

    content: str
    writable: bool


def view(plan: Confinement, path: str) -> Seen:
    """What `path` is inside the namespace: the mount nearest above it decides (mounts are in
    order, parents first, so the last one covering the path is the one on top)."""
    top = next((m for m in reversed(plan.mounts) if is_within(path, m.path)), None)
    if top is None:
        return Seen("host", False)  # --ro-bind / /
    if top.kind is MountKind.EMPTY_DIR:
        return Seen("empty" if path == top.path else "absent", False)
    if top.kind is MountKind.EMPTY_FILE:
        return Seen("empty", False)
    return Seen("host", top.kind is MountKind.WRITABLE)


def scopes(policy: Policy, w: World) -> set[str]:
    """The directories that must take new names: the nearest existing directory of each rw file
    entry and of each rw entry still to be created."""
    found = set()
    for entry in policy.grant.entries:
        path = posixpath.join(w.worktree, entry.bare)
        if entry.level.value == "rw" and not (entry.is_directory and w.fs.is_dir(path)):
            path = posixpath.dirname(path)
            while not w.fs.is_dir(path):
                path = posixpath.dirname(path)
            found.add(path)
    return found


def check_against_tables(w: World, policy: Policy, plan: Confinement) -> None:
    """Every file of the worktree: its content is there exactly when the read table lets a tool
    read it; it is writable only when the write table allows it. Every directory: a new name in
    it is writable only where the write table allows one, or where a rw entry must be created."""
    for path in w.fs.files_under(w.worktree):
        seen = view(plan, path)
        readable = decide_read(policy, path).allowed
        assert (seen.content == "host") == readable, (path, seen, decide_read(policy, path))
        if seen.writable:
            assert decide_write(policy, path, path).allowed, (path, seen)
    directories = {w.worktree}
    for path in w.fs.files_under(w.worktree):
        while (path := posixpath.dirname(path)) != w.worktree:
            directories.add(path)
    for directory in directories:
        new = posixpath.join(directory, "new-name-q1")
        if view(plan, new).writable:
            assert decide_write(policy, new, new).allowed or directory in scopes(policy, w), new


# --- the grant shapes --------------------------------------------------------------------------

SHAPES = {
    "rw dir": {"src/app/": "rw"},
    "ro file under rw dir": {"src/app/": "rw", "src/app/util.py": "ro"},
    "names file under rw dir": {"src/app/": "rw", "src/app/secret.py": "names"},
    "names dir": {"src/app/": "rw", "vendor/": "names"},
    "hidden siblings": {"docs/notes.md": "ro", "src/app/main.py": "rw"},
    "ro dir with rw below": {"src/": "ro", "src/app/deep/": "rw"},
    "everything": BASE_GRANT,
    "rw file at the root": {"README.md": "rw", "docs/": "ro"},
    "rw file beside a mixed directory": {"README.md": "rw", "src/app/": "ro"},
    "rw entries still to be created": {"build/out/": "rw", "src/app/new.py": "rw"},
}


@pytest.mark.parametrize("grant", SHAPES.values(), ids=SHAPES.keys())
@pytest.mark.parametrize(
    "primary",
    [f"{HOME}/proj", "/tmp/pytest-1/proj", "/srv/proj"],
    ids=["worktree in the home", "worktree under /tmp", "elsewhere"],
)
def test_the_namespace_shows_what_the_tables_allow(grant: dict[str, str], primary: str) -> None:
    w = world(primary)
    policy = w.policy(grant)
    plan = w.plan(policy)
    check_against_tables(w, policy, plan)
    # Outside the worktree: the homes, every run's runtime directory, the primary worktree, the
    # run records are absent; the worker's runtime directory is there, control/ read-only; the
    # interpreter that runs the hooks is there read-only; the rest of the system read-only.
    for absent in (
        f"{HOME}/.ssh/id_rsa",
        "/tmp/concorde-other-00000002/config/auth.json",
        f"{w.primary}/.git/config",
        f"{w.primary}/src/app/main.py",
        "/srv/trace/workers/run-1/grant.json",
    ):
        assert view(plan, absent).content == "absent", absent
    assert view(plan, f"{RT}/work/x") == Seen("host", True)
    assert view(plan, f"{RT}/config/.credentials.json") == Seen("host", True)
    assert view(plan, f"{RT}/control/settings.json") == Seen("host", False)
    assert view(plan, f"{INTERPRETER}/bin/python3.11") == Seen("host", False)
    assert view(plan, "/usr/bin/node") == Seen("host", False)
    assert view(plan, f"{w.worktree}/.git").content != "host"


def test_every_system_temporary_directory_is_absent_with_the_runs_below_it() -> None:
    """A run of a host whose TMPDIR differs makes its runtime directory below /var/tmp: absent
    here like every run below /tmp (docs/decisions.md "Other runs under another temporary
    root")."""
    w = world()
    elsewhere = "/var/tmp/cpe-1/concorde-0b0b0b-elsewhere/config/auth.json"
    w.fs.write(elsewhere, "KEY")
    policy = w.policy(BASE_GRANT)
    plan = w.plan(policy)
    check_against_tables(w, policy, plan)
    assert view(plan, elsewhere).content == "absent"
    assert policy.always_hidden.judge(elsewhere) is not None
    assert {m.path for m in plan.mounts if m.kind is MountKind.EMPTY_DIR} >= {"/tmp", "/var/tmp"}


def test_a_names_file_is_an_empty_file_and_a_hidden_entry_is_not_there() -> None:
    w = world()
    plan = w.plan(w.policy(BASE_GRANT))
    wt = w.worktree
    by_path = {m.path: m for m in plan.mounts}
    assert by_path[wt].kind is MountKind.EMPTY_DIR
    assert by_path[f"{wt}/README.md"].kind is MountKind.EMPTY_FILE
    assert by_path[f"{wt}/README.md"].why == "names only"
    assert by_path[f"{wt}/src/app/secret.py"].kind is MountKind.EMPTY_FILE
    assert by_path[f"{wt}/src/app"].kind is MountKind.WRITABLE
    assert by_path[f"{wt}/src/app/util.py"].kind is MountKind.READ_ONLY
    for hidden in ("secrets", "secrets/token.txt", ".git", "vendor", "tools/bin/tool"):
        assert f"{wt}/{hidden}" not in by_path, hidden
        assert view(plan, f"{wt}/{hidden}").content == "absent", hidden


def _name_known(policy: Policy, plan: Confinement, path: str) -> bool:
    """Whether the worker may know `path` is there without any mount table: a grant entry or the
    way to one (the worktree itself included), a readable or names-level path, or an entry of a directory it lists with its host content
    (the writable directory of a rw file, where every name is seen: docs/decisions.md)."""
    rel = policy.rel(path)
    on_the_way = any(
        is_within(posixpath.join(policy.worktree, e.bare), path) for e in policy.grant.entries
    )
    return (
        on_the_way
        or decide_read(policy, path).allowed
        or Level.NAMES in (policy.level_of(path), directory_level(policy.grant, rel))
        or view(plan, posixpath.dirname(path)) == Seen("host", True)
    )


@pytest.mark.parametrize("grant", SHAPES.values(), ids=SHAPES.keys())
@pytest.mark.parametrize(
    "primary", [f"{HOME}/proj", "/srv/proj"], ids=["worktree in the home", "elsewhere"]
)
def test_no_mount_point_names_a_path_the_grant_hides(grant: dict[str, str], primary: str) -> None:
    """Issue 18 §3: the mount table (/proc/self/mountinfo) names every mount point, so a mask
    over a hidden entry would name it; the worktree is an empty tmpfs with what is visible bound
    or made in, and a hidden entry is simply not there."""
    w = world(primary)
    policy = w.policy(grant)
    plan = w.plan(policy)
    inside = [m.path for m in plan.mounts if policy.in_worktree(m.path)]
    assert inside, plan.mounts
    for path in inside:
        assert _name_known(policy, plan, path), (path, grant)
    for path in w.fs.files_under(w.worktree):
        if not _name_known(policy, plan, path):
            assert view(plan, path).content == "absent", path


def test_runtime_paths_inside_the_worktree_are_there_and_never_writable() -> None:
    w = world()
    w.fs.write(f"{w.worktree}/src/app/.venv/bin/python", "ELF")
    w.fs.write(f"{w.worktree}/secrets/tools/run", "TOOL")
    runtime = (f"{w.worktree}/src/app/.venv", f"{w.worktree}/secrets/tools")
    policy = w.policy(BASE_GRANT, runtime_paths=runtime)
    plan = w.plan(policy)
    assert view(plan, f"{w.worktree}/src/app/.venv/bin/python") == Seen("host", False)
    assert view(plan, f"{w.worktree}/secrets/tools/run") == Seen("host", False)
    assert view(plan, f"{w.worktree}/secrets/token.txt").content != "host"
    assert view(plan, f"{w.worktree}/src/app/main.py") == Seen("host", True)


@pytest.mark.parametrize(
    ("rel", "seen"),
    [
        pytest.param("", Seen("host", False), id="the runtime directory itself"),
        pytest.param("/planted", Seen("host", False), id="a new entry beside the space"),
        pytest.param("/control/settings.json", Seen("host", False), id="the host's control"),
        *(
            pytest.param(f"/{d}/x", Seen("host", True), id=f"{d}/, the run's space")
            for d in ("config", "home", "tmp", "work")
        ),
    ],
)
def test_only_the_run_s_space_is_writable_of_the_runtime_directory(rel: str, seen: Seen) -> None:
    """Issue 30 §2: what the agent tree may write outside the grant is the run's space alone
    (config/, home/, tmp/, work/: one tmpfs, entered before bwrap starts)."""
    w = world()
    assert view(w.plan(w.policy(BASE_GRANT)), RT + rel) == seen


def test_a_rw_entry_still_to_be_created_gets_its_directory_writable_beside_nothing_uncovered() -> (
    None
):
    w = world()
    policy = w.policy({"src/app/new.py": "rw", "src/app/main.py": "ro"})
    plan = w.plan(policy)
    wt = w.worktree
    # The nearest existing directory is writable, so the file can be created...
    assert view(plan, f"{wt}/src/app/new.py") == Seen("host", True)
    # ...and everything else in it is read-only or masked, as before.
    assert view(plan, f"{wt}/src/app/main.py") == Seen("host", False)
    for hidden in ("util.py", "secret.py", "deep/x.py"):
        assert view(plan, f"{wt}/src/app/{hidden}").content != "host", hidden
    check_against_tables(w, policy, plan)


def test_the_deny_rules_of_anyone_mask_too() -> None:
    """Whatever the deny rules hide by a literal path is masked, wherever it lies: the plan takes
    them from the policy, so a path another part adds to them is absent as well; globs cannot be
    mounted and are left to the rules themselves."""
    w = world()
    w.fs.write("/opt/secret/key.pem", "KEY")
    w.fs.write("/opt/secret.txt", "TXT")
    policy = w.policy(BASE_GRANT)
    policy = policy.model_copy(
        update={
            "deny_rules": (
                *policy.deny_rules,
                "Read(//opt/secret/**)",
                "Edit(//opt/secret/**)",
                "Read(//opt/secret.txt)",
                "Read(//tmp/concorde-*/**)",
            )
        }
    )
    plan = w.plan(policy)
    assert view(plan, "/opt/secret/key.pem").content == "absent"
    assert view(plan, "/opt/secret.txt").content == "empty"
    assert parse_rule("Read(//tmp/concorde-*/**)") is None


def test_a_credential_origin_outside_the_homes_is_an_empty_file() -> None:
    w = world()
    plan = w.plan(w.policy(BASE_GRANT, credentials=("/etc/concorde/credentials.json",)))
    assert view(plan, "/etc/concorde/credentials.json") == Seen("empty", False)


def test_a_second_home_is_absent_too() -> None:
    """`$HOME` when it is not the password database's home (issue 8 §4)."""
    w = world()
    w.fs.write("/srv/other-home/.ssh/id_rsa", "KEY")
    plan = w.plan(w.policy(BASE_GRANT, homes=("/srv/other-home",)))
    assert view(plan, "/srv/other-home/.ssh/id_rsa").content == "absent"


def test_the_plan_scales_with_the_grant_not_the_repository() -> None:
    w = world()
    for i in range(2000):
        w.fs.write(f"{w.worktree}/big/d{i % 40}/f{i}.py", "x")
        w.fs.write(f"{w.worktree}/src/app/gen/g{i}.py", "x")
    policy = w.policy(BASE_GRANT)
    plan = w.plan(policy)
    assert len(plan.mounts) < 30, [m.path for m in plan.mounts]


def test_links_are_never_mounted_on() -> None:
    """A mount follows a link on its way (bwrap resolves the path): a hidden link gets no mask
    (what it points to is judged where it lies), and a rw directory reached through a link is
    not bound writable."""
    w = world()
    wt = w.worktree
    w.fs.symlink("/etc", f"{wt}/docs/etc-link")
    w.fs.symlink(f"{wt}/docs", f"{wt}/src/linked")
    policy = w.policy({"src/linked/": "rw", "docs/notes.md": "ro"})
    plan = w.plan(policy)
    paths = {m.path for m in plan.mounts}
    assert f"{wt}/docs/etc-link" not in paths and f"{wt}/src/linked" not in paths
    assert view(plan, f"{wt}/docs/notes.md") == Seen("host", False)


def test_what_the_agent_runs_from_is_kept_through_links_and_installations() -> None:
    assert installation("/w/node_modules/@m/pi/node_modules/x/dist/cli.js") == "/w/node_modules"
    assert (
        installation("/home/u/.local/share/claude/versions/2.1")
        == "/home/u/.local/share/claude/versions/2.1"
    )
    assert installation("/home/u/.local/bin/node") == "/home/u/.local/bin/node"
    w = world()
    w.fs.write(f"{HOME}/.local/share/claude/versions/2.1", "ELF")
    w.fs.symlink(f"{HOME}/.local/share/claude/versions/2.1", f"{HOME}/.local/bin/claude")
    plan = w.plan(
        w.policy(BASE_GRANT),
        keep=(INTERPRETER, f"{HOME}/.local/bin/claude", f"{HOME}/.local/share/claude/versions/2.1"),
    )
    assert view(plan, f"{HOME}/.local/bin/claude") == Seen("host", False)
    assert view(plan, f"{HOME}/.local/share/other-app/data").content == "absent"


def test_a_runtime_path_beside_the_host_interpreter_in_the_home_keeps_the_interpreter() -> None:
    """Issue 19 §1, found end to end: `--interpreter` of a venv whose base is another pyenv
    Python than the host's lists `~/.pyenv/versions/3.13.0`; the home is then walked, its other
    entries denied by name, and the deny rule on the host's own `~/.pyenv/versions/3.11.7`
    masked what the agent program runs from: every such run was refused. What the agent runs
    from stays as it is without the runtime path; its siblings and the rest of the home stay
    absent."""
    w = world()
    runtime = f"{HOME}/.pyenv/versions/3.13.0"
    w.fs.write(f"{runtime}/bin/python3.13", "ELF")
    w.fs.write(f"{HOME}/.pyenv/versions/2.7.18/bin/python2.7", "ELF")
    policy = w.policy(BASE_GRANT, runtime_paths=(runtime,))
    assert f"Read(/{INTERPRETER}/**)" in policy.deny_rules  # the file tools still may not
    plan = w.plan(policy)
    assert view(plan, f"{INTERPRETER}/bin/python3.11") == Seen("host", False)
    assert view(plan, f"{runtime}/bin/python3.13") == Seen("host", False)
    for absent in (f"{HOME}/.pyenv/versions/2.7.18/bin/python2.7", f"{HOME}/.ssh/id_rsa"):
        assert view(plan, absent).content == "absent", absent


def test_what_the_agent_needs_hidden_is_a_refusal_not_a_plan() -> None:
    """If the interpreter that runs Claude Code's hooks were hidden, the hook could not start
    and Claude Code would let the write through: no plan then."""
    w = world()
    policy = w.policy(BASE_GRANT)
    refused = confinement_plan(policy, PlanInputs(keep=(HOME,)), w.facts, TOOLS, as_root=True)
    assert isinstance(refused, str) and HOME in refused


def test_a_home_at_the_root_of_everything_is_not_a_mount() -> None:
    """A HOME of `/` cannot be hidden by a mount (nothing would run); the tools' rules hold."""
    w = world()
    plan = w.plan(w.policy(BASE_GRANT, homes=("/",)))
    assert all(m.path != "/" for m in plan.mounts)
    assert view(plan, f"{HOME}/.ssh/id_rsa").content == "absent"


# --- the command line ---------------------------------------------------------------------------


def test_the_command_line_confines_the_whole_agent_and_dies_with_the_host() -> None:
    w = world()
    plan = w.plan(w.policy(BASE_GRANT))
    argv = plan.prefix()
    # bwrap's launcher ignores SIGTERM (a timeout's SIGTERM is for the agent, which gets its
    # grace period inside the namespace; SIGKILL still ends the launcher and the namespace).
    assert argv[:3] == ("/usr/bin/env", "--ignore-signal=TERM", "--")
    assert argv[3:9] == ("/usr/bin/bwrap", "--unshare-user", "--uid", "0", "--gid", "0")
    assert {"--unshare-pid", "--die-with-parent"} <= set(argv)
    # bwrap reports the namespace's init to the process runner, which ends the round only once
    # that init (and so every process of the namespace) is gone.
    assert argv[argv.index("--info-fd") + 1] == NAMESPACE_REPORT_FD
    assert "--unshare-net" not in argv  # the agent reaches its model endpoint; its Bash does not
    assert argv[argv.index("--ro-bind") : argv.index("--ro-bind") + 3] == ("--ro-bind", "/", "/")
    # Every tmpfs is made read-only after everything was mounted into it.
    tmpfs = [argv[i + 1] for i, a in enumerate(argv) if a == "--tmpfs"]
    remount = [argv[i + 1] for i, a in enumerate(argv) if a == "--remount-ro"]
    assert tmpfs == remount and argv.index("--remount-ro") > max(
        i for i, a in enumerate(argv) if a in ("--bind", "--ro-bind", "--tmpfs")
    )
    masks = [
        argv[i + 2]
        for i, a in enumerate(argv)
        if a == "--ro-bind" and argv[i + 1] == f"{RT}/control/empty"
    ]
    assert f"{w.worktree}/README.md" in masks
    # As root: the helper drops bwrap's /proc covers and moves the agent to uid 65534; then the
    # agent's SIGTERM is the default again and bwrap's PWD is gone (the spec's exact environment).
    # First inside, the lifeline: the namespace ends with the host, whatever bwrap's init did.
    sep = argv.index("--", 4)
    assert argv[sep + 1 : sep + 1 + len(LIFELINE)] == LIFELINE
    sep += len(LIFELINE)
    assert argv[sep + 1 : sep + 3] == ("/bin/sh", "-c")
    helper = argv[sep + 3]
    assert helper.startswith("/usr/bin/umount /proc/sys")
    assert f"--map-user={CONFINED_UID}" in helper and helper.endswith('-- "$@"')
    assert argv[sep + 4 :] == (
        "concorde-confine",
        *WAITING,
        "/usr/bin/env",
        "-u",
        "PWD",
        "--default-signal=TERM",
        "--",
    )
    wrapped = plan.wrap(_command())
    assert wrapped.argv[len(argv) :] == ("claude", "-p") and wrapped.cwd == f"{RT}/work"


GROUP_MOUNTS = ("/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified")
OWN_GROUPS = (
    "/sys/fs/cgroup/memory/host/concorde-abc123-00000001-r1",
    "/sys/fs/cgroup/pids/concorde-abc123-00000001-r1",
)


@pytest.mark.parametrize(
    ("own", "shown"),
    [
        pytest.param(
            OWN_GROUPS,
            {**dict(zip(GROUP_MOUNTS[:2], OWN_GROUPS, strict=True)), GROUP_MOUNTS[2]: None},
            id="its own group in each hierarchy it has one",
        ),
        pytest.param((), dict.fromkeys(GROUP_MOUNTS), id="no group: every hierarchy empty"),
    ],
)
def test_a_round_names_no_other_run_s_group_nor_shares_its_ipc(
    own: tuple[str, ...], shown: dict[str, str | None]
) -> None:
    """Issue 30 §2: the round's own control group namespace and System V IPC; each control
    group mount shows the round's own group read-only, or an empty read-only folder."""
    w = world()
    plan = w.plan(w.policy(BASE_GRANT)).model_copy(update={"control_groups": GROUP_MOUNTS})
    argv = plan.prefix(own)
    assert {"--unshare-ipc", "--unshare-cgroup"} <= set(argv)
    for mount, folder in shown.items():
        at = argv.index(mount)
        if folder is None:
            assert argv[at - 1] == "--tmpfs", mount
            assert ("--remount-ro", mount) in itertools.pairwise(argv[at:]), mount
        else:
            assert argv[at - 2 : at] == ("--ro-bind", folder), mount
            assert ("--remount-ro", mount) not in itertools.pairwise(argv), mount
    assert plan.wrap(_command(), own).argv[: len(argv)] == argv


def test_not_as_root_no_helper_runs_before_the_agent() -> None:
    w = world()
    plan = w.plan(w.policy(BASE_GRANT), as_root=False)
    argv = plan.prefix()
    assert "--uid" not in argv and plan.helper() is None
    assert argv[argv.index("--", 4) :] == (
        "--",
        *LIFELINE,
        *WAITING,
        "/usr/bin/env",
        "-u",
        "PWD",
        "--default-signal=TERM",
        "--",
    )


def _command():  # type: ignore[no-untyped-def]
    from concorde_workers.domain.isolation.launch import LaunchCommand

    return LaunchCommand(argv=("claude", "-p"), cwd=f"{RT}/work", tools=("Read",))


# --- before every round ----------------------------------------------------------------------


def test_a_directory_swapped_for_a_link_since_the_plan_stops_the_round() -> None:
    """Between rounds no worker process runs, but the last round may have renamed a directory on
    the way to a mount and put a link in its place, which bwrap would follow."""
    w = world()
    policy = w.policy({"src/": "rw", "src/app/util.py": "ro"})
    plan = w.plan(policy)
    assert launch_problem(plan, w.facts) is None
    wt = w.worktree
    w.fs.rmtree(f"{wt}/src/app")
    w.fs.symlink(f"{HOME}/.ssh", f"{wt}/src/app")
    problem = launch_problem(plan, w.facts)
    assert problem is not None and f"{wt}/src/app/util.py" in problem


# The waiter the host's interpreter runs between bwrap's init and the agent: it reports the
# agent's exact wait status on the runner's pipe (tests/integration/test_confinement_real.py runs
# it for real).
WAITING = ("/usr/bin/python3", "-I", "-S", f"{RT}/control/wait.py", EXIT_STATUS_FD)
LIFELINE = tuple(lifeline())


def test_the_waiter_is_python_that_compiles_and_reports_on_the_runner_s_pipe() -> None:
    compile(WAITER, "<waiter>", "exec")
    assert "os.waitpid(pid, 0)" in WAITER and "os.set_inheritable(fd, False)" in WAITER
    w = world()
    plan = w.plan(w.policy(BASE_GRANT))
    assert plan.control_files() == {f"{RT}/control/empty": "", f"{RT}/control/wait.py": WAITER}


def test_without_an_interpreter_no_waiter_runs() -> None:
    w = world()
    tools = TOOLS.model_copy(update={"python": None})
    plan = w.plan(w.policy(BASE_GRANT), as_root=False).model_copy(update={"tools": tools})
    assert EXIT_STATUS_FD not in plan.prefix() and "/usr/bin/python3" not in plan.prefix()


def test_mounts_keep_their_order_parents_first() -> None:
    w = world()
    plan = w.plan(w.policy(BASE_GRANT))
    for i, later in enumerate(plan.mounts):
        for earlier in plan.mounts[:i]:
            assert not (is_within(earlier.path, later.path) and earlier.path != later.path), (
                earlier,
                later,
            )
    assert all(isinstance(m, Mount) and posixpath.isabs(m.path) for m in plan.mounts)


# --- what a backend's own sandbox asks (issue 33 §2; docs/decisions.md 72) ----------------------

CODEX_ASKS = (".git", ".codex", ".agents", ".aws")


def _asking_plan(w: World, grant: dict[str, str], **asks: tuple[str, ...] | bool) -> Confinement:
    inputs = PlanInputs(keep=(INTERPRETER,), **asks)
    plan = confinement_plan(w.policy(grant), inputs, w.facts, TOOLS, as_root=True)
    assert isinstance(plan, Confinement), plan
    return plan


def test_codex_placeholders_are_empty_read_only_folders_in_a_worktree_built_from_the_grant() -> (
    None
):
    """Codex's sandbox mounts over `.git`, `.codex`, `.agents`, `.aws` in its writable root and
    cannot make them in the read-only worktree skeleton ("Can't mkdir <wt>/.git: Read-only file
    system"): the plan makes them, empty and read-only, made inside (nothing checked on the
    host), the Git metadata's mask giving way to the placeholder."""
    w = world()
    plan = _asking_plan(w, BASE_GRANT, placeholders=CODEX_ASKS)
    by_path = {m.path: m for m in plan.mounts}
    for name in CODEX_ASKS:
        mount = by_path[f"{w.worktree}/{name}"]
        assert mount.kind is MountKind.EMPTY_DIR and mount.named and mount.inside, mount
        assert view(plan, f"{w.worktree}/{name}") == Seen("empty", False)
        assert ("--remount-ro", mount.path) in itertools.pairwise(plan.prefix())
    assert launch_problem(plan, w.facts) is None
    check_against_tables(w, w.policy(BASE_GRANT), plan)


def test_a_placeholder_never_covers_what_the_grant_shows_nor_stands_in_a_writable_root() -> None:
    """An entry the grant shows stays itself; where the worktree's root is bound writable (a rw
    file at the root) Codex makes and removes its mount points itself, and bwrap must not make
    any in the real worktree."""
    w = world()
    w.fs.write(f"{w.worktree}/.agents/skills/x/SKILL.md", "shown")
    plan = _asking_plan(w, {**BASE_GRANT, ".agents/": "ro"}, placeholders=CODEX_ASKS)
    assert view(plan, f"{w.worktree}/.agents/skills/x/SKILL.md") == Seen("host", False)
    assert not any(m.path == f"{w.worktree}/.agents" and m.inside for m in plan.mounts)
    assert any(m.path == f"{w.worktree}/.codex" and m.inside for m in plan.mounts)
    writable_root = _asking_plan(w, {"README.md": "rw"}, placeholders=CODEX_ASKS)
    assert not any(m.inside for m in writable_root.mounts)


def test_a_private_folder_is_a_small_writable_tmpfs_of_its_own_in_the_absent_temp_root() -> None:
    """Codex's process setup makes `/tmp/codex-daemon-<uid>` (its own sockets; its sandbox
    masks it from commands): /tmp stays absent and read-only, that one folder is a tmpfs of
    0700 and at most PRIVATE_BYTES, never remounted read-only, made inside."""
    w = world()
    path = f"/tmp/codex-daemon-{CONFINED_UID}"
    plan = _asking_plan(w, BASE_GRANT, private=(path,))
    mount = next(m for m in plan.mounts if m.path == path)
    assert mount.kind is MountKind.PRIVATE and mount.inside
    argv = plan.prefix()
    at = argv.index(path)
    assert argv[at - 5 : at] == ("--perms", "0700", "--size", str(1 << 20), "--tmpfs")
    assert ("--remount-ro", path) not in itertools.pairwise(argv)
    assert ("--remount-ro", "/tmp") in itertools.pairwise(argv)
    assert argv.index("--remount-ro") > at
    assert launch_problem(plan, w.facts) is None


def test_a_configuration_source_the_program_reads_regardless_is_masked() -> None:
    """Codex reads /etc/codex whatever CODEX_HOME says: the plan masks it, and the profile asks
    for exactly that, its placeholders and its private folder."""
    w = world()
    w.fs.write("/etc/codex/config.toml", 'developer_instructions = "planted"')
    plan = _asking_plan(w, BASE_GRANT, hidden=("/etc/codex",))
    assert view(plan, "/etc/codex/config.toml").content == "absent"
    codex = PROFILES["codex"].confinement
    assert codex.placeholders == CODEX_ASKS and codex.hidden == ("/etc/codex",)
    assert codex.resolved(CONFINED_UID) == (f"/tmp/codex-daemon-{CONFINED_UID}",)
    assert codex.files_alone
    for other in ("claude", "pi"):  # what the other two run in is as it was
        asks = PROFILES[other].confinement
        assert (asks.placeholders, asks.resolved(0), asks.hidden) == ((), (), ())
        assert not asks.files_alone


# --- a rw file bound itself (issue 33 §6; docs/decisions.md 73) ---------------------------------

BOUND_ALONE = {k: v for k, v in SHAPES.items() if k != "rw entries still to be created"}


@pytest.mark.parametrize("grant", BOUND_ALONE.values(), ids=BOUND_ALONE.keys())
def test_with_files_alone_no_folder_takes_a_new_name_the_grant_does_not_give(
    grant: dict[str, str],
) -> None:
    """For a program whose commands write whatever the namespace leaves writable (Codex), a
    rw file is bound itself: the namespace shows what the tables allow, and a new name is
    writable only where the write table allows one (a rw folder), never beside a rw file."""
    w = world()
    policy = w.policy(grant)
    plan = _asking_plan(w, grant, files_alone=True)
    assert unbound_rw_entry(policy, w.facts) is None
    check_against_tables(w, policy, plan)
    directories = {w.worktree}
    for path in w.fs.files_under(w.worktree):
        while (path := posixpath.dirname(path)) != w.worktree:
            directories.add(path)
    for directory in directories:
        new = posixpath.join(directory, "new-name-q1")
        if view(plan, new).writable:
            assert decide_write(policy, new, new).allowed, new
    for entry in policy.grant.entries:
        path = posixpath.join(w.worktree, entry.bare)
        if entry.level is Level.RW and w.fs.is_file(path):
            assert view(plan, path) == Seen("host", True), path
            mount = next(m for m in plan.mounts if m.path == path)
            assert mount.kind is MountKind.WRITABLE and "the file itself" in mount.why, mount
    assert launch_problem(plan, w.facts) is None


def test_a_rw_file_bound_itself_that_became_a_folder_stops_the_round() -> None:
    """Before every round a file's own bind must still land on a regular file: a folder put in
    its place (from outside: inside, the read-only folder refuses it) would be bound writable
    whole."""
    w = world()
    plan = _asking_plan(w, {"README.md": "rw"}, files_alone=True)
    assert launch_problem(plan, w.facts) is None
    w.fs.remove(f"{w.worktree}/README.md")
    w.fs.mkdir(f"{w.worktree}/README.md")
    said = launch_problem(plan, w.facts)
    assert said is not None and f"{w.worktree}/README.md" in said and "no longer the file" in said


def test_with_files_alone_a_folder_named_without_its_slash_is_bound_writable_nowhere() -> None:
    """`src` rw names the entry itself, an existing folder: nothing writes a folder, so nothing
    is bound writable for it (not the worktree's root, as a rw entry still to be created gets),
    and the folder shows empty; the placeholders stand in the root built from the grant."""
    w = world()
    grant = {"src": "rw", "docs/": "ro"}
    policy = w.policy(grant)
    assert unbound_rw_entry(policy, w.facts) is None
    plan = _asking_plan(w, grant, files_alone=True, placeholders=CODEX_ASKS)
    assert not any(
        m.kind is MountKind.WRITABLE and is_within(m.path, w.worktree) for m in plan.mounts
    )
    assert view(plan, f"{w.worktree}/new-name-q1").writable is False
    assert view(plan, f"{w.worktree}/src/app/main.py").content == "absent"
    assert any(m.path == f"{w.worktree}/.git" and m.inside for m in plan.mounts)
    check_against_tables(w, policy, plan)


def test_a_rw_entry_no_bind_of_its_own_makes_writable_is_said_with_its_repair() -> None:
    """What `plan` and `run` refuse for codex: the first rw entry outside every rw folder that
    is not there yet (a file at the root; a file or folder below), a link, or a special file,
    named by its number, with the repair; an entry below a rw folder needs none."""
    w = world()
    w.fs.symlink(f"{w.worktree}/src/app/main.py", f"{w.worktree}/linked.py")
    cases = {
        "notes.md": "grant entry 2 ('notes.md', rw) names nothing in the worktree yet: create "
        "it first, empty if need be (the host creates nothing for the worker)",
        "src/app/new.py": "grant entry 2 ('src/app/new.py', rw) names nothing in the worktree "
        "yet: create it first, empty if need be (the host creates nothing for the worker), or "
        "grant its folder `src/app/` rw",
        "build/out/": "grant entry 2 ('build/out/', rw) names nothing in the worktree yet: "
        "create it first, empty if need be (the host creates nothing for the worker), or grant "
        "its folder `build/` rw",
        "linked.py": "grant entry 2 ('linked.py', rw) is a symbolic link or has one on its way: "
        "grant the path it leads to instead",
    }
    for path, said in cases.items():
        policy = w.policy({"README.md": "rw", path: "rw"})
        assert unbound_rw_entry(policy, w.facts) == said, path
    for fine in ({"src/app/": "rw", "src/app/new.py": "rw"}, {"src": "rw"}, BASE_GRANT):
        assert unbound_rw_entry(w.policy(fine), w.facts) is None, fine
