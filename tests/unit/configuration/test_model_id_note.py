"""Issue 31 §3, a pi model id with no provider: said, never refused (pi resolves such an id
itself when one provider lists it, and fails the round with "Model ... not found" when none
does: tried with pi 0.73.1), on the backend whose ids name their provider alone."""

from __future__ import annotations

import pytest

from concorde_workers.container import PROFILES
from concorde_workers.domain.configuration.profile import model_id_note

MAP = "/home/ana/.config/concorde/models.json"


def test_a_pi_id_without_its_provider_is_said_with_the_repair() -> None:
    assert model_id_note(PROFILES["pi"], "qwen-coder", MAP) == (
        f"the pi model id 'qwen-coder' (from the model map {MAP}) names no provider: pi takes "
        "the first provider that lists that id, built in or in its own models.json, and ends "
        "the round failed when none does; write it as provider/id, such as local/qwen-coder"
    )


@pytest.mark.parametrize(
    ("backend", "model"),
    [("pi", "local/qwen-coder"), ("pi", None), ("claude", "claude-sonnet-4-5")],
)
def test_an_id_with_its_provider_or_on_claude_code_is_not_said(
    backend: str, model: str | None
) -> None:
    assert model_id_note(PROFILES[backend], model, MAP) is None
