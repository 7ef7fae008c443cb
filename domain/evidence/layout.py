"""Names of the run directory's and the runtime directory's files (seed 000 "Run directory and
runtime directory", seed 001 "Run directory").

Pure string joins with `posixpath`: nothing here touches a disk. The run directory is the trace
node `<parent>/workers/<run-id>/`; the runtime directory is the private directory
`/tmp/concorde-<6 hex of the run id>-<random>/` (see `run_id.runtime_directory_name`).
"""

from __future__ import annotations

import posixpath

from pydantic import BaseModel, ConfigDict, field_validator

STDERR_TAIL_BYTES = 80_000
"""A round keeps at most the last 80,000 bytes of its standard error as stderr.log."""

LAST_ACTION_MAX = 200
"""The progress file's last_action target is at most 200 characters."""

# The run directory (the worker run's trace node).
WORKERS_DIR = "workers"
TRACE_FILE = "trace.json"
STATUS_FILE = "status.json"
GRANT_FILE = "grant.json"
BRIEF_FILE = "brief.md"
TRANSCRIPT_FILE = "transcript.jsonl"
PROGRAMS_FILE = "programs.json"
"""The agent programs and their versions the run was prepared with (issue 11): no field of seed
002's contracts holds them, so the run node names this file among its `files`."""
ROUNDS_DIR = "rounds"
STDERR_FILE = "stderr.log"

# The runtime directory.
CONTROL_DIR = "control"
CONFIG_DIR = "config"
HOME_DIR = "home"
RESOURCES_FILE = "resources.json"
"""A round's resource use and the limits in force (issue 20), in the round's folder."""
TMP_DIR = "tmp"
WORK_DIR = "work"
WORKER_DIRS: tuple[str, ...] = (WORK_DIR, HOME_DIR, TMP_DIR)
"""The worker's own directories: no generated deny rule may cover them (run_directory_denied)."""

SETTINGS_FILE = "settings.json"
WRITE_HOOK_FILE = "write_hook.py"
RESULT_SCHEMA_FILE = "result.schema.json"
PERMISSION_EXTENSION_FILE = "permission.ts"
SESSIONS_DIR = "sessions"
CLAUDE_CREDENTIALS_FILE = ".credentials.json"
PI_AUTH_FILE = "auth.json"
PI_MODELS_FILE = "models.json"


def _absolute(value: str) -> str:
    if not value or not posixpath.isabs(value):
        raise ValueError(f"expected an absolute path, got {value!r}")
    return posixpath.normpath(value)


