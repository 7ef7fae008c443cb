"""The host's Git calls of a run, counted (issue 32 §3 "count and cut what a round can do with
fewer").

Every host Git command starts through `GitRunner._start` (adapters/repository/git_runner.py), each a
sandboxed process of its own. A one-round run that writes one rw file and ends ok makes the
calls listed here, in this order, and no more: a change that adds one fails here and says which,
so the cost of a round is decided, not drifted into.
"""

from __future__ import annotations

from typing import Any

import pytest
from fakes.program_backend import Step
from integration.host_fixtures import HostHarness, ok_result

from concorde_workers.adapters.repository.git_runner import GitRunner

pytestmark = [pytest.mark.integration]

MAIN = "{worktree}/src/app/main.py"

PLACEMENT = ["toplevel", "worktree_list", "git_dir", "common_dir"]
"""Where the worktree's Git directories are, once a run. Each is a question of its own: a path
may hold a newline, and two paths in one answer could not be told apart."""
SNAPSHOT = [
    "head_commit",
    "rules_list",
    "rules_blobs",
    "index",
    "head_commit",
    "tracked",
    "untracked",
]
"""Before round 1: the host's rules from what is committed at HEAD (issue 30 §1: whether
anything is committed, the rule files, their blobs), the index, and the status (HEAD, the
tracked files unlike the index, the untracked files)."""
START = ["changes_base", "changes_tree"]
"""The change store's starting tree: HEAD's tree as the snapshot read HEAD (no `head_commit` of
its own since issue 32 §3), the rw files hashed in (none here: nothing untracked or changed)."""
AUDIT = ["head_commit", "tracked", "untracked", "content"]
"""After a round: the status again, and the content of the tracked files whose stat changed
(hashed in the store, so that a file only touched is not taken as changed). The index is not
read again while its file is as it was."""
CHANGE = ["changes_hash", "changes_index", "changes_tree", "changes_patch"]
"""The round's change: its rw files hashed into the store, the store's index and tree, and the
patch from the tree before."""


@pytest.fixture
def harness(project: Any) -> HostHarness:
    return HostHarness(
        root=project.root,
        worktree=project.worktree,
        primary=project.primary,
        tmp=project.tmp,
        home=project.home,
        git_env=project.git_env,
    )


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The table names of every Git command the host starts, in order."""
    started: list[str] = []
    start = GitRunner._start

    def counted(self: GitRunner, name: str, *args: Any, **kwargs: Any) -> Any:
        started.append(name)
        return start(self, name, *args, **kwargs)

    monkeypatch.setattr(GitRunner, "_start", counted)
    return started


def test_a_one_round_run_makes_these_git_calls_and_no_more(
    harness: HostHarness, calls: list[str]
) -> None:
    run = harness.run([Step.write(MAIN, "print('hello')\n"), Step.result(ok_result())])
    assert run.record.status == "ok", run.record.error
    assert calls == PLACEMENT + SNAPSHOT + START + AUDIT + CHANGE
    assert len(calls) == 21  # 22 before issue 32 §3; a round's own share: 8
