"""Git's placement answers, asked once per run (docs/decisions.md "Placement asked of Git once
per run").

Before its first round a run asks Git the same placement questions of the same worktree several
times: `WorkerHost.refusal_before_run` (the runtime paths beside the grant), the command line's
own check before it (the same, for the same request object) and `Preparer.prepare` each settle
the placement. Each question is a Git process in
bubblewrap's sandbox (6-30 ms). Between the first question and the end of `prepare` no worker
process runs and the host writes nothing into the repository, so the answers cannot differ;
they are kept for that window only and forgotten when `prepare` ends.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

T = TypeVar("T")


class PlacementAnswers:
    """Answers remembered between `open` and `close`; outside that window every question is
    asked again. A question that raised (`GitCommandFailed`) is not remembered."""

    def __init__(self) -> None:
        self._answers: dict[tuple[str, str], Any] | None = None
        self._for: object = None

    def open(self, request: object) -> None:
        """Open the window of `request`: the one still open for this very object is kept, any
        other is forgotten and a fresh one started."""
        if self._answers is None or self._for is not request:
            self._answers, self._for = {}, request

    def judging(self, request: object, judge: Callable[[], T]) -> T:
        """`judge()` in the window of `request`; a refusal (not None) ends the window, since no
        preparation follows it."""
        self.open(request)
        judged = judge()
        if judged is not None:
            self.close()
        return judged

    def close(self) -> None:
        """End the window: nothing is remembered any more."""
        self._answers, self._for = None, None

    def ask(self, question: str, path: str, answer: Callable[[str], T]) -> T:
        """`answer(path)`, or what it returned for the same question and path in the window."""
        if self._answers is None:
            return answer(path)
        key = (question, path)
        if key not in self._answers:
            self._answers[key] = answer(path)
        return cast(T, self._answers[key])
