"""The specification as the test plan: requirement titles and the tests that name them.

Seeds 000 and 001 end with a Requirements section: a title line, then a paragraph holding SHALL.
The seeds are kept verbatim in docs/spec/ with their sha256 digests in docs/spec/SHA256SUMS (a
test checks them against the digests, and against ../shared/seeds too when that folder is beside
the clone). Tests name a requirement with `@pytest.mark.req("<title>")`.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "docs" / "spec"
RUN_MECHANICS = SPEC / "000_623c9f779cc577c4.txt"
PI_MECHANICS = SPEC / "001_3321be96d8ff962a.txt"
DIGESTS = SPEC / "SHA256SUMS"


def recorded_digests() -> dict[str, str]:
    """File name -> sha256 hex digest, as docs/spec/SHA256SUMS records them (`sha256sum`'s own
    format, so `sha256sum -c SHA256SUMS` in docs/spec/ checks them too)."""
    recorded: dict[str, str] = {}
    for line in DIGESTS.read_text(encoding="utf-8").splitlines():
        digest, _, name = line.partition("  ")
        recorded[name] = digest
    return recorded


def requirement_titles(spec_file: Path) -> list[str]:
    """Every requirement title of a seed: the line before each paragraph that says SHALL."""
    lines = spec_file.read_text(encoding="utf-8").splitlines()
    start = lines.index("Requirements")
    titles: list[str] = []
    for i in range(start + 1, len(lines)):
        if "SHALL" in lines[i]:
            j = i - 1
            while j > start and not lines[j].strip():
                j -= 1
            titles.append(lines[j].strip())
    return titles


def named_requirements(tests_root: Path = ROOT / "tests") -> dict[str, list[str]]:
    """Requirement title -> the tests (file::function) whose `pytest.mark.req` names it."""
    return {title: list(tests) for title, tests in _named(tests_root).items()}


@functools.cache
def _named(tests_root: Path) -> dict[str, tuple[str, ...]]:
    """Parsed once per run: three conformance tests ask, and every test file is parsed."""
    named: dict[str, list[str]] = {}
    for path in sorted(tests_root.rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in _definitions(tree.body):
            for deco in node.decorator_list:
                title = _req_title(deco)
                if title is not None:
                    named.setdefault(title, []).append(f"{path.relative_to(ROOT)}::{node.name}")
    return {title: tuple(tests) for title, tests in named.items()}


def _definitions(body: list[ast.stmt]) -> list[ast.FunctionDef | ast.ClassDef]:
    """The functions and classes pytest collects from: a module's and, within its classes,
    theirs (a function defined inside a function is no test)."""
    found: list[ast.FunctionDef | ast.ClassDef] = []
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            found.append(node)
        if isinstance(node, ast.ClassDef):
            found += _definitions(node.body)
    return found


def _req_title(deco: ast.expr) -> str | None:
    if not (isinstance(deco, ast.Call) and isinstance(deco.func, ast.Attribute)):
        return None
    if deco.func.attr != "req" or not deco.args:
        return None
    arg = deco.args[0]
    return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None
