"""One typed value per fact (issue 34 §5): the usage a round node keeps is the agent's report's
model with the round's duration, declared once."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from concorde_workers.domain.evidence.records import Usage
from concorde_workers.domain.run.agent_report import RoundUsage


def test_the_usage_recorded_is_the_usage_reported_declared_once() -> None:
    """Issue 34 §5 "one usage model": a round node's usage has the report's figures, in their
    order, and the round's duration after them; a figure added to the report is recorded."""
    assert list(Usage.model_fields) == [*RoundUsage.model_fields, "duration_seconds"]
    assert issubclass(Usage, RoundUsage)


def test_every_reported_figure_reaches_the_record() -> None:
    reported = RoundUsage.model_validate(
        {name: index + 1 for index, name in enumerate(RoundUsage.model_fields)}
    )
    usage = Usage.of_report(reported, 2.5)
    assert usage.model_dump(mode="json") == {**reported.model_dump(), "duration_seconds": 2.5}


@pytest.mark.parametrize("figure", [*RoundUsage.model_fields, "duration_seconds"])
def test_a_recorded_usage_names_every_figure(figure: str) -> None:
    given = {name: None for name in Usage.model_fields if name != figure}
    with pytest.raises(ValidationError, match=figure):
        Usage.model_validate(given)


@pytest.mark.parametrize("value", [-1, "3", True])
def test_the_reported_figures_are_as_strict_as_the_record(value: object) -> None:
    with pytest.raises(ValidationError):
        RoundUsage.model_validate({"tokens_in": value})
