"""The fenced code blocks of README.md, read from the file itself (issue 31 §1: the README's
examples are run by the suite, so the documentation cannot drift from the program).

A block's info string says what it is:

    ```json ~/path/of/the/file     a file a user writes, at that path (`~` is the home)
    ```sh                          a command a user runs (bash, from the home; the Quickstart's
                                   from the clone it names)
    ```python                      a program a user runs with the package's interpreter
    ```text                        shown, never copied: a synopsis, a picture

tests/unit/cli/test_readme_blocks.py holds every block to one of these, and each file to the
reader a run takes; tests/e2e/test_readme_e2e.py runs them all, in order, on a fresh project.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["KINDS", "README", "Block", "readme_blocks"]

README = Path(__file__).resolve().parents[1] / "README.md"
KINDS = ("json", "sh", "python", "text")
_FENCE = re.compile(r"^( *)```(\S*)[ \t]*(.*?)\s*$")
_HEADING = re.compile(r"^(#{2,4}) (.+)$")


@dataclass(frozen=True)
class Block:
    """One fenced block: where it starts (1-based line), its kind, the file it names (a `json`
    block), its text without the fence's indent, and the `##` section it lies in."""

    line: int
    kind: str
    target: str | None
    body: str
    section: str


def readme_blocks(text: str | None = None) -> list[Block]:
    """Every fenced block of README.md (or of `text`), in the document's order."""
    lines = (README.read_text(encoding="utf-8") if text is None else text).splitlines()
    blocks: list[Block] = []
    section = ""
    index = 0
    while index < len(lines):
        heading = _HEADING.match(lines[index])
        if heading and len(heading.group(1)) == 2:
            section = heading.group(2)
        opened = _FENCE.match(lines[index])
        if opened is None:
            index += 1
            continue
        indent, kind, rest = len(opened.group(1)), opened.group(2), opened.group(3)
        end = index + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        body = "\n".join(line[indent:] for line in lines[index + 1 : end]) + "\n"
        blocks.append(Block(index + 1, kind, rest or None, body, section))
        index = end + 1
    return blocks