class RunLayout(BaseModel):
    """The files of one worker run's run directory, `<parent>/workers/<run-id>/`."""

    model_config = ConfigDict(frozen=True)

    run_dir: str

    @field_validator("run_dir")
    @classmethod
    def _check(cls, value: str) -> str:
        return _absolute(value)

    @classmethod
    def below(cls, parent: str, run_id: str) -> RunLayout:
        """The run directory of `run_id` below the trace node folder its caller gave."""
        if not run_id or "/" in run_id or run_id in (".", ".."):
            raise ValueError(f"not a run id: {run_id!r}")
        return cls(run_dir=posixpath.join(_absolute(parent), WORKERS_DIR, run_id))

    @property
    def workers(self) -> str:
        """`<parent>/workers`, the tree of every run below the same trace parent."""
        return posixpath.dirname(self.run_dir)

    @property
    def trace(self) -> str:
        return posixpath.join(self.run_dir, TRACE_FILE)

    @property
    def status(self) -> str:
        return posixpath.join(self.run_dir, STATUS_FILE)

    @property
    def grant(self) -> str:
        return posixpath.join(self.run_dir, GRANT_FILE)

    @property
    def brief(self) -> str:
        return posixpath.join(self.run_dir, BRIEF_FILE)

    @property
    def transcript(self) -> str:
        return posixpath.join(self.run_dir, TRANSCRIPT_FILE)

    @property
    def programs(self) -> str:
        return posixpath.join(self.run_dir, PROGRAMS_FILE)

    @property
    def rounds(self) -> str:
        return posixpath.join(self.run_dir, ROUNDS_DIR)

    def round_dir(self, n: int) -> str:
        """The node folder of round `n` (from 1)."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"a round number is an integer from 1, got {n!r}")
        return posixpath.join(self.rounds, str(n))

    def round_trace(self, n: int) -> str:
        return posixpath.join(self.round_dir(n), TRACE_FILE)

    def round_stderr(self, n: int) -> str:
        return posixpath.join(self.round_dir(n), STDERR_FILE)


class RuntimeLayout(BaseModel):
    """The files of one worker run's private runtime directory."""

    model_config = ConfigDict(frozen=True)

    root: str

    @field_validator("root")
    @classmethod
    def _check(cls, value: str) -> str:
        return _absolute(value)

    @property
    def control(self) -> str:
        return posixpath.join(self.root, CONTROL_DIR)

    @property
    def config(self) -> str:
        return posixpath.join(self.root, CONFIG_DIR)

    @property
    def home(self) -> str:
        return posixpath.join(self.root, HOME_DIR)

    @property
    def tmp(self) -> str:
        return posixpath.join(self.root, TMP_DIR)

    @property
    def work(self) -> str:
        """The worker's working directory: never the worktree."""
        return posixpath.join(self.root, WORK_DIR)

    @property
    def worker_dirs(self) -> tuple[str, str, str]:
        """work/, home/ and tmp/: the directories a generated deny rule must never cover."""
        return (self.work, self.home, self.tmp)

    @property
    def settings(self) -> str:
        """control/settings.json, the worker settings (Claude Code backend)."""
        return posixpath.join(self.control, SETTINGS_FILE)

    @property
    def write_hook(self) -> str:
        """control/write_hook.py (Claude Code backend)."""
        return posixpath.join(self.control, WRITE_HOOK_FILE)

    @property
    def result_schema(self) -> str:
        """control/result.schema.json, the worker result schema."""
        return posixpath.join(self.control, RESULT_SCHEMA_FILE)

    @property
    def permission_extension(self) -> str:
        """control/permission.ts, the permission extension (pi backend)."""
        return posixpath.join(self.control, PERMISSION_EXTENSION_FILE)

    @property
    def claude_credentials(self) -> str:
        """config/.credentials.json, the copy of the user's Claude Code credentials."""
        return posixpath.join(self.config, CLAUDE_CREDENTIALS_FILE)

    @property
    def sessions(self) -> str:
        """config/sessions/, pi's session directory."""
        return posixpath.join(self.config, SESSIONS_DIR)

    def pi_session_file(self, run_id: str) -> str:
        """config/sessions/<run-id>.jsonl, the session file a pi run fixes at its first round."""
        if not run_id or "/" in run_id or run_id.startswith("."):
            raise ValueError(f"not a run id: {run_id!r}")
        return posixpath.join(self.sessions, f"{run_id}.jsonl")

    @property
    def pi_settings(self) -> str:
        """config/settings.json, Concorde's own pi settings."""
        return posixpath.join(self.config, SETTINGS_FILE)

    @property
    def pi_auth(self) -> str:
        return posixpath.join(self.config, PI_AUTH_FILE)

    @property
    def pi_models(self) -> str:
        return posixpath.join(self.config, PI_MODELS_FILE)

    @property
    def credential_copies(self) -> tuple[str, ...]:
        """The credential copies in config/ the host removes first when the run ends."""
        return (self.claude_credentials, self.pi_auth, self.pi_models)


# --- what of the runtime directory belongs to the host or to pi (seed 000 "Run directory and
# runtime directory"; notes/pi.md §9) ---------------------------------------------------------


def jiti_cache(runtime: RuntimeLayout) -> str:
    """pi's compile cache of the extension, `<rt>/tmp/jiti` (notes/pi.md §9.1)."""
    return posixpath.join(runtime.tmp, "jiti")


def pi_project_dir(runtime: RuntimeLayout) -> str:
    """pi's project settings directory in the working directory, `<rt>/work/.pi` (§9.2)."""
    return posixpath.join(runtime.work, ".pi")


def host_paths(runtime: RuntimeLayout) -> tuple[str, str, str]:
    """What belongs to the host (read table row 6): control/, config/ and the jiti cache."""
    return (runtime.control, runtime.config, jiti_cache(runtime))
