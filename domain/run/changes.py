"""A round's change as evidence (issue 21 §1): which paths' content goes into the round's
`rounds/<n>/changes.patch`, which are only named, and the file's text.

The host keeps the worktree's `rw` state as Git trees in a store of the run's own (the
runtime directory's `control/changes`, never the repository's index or objects; the commands
are the table's `changes_*`): the tree at the snapshot, then one after each round's audit.
A round's patch is Git's binary-safe patch between the tree at its start and the tree at its
end, over the paths the audit lists as changed. Decided here, from values:

- content is kept only for a changed path in `rw` that is the worker's (no Git metadata), not
  behind a symbolic link, at most `MAX_FILE_BYTES`, and while the round's kept content stays
  within `MAX_CONTENT_BYTES` (`content_choice`);
- every other path changed in this round is named with its digest, never its content
  (`named_lines`): a violation outside `rw` (the content may be what the worker must not
  read), Git metadata, a path behind a link, a file too large for the patch;
- the file (`patch_file`): a header naming the round, at most `MAX_NAMED` named lines, then
  the patch, cut at a file's boundary where it would pass `MAX_PATCH_BYTES` and said (how many
  bytes and which paths were left out).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from concorde_workers.domain.boundary.grant import Grant, Level
from concorde_workers.domain.run.audit import FileState, is_git_metadata

__all__ = [
    "CHANGES_FILE",
    "MAX_CONTENT_BYTES",
    "MAX_FILE_BYTES",
    "MAX_NAMED",
    "MAX_PATCH_BYTES",
    "content_choice",
    "content_paths",
    "named_lines",
    "no_patch_file",
    "patch_file",
    "patch_paths",
    "round_changed",
]

CHANGES_FILE = "changes.patch"
MAX_PATCH_BYTES = 1024 * 1024
"""The most one round's patch holds; past it, whole files are left out and said."""
MAX_FILE_BYTES = 256 * 1024
"""A file larger than this is named with its digest, not hashed into the store: a worker that
writes a 2 GB file fills no store and no trace."""
MAX_CONTENT_BYTES = 4 * MAX_PATCH_BYTES
"""The most content of one round the store hashes: past it the patch could not show it anyway,
so a worker that writes 200,000 small files makes the host hash and diff a bounded amount."""
MAX_NAMED = 1000
"""At most this many named lines a patch file lists; the rest are counted."""


_UNLISTED = object()
"""The state of a path no observation lists: as HEAD holds it (never equal to a state)."""


def round_changed(
    changed: Sequence[str],
    before: Mapping[str, FileState | None],
    after: Mapping[str, FileState | None],
) -> tuple[str, ...]:
    """The audit's changed paths (since the snapshot) that this round changed: the path's
    state after the round differs from its state at the round's start (`before`: the previous
    round's observation, or the snapshot before the first round)."""
    return tuple(p for p in changed if after.get(p, _UNLISTED) != before.get(p, _UNLISTED))


def _withheld(
    grant: Grant, path: str, state: FileState | None, found: int | None, linked: bool
) -> str | None:
    """Why the path's content is not kept, or None when it is."""
    level = grant.level_of(path)
    if is_git_metadata(path) or (state is not None and state.git_metadata):
        return "Git metadata"
    if level is not Level.RW:
        return f"outside rw ({level.value if level else 'not in the grant'})"
    if linked:
        return "behind a symbolic link"
    if found is not None and found > MAX_FILE_BYTES:
        return f"larger than {MAX_FILE_BYTES} bytes"
    return None


def content_choice(
    grant: Grant,
    changed: Iterable[str],
    after: Mapping[str, FileState | None],
    size: Callable[[str], int | None],
    linked: Callable[[str], bool] = lambda _: False,
    budget: int = MAX_CONTENT_BYTES,
) -> tuple[tuple[str, ...], dict[str, str]]:
    """The changed paths whose content the store keeps, and why each other one is not.
    `size`: the size of the file or link now (None: there is none; the patch shows what was);
    `linked`: whether a folder above the path is a symbolic link (its content would be read
    from elsewhere); `budget`: the most content kept."""
    kept: list[str] = []
    why: dict[str, str] = {}
    used = 0
    for path in changed:
        found = size(path)
        reason = _withheld(grant, path, after.get(path), found, linked(path))
        if reason is None and used + (found or 0) > budget:
            reason = f"past the {budget} bytes of content a round keeps"
        if reason is None:
            kept.append(path)
            used += found or 0
        else:
            why[path] = reason
    return tuple(kept), why


