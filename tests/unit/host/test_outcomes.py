"""Workers' links the host builds from refusals (application/runtime/outcomes.py): whatever code or
reason a refusal carries, it becomes a link, never an exception (the run must still end with its
final record)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from concorde_workers.application.runtime.outcomes import LinkContext, refusal_link
from concorde_workers.contracts import validator
from concorde_workers.domain.ground.codes import RUN_CODES
from concorde_workers.domain.ground.errors import Reason, Refusal
from concorde_workers.domain.ground.layout import RunLayout

RUN_ID = "w-20260101T000000-abc123"
LINKS = LinkContext(
    run_id=RUN_ID,
    task_type="implement",
    backend="pi",
    layout=RunLayout.below("/trace/op-1", RUN_ID),
)


def link_of(code: str, reason: Reason, message: str = "what was wrong") -> dict[str, object]:
    link = refusal_link(LINKS, Refusal(code=code, reason=reason, message=message))
    data = link.model_dump(mode="json")
    problems = [e.message for e in validator("contract.tracing.error").iter_errors(data)]
    assert not problems, problems
    return data


@pytest.mark.req("A failed run explains itself")
@pytest.mark.parametrize(
    ("code", "reason"),
    [
        ("request_invalid", Reason.INPUT),  # the inputs' code, no run code
        ("config_invalid", Reason.ENVIRONMENT),  # a refusal's code, with a reason not its own
        ("launch_failed", Reason.INPUT),  # a run code with a reason its row does not allow
    ],
)
def test_a_refusal_outside_the_run_code_table_becomes_a_link_not_an_exception(
    code: str, reason: Reason
) -> None:
    data = link_of(code, reason)
    assert data["code"] in RUN_CODES and "what was wrong" in str(data["detail"])
    unhandled = data["unhandled"]
    assert isinstance(unhandled, dict)
    row = RUN_CODES[str(data["code"])]
    assert Reason(unhandled["reason"]) in row.reasons
    if code not in RUN_CODES:  # the launch that could not be made, its own code told
        assert data["code"] == "launch_failed" and f"({code})" in str(data["detail"])


def test_a_refusal_carries_only_a_code_of_workers() -> None:
    """An unknown code can no longer reach the host: `Refusal.code` is a `Code`."""
    with pytest.raises(ValidationError, match="code"):
        Refusal(code="no_such_code", reason=Reason.ENVIRONMENT, message="what was wrong")


def test_a_refusal_with_a_run_code_keeps_its_code_reason_and_message() -> None:
    data = link_of("grant_malformed", Reason.INPUT, "grant entry 2 (x) is malformed")
    assert (data["code"], data["detail"]) == ("grant_malformed", "grant entry 2 (x) is malformed")
