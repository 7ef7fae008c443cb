"""Rooms everywhere (issue 34, "widest folder ≤ 12 modules"): every folder of the domain, the
application, the ports and the adapters holds at most 12 modules, and every room says in its
`__init__.py` docstring what it holds or decides. A folder of Python modules without an
`__init__.py` would be no room at all (setuptools would not install it), so none is allowed."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
LAYERS = ("domain", "application", "ports", "adapters")
MAX_MODULES = 12


def folders() -> list[Path]:
    """Every folder of the four layers that holds a Python module (the layers' own included)."""
    found = {
        path.parent
        for layer in LAYERS
        for path in (ROOT / layer).rglob("*.py")
        if "__pycache__" not in path.parts
    }
    return sorted(found)


def modules_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("*.py") if p.name != "__init__.py")


def test_the_folders_are_found() -> None:
    found = {f.relative_to(ROOT).as_posix() for f in folders()}
    assert {"domain/ground", "application/run", "ports", "adapters/cli", "adapters/claude"} <= found


@pytest.mark.parametrize("folder", folders(), ids=lambda f: f.relative_to(ROOT).as_posix())
def test_each_folder_holds_at_most_twelve_modules(folder: Path) -> None:
    modules = modules_in(folder)
    assert len(modules) <= MAX_MODULES, (folder.relative_to(ROOT).as_posix(), len(modules))


@pytest.mark.parametrize("folder", folders(), ids=lambda f: f.relative_to(ROOT).as_posix())
def test_each_room_says_what_it_holds(folder: Path) -> None:
    init = folder / "__init__.py"
    assert init.is_file(), f"{folder.relative_to(ROOT)} holds modules but no __init__.py"
    doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
    assert doc and len(doc) > 60, f"{init.relative_to(ROOT)} says nothing of what it holds"


@pytest.mark.parametrize("layer", ["ports", "adapters"])
def test_no_module_lies_loose_beside_the_rooms_of_the_ports_and_the_driven_adapters(
    layer: str,
) -> None:
    assert modules_in(ROOT / layer) == []


def test_the_rule_counts_what_a_wide_folder_would_hold(tmp_path: Path) -> None:
    """The count the rule judges: thirteen modules beside an __init__.py are thirteen."""
    for n in range(13):
        (tmp_path / f"m{n}.py").write_text("")
    (tmp_path / "__init__.py").write_text("")
    assert len(modules_in(tmp_path)) == MAX_MODULES + 1
