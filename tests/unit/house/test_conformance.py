"""The spec is the test plan: requirement markers name real requirements, and the vendored spec
is the shared one."""

from __future__ import annotations

import hashlib

import pytest
import spec


def test_the_seeds_have_their_requirement_counts() -> None:
    assert len(spec.requirement_titles(spec.RUN_MECHANICS)) == 62
    assert len(spec.requirement_titles(spec.PI_MECHANICS)) == 14


def test_every_requirement_a_test_names_exists_in_the_spec() -> None:
    known = set(spec.requirement_titles(spec.RUN_MECHANICS)) | set(
        spec.requirement_titles(spec.PI_MECHANICS)
    )
    unknown = {t: where for t, where in spec.named_requirements().items() if t not in known}
    assert not unknown, f"req markers naming no requirement of seeds 000/001: {unknown}"


SHARED = spec.ROOT.parent / "shared" / "seeds"
"""The spec folder beside the clone, where the engineers' checkouts have it; a user's clone has
none, so the recorded digests (docs/spec/SHA256SUMS) keep the vendored copy honest without it."""

VENDORED = sorted(p.name for p in spec.SPEC.iterdir() if p.name != spec.DIGESTS.name)


def test_the_recorded_digests_name_every_vendored_file_and_no_other() -> None:
    assert sorted(spec.recorded_digests()) == VENDORED, (
        f"{spec.DIGESTS} must list every file of docs/spec/ once: run "
        "`sha256sum README.md *.txt > SHA256SUMS` in docs/spec/ after copying a seed in"
    )


@pytest.mark.parametrize("name", VENDORED)
def test_the_vendored_spec_is_the_shared_one(name: str) -> None:
    vendored = (spec.SPEC / name).read_bytes()
    recorded = spec.recorded_digests().get(name)
    assert hashlib.sha256(vendored).hexdigest() == recorded, (
        f"docs/spec/{name} is not the file whose digest docs/spec/SHA256SUMS records: restore it "
        "from the shared seeds (the spec is copied verbatim, never edited here)"
    )
    if SHARED.is_dir():
        shared = SHARED / name
        assert shared.is_file(), f"{shared} is missing: the shared seeds no longer hold {name}"
        assert shared.read_bytes() == vendored, (
            f"docs/spec/{name} differs from {shared}: copy the shared seed over it and record "
            "its digest in docs/spec/SHA256SUMS"
        )
