"""The spec is the test plan: requirement markers name real requirements, and the vendored spec
is the shared one."""

from __future__ import annotations

import pytest
import spec


def test_the_seeds_have_their_requirement_counts() -> None:
    assert len(spec.requirement_titles(spec.RUN_MECHANICS)) == 62
    assert len(spec.requirement_titles(spec.PI_MECHANICS)) == 14


def test_every_requirement_a_test_names_exists_in_the_spec() -> None:
    known = set(spec.requirement_titles(spec.RUN_MECHANICS)) | set(
        spec.requirement_titles(spec.PI_MECHANICS))
    unknown = {t: where for t, where in spec.named_requirements().items() if t not in known}
    assert not unknown, f"req markers naming no requirement of seeds 000/001: {unknown}"


SHARED = spec.ROOT.parent / "shared" / "seeds"


@pytest.mark.parametrize("name", sorted(p.name for p in spec.SPEC.glob("*.txt")))
def test_the_vendored_spec_is_the_shared_one(name: str) -> None:
    shared = SHARED / name
    if not SHARED.is_dir():
        pytest.fail(f"{SHARED} is missing: the spec folder shared/ must lie beside the clone")
    assert shared.read_bytes() == (spec.SPEC / name).read_bytes(), (
        f"docs/spec/{name} differs from {shared}: copy the shared seed over it")
