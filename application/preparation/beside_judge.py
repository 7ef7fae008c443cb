"""What lies beside the grant, judged over the filesystem (seed 000 "Reading beside the grant"):
a home of `/` refused; the runtime paths and the project interpreter taken exactly as given or
refused (domain/boundary/beside.py decides) against what the worker may not reach - the homes and
the credentials' origins (found once, from the host's facts), the primary worktree, the worktree,
the Git administrative paths, the temporary root and the trace parent's run directories - each
absolute path as given and with its links resolved. The preparation and the host's refusal
before a run both ask it."""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

from concorde_workers.application.preparation.prepared import HostFacts
from concorde_workers.domain.boundary.beside import Given, judge_beside, surroundings, text_problem
from concorde_workers.domain.boundary.grant import Grant
from concorde_workers.domain.configuration.credentials import (
    CredentialSpec,
    credential_origins,
    home_at_root,
)
from concorde_workers.domain.configuration.request import RunRequest
from concorde_workers.domain.gitview.placement import (
    AdminPath,
    Placement,
)
from concorde_workers.domain.ground.codes import Code
from concorde_workers.domain.ground.errors import Reason, Refusal
from concorde_workers.domain.ground.layout import WORKERS_DIR
from concorde_workers.domain.ground.text import control_problem
from concorde_workers.ports.machine.filesystem import FileSystemError, PathFacts

__all__ = ["BesideJudge", "run_directories"]


class BesideJudge:
    """Judges what a request lists beside its grant, with one host's facts."""

    def __init__(
        self, fs: PathFacts, host: HostFacts, credentials: Sequence[CredentialSpec]
    ) -> None:
        self._fs = fs
        self._host = host
        self.origins = credential_origins(host.environ, host.user_home, credentials)
        """Every origin of a credential, for every registered backend: a function of the
        host's facts alone, found once."""

    def home_refusal(self) -> Refusal | None:
        """The refusal of a home of `/` (domain/configuration/credentials.py `home_at_root`), or
        None."""
        problem = home_at_root(self._host.user_home, self._host.environ, self._fs.realpath)
        if problem is None:
            return None
        return Refusal(code=Code.LAUNCH_FAILED, reason=Reason.ENVIRONMENT, message=problem)

    def refusal(
        self,
        request: RunRequest,
        grant: Grant,
        placement: Placement,
        admin: tuple[AdminPath, ...],
        temp_root: str,
    ) -> Refusal | None:
        """Seed 000 "Reading beside the grant": runtime paths and the project interpreter are
        taken exactly as given or refused (domain/boundary/beside.py), never rewritten."""
        home = self.home_refusal()
        if home is not None:
            return home
        origins = self.origins
        model_map = [request.model_map] if request.model_map else []
        around = surroundings(
            homes=self.forms(list(origins.homes)),
            credentials=self.forms([*origins.directories, *origins.files, *model_map]),
            primary=self.forms([placement.primary]),
            worktree=self.forms([request.worktree, placement.worktree]),
            git=[a.path for a in admin],
            temp_root=self.forms([temp_root]),
            run_dirs=self.forms(run_directories(request)),
            grant=grant,
            runtime_paths=request.runtime_paths,
        )
        return judge_beside(
            request.runtime_paths, request.project_interpreter, self._inspect, around
        )

    def forms(self, paths: list[str]) -> list[str]:
        """Each absolute path as given and with its links resolved."""
        out: list[str] = []
        for path in paths:
            if posixpath.isabs(path) and not control_problem(path):
                out += [path, self._fs.realpath(path)]
        return out

    def _inspect(self, path: str) -> Given:
        """What the disk says of a path given beside the grant (nothing for one that is no
        absolute path: it is refused for its text)."""
        if text_problem(path) is not None:
            return Given(path=path)
        real = self._fs.realpath(path)
        executable = False
        if self._fs.is_file(path):
            try:
                executable = self._fs.stat(real).executable
            except FileSystemError:
                executable = False
        return Given(
            path=path,
            real=real,
            exists=self._fs.exists(path),
            executable_file=executable,
            directory=self._fs.is_dir(path),
            directory_real=self._fs.realpath(posixpath.dirname(path)),
        )


def run_directories(request: RunRequest) -> list[str]:
    """The trace parent's `workers/` tree: this run's run directory and its siblings' (seed 000
    "Run directory and runtime directory": the worker has no access to any of it)."""
    return [posixpath.join(request.parent, WORKERS_DIR)] if request.parent else []
