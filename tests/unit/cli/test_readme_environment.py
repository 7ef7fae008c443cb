"""README "Run it on your own repository": its table names every environment variable the
program reads (issue 12 §3), found by reading the production source; and `--help` lists the
eight task types, one line each."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from concorde_workers.adapters.cli.main import main
from concorde_workers.container import PROFILES
from concorde_workers.domain.boundary.task_types import TASK_TYPE_LINES, TASK_TYPES
from concorde_workers.domain.configuration.profile import programs_of
from concorde_workers.domain.isolation.proxy import ALL_PROXY_NAMES

ROOT = Path(__file__).resolve().parents[3]
PRODUCTION = ("domain", "application", "adapters", "ports", "container.py")
READ = re.compile(
    r'(?:environ|env)(?:\.get\(\s*"([A-Z][A-Z0-9_]*)"|\[\s*"([A-Z][A-Z0-9_]*)"\](?!\s*=[^=]))'
)
"""`environ.get("X")` and `environ["X"]` read; `env["X"] = ...` (the worker's environment being
written) is no read."""
LOOKED_UP = ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "TMPDIR", "*_API_KEY")
"""Read through a loop or a suffix (machine.py, discovery.py, tempfile, environment.py)."""


def read_in_source() -> set[str]:
    names: set[str] = set()
    for part in PRODUCTION:
        root = ROOT / part
        for path in [root] if root.is_file() else sorted(root.rglob("*.py")):
            for got, indexed in READ.findall(path.read_text(encoding="utf-8")):
                names.add(got or indexed)
    return names


def readme_table() -> set[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    table = text.split("### Environment variables", 1)[1].split("\n## ", 1)[0]
    return {
        name
        for row in table.splitlines()
        if row.startswith("| `")
        for name in re.findall(r"`([A-Za-z*][A-Za-z0-9_*]*)`", row.split(" | ")[0])
    }


def test_the_readme_names_every_environment_variable_the_program_reads() -> None:
    by_profile = {spec.variable for spec in programs_of(PROFILES).values()}
    by_profile |= {p.credentials.directory_variable for p in PROFILES.values()}
    by_profile |= {k for p in PROFILES.values() for k in p.credentials.key_variables}
    wanted = read_in_source() | by_profile | set(ALL_PROXY_NAMES) | set(LOOKED_UP)
    assert "CONCORDE_MODEL_MAP" in wanted and "PATH" in wanted
    missing = sorted(wanted - readme_table())
    assert missing == [], f"README's environment table lacks {missing}"


def test_help_lists_the_eight_task_types_one_line_each(capsys: pytest.CaptureFixture[str]) -> None:
    assert tuple(TASK_TYPE_LINES) == TASK_TYPES
    with pytest.raises(SystemExit) as done:
        main(["--help"], io.StringIO(), io.StringIO())
    assert done.value.code == 0
    shown = capsys.readouterr().out
    for name, line in TASK_TYPE_LINES.items():
        assert re.search(rf"^  {re.escape(name)} +{re.escape(line)}$", shown, re.M), name
