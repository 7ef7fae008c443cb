"""Git's placement answers are asked once per run (application/preparation/placement_answers.py,
docs/decisions.md "Placement asked of Git once per run"): the host's check before a run and the
preparation after it share them; outside that window every question goes to Git again, and a
failed question is never remembered."""

from __future__ import annotations

from collections import Counter

import pytest
from fakes.agent import Round
from fakes.host_world import HostWorld, ok_result
from fakes.world import WORKTREE, PlanWorld
from worlds.repository import GRANT

from concorde_workers.application.preparation.placement_answers import PlacementAnswers
from concorde_workers.domain.configuration.request import RunRequest
from concorde_workers.ports.repository.git import GitCommandFailed

PLACEMENT = ("toplevel", "worktrees", "git_dirs")


def placement_calls(calls: list[tuple[str, ...]]) -> Counter[str]:
    return Counter(call[0] for call in calls if call[0] in PLACEMENT)


def test_a_run_asks_git_each_placement_question_once() -> None:
    world = HostWorld()
    record = world.run([Round.ok(ok_result())])
    assert record.status == "ok", record
    assert placement_calls(world.git.calls) == {name: 1 for name in PLACEMENT}


def test_two_runs_of_one_host_ask_again_nothing_is_kept_between_runs() -> None:
    world = HostWorld()
    world.run([Round.ok(ok_result())])
    world.run([Round.ok(ok_result())])
    assert placement_calls(world.git.calls) == {name: 2 for name in PLACEMENT}


def test_plan_asks_again_each_time_it_is_made() -> None:
    world = PlanWorld()
    request = RunRequest(
        worktree=WORKTREE,
        task_type="implement",
        grant=GRANT,
        instructions="Do the task.",
        backend="claude",
    )
    planner = world.container().planner()
    planner.plan(request, {})
    planner.plan(request, {})
    assert placement_calls(world.git.calls) == {name: 2 for name in PLACEMENT}


def test_answers_are_kept_only_in_the_window_and_failures_never() -> None:
    asked: list[str] = []

    def answer(path: str) -> str:
        asked.append(path)
        if path == "/bad":
            raise GitCommandFailed(["git"], "fatal", 128)
        return path.upper()

    kept = PlacementAnswers()
    assert kept.ask("q", "/a", answer) == "/A" and kept.ask("q", "/a", answer) == "/A"
    assert asked == ["/a", "/a"]  # no window open: asked each time
    kept.open(asked)
    assert [kept.ask("q", "/a", answer) for _ in range(3)] == ["/A"] * 3
    assert kept.ask("other", "/a", answer) == "/A"  # another question is asked
    for _ in range(2):
        with pytest.raises(GitCommandFailed):
            kept.ask("q", "/bad", answer)
    assert asked == ["/a", "/a", "/a", "/a", "/bad", "/bad"]
    kept.close()
    kept.ask("q", "/a", answer)
    assert asked[-1] == "/a" and len(asked) == 7


def test_the_window_is_kept_for_the_same_request_object_and_ended_by_a_refusal() -> None:
    asked: list[str] = []

    def answer(path: str) -> str:
        asked.append(path)
        return path

    first, second = object(), object()
    kept = PlacementAnswers()
    assert kept.judging(first, lambda: kept.ask("q", "/a", answer) and None) is None
    kept.open(first)  # the command line's check, then the host's: one window
    kept.ask("q", "/a", answer)
    assert asked == ["/a"]
    kept.open(second)  # another request: a fresh window
    kept.ask("q", "/a", answer)
    assert asked == ["/a", "/a"]
    assert kept.judging(second, lambda: kept.ask("q", "/a", answer)) == "/a"  # a refusal
    kept.open(second)
    kept.ask("q", "/a", answer)
    assert asked == ["/a", "/a", "/a"]  # the refusal ended the window
