"""Unit tests run the domain and the use cases against the fakes of tests/fakes: none starts a
process (no Git, no node, no agent, no lint-imports). A test that needs a real one belongs in
tests/integration, where it is marked and run on its own; this guard names the test that forgets.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(autouse=True)
def _no_process(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(
            "a unit test starts no process: use the fakes of tests/fakes, or "
            "move the test to tests/integration"
        )

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, refuse)
    yield
