"""The dependency rule of design.md is a checked contract, not a review habit.

import-linter's contracts (pyproject.toml) read like the picture of docs/architecture.md: the
entry points (adapters/cli) above the composition root (container.py) above the use cases, and
above the driven adapters, each above the ports above the domain; only the composition root
names a driven adapter, only the entry points and the composition root import a use case; the
domain imports nothing that does I/O. They run, and broken copies of the package prove they
bite, in tests/integration/test_import_contracts.py (lint-imports is a process of its own).

Here: the two columns of the picture, no import cycle anywhere in the package (every strongly connected component of the
module graph is one module), no adapter left out of the picture, and the host environment read
only where the program starts (the entry point and the composition root).
"""

from __future__ import annotations

import ast
import os
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = "concorde_workers"
ENVIRONMENT_READERS = {"container.py", "adapters/cli/main.py"}
"""The modules that may read os.environ: the entry point and the composition root."""


# --- no import cycle ---------------------------------------------------------------------------


def package_graph() -> grimp.ImportGraph:
    """The package's module graph, imports under TYPE_CHECKING included."""
    return grimp.build_graph(PACKAGE, cache_dir=None)


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of the package's modules with more than one module
    (Tarjan, iterative): each is an import cycle."""
    modules = sorted(graph.modules)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    work: list[tuple[str, Iterator[str]]] = []  # the depth-first path, each with what is left

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        work.append(
            (
                module,
                iter(
                    sorted(
                        m
                        for m in graph.find_modules_directly_imported_by(module)
                        if m.split(".")[0] == PACKAGE
                    )
                ),
            )
        )

    for start in modules:
        if start in index:
            continue
        visit(start)
        while work:
            module, pending = work[-1]
            for nxt in pending:
                if nxt not in index:
                    visit(nxt)
                    break
                if nxt in on_stack:
                    low[module] = min(low[module], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[module])
                if low[module] == index[module]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == module:
                            break
                    if len(component) > 1:
                        cycles.append(sorted(component))
    return cycles


def test_no_import_cycle_anywhere_in_the_package() -> None:
    assert import_cycles(package_graph()) == []


def test_a_planted_cycle_is_found() -> None:
    graph = package_graph()
    graph.add_import(
        importer="concorde_workers.domain.ground.text",
        imported="concorde_workers.adapters.cli.main",
    )
    cycles = import_cycles(graph)
    assert len(cycles) == 1
    assert {"concorde_workers.domain.ground.text", "concorde_workers.adapters.cli.main"} <= set(
        cycles[0]
    )


# --- every module in the picture ---------------------------------------------------------------


def layers_contracts() -> list[list[set[str]]]:
    """The layers contracts of pyproject.toml, each a list of layers, each a set of modules."""
    config: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return [
        [
            {name.strip() for name in layer.replace(":", "|").split("|")}
            for layer in contract["layers"]
        ]
        for contract in config["tool"]["importlinter"]["contracts"]
        if contract["type"] == "layers"
    ]


def test_the_two_columns_of_the_picture() -> None:
    top = [{"concorde_workers.adapters.cli"}, {"concorde_workers.container"}]
    bottom = [{"concorde_workers.ports"}, {"concorde_workers.domain"}]
    use_cases, driven = layers_contracts()[:2]
    assert use_cases == [*top, {"concorde_workers.application"}, *bottom]
    assert driven[:2] == top and driven[3:] == bottom


def test_every_room_of_the_domain_is_on_a_floor() -> None:
    """Issue 34 §1: the domain's rooms on floors (the third layers contract), the ground at the
    bottom; a room left off the floors would be checked by no contract."""
    floors = layers_contracts()[2]
    rooms = package_graph().find_children("concorde_workers.domain")
    assert set().union(*floors) == rooms
    assert floors[-1] == {"concorde_workers.domain.ground"}


def test_no_two_rooms_of_the_domain_import_each_other() -> None:
    """No package-level circle in the domain: the graph of its rooms has no cycle."""
    graph = package_graph()
    rooms = sorted(graph.find_children("concorde_workers.domain"))
    above: dict[str, set[str]] = {room: set() for room in rooms}
    for room in rooms:
        for other in rooms:
            if other != room and graph.chain_exists(
                importer=room, imported=other, as_packages=True
            ):
                above[room].add(other)
    circles = sorted((a, b) for a in rooms for b in above[a] if a < b and a in above[b])
    assert circles == []


def test_every_room_of_the_application_is_on_a_floor() -> None:
    """Issue 34 §2: the application's rooms on floors (the fourth layers contract), the trace on
    disk at the bottom; a room left off the floors would be checked by no contract."""
    floors = layers_contracts()[3]
    rooms = package_graph().find_children("concorde_workers.application")
    assert set().union(*floors) == rooms
    assert floors[-1] == {"concorde_workers.application.tracing"}


def test_every_room_of_the_application_says_what_it_decides_in_at_most_12_modules() -> None:
    """Issue 34 §2: no module lies loose beside the application's rooms, each room's
    __init__.py has a docstring, and no room holds more than 12 modules."""
    application = ROOT / "application"
    assert sorted(p.name for p in application.glob("*.py")) == ["__init__.py"]
    for room in sorted(p for p in application.iterdir() if (p / "__init__.py").is_file()):
        init = ast.parse((room / "__init__.py").read_text(encoding="utf-8"))
        assert ast.get_docstring(init), room.name
        assert len([p for p in room.glob("*.py") if p.name != "__init__.py"]) <= 12, room.name


def test_every_room_of_the_driven_adapters_is_on_a_floor() -> None:
    """Issue 34: the driven adapters' rooms on floors (the fifth layers contract), the backends
    on the top floor, each independent of the others (`|`): no backend imports another."""
    floors = layers_contracts()[4]
    rooms = package_graph().find_children("concorde_workers.adapters")
    assert set().union(*floors) == rooms - {"concorde_workers.adapters.cli"}
    backends = {f"concorde_workers.adapters.{name}" for name in ("claude", "codex", "pi")}
    assert backends <= floors[0]
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contract = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"][4]
    assert "|" in contract["layers"][0] and ":" not in contract["layers"][0]


def test_every_room_of_the_ports_is_on_a_floor() -> None:
    """Issue 34: the ports' rooms on floors (the sixth layers contract), machine/ at the bottom."""
    floors = layers_contracts()[5]
    assert set().union(*floors) == package_graph().find_children("concorde_workers.ports")
    assert floors[-1] == {"concorde_workers.ports.machine"}


