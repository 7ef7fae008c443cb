"""`Backend` is defined once (issue 22 §1) and nothing takes a backend it does not know for
another: a refusal's "other program" is always one of the backends there are, and a tool set is
always its own backend's profile's; and no module outside a backend's package comes to name
one."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import pytest

from concorde_workers.container import PROFILES
from concorde_workers.domain.configuration import request
from concorde_workers.domain.configuration.machine import _other
from concorde_workers.domain.ground import record_fields
from concorde_workers.domain.ground.codes import codes_for_backend
from concorde_workers.domain.ground.record_fields import BACKENDS


def test_backend_is_defined_once() -> None:
    assert request.Backend is record_fields.Backend
    assert request.BACKENDS == record_fields.BACKENDS == get_args(record_fields.Backend)


@pytest.mark.parametrize(("backend", "other"), [("claude", "pi"), ("pi", "claude")])
def test_the_other_program_a_refusal_names_is_a_backend(backend: str, other: str) -> None:
    assert _other(backend, list(PROFILES)) == other


# --- where the backends are named ------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[3]
BACKEND_NAMES = ("claude", "pi")
BACKEND_PACKAGES = (("adapters", "claude"), ("adapters", "pi"))

MAY_NAME = frozenset(
    {
        "domain/ground/backends.py",  # `Backend`: the contracts' list of backends
        "domain/ground/codes.py",  # seed 000 and 001 "Errors": which backend each code is of
    }
)
"""Where a backend's name belongs outside its package: the contracts and the spec's tables."""


def _naming_a_backend() -> set[str]:
    """The modules with a string literal that is exactly a backend's name (docstrings and
    sentences that mention a program do not count: they are not the program's data)."""
    found = set()
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT).parts
        if (
            parts[0] in ("tests", "benchmarks", "scripts", ".venv", "node_modules")
            or parts[:2] in BACKEND_PACKAGES
        ):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(
            isinstance(node, ast.Constant) and node.value in BACKEND_NAMES
            for node in ast.walk(tree)
        ):
            found.add("/".join(parts))
    return found


def test_no_module_outside_a_backend_package_names_a_backend() -> None:
    """What is one program's lives in its adapter package; the host knows a backend only by
    its profile, registered in the composition root (issue 22 §1)."""
    assert _naming_a_backend() - MAY_NAME == set()


def test_the_test_of_naming_finds_a_backend_where_one_is_named() -> None:
    """Its control: the same reading finds the names in the modules allowed to hold them."""
    assert _naming_a_backend() >= MAY_NAME


# --- the profiles --------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_every_code_a_profile_gives_is_one_of_its_backend_s(name: str) -> None:
    """The spec's Errors tables say which backend has which code: a profile never ends a run
    with a code its program does not have (pi has no run_directory_denied)."""
    profile = PROFILES[name]
    assert profile.name == name
    allowed = codes_for_backend(name)
    for code in (profile.failure_code, profile.runtime_missing_code, profile.run_directory_code):
        assert code in allowed, code


def test_each_backend_holds_the_profile_its_name_registers() -> None:
    from concorde_workers.adapters.claude.backend import ClaudeBackend
    from concorde_workers.adapters.machine.filesystem import LocalFileSystem
    from concorde_workers.adapters.pi.backend import PiBackend

    fs = LocalFileSystem()
    for backend in (ClaudeBackend(fs), PiBackend(fs, {})):
        assert backend.profile is PROFILES[backend.name]
    assert set(PROFILES) == set(BACKENDS)


def test_a_backend_is_registered_once() -> None:
    """Issue 34 §4: each backend package exports one registration, from which the composition
    root builds both the profile list and the backend factories; a backend it makes holds the
    profile its name lists."""
    import os

    from concorde_workers import container
    from concorde_workers.adapters import claude, codex, pi

    assert container.REGISTRATIONS == (claude.REGISTRATION, pi.REGISTRATION, codex.REGISTRATION)
    assert list(PROFILES) == [r.profile.name for r in container.REGISTRATIONS]
    made = container.production(dict(os.environ)).backends()
    assert list(made) == list(PROFILES)
    for name, backend in made.items():
        assert backend.profile is PROFILES[name] and backend.name == name
