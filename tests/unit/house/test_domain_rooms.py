"""The domain in rooms by subject (issue 22 §2): every module lives in a subject package of at
most 12 modules whose docstring says what it decides; none lies loose in domain/ itself."""

from __future__ import annotations

import ast
from pathlib import Path

DOMAIN = Path(__file__).resolve().parents[3] / "domain"
MAX_MODULES = 12


def test_no_module_lies_loose_in_the_domain() -> None:
    assert sorted(p.name for p in DOMAIN.glob("*.py")) == ["__init__.py"]


def test_each_room_says_what_it_decides_and_holds_at_most_twelve_modules() -> None:
    rooms = sorted(d for d in DOMAIN.iterdir() if d.is_dir() and d.name != "__pycache__")
    assert len(rooms) >= 5
    for room in rooms:
        modules = [p for p in room.glob("*.py") if p.name != "__init__.py"]
        assert 1 <= len(modules) <= MAX_MODULES, (room.name, len(modules))
        doc = ast.get_docstring(ast.parse((room / "__init__.py").read_text()))
        assert doc and len(doc) > 60, f"domain/{room.name}/__init__.py says nothing"
        assert not any(p.is_dir() and p.name != "__pycache__" for p in room.iterdir())
