"""Consumers take the `FileSystem` capabilities they use (issue 34 §6): the port is the union of
small capabilities, each a runtime-checkable Protocol, that split its methods between them; no
module but the named places annotates the whole port (a consumer names a capability or an
intersection of them, and `mypy --strict` proves it calls nothing else); the real adapters are
made of one class per capability."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Protocol

import pytest
from unit.house.capability_use import judge

from concorde_workers.adapters.machine.filesystem import LocalFileSystem
from concorde_workers.adapters.sandboxes.space import SpacedFileSystem
from concorde_workers.ports.machine import filesystem as port

ROOT = Path(__file__).resolve().parents[3]
LAYERS = ("domain", "ports", "adapters", "application", "contracts")

CAPABILITIES = (
    port.FileReading,
    port.PathFacts,
    port.DirectoryListing,
    port.FileWriting,
    port.Removing,
    port.Locking,
)

WHOLE_PORT_TAKERS = {
    # The composition root: it holds the one file system and hands it to every consumer.
    "container.py",
    # Wraps a whole file system, each capability reaching its paths through the spaces.
    "adapters/sandboxes/space.py",
}


def _own_methods(protocol: type) -> set[str]:
    return {
        name
        for name, value in vars(protocol).items()
        if inspect.isfunction(value) and not name.startswith("_")
    }


def test_the_port_is_the_union_of_its_capabilities() -> None:
    assert set(port.FileSystem.__bases__) == {*CAPABILITIES, Protocol}
    assert _own_methods(port.FileSystem) == set()


def test_the_capabilities_split_the_port_s_methods_between_them() -> None:
    owners: dict[str, list[str]] = {}
    for capability in CAPABILITIES:
        for name in _own_methods(capability):
            owners.setdefault(name, []).append(capability.__name__)
    assert {name: held for name, held in owners.items() if len(held) > 1} == {}
    assert set(owners) == {
        name for name in dir(port.FileSystem) if callable(getattr(port.FileSystem, name))
    } - set(dir(Protocol))


@pytest.mark.parametrize("capability", CAPABILITIES, ids=lambda c: c.__name__)
def test_each_capability_is_runtime_checkable_and_held_by_the_real_adapters(
    capability: type,
) -> None:
    real = LocalFileSystem()
    assert isinstance(real, capability)
    assert isinstance(SpacedFileSystem(real), capability)


def _annotations(tree: ast.AST) -> list[ast.expr]:
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.arg | ast.AnnAssign) and node.annotation is not None:
            found.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns:
            found.append(node.returns)
    return found


def _names_the_whole_port(annotation: ast.expr) -> bool:
    return any(
        (isinstance(n, ast.Name) and n.id == "FileSystem")
        or (isinstance(n, ast.Attribute) and n.attr == "FileSystem")
        or (isinstance(n, ast.Constant) and n.value == "FileSystem")
        for n in ast.walk(annotation)
    )


def test_no_module_but_the_named_places_takes_the_whole_port() -> None:
    sources = [p for layer in LAYERS for p in (ROOT / layer).rglob("*.py")]
    sources += list(ROOT.glob("*.py"))
    takers = {
        p.relative_to(ROOT).as_posix()
        for p in sources
        if any(_names_the_whole_port(a) for a in _annotations(ast.parse(p.read_text("utf-8"))))
    }
    assert len(sources) > 100
    assert takers - WHOLE_PORT_TAKERS == set(), (
        "annotate the capabilities the consumer uses (ports/machine/filesystem.py), not FileSystem"
    )
    assert takers >= WHOLE_PORT_TAKERS, "a named place that no longer takes the port: drop it"


def _production_sources() -> dict[str, str]:
    sources = [p for layer in LAYERS for p in (ROOT / layer).rglob("*.py")]
    sources += list(ROOT.glob("*.py"))
    return {p.relative_to(ROOT).as_posix(): p.read_text("utf-8") for p in sources}


def test_each_capability_a_consumer_takes_it_calls() -> None:
    """The other half of "consumers take the capabilities they use" (mypy proves a consumer calls
    nothing its annotation does not give): no consumer takes a capability it never calls, on
    itself or through what it hands the file system to (tests/unit/house/capability_use.py)."""
    judgement = judge(_production_sources())
    assert judgement.judged >= 100, judgement  # the reading finds the consumers it judges
    assert [
        f"{f.where} ({f.parameter}) never calls {', '.join(f.unused)}" for f in judgement.findings
    ] == [], "annotate only the capabilities the consumer calls (ports/machine/filesystem.py)"


PLANTED_PORT = """
from typing import Protocol
class FileReading(Protocol):
    def read_text(self, path: str) -> str: ...
class PathFacts(Protocol):
    def is_file(self, path: str) -> bool: ...
class DirectoryListing(Protocol):
    def listdir(self, path: str) -> list[str]: ...
class BoundedReading(FileReading, PathFacts, Protocol): ...
class TreeReading(FileReading, PathFacts, DirectoryListing, Protocol): ...
class Probe(Protocol):
    def is_file(self, path: str) -> bool: ...
"""


@pytest.mark.parametrize(
    ("consumer", "unused"),
    [
        # reads and asks a path fact, yet takes the listing too
        (
            "def f(fs: TreeReading) -> str:\n    return fs.read_text('a') if fs.is_file('a') else ''",
            ("f", ("DirectoryListing",)),
        ),
        # hands the file system on to a taker that needs only a path fact
        (
            "def g(fs: BoundedReading) -> bool:\n    return h(fs)\n"
            "def h(probe: Probe) -> bool:\n    return probe.is_file('a')",
            ("g", ("FileReading",)),
        ),
        # a class keeps it and calls one capability of two
        (
            "class C:\n    def __init__(self, fs: BoundedReading) -> None:\n        self._fs = fs\n"
            "    def read(self) -> str:\n        return self._fs.read_text('a')",
            ("C", ("PathFacts",)),
        ),
        # exactly what it calls: nothing found
        (
            "def k(fs: BoundedReading) -> str:\n    return fs.read_text('a') if fs.is_file('a') else ''",
            None,
        ),
    ],
    ids=["wider-than-called", "wider-than-handed-on", "class-keeps-it", "exact"],
)
def test_the_reading_finds_a_capability_taken_and_never_called(
    consumer: str, unused: tuple[str, tuple[str, ...]] | None
) -> None:
    judgement = judge({"port.py": PLANTED_PORT, "consumer.py": consumer})
    found = [(f.where.split(":")[1], f.unused) for f in judgement.findings]
    assert found == ([] if unused is None else [unused])
    assert judgement.skipped == 0
