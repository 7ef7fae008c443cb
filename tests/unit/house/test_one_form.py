"""One fact, one form (issue 34 §5): the records' time format is written in one module of the
package, and every other writer takes it from there (domain/ground/record_fields.py)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
LAYERS = ("domain", "ports", "adapters", "application", "contracts")
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S" + "Z"  # split, so this file does not count as a writer


def test_the_time_format_is_written_once() -> None:
    writers = sorted(
        path.relative_to(ROOT).as_posix()
        for layer in LAYERS
        for path in (ROOT / layer).rglob("*.py")
        if TIME_FORMAT in path.read_text(encoding="utf-8")
    )
    assert writers == ["domain/ground/record_fields.py"]
