"""Names of the run directory's and the runtime directory's files (seed 000 "Run directory and
runtime directory", seed 001 "Run directory").

Pure string joins with `posixpath`: nothing here touches a disk. The run directory is the trace
node `<parent>/workers/<run-id>/`; the runtime directory is the private directory
`/tmp/concorde-<6 hex of the run id>-<random>/` (see `run_id.runtime_directory_name`).
"""

from __future__ import annotations

import posixpath

from pydantic import BaseModel, ConfigDict, field_validator

CONFIG_PATH = ".concorde/workers.json"
"""The worker configuration's place in a worktree (seed 002), the file Git is asked for at HEAD."""

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
DELETIONS_FILE = "deletions.jsonl"
"""The journal of the host's deletions (domain/run/deletion_journal.py), written as it deletes:
what a sweep reads to name what a host killed among its deletions had deleted."""
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

RESULT_SCHEMA_FILE = "result.schema.json"


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
    def deletions(self) -> str:
        return posixpath.join(self.run_dir, DELETIONS_FILE)

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


class RuntimeEntries(BaseModel):
    """What backends' programs keep in a runtime directory for themselves, relative to its root
    (each backend's profile gives its own; a run's policy takes every registered backend's, so
    one set of lists serves every backend: notes/pi.md §9)."""

    model_config = ConfigDict(frozen=True)

    host: tuple[str, ...] = ()
    """What belongs to the host besides control/ and config/: no tool reads or writes it (pi's
    compile cache of the extension, `tmp/jiti`)."""
    not_writable: tuple[str, ...] = ()
    """What no tool may write (pi's project settings in its working directory, `work/.pi`)."""
    transcripts: tuple[str, ...] = ()
    """The folders its sessions' transcripts lie in (pi: `config/sessions`); a last segment
    `*` is every folder there (Claude Code: `config/projects/*`)."""

    def __or__(self, other: RuntimeEntries) -> RuntimeEntries:
        def both(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
            return tuple(dict.fromkeys((*a, *b)))

        return RuntimeEntries(
            host=both(self.host, other.host),
            not_writable=both(self.not_writable, other.not_writable),
            transcripts=both(self.transcripts, other.transcripts),
        )


class RuntimeLayout(BaseModel):
    """The files of one worker run's private runtime directory."""

    model_config = ConfigDict(frozen=True)

    root: str
    entries: RuntimeEntries = RuntimeEntries()
    """What the registered backends' programs keep here (a policy's runtime has them)."""

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
    def result_schema(self) -> str:
        """control/result.schema.json, the worker result schema."""
        return posixpath.join(self.control, RESULT_SCHEMA_FILE)

    def at(self, relative: str) -> str:
        """A path of the runtime directory given relative to its root."""
        return posixpath.join(self.root, relative)

    def copy_of(self, name: str) -> str:
        """config/<name>, the copy of a user's credential file of that name."""
        if not name or "/" in name or name in (".", ".."):
            raise ValueError(f"not a file name: {name!r}")
        return posixpath.join(self.config, name)


# --- what of the runtime directory belongs to the host (seed 000 "Run directory and runtime
# directory"; notes/pi.md §9) -------------------------------------------------------------------


def host_paths(runtime: RuntimeLayout) -> tuple[str, ...]:
    """What belongs to the host (read table row 6): control/, config/ and what the backends'
    programs keep for themselves (pi's jiti cache)."""
    return (runtime.control, runtime.config, *(runtime.at(e) for e in runtime.entries.host))


def not_writable(runtime: RuntimeLayout) -> tuple[str, ...]:
    """What no tool may write besides what the grant keeps read-only: what belongs to the
    host of the backends' own, and what they list as not writable (pi's `work/.pi`)."""
    return tuple(runtime.at(e) for e in (*runtime.entries.host, *runtime.entries.not_writable))
