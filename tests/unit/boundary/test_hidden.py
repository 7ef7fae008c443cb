"""What every run hides whole (domain/boundary/hidden.py): the temporary roots where any host of
the environment makes its runs."""

from __future__ import annotations

import pytest

from concorde_workers.domain.boundary.hidden import TEMPORARY_ROOTS, temporary_roots


@pytest.mark.parametrize(
    ("tmpdir", "runtime_root", "expected"),
    [
        (None, "/tmp", TEMPORARY_ROOTS),
        ("/tmp/user-0", "/tmp", TEMPORARY_ROOTS),  # below /tmp: covered by it
        ("/scratch/tmp", "/tmp", (*TEMPORARY_ROOTS, "/scratch/tmp")),
        ("/scratch/tmp/", "/scratch/tmp", (*TEMPORARY_ROOTS, "/scratch/tmp")),
        ("relative/tmp", "/srv/runs", (*TEMPORARY_ROOTS, "/srv/runs")),
    ],
)
def test_every_temporary_root_of_the_environment_is_hidden_whole(
    tmpdir: str | None, runtime_root: str, expected: tuple[str, ...]
) -> None:
    """Issue 31 §4: a host whose /tmp is not writable makes its runs under the system temporary
    directory (seed 000), so every run hides the environment's TMPDIR and its own temp root
    besides /tmp, /var/tmp and /usr/tmp; a relative TMPDIR names nothing."""
    assert temporary_roots(tmpdir, runtime_root) == expected
