"""docs/decisions.md stays a map (issue 22 §5): its sections numbered in order with a table of
contents that lists each (scripts/number-decisions writes both), and every pointer the code and
docs make to it (the page's name, then a quoted title) leads to a section's heading or a
decision's bold label that begins with that title."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "decisions.md"
POINTER = re.compile(r'decisions\.md[ ,]*"([^"\n]+)"')
SKIPPED = {".venv", "node_modules", ".git", "__pycache__"}


def _plain(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("`", "").replace("*", "")).strip()


def targets() -> list[str]:
    text = PAGE.read_text()
    headings = [re.sub(r"^\d+\. ", "", m) for m in re.findall(r"^#{2,4} (.+)$", text, re.M)]
    labels = re.findall(r"^(?:\s*- |\d+\. )?\*\*(.+?)\*\*", text, re.M)
    return [_plain(t) for t in (*headings, *labels)]


def pointers() -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for path in ROOT.rglob("*"):
        if set(path.relative_to(ROOT).parts) & SKIPPED or path.suffix not in (
            ".py",
            ".ts",
            ".md",
            ".mjs",
        ):
            continue
        for title in POINTER.findall(path.read_text(errors="replace")):
            found.append((str(path.relative_to(ROOT)), title))
    return found


def test_every_pointer_to_a_decision_leads_to_one() -> None:
    known = targets()
    found = pointers()
    assert len(found) > 20  # the scan sees the code's pointers
    dead = [
        (where, title)
        for where, title in found
        if not any(t.startswith(_plain(title)) for t in known)
    ]
    assert dead == [], f"pointers that lead nowhere (fix the title or the pointer): {dead}"


def test_the_sections_are_numbered_in_order_and_listed_in_the_contents() -> None:
    text = PAGE.read_text()
    sections = re.findall(r"^## (\d+)\. (.+)$", text, re.M)
    assert [int(n) for n, _ in sections] == list(range(1, len(sections) + 1))
    assert len(re.findall(r"^## ", text, re.M)) == len(sections), "an unnumbered section"
    contents = text.split("<!-- contents -->", 1)[1].split("<!-- /contents -->", 1)[0]
    listed = re.findall(r"^(\d+)\. \[(.+)\]\(#[\w-]+\)$", contents, re.M)
    assert listed == sections, "run scripts/number-decisions"