def content_paths(
    grant: Grant,
    changed: Iterable[str],
    after: Mapping[str, FileState | None],
    size: Callable[[str], int | None],
) -> tuple[str, ...]:
    """The changed paths whose content the store keeps (`content_choice`'s first answer)."""
    return content_choice(grant, changed, after, size)[0]


def named_lines(
    grant: Grant,
    changed: Iterable[str],
    after: Mapping[str, FileState | None],
    kept: Iterable[str],
    reasons: Mapping[str, str] | None = None,
) -> tuple[str, ...]:
    """One line per path changed in this round whose content is not kept, with why (`reasons`,
    `content_choice`'s; without one: by its level, or its size) and its digest now (or that it
    is gone)."""
    keep = set(kept)
    lines: list[str] = []
    for path in changed:
        if path in keep:
            continue
        state = after.get(path)
        why = (
            (reasons or {}).get(path)
            or _withheld(grant, path, state, None, False)
            or (f"larger than {MAX_FILE_BYTES} bytes")
        )
        now = "deleted" if state is None else state.digest
        lines.append(f"# {_one_line(path)}: {why}, content not kept; now {now}")
    return tuple(lines)


def _one_line(path: str) -> str:
    """A path on one comment line: control characters (a newline above all) escaped."""
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in path)


def _sections(diff: bytes) -> list[bytes]:
    """Git's patch split into one section per file (each starts with `diff --git `)."""
    marker = b"\ndiff --git "
    if not diff:
        return []
    parts = diff.split(marker)
    sections = [parts[0], *(b"diff --git " + part for part in parts[1:])]
    return [s + b"\n" for s in sections[:-1]] + sections[-1:]  # each keeps its own newline


def patch_paths(section: bytes) -> str:
    """The path a section's header names (its `b/` side, as Git prints it)."""
    header = section.split(b"\n", 1)[0].decode("utf-8", "replace")
    return header.rsplit(" b/", 1)[-1] if " b/" in header else header


def patch_file(
    round_number: int, diff: bytes, named: Sequence[str], limit: int = MAX_PATCH_BYTES
) -> bytes:
    """The text of `rounds/<n>/changes.patch`: the header, the named lines, then the patch's
    sections while they fit in `limit` bytes, and what was left out."""
    sections = _sections(diff)
    kept: list[bytes] = []
    used = 0
    for index, section in enumerate(sections):
        piece = section if section.endswith(b"\n") else section + b"\n"
        if used + len(piece) > limit:
            left = sections[index:]
            size = sum(len(s) for s in left)
            paths = ", ".join(_one_line(patch_paths(s)) for s in left[:20])
            more = f" and {len(left) - 20} more" if len(left) > 20 else ""
            kept.append(
                f"# the patch stops here: {len(left)} file(s) of {size} bytes left "
                f"out, past the {limit} bytes a round's patch holds: {paths}{more}\n".encode()
            )
            break
        kept.append(piece)
        used += len(piece)
    listed = list(named[:MAX_NAMED])
    if len(named) > MAX_NAMED:
        listed.append(f"# and {len(named) - MAX_NAMED} more path(s) named only, not listed")
    header = [
        f"# concorde-workers: round {round_number}'s change against its starting state "
        f"({len(sections)} file(s) in the patch, {len(named)} named only)",
        *listed,
    ]
    return ("\n".join(header) + "\n").encode() + b"".join(kept)


def no_patch_file(round_number: int, why: str) -> bytes:
    """The file of a round whose change could not be kept, saying why."""
    return (
        f"# concorde-workers: no patch for round {round_number}: {_one_line(why.strip())[:2000]}\n"
    ).encode()
