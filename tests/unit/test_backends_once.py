"""`Backend` is defined once (issue 22 §1) and nothing takes a backend it does not know for
another: the tool set of an unknown backend is an error, and a refusal's "other program" is
always one of the backends there are."""

from __future__ import annotations

from typing import get_args

import pytest

from concorde_workers.domain.configuration import request
from concorde_workers.domain.configuration.machine import _other
from concorde_workers.domain.evidence import record_fields


def test_backend_is_defined_once() -> None:
    assert request.Backend is record_fields.Backend
    assert request.BACKENDS == record_fields.BACKENDS == get_args(record_fields.Backend)


@pytest.mark.parametrize(("backend", "other"), [("claude", "pi"), ("pi", "claude")])
def test_the_other_program_a_refusal_names_is_a_backend(backend: str, other: str) -> None:
    assert _other(backend) == other  # type: ignore[arg-type]


def test_a_policy_holds_no_tool_set_for_a_backend_it_does_not_know() -> None:
    from concorde_workers.domain.boundary.policy import Policy
    with pytest.raises(ValueError, match="no tool set for the backend 'codex'"):
        Policy.tools_for(_policy_stub(), "codex")  # type: ignore[arg-type]


class _Tools:
    claude = ("Read",)
    pi = ("read",)


class _PolicyStub:
    tools = _Tools()


def _policy_stub() -> object:
    return _PolicyStub()
