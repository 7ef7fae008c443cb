"""The code keeps the shape issue 10 set as its targets: no function over 60 lines, no block
rated worse than C by radon's cyclomatic complexity; no module longer than 500 lines (the
code as `ruff format` writes it; issue 34 §3: each orchestrator one job) and no class with more
than 15 methods (issue 34's closing figures), except the modules and classes named below, each
with why and its ceiling."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from radon.complexity import cc_rank, cc_visit

ROOT = Path(__file__).resolve().parents[3]
LAYERS = ("domain", "ports", "adapters", "application", "contracts")
MAX_FUNCTION_LINES = 60
MAX_MODULE_LINES = 500
WORST_RANK = "C"
EXCEPTIONS = {
    # The spec's Errors and Refusals tables keyed by the Code enum: rows, not logic.
    "domain/ground/codes.py": 560,
    # Every host Git command line, one table: the one place a reviewer reads them all.
    "domain/gitview/git_commands.py": 560,
    # The one interpreter of the rules' rows with the one index of a grant's levels, embedded
    # whole in each generated hook (standard library only, one file by design; pi_policy.ts
    # ports it line by line).
    "domain/boundary/interpreter.py": 590,
    # Not split yet (issue 34 §3 left them; the adapters were being changed beside this work):
    # their size today is their ceiling, so they cannot grow.
    "domain/configuration/config.py": 520,
    "domain/evidence/records.py": 545,
    "application/preparation/planner.py": 535,
    "adapters/sandboxes/checks.py": 640,
    "adapters/cli/views/display.py": 505,
}

MAX_METHODS = 15
CLASS_EXCEPTIONS = {
    # The FileSystem port's methods, each reached through the space the host holds.
    "adapters/sandboxes/space.py:SpacedFileSystem": 26,
    # Not split yet (the adapters were being changed beside issue 34's work): their size today
    # is their ceiling, so they cannot grow.
    "adapters/sandboxes/checks.py:SandboxedCheckRunner": 21,
    "adapters/processes/process.py:SubprocessHandle": 19,
    "adapters/codex/backend.py:CodexBackend": 18,
    "adapters/processes/cgroups.py:CgroupGroups": 17,
    "application/evidence/verify.py:Verifier": 16,
}


def _sources() -> list[Path]:
    files = sorted(p for layer in LAYERS for p in (ROOT / layer).rglob("*.py"))
    return [*files, *sorted(ROOT.glob("*.py"))]


SOURCES = _sources()


def _name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def test_the_sources_are_found() -> None:
    # A wrong root would make every other test here pass on nothing.
    assert len(SOURCES) > 100
    assert ROOT / "domain" / "ground" / "codes.py" in SOURCES


@pytest.mark.parametrize("path", SOURCES, ids=_name)
def test_no_function_is_longer_than_a_screen(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    long = [
        (node.name, node.lineno, node.end_lineno - node.lineno + 1)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert long == [], f"functions over {MAX_FUNCTION_LINES} lines: {long}"


@pytest.mark.parametrize("path", SOURCES, ids=_name)
def test_no_block_is_rated_worse_than_c(path: Path) -> None:
    blocks = cc_visit(path.read_text(encoding="utf-8"))
    worse = [
        (block.fullname, block.complexity, cc_rank(block.complexity))
        for block in blocks
        if cc_rank(block.complexity) > WORST_RANK
    ]
    assert worse == [], f"blocks rated worse than {WORST_RANK}: {worse}"


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


@pytest.mark.parametrize("path", SOURCES, ids=_name)
def test_no_module_is_longer_than_its_limit(path: Path) -> None:
    limit = EXCEPTIONS.get(_name(path), MAX_MODULE_LINES)
    lines = _lines(path)
    assert lines <= limit, f"{_name(path)} has {lines} lines, over {limit}: split it by job"


def test_each_exception_is_a_module_over_the_rule() -> None:
    """An exception that no longer needs its room (split, or gone) is taken off the list."""
    sizes = {_name(p): _lines(p) for p in SOURCES}
    assert {
        name: sizes.get(name, 0) for name in EXCEPTIONS if sizes.get(name, 0) <= MAX_MODULE_LINES
    } == {}


def _methods() -> dict[str, int]:
    """Each class's own methods (its body's functions, properties included), as
    scripts/architecture-figures counts them."""
    counts = {}
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                own = [
                    n for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
                ]
                counts[f"{_name(path)}:{node.name}"] = len(own)
    return counts


def test_no_class_has_more_methods_than_its_limit() -> None:
    over = {
        name: count
        for name, count in _methods().items()
        if count > CLASS_EXCEPTIONS.get(name, MAX_METHODS)
    }
    assert over == {}, f"classes over their number of methods: {over}: give a job its own class"


def test_each_class_exception_is_a_class_over_the_rule() -> None:
    counts = _methods()
    assert {
        name: counts.get(name, 0) for name in CLASS_EXCEPTIONS if counts.get(name, 0) <= MAX_METHODS
    } == {}