def test_every_room_and_module_of_the_command_line_is_on_a_floor() -> None:
    """Issue 34: the command line's rooms and modules on floors (the seventh layers contract),
    the console script on top."""
    floors = layers_contracts()[6]
    assert set().union(*floors) == package_graph().find_children("concorde_workers.adapters.cli")
    assert floors[0] == {"concorde_workers.adapters.cli.main"}


def test_every_adapter_is_an_entry_point_or_a_driven_adapter_of_the_picture() -> None:
    """A new module under adapters/ must be placed in the picture, or no contract checks it."""
    driven = layers_contracts()[1][2]
    adapters = package_graph().find_children("concorde_workers.adapters")
    assert adapters == {"concorde_workers.adapters.cli"} | driven


def test_every_top_level_module_is_in_the_picture_or_is_the_contracts() -> None:
    placed = {module for contract in layers_contracts() for layer in contract for module in layer}
    top = package_graph().find_children(PACKAGE)
    unplaced = {
        m for m in top if m not in placed and not any(p.startswith(m + ".") for p in placed)
    }
    assert unplaced == {"concorde_workers.contracts"}


# --- the host environment ------------------------------------------------------------------------


def environment_reads(source: str) -> list[int]:
    """The lines of `source` that read or change the process environment through os."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
            and node.attr in {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}
        ):
            found.append(node.lineno)
        if (
            isinstance(node, ast.ImportFrom)
            and node.module == "os"
            and any(
                alias.name in {"environ", "environb", "getenv", "getenvb"} for alias in node.names
            )
        ):
            found.append(node.lineno)
    return found


def package_sources() -> list[Path]:
    layers = ("domain", "ports", "adapters", "application", "contracts")
    return sorted(
        [*ROOT.glob("*.py"), *(p for layer in layers for p in (ROOT / layer).rglob("*.py"))]
    )


def test_only_the_entry_point_and_the_composition_root_read_the_environment() -> None:
    readers = {
        path.relative_to(ROOT).as_posix(): lines
        for path in package_sources()
        if (lines := environment_reads(path.read_text(encoding="utf-8")))
    }
    assert set(readers) <= ENVIRONMENT_READERS, readers
    assert set(readers) == ENVIRONMENT_READERS  # both read it, so the check sees real reads


def test_the_environment_check_sees_every_form_of_read() -> None:
    source = (
        "import os\nfrom os import environ\na = os.environ['X']\nb = os.getenv('Y')\n"
        "os.putenv('Z', '1')\n"
    )
    assert environment_reads(source) == [2, 3, 4, 5]


def test_a_unit_test_that_starts_a_process_fails() -> None:
    """tests/unit/conftest.py: Git, node, an agent or lint-imports belong in tests/integration."""
    with pytest.raises(AssertionError, match="a unit test starts no process"):
        subprocess.run(["true"], check=False)
    with pytest.raises(AssertionError, match="a unit test starts no process"):
        os.posix_spawn("/bin/true", ["true"], {})
