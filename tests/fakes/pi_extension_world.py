"""A real on-disk world for the pi permission extension's tests: a primary worktree with a `.git`
directory, a task worktree below `.claude/worktrees/` with files, symbolic links, a runtime path
and a `.git` file, a user home, and a runtime directory (control/, config/, work/, home/, tmp/)
in a temp root of its own (`t/`, beside another run's runtime directory), plus what is hidden
always (issue 8 §2-§4): `$HOME` apart from the password database's home, the configuration
directories and credential files at their origins, the trace parent's `workers/` tree; and the
generated extension (control/permission.ts and control/pi_policy.ts) and a runner for
tests/fakes/pi_extension_driver.mjs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from concorde_workers.adapters.pi import layout as pi_layout
from concorde_workers.adapters.pi.extension import embedded_policy, generate_extension
from concorde_workers.container import PROFILES
from concorde_workers.contracts import worker_result_schema
from concorde_workers.domain.boundary.grant import Grant, parse_grant
from concorde_workers.domain.boundary.policy import Policy, build_policy
from concorde_workers.domain.configuration.profile import entries_of
from concorde_workers.domain.configuration.request import Limits
from concorde_workers.domain.gitview.placement import AdminPath
from concorde_workers.domain.ground.paths import DirEntry, EntryKind

RUNTIME_ENTRIES = entries_of(PROFILES)

REPO = Path(__file__).resolve().parents[2]
NODE_MODULES = REPO / "node_modules"
PI_PACKAGE = NODE_MODULES / "@mariozechner/pi-coding-agent"
SANDBOX_RUNTIME = NODE_MODULES / "@anthropic-ai/sandbox-runtime"
DRIVER = Path(__file__).with_name("pi_extension_driver.mjs")

GRANT_ENTRIES = {
    "src/app/": "rw",
    "src/app/secret.py": "names",
    "src/app/frozen.py": "ro",
    "docs/": "ro",
    "docs/private/": "names",
    "notes.md": "rw",
    "empty/": "names",
}

FILES = {
    "README.md": "# readme\n",
    "notes.md": "notes\n",
    "src/app/main.py": "print('main')\n",
    "src/app/secret.py": "SECRET = 1\n",
    "src/app/frozen.py": "FROZEN = 1\n",
    "src/lib/other.py": "OTHER = 1\n",
    "docs/spec.md": "# spec\nneedle in spec\n",
    "docs/private/plan.md": "private plan\n",
    "empty/hidden.txt": "hidden\n",
    ".venv/lib/site.py": "SITE = 1\n",
    "src/app/.venv-like/x.py": "X = 1\n",
}


def _list_dir(path: str) -> list[DirEntry]:
    try:
        names = sorted(os.listdir(path))
    except OSError:
        return []
    out = []
    for n in names:
        p = os.path.join(path, n)
        if os.path.islink(p):
            kind = EntryKind.SYMLINK
        elif os.path.isdir(p):
            kind = EntryKind.DIRECTORY
        elif os.path.isfile(p):
            kind = EntryKind.FILE
        else:
            kind = EntryKind.OTHER
        out.append(DirEntry(name=n, kind=kind))
    return out


@dataclass
class PiWorld:
    root: Path
    home: Path
    primary: Path
    worktree: Path
    rt: Path
    policy: Policy = field(repr=False)
    permission: str = field(repr=False)
    embedded: dict[str, Any] = field(repr=False)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """Hypothesis prints a failing example's arguments: the world by its root only."""
        printer.text(f"PiWorld(root={str(self.root)!r})")

    @property
    def other_run(self) -> Path:
        """Another run's runtime directory beside this one, with its credential copy."""
        return self.rt.parent / "concorde-def456-z1"

    @property
    def env_home(self) -> Path:
        """`$HOME` when it is not the password database's home."""
        return self.root / "envhome"

    @property
    def credentials(self) -> tuple[Path, ...]:
        """The credential files at their origins (outside every home)."""
        cfg = self.root / "cfg"
        return (
            cfg / "claude/.credentials.json",
            cfg / "pi/auth.json",
            cfg / "pi/models.json",
            self.root / "maps/models.json",
        )

    @property
    def workers(self) -> Path:
        """The trace parent's workers/ tree."""
        return self.root / "trace/op-1/workers"

    @property
    def control(self) -> Path:
        return self.rt / "control"

    def wt(self, rel: str) -> str:
        return str(self.worktree / rel)

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "HOME": str(self.rt / "home"),
            "TMPDIR": str(self.rt / "tmp"),
            "CLAUDE_CODE_TMPDIR": str(self.rt / "tmp"),
        }
        env.update(extra)
        return env

    def node(
        self, request: dict[str, Any], env: dict[str, str] | None = None, timeout: float = 120
    ) -> dict[str, Any]:
        """Run the driver on one request; its JSON answer."""
        fd, name = tempfile.mkstemp(prefix="driver-", suffix=".json", dir=self.root)
        os.close(fd)
        path = Path(name)
        output = path.with_suffix(".out.json")
        req = {"repo": str(REPO), "control": str(self.control), "output": str(output), **request}
        path.write_text(json.dumps(req))
        proc = subprocess.run(
            [shutil.which("node") or "node", str(DRIVER), str(path)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env or self.env(),
            cwd=str(self.rt / "work"),
        )
        if proc.returncode != 0:
            raise AssertionError(
                f"driver failed ({proc.returncode}):\n{proc.stderr}\n{proc.stdout}"
            )
        answer: dict[str, Any] = json.loads(output.read_text())
        answer["stderr"] = proc.stderr
        return answer

    def run_extension(
        self,
        steps: list[dict[str, Any]],
        prior: list[dict[str, Any]] | None = None,
        env: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        return self.node(
            {
                "mode": "extension",
                "cwd": str(self.rt / "work"),
                "priorEntries": prior or [],
                "steps": steps,
            },
            env=env,
        )


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


def build_world(tmp_path: Path, limits: Limits | None = None) -> PiWorld:
    root = Path(os.path.realpath(tmp_path))
    home = root / "home"
    primary = home / "proj"
    worktree = primary / ".claude" / "worktrees" / "t1"
    rt = root / "t" / "rt"  # its temp root t/ holds runtime directories only, as /tmp would
    for d in (
        primary / ".git" / "worktrees" / "t1",
        worktree,
        *(rt / n for n in ("control", "config/sessions", "work", "home", "tmp/jiti")),
    ):
        d.mkdir(parents=True, exist_ok=True)
    (primary / ".git" / "config").write_text("[core]\n")
    (primary / ".git" / "worktrees" / "t1" / "HEAD").write_text("ref: refs/heads/t1\n")
    (primary / "secret.txt").write_text("primary secret\n")
    (home / "dotfile").write_text("user home file\n")
    (worktree / ".git").write_text(f"gitdir: {primary}/.git/worktrees/t1\n")
    for rel, text in FILES.items():
        p = worktree / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    (worktree / "src/app/sub").mkdir()
    (worktree / "src/app/sub/.git").mkdir()  # a nested .git directory inside rw
    (worktree / "src/app/sub/.git/config").write_text("[core]\n")
    (rt / "config" / "auth.json").write_text('{"fake": {"type": "api_key", "key": "sk-secret"}}\n')
    (rt / "tmp" / "jiti" / "control-permission.0.mjs").write_text("// cache\n")
    (rt / "work" / "scratch.txt").write_text("scratch\n")
    (root / "outside").mkdir()
    (root / "outside" / "free.txt").write_text("outside\n")
    hidden = {
        "t/concorde-def456-z1/config/auth.json": '{"other": {"key": "sk-other-run"}}\n',
        "t/concorde-def456-z1/work/x.txt": "other run's work\n",
        "envhome/.ssh/id_rsa": "PRIVATE KEY\n",
        "envhome/.pi/agent/auth.json": '{"home": {"key": "sk-home"}}\n',
        "cfg/claude/.credentials.json": '{"claudeAiOauth": {"accessToken": "sk-ant-oat"}}\n',
        "cfg/pi/auth.json": '{"cfg": {"key": "sk-cfg"}}\n',
        "cfg/pi/models.json": '{"providers": {}}\n',
        "cfg/pi/settings.json": "{}\n",
        "maps/models.json": '{"schema_version": 1, "models": {}}\n',
        "trace/op-1/workers/w-1/status.json": '{"host_pid": 1}\n',
        "trace/op-1/workers/w-1/rounds/1/trace.json": "{}\n",
    }
    for rel, text in hidden.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    # symbolic links
    links = {
        "src/app/to_ro": "../../docs/spec.md",  # link at an rw path to an ro file
        "src/app/to_rw": "main.py",  # link at rw to rw
        "src/app/to_outside": str(root / "outside" / "free.txt"),
        "src/app/dangling_rw": "not_yet.py",  # dangling, target in rw
        "src/app/dangling_out": str(root / "outside" / "new.txt"),
        "src/app/docs_dir": "../../docs",  # a directory link
        "src/app/to_git": str(primary / ".git" / "config"),
        "src/app/to_auth": str(rt / "config" / "auth.json"),
        "src/app/to_jiti": str(rt / "tmp" / "jiti"),
        "src/app/loop": "loop",
        "src/app/to_other_run": str(root / "t/concorde-def456-z1/config/auth.json"),
        "src/app/to_credentials": str(root / "cfg/claude/.credentials.json"),
        "src/app/to_status": str(root / "trace/op-1/workers/w-1/status.json"),
        "src/app/to_env_home": str(root / "envhome"),
        "README.link": "src/app/main.py",  # link outside rw (ungranted) to rw
    }
    for rel, target in links.items():
        os.symlink(target, worktree / rel)
    os.symlink(str(worktree / "src/app/main.py"), rt / "work" / "to_rw")  # outside -> rw
    os.symlink(str(worktree / "docs/spec.md"), rt / "work" / "to_ro")
    os.symlink(str(rt / "tmp" / "jiti"), rt / "tmp" / "jiti_alias")
    os.symlink(str(rt / "control"), rt / "work" / "ctl")
    policy = tree_policy(root, GRANT_ENTRIES, (str(worktree / ".venv"),))
    files = generate_extension(
        policy,
        limits=limits or Limits(max_turns=2, max_budget_usd=0.5),
        result_schema=json.dumps(
            worker_result_schema(
                {"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]}
            )
        ),
        environ={"CONCORDE_SANDBOX_RUNTIME": str(SANDBOX_RUNTIME), "PATH": os.environ["PATH"]},
        rg=shutil.which("rg"),
        fd=shutil.which("fd") or shutil.which("fdfind"),
    )
    for path, text in files.items():
        Path(path).write_text(text)
    permission = files[pi_layout.permission_extension(policy.runtime)]
    return PiWorld(
        root=root,
        home=home,
        primary=primary,
        worktree=worktree,
        rt=rt,
        policy=policy,
        permission=permission,
        embedded=embedded_policy(permission),
    )


def tree_policy(root: Path, entries: dict[str, str], runtime_paths: tuple[str, ...]) -> Policy:
    """The policy of a run on the tree `build_world` makes below `root`, under a grant of
    `entries` (the world's own is GRANT_ENTRIES) and the given runtime paths."""
    home = root / "home"
    primary = home / "proj"
    worktree = primary / ".claude" / "worktrees" / "t1"
    return build_policy(
        grant=make_grant(entries),
        worktree=str(worktree),
        primary=str(primary),
        user_home=str(home),
        runtime_dir=str(root / "t" / "rt"),
        runtime_paths=runtime_paths,
        git=(
            AdminPath(path=str(primary / ".git"), directory=True),
            AdminPath(path=str(worktree / ".git"), directory=False),
            AdminPath(path=str(worktree / "src/app/sub/.git"), directory=True),
        ),
        list_dir=_list_dir,
        homes=(str(home), str(root / "envhome")),
        config_dirs=(str(root / "cfg/claude"), str(root / "cfg/pi")),
        credentials=tuple(
            str(root / c)
            for c in (
                "cfg/claude/.credentials.json",
                "cfg/pi/auth.json",
                "cfg/pi/models.json",
                "maps/models.json",
            )
        ),
        run_directories=(str(root / "trace/op-1/workers"),),
        runtime_entries=RUNTIME_ENTRIES,
    )


def node_available() -> bool:
    return (
        shutil.which("node") is not None
        and (NODE_MODULES / "jiti").is_dir()
        and PI_PACKAGE.is_dir()
        and SANDBOX_RUNTIME.is_dir()
    )


def sandbox_available() -> bool:
    return node_available() and all(shutil.which(p) for p in ("bwrap", "socat", "rg"))
