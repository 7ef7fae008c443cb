"""The command line starts at the interpreter's speed: importing its entry point and running
`--help` or a bad command line load no model, schema, adapter or composition root (issue 12
item 4; benchmarks/cli_startup.py measures the time, this guards the structure, untimed).

Each check runs in a fresh interpreter (a subprocess), since this test process has long imported
everything; it fails if an eager import of pydantic, jsonschema, GitPython or
dependency-injector comes back into adapters/cli/main.py or the grammar.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration

HEAVY = (
    "pydantic",
    "pydantic_core",
    "jsonschema",
    "git",
    "dependency_injector",
    "asyncio",
    "securesystemslib",  # issue 30 §4: only where a statement is signed or verified
    "cryptography",
    "concorde_workers.container",
    "concorde_workers.application",
    "concorde_workers.domain.evidence.records",
    "concorde_workers.adapters.cli.subcommands.commands",
    "concorde_workers.adapters.cli.subcommands.demo",
    "concorde_workers.adapters.cli.views.display",
    "concorde_workers.adapters.cli.views.progress",
)

PROBE = """
import io, json, sys
from concorde_workers.adapters.cli.main import main
argv = sys.argv[1:]
if argv:
    out = io.StringIO()
    try:
        status = main(argv, out=out, err=out)
    except SystemExit as ended:  # argparse's --help ends the process
        status = ended.code
    assert status is not None, status
print(json.dumps(sorted(sys.modules)))
"""


def loaded(*argv: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    names = json.loads(done.stdout.splitlines()[-1])
    assert isinstance(names, list)
    return set(names)


def heavy_in(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize(
    "argv",
    [(), ("--help",), ("plan", "--help"), ("run", "--help")],
    ids=["import", "help", "plan-help", "run-help"],
)
def test_the_entry_point_and_help_import_nothing_heavy(argv: tuple[str, ...]) -> None:
    assert heavy_in(loaded(*argv)) == []


def test_a_command_imports_its_own_module_when_it_runs() -> None:
    """The laziness is not a lost command: `show` of a missing directory loads its module and
    refuses, and only then pydantic is there."""
    modules = loaded("show", "/nonexistent/run-directory")
    assert "concorde_workers.adapters.cli.subcommands.commands" in modules
    assert "concorde_workers.adapters.cli.subcommands.demo" not in modules


RUN_ONLY = (
    "concorde_workers.adapters.cli.subcommands.commands",
    "concorde_workers.adapters.cli.views.display",
    "concorde_workers.adapters.cli.views.progress",
    "concorde_workers.adapters.cli.views.report",
    "concorde_workers.adapters.cli.views.watch",
    "concorde_workers.application.run.host",
    "concorde_workers.application.setup.doctor",
    "concorde_workers.application.sweep.sweep",
    "concorde_workers.application.evidence.verify",
    "concorde_workers.application.setup.starter",
    "concorde_workers.application.setup.agent_install",
    "concorde_workers.application.evidence.attestation",
    "concorde_workers.application.evidence.report",
    "concorde_workers.application.tracing.reader",
    "concorde_workers.domain.evidence.records",
    "concorde_workers.adapters.claude.stream",
    "concorde_workers.adapters.pi.stream",
)
"""What `run`, `show`, `sweep`, `doctor`, `verify`, `init` and `install-agents` load and a plan
does not use (issue 32 §2): their use cases are made by the container when first asked for."""


def test_plan_loads_none_of_the_run_s_display_report_or_record_readers() -> None:
    """`plan` of a request that is refused early (no such worktree) imports its own module and
    none of run's, show's and sweep's: the imports of every plan are only the planning path's
    (issue 32 §2; benchmarks/plan_walk.py measures the time, this guards the structure)."""
    modules = loaded("plan", "--worktree", "/nonexistent/worktree", "--task-type", "implement")
    assert "concorde_workers.adapters.cli.subcommands.plan" in modules
    assert "concorde_workers.application.preparation.planner" in modules
    assert sorted(m for m in RUN_ONLY if m in modules) == []


def test_a_command_builds_its_models_without_looking_up_pydantic_plugins() -> None:
    """pydantic's plugin lookup (every installed package's metadata, importlib.metadata and
    email imported for it) is not run by a command (issue 32 §2, docs/decisions.md "No pydantic
    plugins in the command line"): the refusal `plan` prints is a model all the same."""
    code = (
        "import io, json, sys\n"
        "from concorde_workers.adapters.cli.main import main\n"
        "out = io.StringIO()\n"
        "status = main(['plan', '--json', '--worktree', '/nonexistent/worktree'], out, out)\n"
        "print(json.dumps([status, json.loads(out.getvalue())['verdict'], sorted(sys.modules)]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    status, verdict, names = json.loads(done.stdout)
    assert (status, verdict) == (2, "refused")
    assert "pydantic" in names
    assert "importlib.metadata" not in names


def test_a_command_that_signs_nothing_imports_no_cryptography() -> None:
    """`show` of no run and `sweep --help` load the container but never securesystemslib or
    cryptography: the sealer imports them only when it seals or opens (issue 30 §4)."""
    code = (
        "import sys, io\n"
        "from concorde_workers.adapters.cli.main import main\n"
        "main(['show', '/nonexistent-run-dir'], io.StringIO(), io.StringIO())\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'securesystemslib', 'cryptography'}))\n"
    )
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr
